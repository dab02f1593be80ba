"""Importing `vllm bench serve` results: parsed strictly where it matters, stored as `imported`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from db import reads
from db.session import make_engine, migrate, open_session
from orchestrator.importers.vllm_bench import load_vllm_bench
from recipes.errors import RecipeError
from recipes.schema import ValidityThresholds
from tests.conftest import ROOT, run_cli

# Written by vLLM 0.32.0's own client (`vllm bench serve --save-result`, via benchmarks/vllm_client_driver.py)
# against the simulated engine; regenerate with the command in tests/data/README.md.
SAMPLE = ROOT / "tests" / "data" / "vllm_bench_result.json"


def test_sample_parses_into_point_metrics() -> None:
    raw = json.loads(SAMPLE.read_text())
    parsed, metrics = load_vllm_bench(SAMPLE, accelerators=2, thresholds=ValidityThresholds())
    assert metrics.completed == raw["completed"] > 0
    assert metrics.ttft_ms.p50 == pytest.approx(raw["median_ttft_ms"])
    assert metrics.ttft_ms.p90 == pytest.approx(raw["p90_ttft_ms"])
    assert metrics.tpot_ms.p99 == pytest.approx(raw["p99_tpot_ms"])
    assert metrics.output_throughput_per_gpu == pytest.approx(raw["output_throughput"] / 2)
    assert metrics.interactivity.p90 == pytest.approx(1000 / raw["p90_tpot_ms"])
    assert parsed.max_concurrency == raw["max_concurrency"]
    assert metrics.validity.valid


def test_bad_file_names_the_field(tmp_path: Path) -> None:
    raw = json.loads(SAMPLE.read_text())
    raw["completed"] = "many"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(raw))
    with pytest.raises(RecipeError) as caught:
        load_vllm_bench(bad, 1, ValidityThresholds())
    assert str(bad) in str(caught.value) and "field 'completed': got 'many'" in str(caught.value)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(RecipeError, match="expected a vllm bench serve result in JSON or YAML"):
        load_vllm_bench(broken, 1, ValidityThresholds())


def test_cli_stores_imported_points_once(write_recipe) -> None:
    recipe = write_recipe()
    args = (
        "import",
        "vllm-bench",
        str(SAMPLE),
        "--recipe",
        str(recipe),
        "--isl",
        "64",
        "--osl",
        "16",
        "--sweep",
        "imp",
    )
    first = run_cli(*args)
    assert first.returncode == 0, first.stderr
    assert "imported into sweep imp" in first.stdout
    again = run_cli(*args)
    assert again.returncode == 0 and "already imported" in again.stdout
    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        views = reads.list_results(session, sweep="imp")
    assert [(v.origin, v.isl, v.osl) for v in views] == [("imported", 64, 16)]
