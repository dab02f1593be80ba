"""`infersweep trace stats|synth|plan`, checked against numbers worked out independently in the test."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from tests.conftest import TRACES

WEKA = [TRACES / "claude-code-weka" / name for name in ("sample_trace.json", "sample_trace_with_subagent.json")]
MOONCAKE = [TRACES / "mooncake" / name for name in ("conversation_trace.jsonl", "synthetic_trace.jsonl")]
runner = CliRunner()


def _weka_walk(path: Path) -> float:
    """Second method, straight from the JSON: requests on one clock (subagents at their spawn offsets,
    file order on ties), one cache for the conversation and its subagents, leading run of seen ids."""
    data = json.loads(path.read_text())
    flat: list[tuple[float, int, dict[str, Any]]] = []

    def collect(entries: list[dict[str, Any]], origin: float) -> None:
        for entry in entries:
            if entry["type"] == "subagent":
                continue
            flat.append((origin + entry["t"], len(flat), entry))
        for entry in entries:
            if entry["type"] == "subagent":
                collect(entry["requests"], origin + entry["t"])

    collect(data["requests"], 0.0)
    seen: set[int] = set()
    hits = total = 0
    for _, _, request in sorted(flat, key=lambda item: (item[0], item[1])):
        run = 0
        while run < len(request["hash_ids"]) and request["hash_ids"][run] in seen:
            run += 1
        hits += min(run * data["block_size"], request["in"])
        total += request["in"]
        seen.update(request["hash_ids"])
    return hits / total


def _mooncake_walk(path: Path) -> float:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    seen: set[int] = set()
    hits = total = 0
    for line in sorted(lines, key=lambda item: item["timestamp"]):  # sorted() is stable: file order on ties
        run = 0
        while run < len(line["hash_ids"]) and line["hash_ids"][run] in seen:
            run += 1
        hits += min(run * 512, line["input_length"])
        total += line["input_length"]
        seen.update(line["hash_ids"])
    return hits / total


def _stats(*paths: Path) -> list[dict[str, Any]]:
    result = runner.invoke(app, ["trace", "stats", "--json", *map(str, paths)])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_stats_of_the_weka_samples_match_an_independent_walk() -> None:
    rows = _stats(*WEKA)
    assert [row["kind"] for row in rows] == ["weka", "weka"]
    for row, path in zip(rows, WEKA, strict=True):
        assert row["theoretical_hit_rate"] == pytest.approx(_weka_walk(path), abs=1e-12)
    assert [round(row["theoretical_hit_rate"], 4) for row in rows] == [0.7580, 0.9091]  # pinned (measured)
    assert rows[1]["sessions"] == 5 and rows[1]["requests"] == 90


def test_stats_of_the_mooncake_traces_match_an_independent_walk() -> None:
    rows = _stats(*MOONCAKE)
    for row, path in zip(rows, MOONCAKE, strict=True):
        assert row["kind"] == "mooncake" and row["block_size"] == 512
        assert row["theoretical_hit_rate"] == pytest.approx(_mooncake_walk(path), abs=1e-12)
    assert [round(row["theoretical_hit_rate"], 4) for row in rows] == [0.3736, 0.6512]  # pinned (measured)
    # Beside it, AgentX's definition, as `agentx analyze-trace` (agentx-harness 1.0.12) reports it on these files.
    assert [round(row["agentx_cache_hit_rate"], 4) for row in rows] == [0.3843, 0.4232]
    table = runner.invoke(app, ["trace", "stats", *map(str, MOONCAKE)]).output
    assert "hit rate (tokens)" in table and "AgentX hit rate (per request)" in table and "0.4232" in table


def test_stats_table_and_a_bad_trace(tmp_path: Path) -> None:
    result = runner.invoke(app, ["trace", "stats", str(WEKA[0])])
    assert result.exit_code == 0 and "0.7580" in result.output
    broken = tmp_path / "broken.json"
    broken.write_text(
        '{"id": "x", "block_size": 64, "requests": [{"t": 0, "type": "s", "in": "ten", "out": 1, "hash_ids": []}]}'
    )
    result = runner.invoke(app, ["trace", "stats", str(broken)])
    assert result.exit_code == 2
    assert "broken.json" in result.output and "requests[0].in" in result.output


def test_synth_is_deterministic_and_loadable(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for path in (first, second):
        assert runner.invoke(app, ["trace", "synth", str(path), "--profile", "ci", "--seed", "3"]).exit_code == 0
    assert first.read_bytes() == second.read_bytes()
    (row,) = _stats(first)
    assert row["kind"] == "weka-jsonl" and row["root_sessions"] == 8 and row["hash_id_scope"] == "global"
    result = runner.invoke(app, ["trace", "synth", str(first), "--profile", "huge"])
    assert result.exit_code == 2 and "'huge'" in result.output and "agentx" in result.output


def test_plan_prints_each_hardware_and_rejects_unknown_keys(tmp_path: Path) -> None:
    args = ["trace", "plan", str(WEKA[1]), "--model", "deepseek-r1", "--requests-per-lane", "20"]
    result = runner.invoke(
        app, [*args, "--hardware", "b200", "--hardware", "h100", "--dram-gib", "0", "--dram-gib", "512"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.count("b200") >= 2 and "h100" in result.output
    result = runner.invoke(app, [*args, "--hardware", "b201"])
    assert result.exit_code == 2 and "'b201'" in result.output and "b200" in result.output


def test_workflow_prints_the_model_time_share_recorded_and_capped() -> None:
    raw = json.loads(WEKA[0].read_text())["requests"]
    # Idle gaps from the recorded ends (t and api_time), as AgentX replays them: the wall time is the recorded one.
    api = sum(r["api_time"] for r in raw)
    think = raw[-1]["t"] + raw[-1]["api_time"] - api
    result = runner.invoke(app, ["trace", "workflow", str(WEKA[0]), "--no-chips", "--decode-speedup", "2"],
                           env={"COLUMNS": "200"})  # fmt: skip
    assert result.exit_code == 0, result.output
    recorded, capped = api / (api + think), api / (api + think - 17.91)  # the one gap over 300 s is 317.91 s
    assert f"{recorded:.1%} as recorded, {capped:.1%} capped at 300 s idle" in result.output
    assert f"{api:.1f}" in result.output and f"{think:.1f}" in result.output


def test_workflow_on_a_fresh_database_serves_the_corpus_and_says_why_no_chips(tmp_path: Path) -> None:
    """The default (`--chips`) on a machine with no results: the corpus's figures and one line saying there are no
    chips to serve it at, exit 0; the reading command creates no schema (it used to migrate; then, for a while, it
    failed on the empty database after printing the corpus)."""
    database = tmp_path / "results.db"
    result = runner.invoke(app, ["trace", "workflow", str(WEKA[0])],
                           env={"COLUMNS": "200", "INFERSWEEP_DATABASE_URL": f"sqlite:///{database}"})  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "capped at 300 s idle" in result.output and "no valid results" in result.output
    if database.exists():  # opened (SQLite writes its header), never given a table
        with sqlite3.connect(database) as connection:
            assert connection.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone() == (0,)


def test_workflow_names_a_request_without_a_response_time(tmp_path: Path) -> None:
    trace = tmp_path / "no-api.json"
    trace.write_text(json.dumps({"id": "x", "block_size": 4, "requests": [
        {"t": 0.0, "type": "s", "in": 8, "out": 1, "hash_ids": [1]}]}))  # fmt: skip
    result = runner.invoke(app, ["trace", "workflow", str(trace), "--no-chips"])
    assert result.exit_code == 2 and "request 0:0: no recorded api_time" in result.output
    assert "Traceback" not in result.output
