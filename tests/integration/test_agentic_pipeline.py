"""Agentic replay recipes through the whole pipeline: simulated engine, and real vLLM with prefix caching.

The vLLM test is the test run's second (and last) real engine launch: prefix caching on.
"""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from db import recording
from db.models import PointResultRow
from db.session import make_engine, migrate, open_session
from runners.host.process import running_engines
from runners.loadgen.replay import SessionId
from runners.traces.formats import load_trace
from runners.traces.hit_rate import HitRate, replayed_hit_rate
from tests.conftest import ROOT, processes_of_runs, records_of, run_cli

TRACE = ROOT / "traces" / "claude-code-weka" / "sample_trace_with_subagent.json"


def replay_rows(sweep: str) -> list[PointResultRow]:
    from sqlmodel import select

    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        sweep_row, _ = recording.get_or_create_sweep(session, sweep)
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
    # What readers need to keep it off another version's curve (analysis/comparability.py).
    assert replay["trace_version"] == load_trace(TRACE).content_hash and replay["prompt_salt"] == "0-c1"
    # The client's own pace: one live session keeps its process far from a whole core, and it began writing its
    # requests on time (dispatch lag within the schedule lag, which adds the writing).
    assert 0 < replay["client_cpu_share"] < 0.95 and "client-saturated" in row.metrics["validity"]["checked"]
    assert replay["dispatch_lag_ms"]["p99"] <= replay["schedule_lag_ms"]["p99"]
    # One lane, warm start at one turn of the root session: realized within a few points of theoretical.
    assert replay["realized_hit_rate"] == pytest.approx(replay["theoretical_hit_rate"], abs=0.05)
    assert row.records_path is not None
    # The AgentX harness's definition of the theoretical hit for the same measured requests (blocks, not tokens).
    workload = yaml.safe_load(recipe.read_text())["workload"]
    walk = replayed_hit_rate(load_trace(workload["trace"]), 128, workload.get("length_scale", 1.0))
    rows = _measured_rows(walk, records_of(row.records_path))
    assert replay["agentx_theoretical_hit_rate"] == pytest.approx(walk.runs[rows].sum() / walk.blocks[rows].sum())
    # The engine's own counters cover the measured window: scraped after the priming requests, so they count the
    # prompt tokens of the measured requests exactly, and agree with the usage the client saw.
    server = row.metrics["server"]
    records = records_of(row.records_path)
    measured = records[~records["warmup"]]
    assert records["warmup"].any() and server["prompt_tokens"] == measured["prompt_tokens"].sum()
    assert server["prefix_cache_queries"] > 0
    assert server["prefix_cache_hits"] / server["prefix_cache_queries"] == pytest.approx(
        replay["realized_hit_rate"], abs=0.05
    )

    again = run_cli("run", str(recipe), "--sweep", "agentic-sim")
    assert again.returncode == 0 and "skipping 1 finished point(s)" in again.stdout


def test_a_replay_split_between_two_processes_counts_the_window_once(write_recipe) -> None:
    # `processes: 2`: the engine's counters are read once every process has primed its lanes and before any measured
    # request, so they count exactly the measured requests' prompt tokens of both processes, as one process's do.
    changes = {"concurrency": [2], "duration_s": 3, "processes": 2}
    recipe = write_recipe(base=recipe_from("examples/agentic-simulated.yaml", changes))
    result = run_cli("run", str(recipe), "--sweep", "agentic-sim-split")
    assert result.returncode == 0, result.stderr
    (row,) = replay_rows("agentic-sim-split")
    assert row.valid, row.metrics["validity"]
    records = records_of(row.records_path)
    measured = records[~records["warmup"]]
    assert sorted(records["index"]) == list(range(len(records)))
    assert row.metrics["server"]["prompt_tokens"] == measured["prompt_tokens"].sum()
    assert len({SessionId.parse(session).copy for session in measured["session"]}) >= 2  # both lanes measured


def _counter_rates(row: PointResultRow) -> tuple[float, float]:
    """(HBM, DRAM) shares of the Point's prompt tokens, from the engine's prompt_tokens_by_source counters."""
    server = row.metrics["server"]
    local, loaded = server["prompt_tokens_local_cache_hit"], server["prompt_tokens_external"]
    total = local + loaded + server["prompt_tokens_local_compute"]
    return local / total, loaded / total


def test_planner_predicts_the_simulated_cache_at_two_capacities_and_with_dram_offload(write_recipe, tmp_path) -> None:
    corpus = tmp_path / "ci.jsonl"
    assert run_cli("trace", "synth", str(corpus), "--profile", "ci").returncode == 0
    base = recipe_from("examples/agentic-simulated.yaml", {})
    workload = {"trace": str(corpus), "concurrency": [4], "duration_s": 3, "time_scale": 0.01, "length_scale": 1.0,
                "max_output_tokens": None}  # fmt: skip
    recipes = []
    for name, blocks, offload in (("small", 300, None), ("large", 600, None), ("offload", 300, 0.005)):
        changes: dict = {"name": f"kv-{name}", "workload": workload,
                         "engine": {"max_model_len": 4096, "simulated": {"cache_blocks": blocks}}}  # fmt: skip
        if offload:
            changes["methodology"] = {"kv_offload": {"backend": "dram", "dram_gib": offload}}
        recipes.append(str(write_recipe(changes, name=f"{name}.yaml", base=base)))
    result = run_cli("run", *recipes, "--sweep", "kv-capacity")
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {row.job_id.split("-")[1]: row for row in replay_rows("kv-capacity")}
    assert set(rows) == {"small", "large", "offload"}
    for name, row in rows.items():
        planner = row.metrics["replay"]["planner"]
        hbm, dram = _counter_rates(row)
        # The prediction for the cache the engine reported (vllm:cache_config_info), over the requests in the order
        # they were sent: within 5 points of it, per tier too. (Lanes round-robin, as the planner once assumed, were
        # 0.2 off on a loaded machine, where lanes interleave otherwise; measured with four busy loops on the two
        # cores: gaps 0.003-0.014.)
        assert planner["hbm_blocks"] == (600 if name == "large" else 300)
        assert planner["hit_rate"] == pytest.approx(hbm + dram, abs=0.05), (name, planner, hbm, dram)
        assert planner["dram_hit_rate"] == pytest.approx(dram, abs=0.05), (name, planner, dram)
    assert _counter_rates(rows["small"])[0] < _counter_rates(rows["large"])[0] - 0.2  # eviction below the working set
    # 0.005 GiB of DRAM at tiny-llama's 1 KiB per token = 327 blocks of 16 tokens behind the same 300 in HBM.
    assert rows["offload"].metrics["replay"]["planner"]["dram_blocks"] == 327
    assert _counter_rates(rows["offload"])[1] > 0.2  # what offload buys: hits loaded back from DRAM
    assert sum(_counter_rates(rows["offload"])) > sum(_counter_rates(rows["small"])) + 0.2
    # Tier traffic (vLLM's kv_offload_total_bytes/time by direction): what came back from DRAM is the DRAM hits'
    # tokens at tiny-llama's 1 KiB each, and the host link's 64 GB/s moved it; without a DRAM tier the engine reports
    # no offload traffic.
    server = rows["offload"].metrics["server"]
    loaded, offloaded = server["kv_offload_bytes_to_device"], server["kv_offload_bytes_to_host"]
    assert loaded == server["prompt_tokens_external"] * 1024
    assert offloaded > 0 and server["kv_offload_seconds_to_device"] == pytest.approx(loaded / 64e9)
    assert rows["small"].metrics["server"]["kv_offload_bytes_to_device"] is None


def _salted_copies_share_nothing(records: pd.DataFrame) -> None:
    """Each replayed copy of the one root session has its own salt: a copy that starts at turn 0 after another
    copy already sent that session's prompts gets no cached token for its first request from vLLM (without
    the salt, its system-prompt blocks would all hit), while its own next turn hits its own history."""
    ids = records["session"].map(SessionId.parse)
    records = records.assign(
        copy=ids.map(lambda session: session.copy), root=ids.map(lambda session: session.path == "0")
    )
    roots = records[records["root"]].sort_values("sent")
    fresh = [first for _, first in roots.groupby("copy").head(1).iterrows() if first["turn"] == 0]
    assert fresh, "no lane finished its tree and started a new copy within the window: lengthen it"
    for first in fresh:
        others = roots[(roots["copy"] != first["copy"]) & (roots["end"] < first["sent"])]
        assert len(others) > 0  # another copy had already sent prompts that begin with this one's blocks
        assert first["cached_tokens"] == 0, first.to_dict()
        own = roots[(roots["copy"] == first["copy"]) & (roots["turn"] == 1)]
        assert own.empty or (own["cached_tokens"] > 0).all()  # the copy's own history does hit


def _measured_rows(walk: HitRate, records: pd.DataFrame) -> list[int]:
    """Where in the walk each request a Point measured lies (keyed by its record's session path and turn)."""
    position = {key: index for index, key in enumerate(walk.keys)}
    measured = records[~records["warmup"] & records["error"].isna()]
    return [
        position[f"{SessionId.parse(session).path}:{turn}"]
        for session, turn in zip(measured["session"], measured["turn"], strict=True)
    ]


def _rate_of_measured(walk: HitRate, records: pd.DataFrame) -> float:
    """The walk's hit rate over the requests a Point measured."""
    rows = _measured_rows(walk, records)
    return float(walk.hit_tokens[rows].sum() / walk.input_tokens[rows].sum())


@pytest.mark.vllm
def test_real_vllm_prefix_cache_on_an_agentic_trace(write_recipe) -> None:
    # Two live sessions: two salted copies of the trace's one root session at a time, and recycled copies.
    recipe = write_recipe(base=recipe_from("local/agentic-tiny-llama-cpu.yaml", {"concurrency": [2], "duration_s": 40}))
    result = run_cli("run", str(recipe), "--sweep", "agentic-vllm", timeout=1200)
    assert result.returncode == 0, result.stdout + result.stderr
    (row,) = replay_rows("agentic-vllm")
    replay = row.metrics["replay"]
    assert row.origin == "measured" and row.valid, row.validity_reasons
    assert replay["requests_measured"] > 20
    records = records_of(row.records_path)
    _salted_copies_share_nothing(records)
    # vLLM's own cached_tokens (prefix caching on, 128-token blocks) track the trace's reuse: for the requests
    # the window measured, the hits the trace allows at the engine's block are the hits vLLM reported. (Over the
    # whole trace the rate differs by which turns a 40 s window happens to hold: 0.74 to 0.84 in runs here.)
    assert replay["realized_hit_rate"] is not None
    workload = yaml.safe_load(recipe.read_text())["workload"]
    walk = replayed_hit_rate(load_trace(workload["trace"]), 128, workload["length_scale"])
    assert replay["theoretical_hit_rate"] == pytest.approx(walk.rate)
    # The AgentX harness's definition for the same measured requests: blocks before the first unseen one / blocks.
    rows = _measured_rows(walk, records)
    assert replay["agentx_theoretical_hit_rate"] == pytest.approx(walk.runs[rows].sum() / walk.blocks[rows].sum())
    assert replay["realized_hit_rate"] == pytest.approx(_rate_of_measured(walk, records), abs=0.03)
    server = row.metrics["server"]  # vLLM's prefix_cache_* counters over the Point
    assert server["prefix_cache_queries"] > 0
    assert server["prefix_cache_hits"] / server["prefix_cache_queries"] == pytest.approx(
        replay["realized_hit_rate"], abs=0.1
    )
    # The planner, given the cache vLLM reported, predicts what vLLM realised.
    planner = replay["planner"]
    assert planner["block_size"] == 128 and planner["hbm_blocks"] > 0
    assert planner["hit_rate"] == pytest.approx(replay["realized_hit_rate"], abs=0.1)
    assert running_engines() == [] and processes_of_runs("agentic-tiny-llama-cpu-") == []
