"""The replayer's clock: think-time caps, idle compression, time scale, and where subagents start."""

from __future__ import annotations

import json

import pytest

from recipes.schema import ReplaySettings
from runners.loadgen.client import Endpoint
from runners.loadgen.replay import Replayer, SessionId
from runners.traces.formats import parse_trace
from runners.traces.planner import ReplayShape, replay_order

TRACE = {
    "id": "tiny", "block_size": 4,
    "requests": [
        {"t": 0.0, "type": "s", "in": 9, "out": 1, "hash_ids": [1, 2], "think_time": 0.0},
        {"type": "subagent", "t": 1.5, "requests": [{"t": 0.0, "type": "s", "in": 5, "out": 1, "hash_ids": [7]}]},
        {"t": 400.0, "type": "s", "in": 13, "out": 1, "hash_ids": [1, 2, 3], "think_time": 400.0},
    ],
}  # fmt: skip


def _replayer(**settings: float) -> Replayer:
    trace = parse_trace(json.dumps(TRACE).encode(), "tiny.json")
    return Replayer(
        trace, Endpoint(base_url="http://127.0.0.1:9", model="m"), ReplaySettings(duration_s=1, **settings), 1
    )


def test_a_recorded_gap_is_only_scaled_never_capped_on_its_own() -> None:
    # AgentX shortens no gap by itself: the idle caps advance pending timers instead (tests/.../test_idle_caps.py).
    replayer = _replayer(think_cap_s=300, idle_cap_s=10, time_scale=0.5)
    assert replayer._gap(400.0) == pytest.approx(400 * 0.5)
    assert replayer._gap(4.0) == pytest.approx(4 * 0.5)
    assert (replayer.caps.system_cap_s, replayer.caps.tree_cap_s) == (10 * 0.5, 300 * 0.5)


def test_subagent_starts_at_its_recorded_offset_after_the_request_it_follows() -> None:
    trace = parse_trace(json.dumps(TRACE).encode(), "tiny.json")
    root = trace.sessions[0]
    (child,) = root.subagents
    assert child.spawned_after == 0 and root.spawn_delay(child) == pytest.approx(1.5)
    # The planner replays the same order: the subagent's request right after the parent's first request.
    order = replay_order(trace, ReplayShape(concurrency=1, warmup=False), requests_per_lane=3)
    assert [(step.session.path, step.turn) for step in order] == [("0", 0), ("0/0", 0), ("0", 1)]


def test_a_session_id_says_its_point_copy_and_path_and_names_its_parent() -> None:
    root, child = SessionId(0, 16, 3, "0"), SessionId(0, 16, 3, "0/2")
    assert (str(root), str(child)) == ("0.16-3-0", "0.16-3-0/2")
    assert SessionId.parse("0.16-3-0/2") == child and SessionId.parse(str(root)) == root
    assert (root.parent, child.parent, SessionId.parse("7.4-0-1/0/5").parent) == (None, "0.16-3-0", "7.4-0-1/0")
