"""Agentic replay recipes through the whole pipeline: simulated engine, and real vLLM with prefix caching.

The vLLM test is the test run's second (and last) real engine launch: prefix caching on.
"""

from __future__ import annotations

import pytest
import yaml

from db import queries
from db.models import PointResultRow
from db.session import make_engine, migrate, open_session
from runners.process import running_engines
from tests.conftest import ROOT, processes_of_runs, run_cli

pytestmark = pytest.mark.integration
TRACE = ROOT / "traces" / "claude-code-weka" / "sample_trace_with_subagent.json"


def replay_rows(sweep: str) -> list[PointResultRow]:
    from sqlmodel import select

    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        sweep_row, _ = queries.get_or_create_sweep(session, sweep)
        return list(session.exec(select(PointResultRow).where(PointResultRow.sweep_id == sweep_row.id)).all())


def recipe_from(name: str, changes: dict) -> dict:
    data = yaml.safe_load((ROOT / "recipes" / name).read_text())
    data["workload"].update(changes, trace=str(TRACE))
    return data


def test_simulated_replay_realizes_the_theoretical_rate(write_recipe) -> None:
    recipe = write_recipe(base=recipe_from("examples/agentic-simulated.yaml", {"concurrency": [1], "duration_s": 3}))
    result = run_cli("run", str(recipe), "--sweep", "agentic-sim")
    assert result.returncode == 0, result.stderr
    assert "trace" in result.stdout
    (row,) = replay_rows("agentic-sim")
    replay = row.metrics["replay"]
    assert row.origin == "simulated" and row.valid and row.isl is None and row.concurrency == 1
    assert replay["requests_measured"] > 50 and replay["theoretical_hit_rate"] > 0.9
    # One lane, warm start at one turn of the root session: realized within a few points of theoretical.
    assert replay["realized_hit_rate"] == pytest.approx(replay["theoretical_hit_rate"], abs=0.05)
    assert row.records_path is not None
    # The engine's own counters over the Point agree with the usage the client saw (warmup included there).
    server = row.metrics["server"]
    assert server["prefix_cache_queries"] > 0
    assert server["prefix_cache_hits"] / server["prefix_cache_queries"] == pytest.approx(
        replay["realized_hit_rate"], abs=0.05
    )

    again = run_cli("run", str(recipe), "--sweep", "agentic-sim")
    assert again.returncode == 0 and "skipping 1 finished point(s)" in again.stdout


@pytest.mark.vllm
def test_real_vllm_prefix_cache_on_an_agentic_trace(write_recipe) -> None:
    recipe = write_recipe(base=recipe_from("local/agentic-tiny-llama-cpu.yaml", {"concurrency": [1], "duration_s": 12}))
    result = run_cli("run", str(recipe), "--sweep", "agentic-vllm", timeout=1200)
    assert result.returncode == 0, result.stdout + result.stderr
    (row,) = replay_rows("agentic-vllm")
    replay = row.metrics["replay"]
    assert row.origin == "measured" and row.valid, row.validity_reasons
    assert replay["requests_measured"] > 20
    # vLLM's own cached_tokens (prefix caching on, 128-token blocks) track the trace's reuse.
    assert replay["realized_hit_rate"] is not None
    assert replay["realized_hit_rate"] == pytest.approx(replay["theoretical_hit_rate"], abs=0.1)
    server = row.metrics["server"]  # vLLM's prefix_cache_* counters over the Point
    assert server["prefix_cache_queries"] > 0
    assert server["prefix_cache_hits"] / server["prefix_cache_queries"] == pytest.approx(
        replay["realized_hit_rate"], abs=0.1
    )
    assert running_engines() == [] and processes_of_runs("agentic-tiny-llama-cpu-") == []
