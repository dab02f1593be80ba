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


def test_the_split_is_not_the_points_identity_so_an_explicit_and_an_automatic_2_are_one_point(four_cores: None) -> None:
    """`processes` is how the client runs (ReplaySettings.not_in_identity): a recipe asking 2 processes and one
    leaving it to the default (2 at 257-512 live sessions here) have one fingerprint and the same Point keys, so a
    recipe moved to a machine with more cores resumes; the count each Point ran with is stored with it
    (ReplayStats.client_processes, tests/integration/loadgen/test_replay.py)."""
    from orchestrator.plan import point_key
    from recipes.loader import fingerprint_of, load_recipe
    from runners.loadgen.records import ReplayPoint
    from tests.conftest import ROOT

    recipe = load_recipe(ROOT / "recipes" / "local" / "agentic-tiny-llama-cpu.yaml").recipe
    automatic = recipe.workload.model_copy(update={"concurrency": [300], "processes": None})
    explicit = automatic.model_copy(update={"processes": 2})
    assert replay_processes(automatic, 300) == replay_processes(explicit, 300) == 2
    assert fingerprint_of(recipe.model_copy(update={"workload": automatic})) == fingerprint_of(
        recipe.model_copy(update={"workload": explicit})
    )
    assert fingerprint_of(recipe.model_copy(update={"workload": automatic})) != fingerprint_of(
        recipe.model_copy(update={"workload": automatic.model_copy(update={"duration_s": 7.0})})
    )  # what is measured still is
    settings = ReplaySettings.model_validate(automatic.model_dump(include=set(ReplaySettings.model_fields)))
    point = ReplayPoint(**settings.model_dump(), trace_path="t.json", trace_version="0" * 64, concurrency=300)
    assert point_key("f", point, 0) == point_key("f", point.model_copy(update={"processes": 2}), 0)
    assert point_key("f", point, 0) != point_key("f", point.model_copy(update={"concurrency": 301}), 0)
