"""`infersweep schedule FILE`: run scheduled sweeps, list upcoming and missed runs, or fire one by hand.

Only typer, rich and the standard library are imported here so that the `infersweep` command starts
fast; the scheduler (`orchestrator.schedule`) is imported when the command runs.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from orchestrator.cli.output import console, errors, fail
from recipes.errors import InferSweepError

if TYPE_CHECKING:
    from orchestrator.schedule import Schedules, ScheduleState


UPCOMING_COUNT = 3
MISSED_SHOWN = 20


def schedule(
    file: Annotated[Path, typer.Argument(help="Schedule file (YAML), e.g. schedules/nightly.yaml.")],
    once: Annotated[bool, typer.Option("--once", help="Fire whatever is due now, then exit.")] = False,
    list_: Annotated[
        bool, typer.Option("--list", help="Print each schedule's next fire times and missed runs, then exit.")
    ] = False,
    run_now: Annotated[
        str | None,
        typer.Option("--run-now", metavar="NAME", help="Fire schedule NAME now as a new sweep (manual dispatch)."),
    ] = None,
) -> None:
    """Run scheduled sweeps: each cron slot of each schedule runs its recipes as a new sweep <name>-<UTC time>.

    Without options it waits for the slots until Ctrl-C. Missed slots are reported and recorded (see catch_up).
    """
    modes = [
        flag for flag, chosen in (("--once", once), ("--list", list_), ("--run-now", run_now is not None)) if chosen
    ]
    if len(modes) > 1:
        errors.print(f"[red]error[/]: {' and '.join(modes)} cannot be combined; choose one", highlight=False)
        raise typer.Exit(2)

    from orchestrator import schedule as scheduler

    try:
        if list_:
            schedules = scheduler.load_schedule_file(file)
            print_listing(schedules, scheduler.StateStore(schedules.state_path).read(), datetime.now(UTC))
            return
        if run_now is not None:
            exit_code = scheduler.run_now(file, run_now, console=errors)
        else:
            exit_code = scheduler.run_scheduler(file, once=once, console=errors)
    except InferSweepError as error:
        fail(error)
    if exit_code:
        raise typer.Exit(exit_code)


def _when(moment: datetime | None) -> str:
    return "-" if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def print_listing(schedules: Schedules, state: ScheduleState, now: datetime) -> None:
    """Next fire times, last run and missed runs of every schedule; reads the state, never writes it."""
    from orchestrator.schedule import plan_due, upcoming_slots

    table = Table(title=f"Schedules of {schedules.path}")
    for column in ("schedule", "cron", "catch_up", f"next {UPCOMING_COUNT} (UTC)", "last run", "exit"):
        table.add_column(column)
    for entry in schedules.entries:
        upcoming = upcoming_slots(entry, now, UPCOMING_COUNT)
        cron = entry.cron if entry.timezone == "UTC" else f"{entry.cron} ({entry.timezone})"
        runs = [run for run in state.runs if run.schedule == entry.name]
        last = runs[-1] if runs else None
        exit_text = "-" if last is None else ("running?" if last.exit_code is None else str(last.exit_code))
        table.add_row(
            entry.name, cron, entry.catch_up, "\n".join(_when(slot) for slot in upcoming),
            "-" if last is None else f"{last.sweep} ({last.trigger})", exit_text,
        )  # fmt: skip
    console.print(table)

    recorded = state.missed[-MISSED_SHOWN:]
    if recorded:
        left_out = len(state.missed) - len(recorded)
        console.print(
            f"[yellow]Missed runs[/] (recorded in {schedules.state_path}"
            + (f"; {left_out} older not shown" if left_out else "")
            + "):"
        )
        for missed in recorded:
            action = f"covered by {missed.covered_by}" if missed.covered_by else "reported only"
            console.print(f"  {missed.schedule}: {_when(missed.slot)} ({missed.reason}; {action})")
    # Slots that elapsed since the scheduler last looked: it records them when it next runs.
    for decision in plan_due(schedules.entries, state, now):
        if decision.missed:
            console.print(
                f"[yellow]Not yet recorded:[/] {decision.entry.name} missed {len(decision.missed)} slot(s) since "
                f"the scheduler last ran, latest {_when(decision.missed[-1])}"
            )
        if decision.run is not None:
            what = "due now" if decision.run.trigger == "slot" else "a catch-up sweep is due"
            console.print(f"{decision.entry.name}: {what} ({decision.run.sweep})")
    if not recorded:
        console.print("No missed runs recorded.")
