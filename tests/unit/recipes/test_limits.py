"""Numbers a typo can blow up are refused, each error naming the field, the value and the bound
(recipes/limits.py; the recipe schema, `infersweep bench` and `infersweep replay` share the bounds)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from recipes.errors import RecipeError
from recipes.limits import MAX_CONCURRENCY, MAX_PROMPTS_PER_CONCURRENCY, MAX_REQUESTS_PER_POINT, MAX_SECONDS
from recipes.loader import load_recipe
from tests.conftest import SIMULATED_RECIPE


def problem_of(path: Path) -> str:
    with pytest.raises(RecipeError) as caught:
        load_recipe(path)
    return str(caught.value)


@pytest.mark.parametrize(
    ("changes", "field", "bound"),
    [
        ({"workload": {"concurrency": [1, 100_000_000_000]}}, "workload.concurrency[1]", MAX_CONCURRENCY),
        ({"workload": {"prompts_per_concurrency": 100_000_000}}, "workload.prompts_per_concurrency",
         MAX_PROMPTS_PER_CONCURRENCY),
        ({"workload": {"sequences": [{"isl": 10**12, "osl": 32}]}}, "workload.sequences[0].isl", 16_777_216),
        ({"workload": {"request_timeout_s": 1e9}}, "workload.request_timeout_s", MAX_SECONDS),
        ({"runner": {"kind": "local", "job_timeout_s": 1e12}}, "runner.job_timeout_s", MAX_SECONDS),
    ],
)  # fmt: skip
def test_a_value_past_its_bound_names_field_value_and_bound(write_recipe, changes, field, bound) -> None:
    message = problem_of(write_recipe(changes))
    line = next(line for line in message.splitlines() if f"field '{field}'" in line)
    assert ("less than or equal to" in line and f"{bound:g}".replace("e+", "e+") in line) or str(bound) in line, line


def test_requests_in_one_point_are_bounded_by_their_product(write_recipe) -> None:
    message = problem_of(write_recipe({"workload": {"concurrency": [60_000], "prompts_per_concurrency": 9_000}}))
    assert "60000 x (prompts_per_concurrency + warmup_per_concurrency) = 540,120,000 requests" in message
    assert f"expected at most {MAX_REQUESTS_PER_POINT:,}" in message


def test_the_largest_allowed_values_still_validate(write_recipe) -> None:
    largest = {"concurrency": [MAX_CONCURRENCY], "prompts_per_concurrency": 10, "warmup_per_concurrency": 0}
    assert load_recipe(write_recipe({"workload": largest})).recipe.workload.concurrency == [MAX_CONCURRENCY]
    assert SIMULATED_RECIPE["workload"]["concurrency"] == [1, 4]  # the base recipe is untouched


def test_bench_refuses_a_concurrency_past_the_bound_naming_the_flag() -> None:
    args = ["bench", "--base-url", "http://127.0.0.1:9", "--model", "m", "--concurrency", "100000000000"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "--concurrency" in result.output and "100000000000" in result.output
    assert f"less than or equal to {MAX_CONCURRENCY}" in result.output
