"""Running sweeps: `infersweep run` (plan, dispatch, persist; resumes by name) and `publish` (pending uploads)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.output import console, errors, fail
from orchestrator.cli.results import print_results
from recipes.errors import ConfigurationError, InferSweepError, RecipeError


def run(
    recipes: Annotated[list[Path], typer.Argument(help="Recipe files or directories of recipes.")],
    sweep: Annotated[str | None, typer.Option(help="Sweep name; re-using a name resumes that sweep.")] = None,
    max_attempts: Annotated[int, typer.Option(min=1, max=10, help="Attempts per job for infrastructure faults.")] = 2,
    ray_address: Annotated[str | None, typer.Option(help="Ray cluster to join (default: start a local one).")] = None,
    inventory: Annotated[
        Path | None,
        typer.Option(help="Fleet inventory (SSH hosts, TPU VMs, Slurm clusters); default $INFERSWEEP_INVENTORY."),
    ] = None,
    retry_backoff: Annotated[
        float, typer.Option(min=0, help="Seconds before the first retry of a job; doubles with each attempt.")
    ] = 2.0,
    gpu_hour_budget: Annotated[
        float | None,
        typer.Option(min=0, help="Refuse to start when the jobs left are estimated above this many GPU-hours."),
    ] = None,
    dry_run_local: Annotated[
        bool,
        typer.Option(
            "--dry-run-local",
            help="Check any recipe's plumbing here: scaled-down workload on a stand-in engine; origin 'dry-run'.",
        ),
    ] = False,
    dry_run_engine: Annotated[
        str, typer.Option(help="Stand-in engine of a dry run: simulated, or vllm-cpu (real vLLM on this CPU).")
    ] = "simulated",
    database_outage: Annotated[
        float,
        typer.Option(
            min=0,
            max=86_400,
            help="Seconds a lost results database may stay away before the sweep stops "
            "(finished points are kept either way).",
        ),
    ] = 120.0,
    wait: Annotated[
        bool,
        typer.Option("--wait", help="When another driver runs this sweep, wait for it to end instead of refusing."),
    ] = False,
    placement_timeout: Annotated[
        float | None,
        typer.Option(
            min=1,
            max=86_400,
            help="Seconds a job may wait for a live node of its pool (a lost node, a node that cannot start workers) "
            "before it fails naming the pool; a busy pool does not count. Default: 300.",
        ),
    ] = None,
) -> None:
    """Plan and run a sweep: each recipe becomes a Job on its hardware pool, each load level a Point."""
    from orchestrator.plan import plan_jobs
    from orchestrator.sweep import SweepOptions, SweepRunner
    from recipes.loader import load_recipes
    from runners.fleet.inventory import inventory_from_environment

    try:
        loaded = load_recipes(list(recipes))
        plan_jobs(loaded)  # plan-time checks (the trace; requests the engine would refuse) before any sweep starts
        fleet = inventory_from_environment(inventory)
    except RecipeError as error:
        fail(error)
    attachments: dict[str, dict[str, str]] = {}
    if dry_run_local:
        loaded, attachments = _prepare_dry_runs(loaded, dry_run_engine)
    name = sweep or _default_sweep_name([item.name for item in loaded], "dry-run-" if dry_run_local else "")
    options = SweepOptions(
        name=name,
        max_attempts=max_attempts,
        ray_address=ray_address,
        inventory=fleet,
        retry_backoff_s=retry_backoff,
        gpu_hour_budget=gpu_hour_budget,
        dry_run=dry_run_local,
        job_attachments=attachments,
        database_outage_s=database_outage,
        wait_for_lease=wait,
    )
    if placement_timeout is not None:  # else the sweep's own default
        options.placement_timeout_s = placement_timeout
    try:
        summary = SweepRunner(options, console).run(loaded)
    except InferSweepError as error:
        fail(error, code=1)
    if summary.interrupted:
        console.print(f"[yellow]Sweep {name} interrupted; run the same command again to resume.")
        raise typer.Exit(130)
    if summary.cancelled:
        console.print(f"[yellow]Sweep {name} cancelled; finished points are kept. Run it again to resume.")
        raise typer.Exit(1)
    print_results(name)
    for failure in summary.failures:
        errors.print(
            f"[red]job {failure.job_id} failed[/] (attempt {failure.attempt}, {failure.kind}, "
            f"{'retryable' if failure.retryable else 'not retryable'}):\n{failure.message}",
            highlight=False,
        )
    console.print(
        f"Sweep [bold]{name}[/]: {summary.recorded_points} point(s) measured now, "
        f"{summary.skipped_points} already done. Results: `infersweep results --sweep {name}`; "
        "hub: `make hub`."
    )
    if not summary.ok:
        raise typer.Exit(1)


def _default_sweep_name(recipes: list[str], prefix: str) -> str:
    """The recipe names joined, or the first one and a count when that would be long; stable for resumes."""
    joined = "-".join(recipes)
    if len(recipes) <= 3 and len(joined) <= 80:
        return prefix + joined
    return f"{prefix}{recipes[0]}-and-{len(recipes) - 1}-more"


def _prepare_dry_runs(loaded: list, engine: str) -> tuple[list, dict[str, dict[str, str]]]:
    from orchestrator.dry_run import prepare_dry_run

    if engine not in ("simulated", "vllm-cpu"):
        fail(ConfigurationError(f"--dry-run-engine: got {engine!r}; expected 'simulated' or 'vllm-cpu'"))
    stand_ins, attachments = [], {}
    for item in loaded:
        try:
            prepared = prepare_dry_run(item, engine)  # type: ignore[arg-type]  # engine was checked against the two literals above
        except InferSweepError as error:
            fail(error)
        console.print(f"[bold]{item.name}[/] ({item.path}) would run on {item.recipe.hardware}:")
        for line in prepared.target_command_lines:
            console.print(f"  $ {line}", highlight=False, markup=False, soft_wrap=True)
        stand_ins.append(prepared.stand_in)
        attachments[item.name] = {"target-engine-command": "\n".join(prepared.target_command_lines) + "\n"}
    return stand_ins, attachments


def publish(
    snapshot: Annotated[bool, typer.Option(help="Also write a read-only snapshot of the public results.")] = False,
) -> None:
    """Finish pending artifact uploads (and publish a snapshot for a public hub)."""
    from db.session import open_database
    from orchestrator.artifacts import store_from_environment
    from orchestrator.publish import publish_snapshot
    from orchestrator.uploads import publish_pending

    try:
        engine = open_database(writes=True)
        store = store_from_environment()
        stored, pending = publish_pending(engine, store)
        console.print(f"artifacts: {stored} uploaded, {pending} still pending")
        if snapshot:
            uri, count = publish_snapshot(engine, store)
            console.print(f"snapshot of {count} point(s) published: {uri}")
    except InferSweepError as error:
        fail(error, code=1)
    if pending:
        raise typer.Exit(1)
