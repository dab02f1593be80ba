"""Scheduled sweeps: a schedule file names cron slots, and each slot runs its recipes as a new sweep.

A schedule file (YAML, strict like every data file of the project) holds `schedules:`, a list of
entries: a `name`, a 5-field `cron` expression evaluated in the entry's `timezone`, the `recipes` to
run (paths relative to the schedule file), optional `ray_address` / `max_attempts` for `infersweep
run`, and a `catch_up` policy.

Timing rules (the pure core is `plan_due`; everything is stored and named in UTC):
- A slot is *due* when the scheduler looks at it within `LATE_TOLERANCE`; it then runs as sweep
  `<name>-<YYYYmmddTHHMMZ of the slot>`.
- A slot the scheduler finds later than that (the process was down, or busy with an earlier sweep),
  and every slot but the latest when several elapsed, is *missed*. A missed slot is never dropped
  silently: it is printed as a warning and appended to the state file's `missed` list. Under
  `catch_up: run-once` the missed slots are covered by one sweep (the on-time run when there is one,
  otherwise one catch-up sweep named after the latest missed slot); under `report` (the default)
  the scheduler just waits for the next slot.
- The first time a schedule is seen it has no history, so nothing before it counts as missed; a slot
  that passed less than `LATE_TOLERANCE` ago still runs (a scheduler started at 02:01 runs 02:00).

State lives in `data_dir()/schedules/<file stem>.json`: per schedule the time through which every slot
was accounted for and the last fired slot, every run with its exit code, every missed slot. It is
written atomically (temp file + os.replace) under an exclusive lock, so a manual `--run-now` and a
running scheduler can share it.

A run is `python -m orchestrator.cli run RECIPE... --sweep NAME` in a child process (no shell); the
child gets its own process group so that Ctrl-C reaches the scheduler alone, which forwards one SIGINT
per Ctrl-C and waits: the sweep stops its engines and keeps its finished points, as `infersweep run`
does on Ctrl-C.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, croniter
from pydantic import AwareDatetime, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError
from rich.console import Console

from recipes.errors import RecipeError
from recipes.strict import Strict, StrictModel
from recipes.yamlio import read_yaml, validation_problems
from runners.host.paths import data_dir

WHAT = "schedule file"
STATE_WHAT = "schedule state file"
# How late a slot may be noticed and still run as an on-time slot rather than count as missed.
LATE_TOLERANCE = timedelta(minutes=5)
# A schedule firing every minute that was down for a year has 500k slots: list only the latest ones.
MAX_SLOTS_EXAMINED = 1000
# Sleep in short steps so a suspended host or a changed clock is noticed soon after it resumes.
MAX_SLEEP_S = 60.0
# The state file keeps this many of the latest runs and missed slots; older entries are dropped.
HISTORY_LIMIT = 500
SWEEP_TIME_FORMAT = "%Y%m%dT%H%MZ"
EXIT_INTERRUPTED = 130

CatchUpPolicy = Literal["report", "run-once"]
RunTrigger = Literal["slot", "catch-up", "manual"]
MissReason = Literal["late", "interrupted"]

_NAME_PATTERN = r"^[a-z0-9][a-z0-9-]*$"
_UNKNOWN_KEY = "unknown key (not in the schedule file schema; check the spelling)"


# --- The schedule file ---------------------------------------------------------------------------


class ScheduleEntry(StrictModel):
    """One schedule: when to fire (cron in a time zone) and what each firing runs."""

    name: str = Field(
        ...,
        pattern=_NAME_PATTERN,
        max_length=64,
        description="Schedule name (lowercase letters, digits, '-'); sweeps are named <name>-<UTC time>.",
    )
    cron: str = Field(
        ...,
        description="5-field cron expression 'minute hour day-of-month month day-of-week', e.g. '0 2 * * *'.",
    )
    recipes: list[str] = Field(
        ...,
        min_length=1,
        description="Recipe files or directories to run, relative to the schedule file.",
    )
    ray_address: str | None = Field(
        None, min_length=1, description="Ray cluster for `infersweep run --ray-address` (default: RAY_ADDRESS)."
    )
    max_attempts: int | None = Field(
        None, ge=1, le=10, strict=True, description="Attempts per job for infrastructure faults (`--max-attempts`)."
    )
    timezone: str = Field(
        "UTC",
        description=(
            "IANA time zone the cron expression is read in (default UTC, which has no daylight-saving "
            "gaps or repeats); sweep names and the state file always use UTC."
        ),
    )
    catch_up: CatchUpPolicy = Field(
        "report",
        description=(
            "What a missed slot does: 'report' (warn and record it, then wait for the next slot) or "
            "'run-once' (also run one catch-up sweep covering all the missed slots)."
        ),
    )

    @field_validator("cron")
    @classmethod
    def _five_field_cron(cls, value: str) -> str:
        fields = value.split()
        if len(fields) != 5:
            raise PydanticCustomError(
                "cron_field_count",
                "a 5-field cron expression 'minute hour day-of-month month day-of-week' (found {count} fields)",
                {"count": len(fields)},
            )
        try:
            # Building the iterator checks the syntax; one step finds dates that never occur (30 Feb).
            croniter(value, datetime(2000, 1, 1, tzinfo=UTC)).get_next(datetime)
        except CroniterBadDateError as error:
            raise PydanticCustomError("cron_never", "a cron expression that fires (no date matches it)") from error
        except ValueError as error:  # croniter's CroniterError is a ValueError
            raise PydanticCustomError(
                "cron_syntax", "a valid cron expression, e.g. '0 2 * * *' for 02:00 daily ({reason})", {"reason": error}
            ) from error
        return " ".join(fields)

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as error:
            raise PydanticCustomError("timezone", "an IANA time zone name, e.g. 'UTC' or 'Europe/Paris'") from error
        return value

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


class ScheduleFile(StrictModel):
    """The whole of a schedule file."""

    schedules: list[ScheduleEntry] = Field(..., min_length=1, description="The schedules of this file.")


@dataclass(frozen=True)
class Schedules:
    """A validated schedule file: its entries and where relative recipe paths start."""

    path: Path
    entries: tuple[ScheduleEntry, ...]

    def recipe_paths(self, entry: ScheduleEntry) -> list[Path]:
        """Absolute recipe paths, so the sweep runs the same files whatever the working directory."""
        return [(self.path.parent / recipe).resolve() for recipe in entry.recipes]

    def entry(self, name: str) -> ScheduleEntry:
        for entry in self.entries:
            if entry.name == name:
                return entry
        known = ", ".join(entry.name for entry in self.entries)
        raise RecipeError(str(self.path), [("schedules[].name", name, f"expected one of: {known}")], what=WHAT)

    @property
    def state_path(self) -> Path:
        return state_path_for(self.path)


def load_schedule_file(path: Path) -> Schedules:
    """Read and validate a schedule file; every problem names the file, the field path and the value."""
    data = read_yaml(path, what=WHAT)
    try:
        parsed = ScheduleFile.model_validate(data)
    except ValidationError as error:
        invalid = [
            (field, value, _UNKNOWN_KEY if expected.startswith("unknown key") else expected)
            for field, value, expected in validation_problems(error, data)
        ]
        raise RecipeError(str(path), invalid, what=WHAT) from error

    problems: list[tuple[str, Any, str]] = []
    first_index: dict[str, int] = {}
    for index, entry in enumerate(parsed.schedules):
        if entry.name in first_index:
            problems.append(
                (
                    f"schedules[{index}].name",
                    entry.name,
                    f"expected a unique name (schedules[{first_index[entry.name]}] has it)",
                )
            )
        first_index.setdefault(entry.name, index)
        for recipe_index, recipe in enumerate(entry.recipes):
            resolved = (path.parent / recipe).resolve()
            if not resolved.exists():
                problems.append(
                    (
                        f"schedules[{index}].recipes[{recipe_index}]",
                        recipe,
                        "expected an existing recipe file or directory, relative to the schedule file "
                        f"(looked for {resolved})",
                    )
                )
    if problems:
        raise RecipeError(str(path), problems, what=WHAT)
    return Schedules(path=path, entries=tuple(parsed.schedules))


def check_recipes(schedules: Schedules, entries: Sequence[ScheduleEntry]) -> None:
    """Validate the recipes the entries run now, rather than fail at the first slot hours later."""
    from recipes.loader import load_recipes

    for entry in entries:
        load_recipes(list(schedules.recipe_paths(entry)))


# --- Slots ---------------------------------------------------------------------------------------


def slots_between(entry: ScheduleEntry, after: datetime, until: datetime) -> tuple[list[datetime], bool]:
    """UTC slots s with after < s <= until, oldest first: at most the latest MAX_SLOTS_EXAMINED, and
    whether older ones were left out."""
    # croniter's get_prev is strictly before its start: start one second later so `until` is included.
    iterator = croniter(entry.cron, (until + timedelta(seconds=1)).astimezone(entry.zone))
    newest_first: list[datetime] = []
    while True:
        slot = iterator.get_prev(datetime).astimezone(UTC)
        if slot <= after:
            return newest_first[::-1], False
        if len(newest_first) == MAX_SLOTS_EXAMINED:
            return newest_first[::-1], True
        newest_first.append(slot)


def upcoming_slots(entry: ScheduleEntry, after: datetime, count: int) -> list[datetime]:
    """The next `count` UTC slots strictly after `after`."""
    iterator = croniter(entry.cron, after.astimezone(entry.zone))
    return [iterator.get_next(datetime).astimezone(UTC) for _ in range(count)]


def sweep_name(entry: ScheduleEntry, moment: datetime) -> str:
    return f"{entry.name}-{moment.astimezone(UTC).strftime(SWEEP_TIME_FORMAT)}"


# --- State ---------------------------------------------------------------------------------------


class ScheduleProgress(Strict):
    """How far one schedule's slots have been dealt with."""

    accounted_through: AwareDatetime | None = Field(
        None,
        description=(
            "Every slot at or before this time was either run or recorded as missed; null until a "
            "scheduler (not only --run-now) has watched this schedule."
        ),
    )
    last_fired: AwareDatetime | None = Field(
        None, description="Slot (or, for a manual run, start time) of the latest run started."
    )


class RunRecord(Strict):
    """One sweep the scheduler started, and how it ended."""

    run_id: str = Field(..., description="Identifier of this run within the state file.")
    schedule: str = Field(..., description="Schedule name.")
    sweep: str = Field(..., description="Sweep name the run used (`infersweep results --sweep NAME`).")
    trigger: RunTrigger = Field(
        ..., description="'slot' (on time), 'catch-up' (for missed slots) or 'manual' (--run-now)."
    )
    slot: AwareDatetime | None = Field(None, description="The slot it ran for; null for a manual run.")
    started_at: AwareDatetime = Field(..., description="When the sweep process was started.")
    finished_at: AwareDatetime | None = Field(
        None, description="When it ended; null while running or when the scheduler stopped during it."
    )
    exit_code: int | None = Field(
        None, description="Exit code of `infersweep run` (0 ok, 1 failures, 2 bad input, 130 interrupted)."
    )


class MissedSlot(Strict):
    """A slot that did not get its own on-time run."""

    schedule: str = Field(..., description="Schedule name.")
    slot: AwareDatetime = Field(..., description="The slot time that was missed (UTC).")
    noticed_at: AwareDatetime = Field(..., description="When the scheduler noticed it.")
    reason: MissReason = Field(
        ...,
        description=(
            "'late': the scheduler was not running, or busy with another sweep, at the slot time; "
            "'interrupted': the scheduler was stopped before starting the slot's sweep."
        ),
    )
    covered_by: str | None = Field(
        None, description="Sweep that ran for it under catch_up 'run-once'; null when only reported."
    )


class ScheduleState(Strict):
    """The whole state file of one schedule file."""

    version: Literal[1] = Field(1, description="Version of the state file format.")
    schedules: dict[str, ScheduleProgress] = Field(default_factory=dict, description="Progress per schedule name.")
    runs: list[RunRecord] = Field(default_factory=list, description="Runs started, oldest first.")
    missed: list[MissedSlot] = Field(default_factory=list, description="Missed slots, oldest first.")

    def trim(self) -> None:
        self.runs = self.runs[-HISTORY_LIMIT:]
        self.missed = self.missed[-HISTORY_LIMIT:]


def state_path_for(schedule_file: Path) -> Path:
    return data_dir() / "schedules" / f"{schedule_file.stem}.json"


class StateStore:
    """The state file: read it, or change it in a locked read-modify-write that is replaced atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> ScheduleState:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ScheduleState()
        hint = "delete the file to start over (its run history is lost)"
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            where = f"line {error.lineno}, column {error.colno}"
            raise RecipeError(str(self.path), [(where, error.msg, f"valid JSON; {hint}")], what=STATE_WHAT) from error
        try:
            return ScheduleState.model_validate(data)
        except ValidationError as error:
            problems = [
                (field, value, f"{expected}; {hint}") for field, value, expected in validation_problems(error, data)
            ]
            raise RecipeError(str(self.path), problems, what=STATE_WHAT) from error

    @contextlib.contextmanager
    def transaction(self) -> Iterator[ScheduleState]:
        """Yield the current state under an exclusive lock; write it back if the block succeeds."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.path.with_name(self.path.name + ".lock")
        with lock_path.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                state = self.read()
                yield state
                state.trim()
                self._write(state)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _write(self, state: ScheduleState) -> None:
        # A crash mid-write must leave the previous state, not half a file: write aside, then rename.
        handle, temp_name = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as temp:
                temp.write(state.model_dump_json(indent=2) + "\n")
                temp.flush()
                os.fsync(temp.fileno())
            os.replace(temp_name, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp_name)
            raise


# --- The pure core: what is due, what was missed -------------------------------------------------


@dataclass(frozen=True)
class PlannedRun:
    entry: ScheduleEntry
    slot: datetime
    trigger: Literal["slot", "catch-up"]
    sweep: str


@dataclass(frozen=True)
class Decision:
    """What one schedule does at one look at the clock."""

    entry: ScheduleEntry
    run: PlannedRun | None
    missed: tuple[datetime, ...]
    older_missed_left_out: bool  # more than MAX_SLOTS_EXAMINED slots elapsed: only the latest are listed
    accounted_through: datetime


def decide(entry: ScheduleEntry, progress: ScheduleProgress | None, now: datetime) -> Decision:
    """Which slot (if any) runs now and which slots were missed, for one schedule."""
    # Without history nothing counts as missed; a slot that passed within the tolerance still runs.
    accounted = progress.accounted_through if progress is not None else None
    after = accounted if accounted is not None else now - LATE_TOLERANCE
    slots, truncated = slots_between(entry, after, now)
    # A clock set back must not make already accounted slots due again.
    accounted_through = max(after, now)
    if not slots:
        return Decision(entry, None, (), False, accounted_through)
    latest = slots[-1]
    if now - latest <= LATE_TOLERANCE:
        run = PlannedRun(entry, latest, "slot", sweep_name(entry, latest))
        return Decision(entry, run, tuple(slots[:-1]), truncated, accounted_through)
    catch_up = (
        PlannedRun(entry, latest, "catch-up", sweep_name(entry, latest)) if entry.catch_up == "run-once" else None
    )
    return Decision(entry, catch_up, tuple(slots), truncated, accounted_through)


def plan_due(entries: Sequence[ScheduleEntry], state: ScheduleState, now: datetime) -> list[Decision]:
    """Decisions for every schedule at time `now` (UTC-aware); does not change `state`."""
    return [decide(entry, state.schedules.get(entry.name), now) for entry in entries]


def apply_decisions(state: ScheduleState, decisions: Sequence[Decision], now: datetime) -> list[RunRecord]:
    """Record the decisions in `state` (progress, missed slots, runs about to start); return those runs."""
    started: list[RunRecord] = []
    for decision in decisions:
        name = decision.entry.name
        progress = state.schedules.get(name)
        last_fired = progress.last_fired if progress is not None else None
        covered_by = None
        if decision.run is not None:
            last_fired = decision.run.slot
            if decision.entry.catch_up == "run-once":
                covered_by = decision.run.sweep
            record = RunRecord(
                run_id=uuid.uuid4().hex[:12], schedule=name, sweep=decision.run.sweep,
                trigger=decision.run.trigger, slot=decision.run.slot, started_at=now,
            )  # fmt: skip
            state.runs.append(record)
            started.append(record)
        state.missed.extend(
            MissedSlot(schedule=name, slot=slot, noticed_at=now, reason="late", covered_by=covered_by)
            for slot in decision.missed
        )
        state.schedules[name] = ScheduleProgress(accounted_through=decision.accounted_through, last_fired=last_fired)
    return started


# --- Running sweeps ------------------------------------------------------------------------------


class SweepInterrupted(Exception):
    """Ctrl-C (or SIGTERM) arrived while a sweep ran; the sweep was told to stop and has exited."""

    def __init__(self, exit_code: int) -> None:
        super().__init__(f"sweep stopped with exit code {exit_code}")
        self.exit_code = exit_code


Launcher = Callable[[list[str]], int]


def sweep_command(schedules: Schedules, entry: ScheduleEntry, sweep: str) -> list[str]:
    """`infersweep run` for one firing, as an argument list (never a shell string)."""
    command = [sys.executable, "-m", "orchestrator.cli", "run"]
    command += [str(path) for path in schedules.recipe_paths(entry)]
    command += ["--sweep", sweep]
    if entry.ray_address is not None:
        command += ["--ray-address", entry.ray_address]
    if entry.max_attempts is not None:
        command += ["--max-attempts", str(entry.max_attempts)]
    return command


def launch_subprocess(command: list[str]) -> int:
    """Run the sweep and return its exit code; Ctrl-C is forwarded to it and waited out."""
    # Own process group: a terminal's Ctrl-C reaches only the scheduler, which forwards exactly one
    # SIGINT per Ctrl-C (the sweep treats a second one during its cleanup as "stop harder").
    process = subprocess.Popen(command, process_group=0)
    try:
        return process.wait()
    except KeyboardInterrupt:
        pass
    while True:
        try:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGINT)
            raise SweepInterrupted(process.wait())
        except KeyboardInterrupt:
            continue


def _utc_now() -> datetime:
    return datetime.now(UTC)


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (systemd, a CI runner cancelling a job) stops the scheduler as cleanly as Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _default_console() -> Console:
    return Console(stderr=True, width=None if sys.stderr.isatty() else 180, highlight=False)


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def report_missed(decisions: Sequence[Decision], state_path: Path, console: Console) -> None:
    """A rich warning for every missed slot (the state file keeps them too)."""
    for decision in decisions:
        if not decision.missed:
            continue
        entry = decision.entry
        shown = decision.missed[-10:]
        more = len(decision.missed) - len(shown)
        older = " (and older ones not counted)" if decision.older_missed_left_out else ""
        if decision.run is None:
            action = "catch_up 'report': no sweep runs for them; waiting for the next slot"
        else:
            action = f"covered by sweep {decision.run.sweep} (catch_up '{entry.catch_up}')"
            if entry.catch_up == "report":
                action = f"catch_up 'report': not re-run; sweep {decision.run.sweep} runs for the current slot"
        console.print(
            f"[yellow]warning:[/] schedule [bold]{entry.name}[/] missed {len(decision.missed)} slot(s){older} "
            "because the scheduler was not running, or was busy with another sweep, at their time: "
            + ", ".join(_when(slot) for slot in shown)
            + (f" and {more} earlier" if more else "")
            + f". {action}. Recorded in {state_path}."
        )


def _execute(
    schedules: Schedules, store: StateStore, record: RunRecord, launcher: Launcher, now_fn: Callable[[], datetime],
    console: Console,
) -> int:  # fmt: skip
    entry = schedules.entry(record.schedule)
    console.print(f"schedule [bold]{entry.name}[/]: starting sweep [bold]{record.sweep}[/] ({record.trigger})")
    command = sweep_command(schedules, entry, record.sweep)
    try:
        exit_code = launcher(command)
    except SweepInterrupted as interrupted:
        _finish(store, record, interrupted.exit_code, now_fn())
        # The sweep's own hint ("run the same command again") names a command the user never typed.
        resume = shlex.join(["infersweep", *command[3:]])
        console.print(f"[yellow]sweep {record.sweep} stopped; its finished points are kept. Resume it with: {resume}")
        raise
    _finish(store, record, exit_code, now_fn())
    outcome = "[green]finished[/]" if exit_code == 0 else f"[red]exited with code {exit_code}[/]"
    console.print(f"schedule [bold]{entry.name}[/]: sweep [bold]{record.sweep}[/] {outcome}")
    return exit_code


def _finish(store: StateStore, record: RunRecord, exit_code: int, now: datetime) -> None:
    with store.transaction() as state:
        for run in state.runs:
            if run.run_id == record.run_id:
                run.exit_code = exit_code
                run.finished_at = now


def _record_not_started(store: StateStore, records: Sequence[RunRecord], now: datetime) -> None:
    """Runs planned but never started because the scheduler was stopped become missed slots."""
    if not records:
        return
    ids = {record.run_id for record in records}
    with store.transaction() as state:
        state.runs = [run for run in state.runs if run.run_id not in ids]
        state.missed.extend(
            MissedSlot(schedule=record.schedule, slot=record.slot, noticed_at=now, reason="interrupted")
            for record in records
            if record.slot is not None
        )


def fire_due(
    schedules: Schedules, store: StateStore, now_fn: Callable[[], datetime], launcher: Launcher, console: Console
) -> list[int]:
    """One look at the clock: record what is due and missed, then run the due sweeps one after another."""
    now = now_fn()
    with store.transaction() as state:
        decisions = plan_due(schedules.entries, state, now)
        planned = apply_decisions(state, decisions, now)
    report_missed(decisions, store.path, console)
    exit_codes: list[int] = []
    for index, record in enumerate(planned):
        try:
            exit_codes.append(_execute(schedules, store, record, launcher, now_fn, console))
        except BaseException:
            # Ctrl-C, or a launch that failed: the slots planned after this one must not vanish.
            _record_not_started(store, planned[index + 1 :], now_fn())
            raise
    return exit_codes


def next_wake(schedules: Schedules, now: datetime) -> datetime:
    return min(upcoming_slots(entry, now, 1)[0] for entry in schedules.entries)


def run_scheduler(
    file: Path,
    once: bool,
    now_fn: Callable[[], datetime] = _utc_now,
    sleep_fn: Callable[[float], None] = time.sleep,
    launcher: Launcher = launch_subprocess,
    console: Console | None = None,
) -> int:
    """Fire due slots, then (unless `once`) sleep until the next slot, forever.

    Returns the exit code for the command: 0, 1 when a sweep failed (with `once`), 130 on Ctrl-C.
    """
    console = console or _default_console()
    schedules = load_schedule_file(file)
    check_recipes(schedules, schedules.entries)
    store = StateStore(schedules.state_path)
    any_failed = False
    with _sigterm_as_interrupt():
        try:
            while True:
                exit_codes = fire_due(schedules, store, now_fn, launcher, console)
                any_failed = any_failed or any(code != 0 for code in exit_codes)
                if once:
                    if not exit_codes:
                        console.print(f"nothing due now; next slot {_when(next_wake(schedules, now_fn()))}")
                    return 1 if any_failed else 0
                wake = next_wake(schedules, now_fn())
                console.print(f"waiting for the next slot: {_when(wake)}")
                while (remaining := (wake - now_fn()).total_seconds()) > 0:
                    sleep_fn(min(remaining, MAX_SLEEP_S))
        except (KeyboardInterrupt, SweepInterrupted):
            console.print("[yellow]scheduler stopped (Ctrl-C or SIGTERM).")
            return EXIT_INTERRUPTED


def run_now(
    file: Path,
    name: str,
    now_fn: Callable[[], datetime] = _utc_now,
    launcher: Launcher = launch_subprocess,
    console: Console | None = None,
) -> int:
    """Fire schedule `name` at once as a new sweep (manual dispatch); returns the sweep's exit code."""
    console = console or _default_console()
    schedules = load_schedule_file(file)
    entry = schedules.entry(name)
    check_recipes(schedules, [entry])
    store = StateStore(schedules.state_path)
    now = now_fn()
    record = RunRecord(
        run_id=uuid.uuid4().hex[:12], schedule=name, sweep=sweep_name(entry, now), trigger="manual", started_at=now
    )
    with store.transaction() as state:
        state.runs.append(record)
        # A manual run is not a slot: the slots keep their accounting, only the last firing moves.
        progress = state.schedules.setdefault(name, ScheduleProgress())
        progress.last_fired = now
    with _sigterm_as_interrupt():
        try:
            return _execute(schedules, store, record, launcher, now_fn, console)
        except (KeyboardInterrupt, SweepInterrupted):
            console.print("[yellow]stopped (Ctrl-C or SIGTERM).")
            return EXIT_INTERRUPTED
