"""`infersweep capacity` on a simulated sweep whose engine serves two requests at a time: two agents, by hand."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tests.conftest import run_cli

# The engine serves 2 requests at once, 20 ms to the first token and 10 ms a token after it: a 20-token answer
# takes 210 ms. Up to 2 agents nobody waits (TTFT ~20 ms, 100 tok/s/user); at 4, half the requests wait a whole
# answer for a slot (TTFT p90 ~230 ms). At a tier of TTFT p90 <= 100 ms and 50 tok/s/user the engine serves 2
# agents: the crossing between 2 and 4 is 2 + 2 x (100 - 20) / (230 - 20) = 2.8, below a third agent.
ENGINE = {"engine": {"simulated": {"ttft_ms": 20, "itl_ms": 10, "max_batch": 2}},
          "workload": {"sequences": [{"isl": 64, "osl": 20}], "concurrency": [1, 2, 4]}}  # fmt: skip
TIERS = {"schema_version": 1, "tiers": {
    "snappy": {"ttft_p90_ms": 100, "interactivity_p50": 50, "source": "test: a third of one answer's time"},
    "lax": {"ttft_p90_ms": 5000, "interactivity_p50": 50, "source": "test: any queue this sweep makes"},
}}  # fmt: skip


def test_capacity_of_a_two_slot_engine_is_two_agents(write_recipe, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    recipe = write_recipe(ENGINE)
    ran = run_cli("run", str(recipe), "--sweep", "capacity-sim")
    assert ran.returncode == 0, ran.stderr
    tiers = tmp_path / "tiers.yaml"
    tiers.write_text(yaml.safe_dump(TIERS))
    shown = run_cli("capacity", "--sweep", "capacity-sim", "--tiers", str(tiers), "--include-simulated")
    assert shown.returncode == 0, shown.stderr
    rows = {cells[2]: cells for cells in _rows(shown.stdout, "sim-test")}
    assert rows["snappy"][5:7] == ["2", "measured"], shown.stdout
    assert rows["lax"][5:7] == ["≥ 4", "at least"], shown.stdout  # the largest level measured serves: no more said
    assert "2 serves (TTFT p90" in shown.stdout and "4 misses" in shown.stdout
    assert "Simulated results are included" in shown.stdout

    # With the tiers the Points were measured against (recipes/slo_tiers.yaml), each level also says how many of its
    # requests met a tier on their own: at 1 and 2 agents nobody waits (TTFT ~20 ms, ~100 tok/s/user against
    # 'interactive' 2 s and 60 tok/s/user), so all of them, but for a request the loaded machine slowed.
    default = run_cli("capacity", "--sweep", "capacity-sim", "--tier", "interactive", "--include-simulated")
    assert default.returncode == 0, default.stderr
    inputs = default.stdout.split("The Points it rests on")[1]
    levels = {cells[1]: cells[-1] for cells in _cells(inputs, "sim-test")}
    assert set(levels) == {"1", "2", "4"}, inputs
    for agents, served in levels.items():  # at 4, TTFT p90 ~230 ms is still far under 2 s
        share = re.fullmatch(r"yes · (\d+)% of requests", served)
        assert share is not None and int(share.group(1)) >= 90, (agents, served)

    # Measured results only by default: a simulated sweep has none, and the error says how to include them.
    refused = run_cli("capacity", "--sweep", "capacity-sim")
    assert refused.returncode != 0 and "add --include-simulated" in refused.stderr and "Traceback" not in refused.stderr
    unknown = run_cli("capacity", "--sweep", "capacity-sim", "--tier", "nope", "--include-simulated")
    assert unknown.returncode != 0 and "--tier: got 'nope'; the tiers are interactive" in unknown.stderr


def _rows(stdout: str, recipe: str) -> list[list[str]]:
    """The cells of each of `recipe`'s rows in the first printed table."""
    return _cells(stdout.split("The Points it rests on")[0], recipe)


def _cells(table: str, recipe: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip("│ ").split("│")] for line in table.splitlines() if f"│ {recipe} " in line
    ]
