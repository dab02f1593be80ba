"""Requests an engine would refuse are refused at plan time (issue 23 item 4).

The shipped Weka trace with subagents holds a prompt of 88,834 tokens (session 0/2, turn 25). TensorRT-LLM
without chunked prefill (its default) answers any prompt above max_num_tokens (8,192 by default) with a 400, so a
recipe replaying that trace on those settings would measure errors: it is refused, naming the recipe, the field
and the longest prompt. InferenceX's agentic TensorRT-LLM configurations turn chunked prefill on with
max_num_tokens 16,384, which serves it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.plan import expand_points
from recipes.errors import RecipeError
from recipes.loader import load_recipe
from runners.engines.registry import engine_adapter
from tests.conftest import ROOT

B300_AGENTIC = ROOT / "recipes" / "catalogue" / "b300" / "b300-dsr1-fp4-trtllm-agentic-hbm.yaml"
TRACE = ROOT / "traces" / "claude-code-weka" / "sample_trace_with_subagent.json"
# The B300 TensorRT-LLM agentic arm's engine section as the catalogue had it before this rule: no chunked
# prefill, max_num_tokens at TensorRT-LLM's default.
BEFORE = {"max_model_len": 131072, "kv_cache_dtype": "fp8", "startup_timeout_s": 2400}


def b300_agentic(tmp_path: Path, engine: dict[str, Any], workload: dict[str, Any] | None = None) -> Path:
    """The catalogue's B300 TensorRT-LLM agentic recipe with its engine tuning replaced by `engine`."""
    data = yaml.safe_load(B300_AGENTIC.read_text())
    for field in ("chunked_prefill", "max_num_batched_tokens", "max_model_len"):
        data["engine"].pop(field, None)
    data["engine"].update(engine)
    data["workload"]["trace"] = str(TRACE)
    data["workload"].update(workload or {})
    path = tmp_path / "b300-agentic.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def refusal(path: Path) -> RecipeError:
    with pytest.raises(RecipeError) as caught:
        expand_points(load_recipe(path))
    return caught.value


def test_the_old_b300_trtllm_agentic_settings_are_refused_naming_recipe_field_and_prompt(tmp_path: Path) -> None:
    error = refusal(b300_agentic(tmp_path, BEFORE))
    ((field, value, expected),) = error.problems
    assert field == "engine.max_num_batched_tokens" and value == 8192
    assert "recipe 'b300-dsr1-fp4-trtllm-agentic-hbm'" in expected
    assert "88,834 tokens" in expected and "session 0/2" in expected and "turn 25" in expected
    assert "engine.chunked_prefill: true" in expected
    assert error.file == str(tmp_path / "b300-agentic.yaml")


def test_chunked_prefill_or_a_big_enough_step_serves_the_trace(tmp_path: Path) -> None:
    fixed = {**BEFORE, "chunked_prefill": True, "max_num_batched_tokens": 16384}  # InferenceX's agentic TRT settings
    assert expand_points(load_recipe(b300_agentic(tmp_path, fixed)))
    # Without chunking, a step that holds the longest prompt serves it too; one token less does not.
    assert expand_points(load_recipe(b300_agentic(tmp_path, {**BEFORE, "max_num_batched_tokens": 88834})))
    assert refusal(b300_agentic(tmp_path, {**BEFORE, "max_num_batched_tokens": 88833})).problems[0][1] == 88833


def test_length_scale_shrinks_the_longest_prompt_as_the_synthesiser_does(tmp_path: Path) -> None:
    # ceil(88,834 x 0.09) = 7,996 tokens fits TensorRT-LLM's default step; ceil(88,834 x 0.1) = 8,884 does not.
    assert expand_points(load_recipe(b300_agentic(tmp_path, BEFORE, {"length_scale": 0.09})))
    assert "8,884 tokens" in refusal(b300_agentic(tmp_path, BEFORE, {"length_scale": 0.1})).problems[0][2]


def test_a_context_too_short_for_the_longest_request_is_refused_for_every_engine(tmp_path: Path) -> None:
    short = {**BEFORE, "chunked_prefill": True, "max_model_len": 65536}
    ((field, value, expected),) = refusal(b300_agentic(tmp_path, short)).problems
    assert field == "engine.max_model_len" and value == 65536 and "88,834 prompt" in expected


def test_the_rendered_command_carries_chunked_prefill_and_the_step() -> None:
    recipe = load_recipe(B300_AGENTIC).recipe
    plan = engine_adapter("trtllm").launch_plan(recipe, 8000, Path("/usr/bin/python3"), Path("/models/dsr1"))
    assert plan.argv[plan.argv.index("--max_num_tokens") + 1] == "16384"
    options = yaml.safe_load(plan.files["extra-llm-api-options.yaml"])
    assert options["enable_chunked_prefill"] is True
