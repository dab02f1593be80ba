"""How many client processes a replay splits its lanes among (runners/loadgen/replay.py, replay_processes)."""

from __future__ import annotations

import os

import pytest
from pydantic import ValidationError

from recipes.schema import AgenticReplayWorkload, ReplaySettings
from runners.loadgen.replay import LANES_PER_PROCESS, replay_processes


@pytest.fixture
def four_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3}, raising=False)


@pytest.mark.parametrize(
    ("concurrency", "expected"),
    [(1, 1), (LANES_PER_PROCESS, 1), (LANES_PER_PROCESS + 1, 2), (3 * LANES_PER_PROCESS, 3), (100_000, 4)],
)
def test_by_default_one_process_per_256_live_sessions_up_to_the_cores_it_may_use(
    four_cores: None, concurrency: int, expected: int
) -> None:
    assert replay_processes(ReplaySettings(), concurrency) == expected


def test_a_set_count_is_kept_but_never_above_the_lanes(four_cores: None) -> None:
    assert replay_processes(ReplaySettings(processes=8), 1_000) == 8  # more than the cores: asked for, so kept
    assert replay_processes(ReplaySettings(processes=8), 3) == 3


def test_an_open_loop_timeline_replays_in_one_process(four_cores: None) -> None:
    assert replay_processes(ReplaySettings(mode="timeline"), 10_000) == 1
    with pytest.raises(ValidationError, match=r"processes\n.*an open-loop timeline replays in one process"):
        ReplaySettings(mode="timeline", processes=2)


def test_the_setting_leaves_a_workload_as_it_was_stored_while_it_holds_its_default() -> None:
    workload = AgenticReplayWorkload(kind="agentic-replay", trace="t.json", concurrency=[1])
    assert "processes" not in workload.model_dump()
    split = AgenticReplayWorkload(kind="agentic-replay", trace="t.json", concurrency=[1], processes=2)
    assert split.model_dump()["processes"] == 2
