"""`infersweep status`, `infersweep cancel` and `infersweep fleet resources`: watching and steering sweeps.

They read (and, for cancel, flag) the database; the driver running the sweep is the one that acts.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Group
from rich.live import Live
from rich.table import Table

from orchestrator.cli.output import console, fail
from recipes.errors import ConfigurationError


def _age(moment: datetime | None) -> str:
    if moment is None:
        return ""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    seconds = (datetime.now(UTC) - moment).total_seconds()
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"


def _sweeps_table() -> Table:
    from db import reads, recording
    from db.models import stored_id
    from db.session import open_database, open_session

    engine = open_database(writes=False)
    table = Table("sweep", "state", "jobs", "points", "updated", title="Sweeps")
    with open_session(engine) as session:
        for sweep in reads.list_sweeps(session):
            jobs = reads.jobs_of_sweep(session, stored_id(sweep))
            points = len(recording.finished_point_keys(session, stored_id(sweep)))
            table.add_row(sweep.name, sweep.status, str(len(jobs)), str(points), _age(sweep.updated_at))
    return table


def _sweep_view(name: str) -> tuple[Group, bool]:
    """The sweep's jobs and latest transitions, and whether the sweep has ended."""
    from db import reads
    from db.lifecycle import TERMINAL_SWEEP_STATES, SweepState
    from db.models import stored_id
    from db.session import open_database, open_session

    engine = open_database(writes=False)
    with open_session(engine) as session:
        sweep = reads.sweep_by_name(session, name)
        if sweep is None:
            raise LookupError(name)
        recorded_by_job = reads.points_per_job(session, stored_id(sweep))
        jobs = Table(
            "job", "attempt", "state", "host", "points", "since", "reason", title=f"Sweep {name}: {sweep.status}"
        )
        latest: dict[str, tuple[str, datetime]] = {}
        for transition in reads.transitions_of_sweep(session, stored_id(sweep), subject="job"):
            latest[transition.job_id or ""] = (transition.reason, transition.at)
        for job in reads.jobs_of_sweep(session, stored_id(sweep)):
            reason, at = latest.get(job.id, ("", job.created_at))
            first_line = reason.splitlines()[0][:80] if reason else ""
            points = f"{recorded_by_job.get(job.id, 0)}/{job.points_planned}"
            jobs.add_row(job.id, str(job.attempt), job.status, job.host or "", points, _age(at), first_line)
        ended = SweepState(sweep.status) in TERMINAL_SWEEP_STATES
    return Group(jobs), ended


def status(
    sweep: Annotated[str | None, typer.Argument(help="Sweep to show; all sweeps when absent.")] = None,
    watch: Annotated[bool, typer.Option(help="Refresh every second until the sweep ends (Ctrl-C to stop).")] = False,
) -> None:
    """Where every job of a sweep is in its lifecycle (queued, placed, launching, measuring...), live with --watch."""
    if sweep is None:
        console.print(_sweeps_table())
        return
    try:
        view, ended = _sweep_view(sweep)
    except LookupError:
        fail(ConfigurationError(f"sweep: got {sweep!r}; no sweep named {sweep!r} (see `infersweep status`)"))
    if not watch:
        console.print(view)
        return
    try:
        with Live(view, console=console, refresh_per_second=2) as live:
            while not ended:
                time.sleep(1.0)
                view, ended = _sweep_view(sweep)
                live.update(view)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def cancel(sweep: Annotated[str, typer.Argument(help="Sweep to stop.")]) -> None:
    """Stop a running sweep cleanly: its driver cancels the jobs, stops their engines and keeps finished points."""
    from db import reads, recording
    from db.lifecycle import TERMINAL_SWEEP_STATES, SweepState
    from db.session import open_database, open_session

    engine = open_database(writes=True)
    with open_session(engine) as session:
        row = reads.sweep_by_name(session, sweep)
        if row is None:
            fail(ConfigurationError(f"sweep: got {sweep!r}; no sweep named {sweep!r} (see `infersweep status`)"))
        if SweepState(row.status) in TERMINAL_SWEEP_STATES:
            console.print(f"Sweep {sweep} is not running (state {row.status}); nothing to cancel.")
            return
        recording.request_cancel(session, sweep)
    console.print(f"Cancel requested for sweep {sweep}; its orchestrator stops it within seconds.")


def resources(inventory: Annotated[Path, typer.Argument(help="Inventory file.")]) -> None:
    """The `--resources` JSON for the Ray node that runs jobs for this inventory's SSH hosts and Slurm clusters."""
    from recipes.errors import RecipeError
    from recipes.hardware import pool_resource_name
    from runners.fleet.inventory import load_inventory

    try:
        fleet = load_inventory(inventory)
    except RecipeError as error:
        fail(error)
    slots = {pool_resource_name(hardware): count for hardware, count in fleet.slots().items()}
    print(json.dumps(slots, sort_keys=True))
