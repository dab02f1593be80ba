"""A session's wall time from its trace's records, worked by hand, and the what-if's properties."""

from __future__ import annotations

import itertools
import json
from typing import Any

import numpy as np
import pytest

from recipes.errors import ConfigurationError
from runners.traces.formats import load_trace, parse_trace
from runners.traces.workflow import decode_speedup, model_share, saving, trace_times, tree_time
from tests.conftest import TRACES

SAMPLE = TRACES / "claude-code-weka" / "sample_trace.json"


def _trace(requests: list[dict[str, Any]]) -> Any:
    return parse_trace(json.dumps({"id": "hand", "block_size": 4, "requests": requests}).encode(), "hand.json")


def _request(t: float, api: float | None, think: float | None = None, **more: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"t": t, "type": "s", "in": 8, "out": 4, "hash_ids": [1, 2]}
    if api is not None:
        record["api_time"] = api
    if think is not None:
        record["think_time"] = think
    return record | more


def test_the_shipped_session_is_a_fifth_model_time_as_recorded_and_capped() -> None:
    raw = json.loads(SAMPLE.read_text())["requests"]
    api = sum(request["api_time"] for request in raw)  # 160.17 s
    # The idle gaps are the recorded ends to starts (t and api_time, as AgentX replays them), so the rebuilt wall
    # time is the recorded one: the last request's t plus its response time, 802.04 s. (The whole-second
    # `think_time` fields sum to 641.0 s, 0.87 s less.)
    wall = raw[-1]["t"] + raw[-1]["api_time"]
    think = wall - api  # 641.87 s, one gap of 799 - 470 - 11.09 = 317.91 s among them
    (tree,) = trace_times(load_trace(SAMPLE))
    assert (tree.model_s, tree.tool_s, tree.wall_s) == pytest.approx((api, think, wall))
    assert tree.model_share == pytest.approx(api / wall) and round(tree.model_share, 3) == 0.200
    # AgentX's 300 s per-tree idle cap shortens the 317.91 s gap by 17.91 s and nothing else.
    (capped,) = trace_times(load_trace(SAMPLE), idle_cap_s=300)
    assert capped.wall_s == pytest.approx(wall - 17.91) and capped.model_s == pytest.approx(api)
    assert capped.model_share == pytest.approx(api / (wall - 17.91))


def test_a_subagent_overlapping_its_parent_runs_on_its_own_timeline() -> None:
    # Parent: request 0 sent at 0 takes 10 s; request 1 is due 5 s after it ends (t = 15) and takes 2 s.
    # A subagent spawned 3 s after request 0 was SENT (t = 3): its requests take 4 s and 6 s with 1 s between,
    # so it is in flight 3-7 and 8-14, while the parent answers (0-10) and thinks (10-15).
    # In flight: 0-14 (parent 0-10, child 3-7 and 8-14) and 15-17: model 16 s of a 17 s wall.
    trace = _trace([
        _request(0.0, 10.0),
        {"t": 3.0, "type": "subagent", "requests": [_request(0.0, 4.0), _request(5.0, 6.0, think=1.0)]},
        _request(15.0, 2.0, think=5.0),
    ])  # fmt: skip
    (tree,) = trace_times(trace)
    assert (tree.wall_s, tree.model_s, tree.tool_s, tree.requests) == pytest.approx((17.0, 16.0, 1.0, 4))


def test_the_idle_cap_advances_every_pending_timer_together() -> None:
    # Request 0 (0-1 s); a subagent due 50 s after that send, the parent's next turn 60 s after its end (t = 61).
    # Nothing is in flight from t = 1; at t = 11 the tree has been idle for the 10 s cap, and both timers advance
    # by 39 s together: the subagent goes at 11 (in flight to 12), the parent's turn is now due at 22, 11 s after
    # the subagent as recorded. From 12 the tree is idle again, 10 s until 22: not over the cap, so it goes at 22.
    trace = _trace([
        _request(0.0, 1.0),
        {"t": 50.0, "type": "subagent", "requests": [_request(0.0, 1.0)]},
        _request(61.0, 1.0, think=60.0),
    ])  # fmt: skip
    (recorded,) = trace_times(trace)
    (capped,) = trace_times(trace, idle_cap_s=10)
    assert recorded.wall_s == pytest.approx(62.0)
    assert capped.wall_s == pytest.approx(23.0) and capped.model_s == pytest.approx(3.0)


def test_faster_decode_keeps_the_recorded_time_to_first_token() -> None:
    trace = _trace([_request(0.0, 10.0, ttft=2.0), _request(20.0, 4.0, think=10.0)])
    (base,) = trace_times(trace)
    (faster,) = trace_times(trace, decode_speedup(2))
    # Request 0: 2 + 8 / 2 = 6 s; request 1 (no ttft recorded: all decode): 4 / 2 = 2 s. Think 10 s stays.
    assert base.wall_s == pytest.approx(24.0) and faster.wall_s == pytest.approx(18.0)


def test_a_request_without_a_recorded_response_time_is_named() -> None:
    trace = _trace([_request(0.0, 1.0), _request(5.0, None, think=4.0)])
    with pytest.raises(ConfigurationError, match=r"request 0:1: no recorded api_time"):
        trace_times(trace)


def _random_tree(rng: np.random.Generator, subagents: bool, ttft: bool = True) -> Any:
    def session(turns: int, ttft: bool) -> list[dict[str, Any]]:
        requests, t = [], 0.0
        for turn in range(turns):
            api = float(rng.uniform(0.5, 30))
            think = float(rng.choice([0.0, rng.uniform(0, 20), rng.uniform(200, 600)])) if turn else 0.0
            t += think
            extra = {"ttft": float(rng.uniform(0, api))} if ttft and rng.random() < 0.5 else {}
            requests.append(_request(t, api, think=think, **extra))
            t += api
        return requests

    root = session(int(rng.integers(1, 12)), ttft=ttft)
    if subagents:
        for _ in range(int(rng.integers(1, 4))):
            spawn = float(rng.uniform(0, max(request["t"] for request in root)))
            root.append({"t": spawn, "type": "subagent", "requests": session(int(rng.integers(1, 6)), ttft=False)})
        root.sort(key=lambda item: item["t"])
    return _trace(root)


@pytest.mark.parametrize("cap", [None, 300.0, 10.0])
@pytest.mark.parametrize("seed", range(40))
def test_savings_grow_with_the_speedup_and_never_exceed_the_model_time_share(seed: int, cap: float | None) -> None:
    rng = np.random.default_rng(seed)
    trace = _random_tree(rng, subagents=seed % 2 == 1)
    base = trace_times(trace, idle_cap_s=cap)
    share = model_share(base)
    savings = [saving(base, trace_times(trace, decode_speedup(factor), cap)) for factor in (1, 1.5, 2, 4, 16, 1e6)]
    assert savings[0] == pytest.approx(0.0, abs=1e-12)
    assert all(later >= earlier - 1e-9 for earlier, later in itertools.pairwise(savings)), savings
    assert all(value <= share + 1e-9 for value in savings), (savings, share)


@pytest.mark.parametrize("cap", [None, 300.0])
@pytest.mark.parametrize("seed", range(20))
def test_for_one_agent_the_saving_tends_to_the_model_time_share(seed: int, cap: float | None) -> None:
    # One agent, no subagent, no recorded TTFT: infinitely fast decode saves all its model time and no more.
    trace = _random_tree(np.random.default_rng(seed), subagents=False, ttft=False)
    (base,) = trace_times(trace, idle_cap_s=cap)
    savings = [saving([base], [tree_time(trace.sessions[0], 0, decode_speedup(k), cap)]) for k in (10, 1e3, 1e9)]
    assert abs(savings[-1] - base.model_share) < 1e-6 and savings[0] < savings[1] <= savings[2] + 1e-12
