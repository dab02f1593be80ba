"""Stored results: `results`, `compare`, `regressions`, `export`, and the curation commands `retract` and `embargo`."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from orchestrator.cli.output import console, errors, fail
from recipes.errors import ConfigurationError, InferSweepError

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqlmodel import Session


def check_sweep_exists(session: Session, sweep: str, flag: str = "--sweep") -> None:
    """Exit with an error naming the sweeps there are when `sweep` is not one of them (a typo, not "no results")."""
    from db import reads

    if reads.sweep_by_name(session, sweep) is None:
        names = [row.name for row in reads.list_sweeps(session)]
        shown = ", ".join(repr(name) for name in names[-10:]) or "none yet"
        fail(ConfigurationError(f"{flag}: got {sweep!r}; no sweep of that name (latest sweeps: {shown})"))


def check_tco_tier(tier: str, flag: str) -> None:
    """A usage error naming `flag` unless `tier` is a TCO tier of the hardware registry."""
    from recipes.hardware import TCO_TIERS

    if tier not in TCO_TIERS:
        raise typer.BadParameter(f"expected one of {', '.join(TCO_TIERS)}, got {tier!r}", param_hint=flag)


def shown_origins(include_simulated: bool, include_projected: bool = False) -> set[str]:
    """The origins a reading command shows: measurements and imports, and what the flags add (never as measured)."""
    from db.reads import SHOWN_BY_DEFAULT

    return (
        set(SHOWN_BY_DEFAULT)
        | ({"simulated"} if include_simulated else set())
        | ({"projected"} if include_projected else set())
    )


def print_results(sweep: str | None) -> int:
    from db import reads
    from db.session import open_database, open_session

    engine = open_database(writes=False)
    with open_session(engine) as session:
        if sweep is not None:
            check_sweep_exists(session, sweep)
        rows = reads.list_results(session, sweep=sweep)
        checked = reads.newest_verifications(session)
    table = Table(title=f"Results{f' of sweep {sweep}' if sweep else ''}")
    # "checked": what the hub's run detail and the API's `verification` say of the Point (one rule, db.reads).
    for column in ("sweep", "recipe", "hw", "origin", "isl/osl", "conc", "rep", "valid", "checked", "ok/fail"):
        table.add_column(column)
    for column in ("out tok/s/gpu", "TTFT p50 ms", "TPOT p50 ms", "tok/s/user p50"):
        table.add_column(column, justify="right")

    def number(value: float | None, digits: int = 1) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"

    for row in rows:
        table.add_row(
            row.sweep, row.recipe, row.hardware, row.origin,
            f"{row.isl}/{row.osl}" if row.isl is not None else "trace", str(row.concurrency),
            str(row.repeat_index), {"valid": "yes", "invalid": "[red]no[/]"}.get(row.validity, row.validity),
            reads.verifiability(row.origin, checked.get((row.sweep, row.point_key))), f"{row.completed}/{row.failed}",
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


def compare(
    at_interactivity: Annotated[float, typer.Option(help="Target tokens/s/user to read every curve at.")],
    sweep: Annotated[str | None, typer.Option(help="Only this sweep.")] = None,
    model: Annotated[str | None, typer.Option(help="Only this model (registry key, e.g. deepseek-r1).")] = None,
    workload: Annotated[str | None, typer.Option(help="Only this workload, e.g. 8k/1k or agentic.")] = None,
    precision: Annotated[str | None, typer.Option(help="Only this precision, e.g. fp4 or fp8.")] = None,
    isl: Annotated[int | None, typer.Option(min=1, help="Only this input length (tokens).")] = None,
    osl: Annotated[int | None, typer.Option(min=1, help="Only this output length (tokens).")] = None,
    json_output: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print each chip's answer as JSON (its envelope at the target, as the Overview "
            "reads it) instead of the table of configurations.",
        ),
    ] = False,
    tier: Annotated[
        str, typer.Option(help="TCO tier: owning_hyperscaler, rental_3yr or neocloud.")
    ] = "owning_hyperscaler",
    include_simulated: Annotated[
        bool, typer.Option(help="Also compare simulated results (never measurements).")
    ] = False,
    include_projected: Annotated[
        bool, typer.Option(help="Also compare projected results (`infersweep project`; never measurements).")
    ] = False,
    utilisation: Annotated[
        float, typer.Option(min=0.01, max=1.0, help="Share of hours the GPU sells tokens (profit columns).")
    ] = 0.6,
    licence_fee: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Share of realised revenue paid to the model's licensor.")
    ] = 0.3,
    all_sweeps: Annotated[
        bool, typer.Option(help="Every sweep of each configuration, a row each (default: its latest sweep).")
    ] = False,
    as_of: Annotated[
        datetime | None,
        typer.Option(
            "--as-of",
            formats=["%Y-%m-%d"],
            help="The results as they stood at the end of this day (UTC), as the "
            "hub's 'As of' reads them: each configuration's latest sweep finished by then; undated results left out.",
        ),
    ] = None,
) -> None:
    """Throughput per GPU (95 % interval over repeats), $/M output tokens, profit and margin at one interactivity.

    Each sweep of a configuration is read on its own, its repeats giving the interval; by default only the
    latest sweep of each configuration is shown, as on the hub.

    Profit per GPU-hour = revenue × utilisation − TCO − licence fee × revenue × utilisation, revenue selling the
    measured token mix at the model's prices in recipes/prices.yaml (cache hits at the cached-input price).
    """
    from analysis.compare import compare_at_interactivity
    from analysis.economics import GpuHourRate, profits_at
    from db.session import open_database, open_session
    from recipes.hardware import load_hardware_registry
    from recipes.model_registry import load_model_registry
    from recipes.prices import load_price_table

    check_tco_tier(tier, "--tier")
    shown = shown_origins(include_simulated, include_projected)
    filters = (("--model", model), ("--workload", workload), ("--precision", precision), ("--isl", isl),
               ("--osl", osl))  # fmt: skip

    def kept(rows: list) -> list:
        rows = [row for row in rows if row.origin in shown]
        if as_of is not None:
            from analysis.recency import finished_by

            rows = finished_by(rows, as_of.date())
        for name, wanted in filters:
            if wanted is None:
                continue
            attribute = name.removeprefix("--")
            available = sorted({getattr(row, attribute) for row in rows}, key=str)
            if wanted not in available:
                raise typer.BadParameter(
                    f"got {wanted!r}; the results have {', '.join(map(str, available)) or 'none'}", param_hint=name
                )
            rows = [row for row in rows if getattr(row, attribute) == wanted]
        return rows

    engine = open_database(writes=False)
    with open_session(engine) as session:  # one transaction: both reads see the same results
        if sweep is not None:
            check_sweep_exists(session, sweep)
        rows, history = chosen_results(session, sweep, kept, latest_only=not all_sweeps and sweep is None)
    registry = load_hardware_registry()
    if json_output:
        print_chip_answers(rows, history, at_interactivity, registry, tier)
        return
    # Read like compare_at_interactivity (each sweep of a recipe on its own), so each profit matches its row.
    profits = {
        (item.read.fingerprint, ", ".join(item.read.sweeps)): item
        for item in profits_at(
            rows, at_interactivity, registry, GpuHourRate(tier), utilisation=utilisation, licence_fee=licence_fee,
            models=load_model_registry(), price_table=load_price_table(),
        )
    }  # fmt: skip
    table = Table(title=f"At {at_interactivity:g} tok/s/user ({tier} TCO, {utilisation:.0%} utilised, "
                        f"{licence_fee:.0%} licence fee)")  # fmt: skip
    columns = ("recipe", "sweep", "hw", "engine", "origin", "repeats", "out tok/s/gpu", "95 % interval", "$/GPU-h",
               "$/M out", "profit $/GPU-h", "margin", "note")  # fmt: skip
    compared = compare_at_interactivity(rows, at_interactivity, registry, tier)
    for column in columns:
        # Recipe names stay whole (the note column wraps instead), so they can be copied from the table.
        widest = max((len(item.recipe) for item in compared), default=0) if column == "recipe" else None
        right = column in (
            "repeats",
            "out tok/s/gpu",
            "95 % interval",
            "$/GPU-h",
            "$/M out",
            "profit $/GPU-h",
            "margin",
        )
        table.add_column(column, justify="right" if right else "left", min_width=widest)
    for item in compared:
        interval = item.throughput
        mean = "-" if interval is None else f"{interval.mean:,.1f}"
        bounds = "-" if interval is None or interval.low is None else f"{interval.low:,.1f} – {interval.high:,.1f}"
        earned = profits.get((item.fingerprint, item.sweep))
        result = earned.profit if earned is not None else None
        note = item.note
        if earned is not None and result is None and interval is not None:
            note = earned.reason  # in range, yet no profit: says why (e.g. no token prices for the model)
        repeats = "-" if interval is None else str(interval.n)
        table.add_row(
            item.recipe, item.sweep, item.hardware, item.engine, ",".join(item.origins), repeats, mean, bounds,
            "-" if item.usd_per_gpu_hour is None else f"{item.usd_per_gpu_hour:.2f}",
            "-" if item.usd_per_million_output is None else f"{item.usd_per_million_output:.3f}",
            "-" if result is None else f"{result.profit_usd_per_gpu_hour:,.2f}",
            "-" if result is None or result.margin is None else f"{result.margin:.1%}",
            note,
        )  # fmt: skip
    console.print(table)


# Beyond this many sweeps chosen, every row is read and those of other sweeps left out, rather than naming each sweep
# in the query (a database's limit on bound values: SQLite's is 32,766).
NAMED_SWEEPS = 1_000


def chosen_results(
    session: Session, sweep: str | None, kept: Callable[[list], list], latest_only: bool
) -> tuple[list, list]:
    """(the full rows compared, the history their runs are read from): the results `kept` keeps, of each
    configuration's latest sweep where `latest_only`. The whole history is read in its narrow form
    (`reads.CurveRow`: what filters it, picks the latest sweeps and reads every run at a target), the full rows of the
    chosen sweeps only: at 100k results, reading every full row was most of the time."""
    from db import reads

    history = kept(reads.list_curve_rows(session, sweep=sweep))
    chosen = latest_sweeps(history) if latest_only else history
    names = {row.sweep for row in chosen}
    wanted = {(row.sweep, row.point_key) for row in chosen}
    named = names if len(names) <= NAMED_SWEEPS else None
    rows = [
        row for row in reads.list_results(session, sweep=sweep, sweeps=named) if (row.sweep, row.point_key) in wanted
    ]
    return rows, history


def print_chip_answers(rows: list, history: list, target: float, registry: dict, tier: str) -> None:
    """Each chip's answer at `target` as JSON: the envelope read the Overview shows (`economics.read_chips`), one
    object per hardware (and model, precision, workload), cheapest first, figures to three significant figures."""
    import json

    from analysis.economics import GpuHourRate, chip_costs_at

    def sig(value: float | None) -> float | None:
        return None if value is None else float(f"{value:.3g}")

    answers = []
    for item in chip_costs_at(rows, target, registry, GpuHourRate(tier), history=history):
        read = item.read
        answers.append({
            "hardware": read.hardware, "model": read.model, "precision": read.precision, "workload": read.workload,
            "interactivity": target,
            "usd_per_million_output": sig(item.output.usd_per_million) if item.output else None,
            "output_throughput_per_gpu": sig(read.output.mean) if read.output else None,
            "read_at_interactivity": sig(read.read_at),
            "configurations": list(read.rests_on), "configurations_in_envelope": read.configurations_in_envelope,
            "runs": read.runs,
            "runs_output_throughput_per_gpu": [sig(value) for value in read.run_spread] if read.run_spread else None,
            "repeats": read.output.n if read.output else 0, "validity": read.validity,
            "origin": ", ".join(read.origins), "usd_per_gpu_hour": item.usd_per_gpu_hour, "tier": tier,
            "note": item.reason,
        })  # fmt: skip
    answers.sort(key=lambda answer: (answer["usd_per_million_output"] is None, answer["usd_per_million_output"] or 0,
                                     answer["hardware"]))  # fmt: skip
    print(json.dumps(answers, indent=2))  # plain stdout: a machine reads it, so no styling


def latest_sweeps(rows: list) -> list:
    """Only the rows of each configuration's latest sweep (analysis/recency.py)."""
    from analysis.recency import latest_sweeps_of, sweep_keys

    latest = latest_sweeps_of(sweep_keys(rows))  # several where their order is unknown: all shown, none picked
    return [row for row in rows if row.sweep in latest[row.fingerprint]]


def regressions(
    at_interactivity: Annotated[float, typer.Option(help="Target tokens/s/user every sweep is read at.")],
    min_drop: Annotated[float, typer.Option(help="Smallest relative drop worth flagging.")] = 0.05,
) -> None:
    """Compare each configuration's latest sweep with its history; exit 1 when any regressed."""
    from analysis.trends import trends_at
    from db import reads
    from db.session import open_database, open_session

    engine = open_database(writes=False)
    with open_session(engine) as session:
        rows = [row for row in reads.list_results(session) if row.origin in {"measured", "imported"}]
    table = Table(title=f"Output tok/s/GPU at {at_interactivity:g} tok/s/user, sweep by sweep")
    for column in ("recipe", "hw", "history", "latest", "verdict"):
        table.add_column(column)
    regressed = compared = 0
    for trend in trends_at(rows, at_interactivity, min_drop):
        compared += trend.verdict is not None and (trend.verdict.regressed or trend.verdict.conclusive)
        history = ", ".join(f"{name}={'-' if value is None else f'{value:,.1f}'}" for name, value in trend.points[:-1])
        name, latest = trend.points[-1]
        verdict = (
            trend.verdict.reason
            if trend.verdict
            else (
                "order unknown: a sweep states neither a date nor a run id, and fewer than two others could be compared"
                if trend.order_unknown
                else "fewer than two sweeps read at this interactivity"
            )
        )
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
    # As the hub's Trends page says it: nothing compared is no "all clear".
    if compared:
        console.print(f"None of the {compared} configuration(s) compared regressed at {at_interactivity:g} tok/s/user.")
    else:
        console.print(f"No configuration could be compared at {at_interactivity:g} tok/s/user: each needs at least "
                      "two sweeps with a figure at that speed (see the verdicts above).")  # fmt: skip


def retract(
    sweep: Annotated[str, typer.Option(help="Sweep whose results to retract.")],
    reason: Annotated[str, typer.Option(help="Why (kept with the rows; shown to maintainers).")],
    point: Annotated[str | None, typer.Option(help="Only this point key.")] = None,
) -> None:
    """Hide results from the hub and from comparisons; they stay in the database with the reason."""
    from db import recording
    from db.session import open_database, open_session

    engine = open_database(writes=True)
    with open_session(engine) as session:
        changed = recording.retract(session, reason, sweep, point)
    console.print(f"{changed} point(s) of sweep {sweep} retracted")
    if changed == 0:
        raise typer.Exit(1)


def repair(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list what would be repaired.")] = False,
) -> None:
    """Check every stored result's figures again: a row holding NaN, infinity or a figure no chip can have
    (stored before such rows were refused) is retracted with a reason naming each field, and its non-finite
    numbers are replaced, so no reader of the database fails on it."""
    from db.session import open_database, open_session
    from orchestrator.repair import repair_stored_figures

    engine = open_database(writes=True)
    with open_session(engine) as session:
        found = repair_stored_figures(session, apply=not dry_run)
    for row in found:
        console.print(f"point {row.point_key} (row {row.row_id}): " + "; ".join(row.problems), markup=False)
    verb = "would be retracted and cleaned" if dry_run else "retracted and cleaned"
    console.print(f"{len(found)} result(s) {verb}" if found else "every stored figure is finite, in range and possible")


def embargo(
    sweep: Annotated[str, typer.Option(help="Sweep whose results to hold back from the public.")],
    until: Annotated[str, typer.Option(help="UTC date or time the embargo ends, e.g. 2027-03-18.")],
) -> None:
    """Hide a sweep from public readers (hub, snapshots) until a date; maintainers still see it."""
    from datetime import UTC, datetime

    from db import recording
    from db.session import open_database, open_session

    try:
        moment = datetime.fromisoformat(until)
    except ValueError:
        fail(InferSweepError(f"--until: got {until!r}; expected an ISO date such as 2027-03-18"))
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    engine = open_database(writes=True)
    with open_session(engine) as session:
        changed = recording.embargo(session, sweep, moment)
    console.print(f"{changed} point(s) of sweep {sweep} embargoed until {moment.isoformat()}")
    if changed == 0:
        raise typer.Exit(1)


def export(
    output: Annotated[Path, typer.Argument(help="File to write (.csv or .parquet).")],
    sweep: Annotated[str | None, typer.Option(help="Only this sweep.")] = None,
) -> None:
    """Write the (non-retracted) results as CSV or Parquet, one row per point."""
    import dataclasses

    import pandas as pd

    from db import reads
    from db.session import open_database, open_session

    if output.suffix not in {".csv", ".parquet"}:
        fail(InferSweepError(f"output: got {str(output)!r}; expected a .csv or .parquet file name"))
    engine = open_database(writes=False)
    with open_session(engine) as session:
        if sweep is not None:
            check_sweep_exists(session, sweep)
        frame = pd.DataFrame([dataclasses.asdict(row) for row in reads.list_results(session, sweep=sweep)])
    output.parent.mkdir(parents=True, exist_ok=True)
    if output.suffix == ".csv":
        frame.to_csv(output, index=False)
    else:
        frame.to_parquet(output, index=False)
    console.print(f"{len(frame)} point(s) written to {output}")


def results(sweep: Annotated[str | None, typer.Option(help="Only this sweep.")] = None) -> None:
    """Show stored results (retracted ones are hidden)."""
    if print_results(sweep) == 0:
        console.print("No results yet. Run a sweep first: `infersweep run recipes/local/tiny-llama-cpu.yaml`.")


def public_rows_of(option: str, where: str) -> list:
    """The public results of a snapshot file (`infersweep publish --snapshot`) or a database URL, as the hub reads
    them: the origins it shows by default, each configuration's latest sweep."""
    from db import reads
    from db.session import open_database, open_session

    if "://" not in where and not Path(where).is_file():
        raise typer.BadParameter(f"got {where!r}: no such file; expected a snapshot file written by `infersweep "
                                 "publish --snapshot` or a database URL", param_hint=option)  # fmt: skip
    engine = open_database(writes=False, url=where if "://" in where else f"sqlite:///{Path(where).resolve()}")
    with open_session(engine) as session:
        rows = [row for row in reads.list_results(session) if row.origin in reads.SHOWN_BY_DEFAULT]
    return latest_sweeps(rows)


def uplift(
    base: Annotated[str, typer.Option(help="The results before the change: a snapshot file or a database URL.")],
    head: Annotated[str, typer.Option(help="The results after the change: a snapshot file or a database URL.")],
    json_output: Annotated[bool, typer.Option("--json", help="Print each chip's figures as JSON.")] = False,
) -> None:
    """How each chip's frontier moved between two states of the public results, per model, precision and workload:
    the area its (interactivity, output tok/s/GPU) frontier dominates, and its output tok/s/GPU at each tier
    (analysis/uplift.py). Only chips whose frontier moved, appeared or went are listed."""
    import json

    from analysis.uplift import uplift as uplift_of

    try:
        changes = [item for item in uplift_of(public_rows_of("--base", base), public_rows_of("--head", head))
                   if item.status != "same"]  # fmt: skip
    except InferSweepError as error:
        fail(error, code=1)

    def sig(value: float | None) -> float | None:
        return None if value is None else float(f"{value:.4g}")

    if json_output:
        print(json.dumps([{
            "model": item.key[0], "precision": item.key[1], "workload": item.key[2], "hardware": item.key[3],
            "status": item.status, "base_area": sig(item.base_area), "head_area": sig(item.head_area),
            "area_change": sig(item.change),
            "output_throughput_per_gpu": {f"{tier:g}": {"base": sig(value), "head": sig(item.head_at[tier])}
                                          for tier, value in item.base_at.items()},
        } for item in changes], indent=2))  # fmt: skip
        return
    if not changes:
        console.print("no chip's frontier moved")
        return
    table = Table(title="Frontier uplift: area dominated in (tok/s/user × output tok/s/GPU), and output tok/s/GPU "
                        "at each tier, before → after")  # fmt: skip
    tiers = list(changes[0].base_at)
    for column in ("hw", "model", "precision", "workload", "area before", "area after", "change",
                   *(f"at {tier:g} tok/s/user" for tier in tiers)):  # fmt: skip
        table.add_column(column)

    def shown(value: float | None, form: str = ",.4g") -> str:
        return "-" if value is None else format(value, form)

    for item in changes:
        model, precision, workload, hardware = item.key
        change = item.status if item.change is None else f"{item.change:+.1%}"  # a chip new or gone has no ratio
        areas = (shown(item.base_area, ",.0f"), shown(item.head_area, ",.0f"))
        reads = (f"{shown(item.base_at[tier])} → {shown(item.head_at[tier])}" for tier in tiers)
        table.add_row(hardware, model, precision, workload, *areas, change, *reads)
    console.print(table)
