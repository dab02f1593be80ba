"""Scheduled sweeps: the schedule file's errors, due and missed slots on fake clocks, the scheduler loop."""

from __future__ import annotations

import io
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from orchestrator.cli import schedule as schedule_commands
from orchestrator.schedule import (
    LATE_TOLERANCE,
    MAX_SLOTS_EXAMINED,
    ScheduleEntry,
    ScheduleProgress,
    ScheduleState,
    StateStore,
    SweepInterrupted,
    apply_decisions,
    check_recipes,
    decide,
    load_schedule_file,
    plan_due,
    run_now,
    run_scheduler,
    upcoming_slots,
)
from recipes.errors import RecipeError
from tests.conftest import ROOT

T = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)  # a Sunday, 10:00 UTC


def at(hour: int, minute: int = 0, second: int = 0, day: int = 29) -> datetime:
    return datetime(2026, 11, day, hour, minute, second, tzinfo=UTC)


def hourly(**changes: object) -> ScheduleEntry:
    return ScheduleEntry.model_validate({"name": "hourly", "cron": "0 * * * *", "recipes": ["r.yaml"], **changes})


def fired_at(moment: datetime) -> ScheduleProgress:
    return ScheduleProgress(accounted_through=moment, last_fired=moment)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test gets its own state directory (state files are named after the schedule file's stem)."""
    path = tmp_path / "home"
    monkeypatch.setenv("INFERSWEEP_HOME", str(path))
    return path


def write_schedule(directory: Path, body: str, name: str = "sched.yaml") -> Path:
    path = directory / name
    path.write_text(body)
    return path


def schedule_error(path: Path) -> str:
    with pytest.raises(RecipeError) as caught:
        load_schedule_file(path)
    assert caught.value.retryable is False
    return str(caught.value)


class FakeClock:
    """A clock that only moves when the scheduler sleeps or a fake sweep takes time."""

    def __init__(self, start: datetime, stop_at: datetime | None = None) -> None:
        self.now = start
        self.stop_at = stop_at
        self.sleeps: list[float] = []

    def __call__(self) -> datetime:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += timedelta(seconds=seconds)
        if self.stop_at is not None and self.now >= self.stop_at:
            raise KeyboardInterrupt


class FakeLauncher:
    """Stands in for `infersweep run`: records the command, takes some time, returns an exit code."""

    def __init__(self, clock: FakeClock, exit_codes: list[int] | None = None, duration_s: float = 600) -> None:
        self.clock = clock
        self.exit_codes = list(exit_codes or [])
        self.duration = timedelta(seconds=duration_s)
        self.commands: list[list[str]] = []

    def __call__(self, command: list[str]) -> int:
        self.commands.append(command)
        self.clock.now += self.duration
        return self.exit_codes.pop(0) if self.exit_codes else 0

    @property
    def sweeps(self) -> list[str]:
        return [command[command.index("--sweep") + 1] for command in self.commands]


def quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


# --- The schedule file -----------------------------------------------------------------------------


def test_example_schedule_file_validates_and_its_recipes_load() -> None:
    schedules = load_schedule_file(ROOT / "schedules" / "nightly.yaml")
    (nightly,) = schedules.entries
    assert (nightly.name, nightly.cron, nightly.timezone, nightly.catch_up) == ("nightly", "0 2 * * *", "UTC", "report")
    assert schedules.recipe_paths(nightly) == [ROOT / "recipes" / "examples" / "tiny-llama-simulated.yaml"]
    check_recipes(schedules, schedules.entries)
    assert upcoming_slots(nightly, T, 3) == [
        at(2, day=30),
        at(2, day=30) + timedelta(days=1),
        datetime(2026, 12, 2, 2, tzinfo=UTC),
    ]


def test_bad_cron_names_file_field_and_value(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").touch()
    path = write_schedule(tmp_path, "schedules:\n  - name: nightly\n    cron: '61 2 * * *'\n    recipes: [r.yaml]\n")
    assert schedule_error(path) == (
        f"{path}: invalid schedule file\n"
        "  field 'schedules[0].cron': got '61 2 * * *'; expected: a valid cron expression, e.g. '0 2 * * *' for "
        "02:00 daily ([61 2 * * *] is not acceptable, out of range)"
    )


def test_cron_must_have_five_fields_and_fire(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").touch()
    body = (
        "schedules:\n"
        "  - {name: seconds, cron: '0 0 2 * * *', recipes: [r.yaml]}\n"
        "  - {name: never, cron: '0 2 30 2 *', recipes: [r.yaml]}\n"
        "  - {name: macro, cron: '@daily', recipes: [r.yaml]}\n"
    )
    assert schedule_error(write_schedule(tmp_path, body)).splitlines()[1:] == [
        "  field 'schedules[0].cron': got '0 0 2 * * *'; expected: a 5-field cron expression "
        "'minute hour day-of-month month day-of-week' (found 6 fields)",
        "  field 'schedules[1].cron': got '0 2 30 2 *'; expected: a cron expression that fires (no date matches it)",
        "  field 'schedules[2].cron': got '@daily'; expected: a 5-field cron expression "
        "'minute hour day-of-month month day-of-week' (found 1 fields)",
    ]


def test_missing_recipe_names_file_field_value_and_where_it_looked(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").touch()
    path = write_schedule(
        tmp_path, "schedules:\n  - name: nightly\n    cron: '0 2 * * *'\n    recipes: [r.yaml, gone.yaml]\n"
    )
    assert schedule_error(path) == (
        f"{path}: invalid schedule file\n"
        "  field 'schedules[0].recipes[1]': got 'gone.yaml'; expected an existing recipe file or directory, "
        f"relative to the schedule file (looked for {tmp_path / 'gone.yaml'})"
    )


def test_unknown_field_is_named(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").touch()
    path = write_schedule(
        tmp_path, "schedules:\n  - name: nightly\n    cron: '0 2 * * *'\n    recipes: [r.yaml]\n    catchup: run-once\n"
    )
    assert schedule_error(path) == (
        f"{path}: invalid schedule file\n"
        "  field 'schedules[0].catchup': got 'run-once'; unknown key (not in the schedule file schema; check the spelling)"
    )


def test_other_bad_values_are_each_named(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").touch()
    body = (
        "schedules:\n"
        "  - {name: Nightly, cron: '0 2 * * *', recipes: [r.yaml], timezone: Mars/Olympus, catch_up: always,"
        " max_attempts: 0}\n"
    )
    assert schedule_error(write_schedule(tmp_path, body)).splitlines()[1:] == [
        "  field 'schedules[0].name': got 'Nightly'; expected: String should match pattern '^[a-z0-9][a-z0-9-]*$'",
        "  field 'schedules[0].max_attempts': got 0; expected: Input should be greater than or equal to 1",
        "  field 'schedules[0].timezone': got 'Mars/Olympus'; expected: an IANA time zone name, e.g. 'UTC' or "
        "'Europe/Paris'",
        "  field 'schedules[0].catch_up': got 'always'; expected: Input should be 'report' or 'run-once'",
    ]


def test_duplicate_names_and_empty_recipes(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").touch()
    duplicate = write_schedule(
        tmp_path,
        "schedules:\n  - {name: n, cron: '0 2 * * *', recipes: [r.yaml]}\n  - {name: n, cron: '0 3 * * *', recipes: [r.yaml]}\n",
    )
    assert schedule_error(duplicate).splitlines()[1] == (
        "  field 'schedules[1].name': got 'n'; expected a unique name (schedules[0] has it)"
    )
    empty = write_schedule(tmp_path, "schedules:\n  - {name: n, cron: '0 2 * * *', recipes: []}\n", "empty.yaml")
    assert "field 'schedules[0].recipes': got []" in schedule_error(empty)


# --- Due and missed slots (pure) -------------------------------------------------------------------


def test_a_slot_noticed_on_time_runs_as_a_new_sweep_named_after_it() -> None:
    decision = decide(hourly(), fired_at(at(10)), at(11, 0, 30))
    assert decision.run is not None
    assert (decision.run.slot, decision.run.trigger, decision.run.sweep) == (at(11), "slot", "hourly-20261129T1100Z")
    assert decision.missed == ()
    assert decide(hourly(), fired_at(at(10)), at(10, 30)).run is None


def test_tolerance_boundary() -> None:
    assert decide(hourly(), fired_at(at(10)), at(11) + LATE_TOLERANCE).run is not None
    late = decide(hourly(), fired_at(at(10)), at(11) + LATE_TOLERANCE + timedelta(seconds=1))
    assert late.run is None and late.missed == (at(11),)


def test_first_sight_has_no_history_to_miss() -> None:
    just_after = decide(hourly(), None, at(11, 2))
    assert just_after.run is not None and just_after.run.slot == at(11) and just_after.missed == ()
    later = decide(hourly(), None, at(11, 30))
    assert later.run is None and later.missed == ()
    assert decide(hourly(), ScheduleProgress(last_fired=at(9)), at(11, 30)).missed == ()  # only manual runs so far


def test_more_than_one_slot_elapsed_runs_the_latest_and_reports_the_rest() -> None:
    decision = decide(hourly(), fired_at(at(10)), at(12, 1))
    assert decision.run is not None and decision.run.slot == at(12)
    assert decision.missed == (at(11),)


def test_process_down_for_three_slots_reports_three_missed_and_runs_nothing() -> None:
    state = ScheduleState(schedules={"hourly": fired_at(at(10))})
    decisions = plan_due([hourly()], state, at(13, 30))
    assert [(d.run, d.missed) for d in decisions] == [(None, (at(11), at(12), at(13)))]

    assert apply_decisions(state, decisions, at(13, 30)) == []
    assert [(m.slot, m.reason, m.covered_by) for m in state.missed] == [
        (at(11), "late", None),
        (at(12), "late", None),
        (at(13), "late", None),
    ]
    assert state.schedules["hourly"] == ScheduleProgress(accounted_through=at(13, 30), last_fired=at(10))
    # Reported once: the next look finds nothing new, and the next slot runs on time.
    assert plan_due([hourly()], state, at(13, 40))[0].missed == ()
    assert plan_due([hourly()], state, at(14, 0, 5))[0].run is not None


def test_run_once_policy_runs_one_catch_up_sweep_for_the_missed_slots() -> None:
    entry = hourly(catch_up="run-once")
    state = ScheduleState(schedules={"hourly": fired_at(at(10))})
    decisions = plan_due([entry], state, at(13, 30))
    run = decisions[0].run
    assert run is not None
    assert (run.slot, run.trigger, run.sweep) == (at(13), "catch-up", "hourly-20261129T1300Z")
    assert decisions[0].missed == (at(11), at(12), at(13))

    (record,) = apply_decisions(state, decisions, at(13, 30))
    assert (record.sweep, record.trigger, record.exit_code) == ("hourly-20261129T1300Z", "catch-up", None)
    assert [m.covered_by for m in state.missed] == ["hourly-20261129T1300Z"] * 3
    assert state.schedules["hourly"].last_fired == at(13)
    assert plan_due([entry], state, at(13, 45))[0].run is None  # one catch-up, not one per look


def test_cron_is_read_in_the_schedule_timezone_and_named_in_utc() -> None:
    paris = ScheduleEntry(name="nightly", cron="0 2 * * *", recipes=["r.yaml"], timezone="Europe/Paris")
    assert upcoming_slots(paris, T, 1) == [at(1, day=30)]  # 02:00 CET is 01:00 UTC
    decision = decide(paris, fired_at(at(1, day=29)), at(1, 0, 10, day=30))
    assert decision.run is not None and decision.run.sweep == "nightly-20261130T0100Z"


def test_a_very_long_outage_lists_only_the_latest_slots() -> None:
    every_minute = hourly(cron="* * * * *")
    decision = decide(every_minute, fired_at(T - timedelta(days=30)), T)
    assert decision.run is not None and decision.run.slot == T
    assert len(decision.missed) == MAX_SLOTS_EXAMINED - 1 and decision.older_missed_left_out
    assert decision.missed[-1] == T - timedelta(minutes=1)


def test_a_clock_set_back_does_not_fire_accounted_slots_again() -> None:
    decision = decide(hourly(), fired_at(at(12)), at(11, 0, 10))
    assert decision.run is None and decision.missed == () and decision.accounted_through == at(12)


# --- State file ------------------------------------------------------------------------------------


def test_state_is_written_atomically_and_a_corrupt_one_is_named(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "schedules" / "s.json")
    assert store.read() == ScheduleState()
    with store.transaction() as state:
        state.schedules["hourly"] = fired_at(at(10))
    assert sorted(p.name for p in store.path.parent.iterdir()) == ["s.json", "s.json.lock"]  # no temp file left
    assert json.loads(store.path.read_text())["schedules"]["hourly"]["accounted_through"] == "2026-11-29T10:00:00Z"

    with pytest.raises(ZeroDivisionError), store.transaction() as state:
        state.schedules.clear()
        _ = 1 / 0
    assert "hourly" in store.read().schedules  # a failed change is not written

    store.path.write_text("{not json")
    with pytest.raises(RecipeError) as caught:
        store.read()
    assert str(caught.value).startswith(f"{store.path}: invalid schedule state file\n  field 'line 1, column 2'")
    assert "delete the file to start over" in str(caught.value)


# --- The scheduler loop and manual runs ------------------------------------------------------------


def hourly_file(directory: Path, recipe: Path, extra: str = "") -> Path:
    return write_schedule(
        directory, f"schedules:\n  - name: hourly\n    cron: '0 * * * *'\n    recipes: [{recipe.name}]\n{extra}"
    )


def test_loop_sleeps_until_each_slot_fires_it_and_records_exit_codes(home: Path, tmp_path: Path, write_recipe) -> None:
    recipe = write_recipe()
    file = hourly_file(tmp_path, recipe, "    max_attempts: 3\n")
    clock = FakeClock(at(9, 59), stop_at=at(11, 30))
    launcher = FakeLauncher(clock, exit_codes=[0, 1])

    code = run_scheduler(file, once=False, now_fn=clock, sleep_fn=clock.sleep, launcher=launcher, console=quiet())

    assert code == 130  # Ctrl-C while waiting for 12:00
    assert launcher.sweeps == ["hourly-20261129T1000Z", "hourly-20261129T1100Z"]
    assert launcher.commands[0] == [
        sys.executable, "-m", "orchestrator.cli", "run", str(recipe.resolve()),
        "--sweep", "hourly-20261129T1000Z", "--max-attempts", "3",
    ]  # fmt: skip
    assert max(clock.sleeps) <= 60
    state = StateStore(home / "schedules" / "sched.json").read()
    assert [(r.sweep, r.trigger, r.exit_code, r.started_at, r.finished_at) for r in state.runs] == [
        ("hourly-20261129T1000Z", "slot", 0, at(10), at(10, 10)),
        ("hourly-20261129T1100Z", "slot", 1, at(11), at(11, 10)),
    ]
    assert state.missed == []


def test_once_after_three_missed_slots_warns_records_and_runs_nothing(home: Path, tmp_path: Path, write_recipe) -> None:
    file = hourly_file(tmp_path, write_recipe())
    with StateStore(home / "schedules" / "sched.json").transaction() as state:
        state.schedules["hourly"] = fired_at(at(10))
    clock = FakeClock(at(13, 30))
    launcher = FakeLauncher(clock)
    console = Console(record=True, width=400, file=io.StringIO())

    assert run_scheduler(file, once=True, now_fn=clock, sleep_fn=clock.sleep, launcher=launcher, console=console) == 0

    assert launcher.commands == []
    output = console.export_text()
    assert "warning: schedule hourly missed 3 slot(s)" in output
    assert "2026-11-29 11:00 UTC, 2026-11-29 12:00 UTC, 2026-11-29 13:00 UTC" in output
    assert "nothing due now; next slot 2026-11-29 14:00 UTC" in output
    state = StateStore(home / "schedules" / "sched.json").read()
    assert [(m.slot, m.reason) for m in state.missed] == [(at(11), "late"), (at(12), "late"), (at(13), "late")]


def test_once_with_run_once_policy_runs_one_catch_up_and_fails_with_the_sweep(
    home: Path, tmp_path: Path, write_recipe
) -> None:
    file = hourly_file(tmp_path, write_recipe(), "    catch_up: run-once\n")
    with StateStore(home / "schedules" / "sched.json").transaction() as state:
        state.schedules["hourly"] = fired_at(at(10))
    clock = FakeClock(at(13, 30))
    launcher = FakeLauncher(clock, exit_codes=[1])

    assert run_scheduler(file, once=True, now_fn=clock, sleep_fn=clock.sleep, launcher=launcher, console=quiet()) == 1

    assert launcher.sweeps == ["hourly-20261129T1300Z"]
    state = StateStore(home / "schedules" / "sched.json").read()
    assert [(r.trigger, r.exit_code) for r in state.runs] == [("catch-up", 1)]
    assert [m.covered_by for m in state.missed] == ["hourly-20261129T1300Z"] * 3


def test_ctrl_c_during_a_sweep_records_it_and_the_slots_not_started(home: Path, tmp_path: Path, write_recipe) -> None:
    recipe = write_recipe()
    file = write_schedule(
        tmp_path,
        f"schedules:\n  - {{name: first, cron: '0 2 * * *', recipes: [{recipe.name}]}}\n"
        f"  - {{name: second, cron: '0 2 * * *', recipes: [{recipe.name}]}}\n",
    )
    clock = FakeClock(at(2, 0, 20))

    def interrupted(command: list[str]) -> int:
        raise SweepInterrupted(130)

    console = Console(record=True, width=400, file=io.StringIO())
    assert (
        run_scheduler(file, once=True, now_fn=clock, sleep_fn=clock.sleep, launcher=interrupted, console=console) == 130
    )
    assert f"Resume it with: infersweep run {recipe.resolve()} --sweep first-20261129T0200Z" in console.export_text()

    state = StateStore(home / "schedules" / "sched.json").read()
    assert [(r.sweep, r.exit_code) for r in state.runs] == [("first-20261129T0200Z", 130)]
    assert [(m.schedule, m.slot, m.reason) for m in state.missed] == [("second", at(2), "interrupted")]


def test_run_now_fires_the_named_schedule_with_its_options(home: Path, tmp_path: Path, write_recipe) -> None:
    recipe = write_recipe()
    file = hourly_file(tmp_path, recipe, "    ray_address: ray://head:10001\n")
    clock = FakeClock(at(14, 7, 45))
    launcher = FakeLauncher(clock, exit_codes=[2])

    assert run_now(file, "hourly", now_fn=clock, launcher=launcher, console=quiet()) == 2

    assert launcher.commands == [
        [
            sys.executable, "-m", "orchestrator.cli", "run", str(recipe.resolve()),
            "--sweep", "hourly-20261129T1407Z", "--ray-address", "ray://head:10001",
        ]
    ]  # fmt: skip
    state = StateStore(home / "schedules" / "sched.json").read()
    assert [(r.trigger, r.slot, r.exit_code) for r in state.runs] == [("manual", None, 2)]
    # A manual run does not account for slots: a scheduler started later still sees this schedule as new.
    assert state.schedules["hourly"] == ScheduleProgress(accounted_through=None, last_fired=at(14, 7, 45))


def test_run_now_of_an_unknown_schedule_names_it(home: Path, tmp_path: Path, write_recipe) -> None:
    file = hourly_file(tmp_path, write_recipe())
    with pytest.raises(RecipeError) as caught:
        run_now(file, "nighly", launcher=FakeLauncher(FakeClock(T)), console=quiet())
    assert str(caught.value) == (
        f"{file}: invalid schedule file\n  field 'schedules[].name': got 'nighly'; expected one of: hourly"
    )


# --- The typer command -----------------------------------------------------------------------------


def schedule_app() -> typer.Typer:
    app = typer.Typer()
    app.command("schedule")(schedule_commands.schedule)
    app.command("other")(lambda: None)  # two commands, so `schedule` is a subcommand as in `infersweep`
    return app


def test_list_prints_next_fire_times_and_missed_runs(home: Path, tmp_path: Path, write_recipe) -> None:
    file = hourly_file(tmp_path, write_recipe())
    state_path = home / "schedules" / "sched.json"
    with StateStore(state_path).transaction() as state:
        state.schedules["hourly"] = fired_at(at(10))
        apply_decisions(state, plan_due([hourly()], state, at(13, 30)), at(13, 30))
    before = state_path.read_bytes()

    result = CliRunner().invoke(schedule_app(), ["schedule", str(file), "--list"])

    assert result.exit_code == 0, result.output
    upcoming = upcoming_slots(hourly(), datetime.now(UTC), 3)
    for slot in upcoming:
        assert slot.strftime("%Y-%m-%d %H:%M UTC") in result.output
    assert "hourly: 2026-11-29 11:00 UTC (late; reported only)" in result.output
    assert "hourly: 2026-11-29 13:00 UTC (late; reported only)" in result.output
    assert state_path.read_bytes() == before  # --list only reads


def test_cli_rejects_combined_modes_and_reports_bad_files(home: Path, tmp_path: Path) -> None:
    combined = CliRunner().invoke(schedule_app(), ["schedule", "x.yaml", "--once", "--run-now", "n"])
    assert combined.exit_code == 2
    assert "--once and --run-now cannot be combined" in combined.output
    missing = CliRunner().invoke(schedule_app(), ["schedule", str(tmp_path / "none.yaml"), "--list"])
    assert missing.exit_code == 2
    assert "(RecipeError, not retryable)" in missing.output and "none.yaml: invalid schedule file" in missing.output
