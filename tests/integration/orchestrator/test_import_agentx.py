"""`infersweep import agentx`: SemiAnalysis' AgentX harness output (agentx-harness 1.0.12, run against the simulated
engine: tests/data/peers/README.md) becomes one agentic-replay Point whose figures are the harness's own summary."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from sqlmodel import select

from benchmarks.peers import weka_for_aiperf
from db import reads
from db.models import PointResultRow
from db.session import make_engine, open_session
from runners.traces.formats import load_trace
from runners.traces.hit_rate import theoretical_hit_rate
from tests.conftest import ROOT, run_cli

RUN = ROOT / "tests" / "data" / "peers" / "agentx" / "profile"
RECIPE = ROOT / "recipes" / "examples" / "agentic-simulated.yaml"
WEKA_WITH_SUBAGENTS = ROOT / "traces" / "claude-code-weka" / "sample_trace_with_subagent.json"


def test_the_harness_output_round_trips_to_its_own_summary(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'results.db'}"
    imported = run_cli("import", "agentx", "--recipe", str(RECIPE), str(RUN), env={"INFERSWEEP_DATABASE_URL": url})
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert "AgentX harness (agentx-harness) 1.0.12" in imported.stdout and "trace replay" in imported.stdout
    with open_session(make_engine(url)) as session:
        [point] = session.exec(select(PointResultRow)).all()
    summary = json.loads((RUN / "profile_export_aiperf.json").read_text())
    metrics = point.metrics

    assert (point.origin, point.workload_kind, point.concurrency) == ("imported", "agentic-replay", 2)
    assert metrics["completed"] == summary["request_count"]["avg"] == 14
    assert metrics["total_output_tokens"] == summary["total_usage_completion_tokens"]["avg"]
    assert metrics["total_input_tokens"] == summary["total_usage_prompt_tokens"]["avg"]
    assert metrics["duration_s"] == summary["benchmark_duration"]["avg"]
    for ours, theirs in (("ttft_ms", "time_to_first_token"), ("tpot_ms", "inter_token_latency"),
                         ("e2el_ms", "request_latency")):  # fmt: skip
        for percentile in ("mean", "p50", "p90", "p99"):
            assert metrics[ours][percentile] == summary[theirs]["avg" if percentile == "mean" else percentile]
    # Tokens/s/user is 1000 / TPOT at the same percentile (ours); the harness's is the percentile of each
    # request's own rate: the medians of 14 requests agree to 0.1 %.
    assert metrics["interactivity"]["p50"] == pytest.approx(summary["output_token_throughput_per_user"]["p50"], 1e-3)
    assert metrics["peer_figures"]["aiperf_output_token_throughput"] == summary["output_token_throughput"]["avg"]
    assert (
        metrics["peer_figures"]["agentx_theoretical_prefix_cache_hit_pct"]
        == (summary["theoretical_prefix_cache_hit"]["avg"])
    )
    assert metrics["peer_figures"]["agentx_submission_valid"] == 0.0  # run with --unsafe-override (a 60 s window)
    trace = RUN / "traces" / "sample_trace_agentx.json"
    assert metrics["replay"]["trace_version"] == hashlib.sha256(trace.read_bytes()).hexdigest()
    assert metrics["replay"]["requests_measured"] == 14 and metrics["replay"]["theoretical_hit_rate"] is None
    # Its theoretical hit in the field our replays fill by its definition (blocks), as a share.
    assert metrics["replay"]["agentx_theoretical_hit_rate"] == summary["theoretical_prefix_cache_hit"]["avg"] / 100

    # The recipe stored with it is the replay the harness ran (the hub's "not comparable with AgentX" reads it).
    with open_session(make_engine(url)) as session:
        [view] = reads.list_results(session, sweep="imported")
    assert view.replay_agentx_differences == "window 60 s (AgentX: 3,600 s)"

    again = run_cli("import", "agentx", "--recipe", str(RECIPE), str(RUN), env={"INFERSWEEP_DATABASE_URL": url})
    assert again.returncode == 0 and "1 already present" in " ".join(again.stdout.split()), again.stdout


def test_an_export_without_the_trace_it_replayed_is_refused_naming_the_path(tmp_path: Path) -> None:
    alone = tmp_path / "run"
    alone.mkdir()
    export = json.loads((RUN / "profile_export_aiperf.json").read_text())
    gone = str(tmp_path / "gone" / "traces")  # where the harness's machine had it: not on this one
    export["input_config"]["datasets"][0]["path"] = gone
    (alone / "profile_export_aiperf.json").write_text(json.dumps(export))
    url = f"sqlite:///{tmp_path / 'results.db'}"
    refused = run_cli("import", "agentx", "--recipe", str(RECIPE), str(alone), env={"INFERSWEEP_DATABASE_URL": url})
    text = " ".join((refused.stdout + refused.stderr).split())
    assert f"field 'input_config.datasets[0].path': got '{gone}'" in text, text
    assert "its SHA-256 is the Point's trace version" in text and "Traceback" not in text


# A run of acceptance 1's comparison (`benchmarks.agentx_harness --keep`): its export, and its per-request records
# with each record's metadata kept (tests/data/peers/README.md). The trace it replayed is made again beside it.
BESIDE_OURS = ROOT / "tests" / "data" / "peers" / "agentx" / "harness-run"


def _harness_run(folder: Path, records: list[str] | None = None) -> Path:
    run = folder / "run"
    shutil.copytree(BESIDE_OURS, run)
    (run / "harness-traces").mkdir()
    trace = weka_for_aiperf(json.loads(WEKA_WITH_SUBAGENTS.read_text()), "sim", 0.1)
    (run / "harness-traces" / "sample.json").write_text(json.dumps(trace))
    if records is not None:
        (run / "profile_export.jsonl").write_text("".join(line + "\n" for line in records))
    return run


def _imported_hit(tmp_path: Path, run: Path) -> tuple[float, dict[str, object]]:
    url = f"sqlite:///{tmp_path / 'results.db'}"
    imported = run_cli("import", "agentx", "--recipe", str(RECIPE), str(run), env={"INFERSWEEP_DATABASE_URL": url})
    assert imported.returncode == 0, imported.stdout + imported.stderr
    with open_session(make_engine(url)) as session:
        [point] = session.exec(select(PointResultRow)).all()
    return point.metrics["replay"]["agentx_theoretical_hit_rate"], point.metrics


def test_the_theoretical_hit_is_computed_over_the_requests_the_harness_measured(tmp_path: Path) -> None:
    summary = json.loads((BESIDE_OURS / "profile_export_aiperf.json").read_text())
    ours, metrics = _imported_hit(tmp_path, _harness_run(tmp_path))
    assert metrics["completed"] == summary["request_count"]["avg"] == 137
    assert metrics["ttft_ms"]["p50"] == summary["time_to_first_token"]["p50"]
    # Our walk of the trace over the 137 requests its records name gives the harness's own figure (90.063 %).
    assert (
        metrics["peer_figures"]["agentx_theoretical_prefix_cache_hit_pct"]
        == summary["theoretical_prefix_cache_hit"]["avg"]
    )
    assert ours == pytest.approx(summary["theoretical_prefix_cache_hit"]["avg"] / 100, abs=0.001)

    # It is computed, not copied: over the root's measured requests only, it is our walk's rate for those, by hand.
    lines = (BESIDE_OURS / "profile_export.jsonl").read_text().splitlines()
    roots = [line for line in lines if "::sa:" not in json.loads(line)["metadata"]["conversation_id"]]
    trace = load_trace(WEKA_WITH_SUBAGENTS)
    walk = theoretical_hit_rate(trace)
    turns = [json.loads(line)["metadata"] for line in roots]
    positions = [walk.keys.index(f"0:{meta['turn_index']}") for meta in turns if meta["benchmark_phase"] == "profiling"]
    root_only, _ = _imported_hit(tmp_path / "roots", _harness_run(tmp_path / "roots", roots))
    assert root_only == pytest.approx(walk.block_rate(positions), abs=1e-9)
    assert abs(root_only - ours) > 0.001


def test_a_broken_record_line_is_named(tmp_path: Path) -> None:
    lines = (BESIDE_OURS / "profile_export.jsonl").read_text().splitlines()
    run = _harness_run(tmp_path, [*lines[:5], '{"metadata": {"conversation_id": ', *lines[5:]])
    url = f"sqlite:///{tmp_path / 'results.db'}"
    refused = run_cli("import", "agentx", "--recipe", str(RECIPE), str(run), env={"INFERSWEEP_DATABASE_URL": url})
    text = " ".join((refused.stdout + refused.stderr).split())
    assert refused.returncode != 0 and "profile_export.jsonl" in text and "line 6" in text, text
    assert "Traceback" not in text


def test_a_record_of_another_trace_is_named_with_the_way_out(tmp_path: Path) -> None:
    lines = (BESIDE_OURS / "profile_export.jsonl").read_text().splitlines()
    stray = json.loads(lines[-1])
    stray["metadata"].update(conversation_id="ffffffff-000::sa:nobody", benchmark_phase="profiling")
    run = _harness_run(tmp_path, [*lines, json.dumps(stray)])
    url = f"sqlite:///{tmp_path / 'results.db'}"
    refused = run_cli("import", "agentx", "--recipe", str(RECIPE), str(run), env={"INFERSWEEP_DATABASE_URL": url})
    text = " ".join((refused.stdout + refused.stderr).split())
    assert refused.returncode != 0 and f"line {len(lines) + 1}: metadata" in text and "nobody" in text, text
    assert "without profile_export.jsonl beside the export" in text and "Traceback" not in text
