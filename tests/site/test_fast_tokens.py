"""The hub's Fast tokens page (site/views/fast_tokens.py) with AppTest on the hand-checkable fixture.

The fixture's latest DeepSeek-R1 FP8 8k/1k points: B200 (vLLM) at 100, 50 and 20 tok/s/user, H200 at 60 and 30,
MI355X (imported) at 40 and 25, each with a median TTFT of 200 ms + its concurrency over 8,192-token prompts.
The shipped 6-request Claude Code session is served at each; its expected wall time is worked out here from the
trace's JSON, by a second method (its own cache walk), not by the page's code.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import TRACES
from tests.site.conftest import open_page
from tests.site.hub_fixture import DAY0, _Seeder, _snapshot

SAMPLE = TRACES / "claude-code-weka" / "sample_trace.json"


def _session_wall_s(interactivity: float, ttft_ms: float, speedup: float = 1.0) -> float:
    """The sample session at one point: the recorded idle gaps, from each request's end (t + api_time) to the next
    one's t, as AgentX replays them (the 317.91 s gap capped at 300 s), each request its uncached prompt at
    8192 / TTFT tokens/s plus its output tokens at the point's speed."""
    data = json.loads(SAMPLE.read_text())
    block, seen, wall, previous = data["block_size"], set(), 0.0, None
    for request in data["requests"]:
        run = 0
        while run < len(request["hash_ids"]) and request["hash_ids"][run] in seen:
            run += 1
        seen.update(request["hash_ids"])
        uncached = request["in"] - min(run * block, request["in"])
        gap = 0.0 if previous is None else max(0.0, request["t"] - previous["t"] - previous["api_time"])
        previous = request
        wall += min(gap, 300.0)
        wall += uncached / (8192 / (ttft_ms / 1000)) + request["out"] / (interactivity * speedup)
    return wall


def _table(app: AppTest) -> pd.DataFrame:
    return next(frame.value for frame in app.dataframe if "session wall s" in frame.value.columns)


def test_the_page_serves_the_session_at_each_chip_from_the_database(seeded_hub: str) -> None:
    app = open_page(
        "fast_tokens", {"trace": "sample_trace.json", "model": "deepseek-r1", "precision": "fp8"}, from_overview=True
    )
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Model-time share"] == "20.0%" and metrics["Model time"] == "160.2 s"
    table = _table(app)
    assert set(table["hardware"]) == {"b200", "h200", "mi355x"}
    b200 = table[(table["hardware"] == "b200") & (table["concurrency"] == 16)].iloc[0]
    assert b200["session wall s"] == pytest.approx(_session_wall_s(50.0, 216.0), rel=1e-9)
    saved = 1 - _session_wall_s(50.0, 216.0, 2.0) / _session_wall_s(50.0, 216.0)
    assert b200["saved at 2× decode"] == pytest.approx(saved, rel=1e-9)
    # The sentence a reader takes away, per chip at its point nearest the target speed (50 tok/s/user).
    sentences = [block.value for block in app.markdown if "faster decode saves" in block.value]
    assert any(f"saves {saved:.1%} of this agent's session time on b200 at 50 tok/s/user" in s for s in sentences)
    assert any("on mi355x" in s and "imported" in s for s in sentences)
    assert any("Assumptions" in caption.value for caption in app.caption)


def test_a_larger_speedup_saves_more(seeded_hub: str) -> None:
    link = {"trace": "sample_trace.json", "model": "deepseek-r1", "precision": "fp8"}
    two = _table(open_page("fast_tokens", {**link, "k": "2"}, from_overview=True))
    four = _table(open_page("fast_tokens", {**link, "k": "4"}, from_overview=True))
    assert (four["saved at 4× decode"].to_numpy() > two["saved at 2× decode"].to_numpy()).all()


def test_an_empty_database_still_shows_the_sessions_own_split(hub_database: str) -> None:
    app = open_page("fast_tokens", from_overview=True)
    assert {metric.label for metric in app.metric} >= {"Wall time", "Model-time share"}
    assert any("No results to serve this session at yet" in info.value for info in app.info)


def test_a_stored_replay_of_the_trace_is_shown_beside_the_models_session_time(hub_database: str) -> None:
    # One replay of the 6-request session at time scale 0.01, one live session: its median TTFT 201 ms and TPOT
    # 10 ms (the fixture's point at 100 tok/s/user), 3 session trees completed in a median 9.0 s.
    seeder = _Seeder(hub_database)
    workload = {"kind": "agentic-replay", "trace": str(SAMPLE), "concurrency": [1], "time_scale": 0.01}
    recipe = seeder.recipe(_snapshot("replay-sample", "b200", "vllm", "deepseek-r1", "fp8", {"tp": 8}, workload))
    replayed = {"replay": {"session_time_s": {"n": 3, "mean": 9.0, "p50": 9.0, "p90": 9.5, "p99": 9.9, "std": 0.3},
                           "sessions_completed": 3}}  # fmt: skip
    seeder.points(seeder.sweep("replays"), recipe, DAY0, [(1, 100.0, 50.0)], agentic={1: replayed})
    seeder.engine.dispose()
    app = open_page("fast_tokens", {"trace": "sample_trace.json"}, from_overview=True)
    table = next(frame.value for frame in app.dataframe if "model's session s" in frame.value.columns)
    (row,) = table.to_dict("records")
    # By hand: with one live session the whole system is that tree, so each think time is capped at 10 s before
    # scaling; each request takes 201 ms plus (its output tokens - 1) x 10 ms.
    requests = json.loads(SAMPLE.read_text())["requests"]
    expected = sum(min(r["think_time"], 10.0) * 0.01 + 0.201 + (r["out"] - 1) * 0.010 for r in requests)
    assert row["measured session s (p50)"] == 9.0 and row["sessions completed"] == 3
    assert row["model's session s"] == pytest.approx(expected, rel=1e-9)
