"""`project`: projected points for a chip from another chip's measured curve; `project backtest`: how wrong that
has been on chips that were measured (analysis/projection.py states the model)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from orchestrator.cli.output import console, errors

project_app = typer.Typer(
    help="Project measured curves to hardware not measured (origin `projected`), and backtest the projection.",
    invoke_without_command=True,
)

LEVELS_HELP = "Interactivity levels (tok/s/user) to compare at; repeat the option (default 30, 50 and 100)."


def _rows() -> list:
    from db import reads
    from db.session import open_database, open_session

    engine = open_database(writes=False)
    with open_session(engine) as session:
        return reads.list_results(session)


def _hardware_keys(registry: dict, labels: dict[str, str]) -> dict[str, str]:
    """Each flag's hardware label as a registry key; an unknown one is a usage error naming the flag."""
    from recipes.hardware import hardware_key_for

    keys = {}
    for flag, label in labels.items():
        key = hardware_key_for(label, registry)
        if key is None:
            raise typer.BadParameter(f"got {label!r}; expected a key of recipes/hardware.yaml: "
                                     f"{', '.join(sorted(registry))}", param_hint=flag)  # fmt: skip
        keys[flag] = key
    return keys


def _source_curves(rows: list, chip: str, **wanted: str | None) -> list:
    """The chip's measured or imported curves matching the filters; none is an error (exit 1)."""
    from analysis.curves import curves_of

    curves = [
        by_chip[chip] for key, by_chip in curves_of(rows).items()
        if chip in by_chip and all(v is None or getattr(key, n) == v for n, v in wanted.items())
    ]  # fmt: skip
    if not curves:
        given = ", ".join(f"{n}={v}" for n, v in wanted.items() if v is not None) or "no filter"
        errors.print(f"error (no data, not retryable): no measured or imported curve of {chip} ({given})",
                     markup=False)  # fmt: skip
        raise typer.Exit(1)
    return curves


def _print_how_wrong(rows: list, registry: dict, source: str, targets: list[str], curves: list) -> None:
    """How wrong projections like these have been: the backtest's group for each (source, target, kind of
    deployment) projected, on this database's measured and imported results."""
    from analysis.backtest import backtest, group_of, how_wrong
    from recipes.model_registry import load_model_registry

    kinds = sorted({point.split is not None for curve in curves for point in curve.points})
    # Only the groups asked about are projected (the whole backtest took 2 s on the dashboard's 1,462-row history).
    wanted = {group_of(registry[source], registry[target], disaggregated)
              for target in targets if target != source for disaggregated in kinds}  # fmt: skip
    result = backtest(rows, registry, load_model_registry(), only_groups=wanted)
    console.print("How wrong projections like these have been (`infersweep project backtest` on this database's "
                  "measured and imported results; docs/BENCHMARKS.md for the public InferenceX corpora):",
                  markup=False)  # fmt: skip
    for target in dict.fromkeys(t for t in targets if t != source):
        for disaggregated in kinds:
            name, group = how_wrong(result, registry, source, target, disaggregated)
            if group is None or group.projection is None:
                told = "no pair of chips here to backtest"
            else:
                dense, dense_count = group.dense
                without = ("; every row sparse (its frontiers read between points far apart)" if dense is None
                           else f"; {dense:.1f} % without sparse readings ({dense_count})")  # fmt: skip
                told = f"median absolute error {group.projection:.1f} % over {group.rows} rows{without}"
            console.print(f"  {source} -> {target} ({name}): {told}", markup=False, highlight=False)


@project_app.callback()
def project(
    context: typer.Context,
    source: Annotated[str | None, typer.Option("--from", help="Hardware whose measured curves are projected.")] = None,
    target: Annotated[str | None, typer.Option("--to", help="Hardware to project to (registry key or alias).")] = None,
    model: Annotated[str | None, typer.Option(help="Only this model (registry key).")] = None,
    precision: Annotated[str | None, typer.Option(help="Only this precision, e.g. fp4.")] = None,
    engine: Annotated[str | None, typer.Option(help="Only this serving engine, e.g. sglang.")] = None,
    workload: Annotated[str | None, typer.Option(help="Only this workload, e.g. 1k/1k.")] = None,
) -> None:
    """Write projected points for `--to` from every curve `--from` measured (filtered by the options): one set per
    end of the target's figure ranges where the registry gives a range (Vera Rubin's bandwidth), else one."""
    if context.invoked_subcommand is not None:
        return
    if source is None or target is None:
        errors.print("error (usage, not retryable): give --from and --to, or a subcommand (backtest)", markup=False)
        raise typer.Exit(2)
    from analysis.projection import ProjectionError, project_band
    from db.session import make_engine
    from orchestrator.projections import store_projection
    from recipes.hardware import load_hardware_registry
    from recipes.model_registry import load_model_registry

    registry = load_hardware_registry()
    keys = _hardware_keys(registry, {"--from": source, "--to": target})
    rows = _rows()
    curves = _source_curves(rows, keys["--from"], model=model, precision=precision, engine=engine, workload=workload)
    target_spec = registry[keys["--to"]]
    database = make_engine()
    models = load_model_registry()
    table = Table(title=f"Projected {keys['--from']} -> {keys['--to']}")
    for column in (
        "curve",
        "edge",
        "bandwidth x",
        "compute x",
        "stored",
        "present",
        "superseded",
        "dropped (KV, scale-up)",
    ):
        table.add_column(column)
    for curve in curves:
        try:
            band = project_band(curve, registry[keys["--from"]], target_spec, models.get(curve.key.model))
        except ProjectionError as error:
            errors.print(f"error (projection, not retryable): {curve.key.label()}: {error}", markup=False)
            raise typer.Exit(2) from error
        for projection in band:
            stored = store_projection(database, curve, projection)
            ratios = f"{projection.bandwidth_ratio:.2f}", f"{projection.compute_ratio:.2f}"
            counts = str(stored.stored), str(stored.present), str(stored.superseded), str(stored.dropped)
            table.add_row(curve.key.label(), projection.edge, *ratios, *counts)
    console.print(table)
    console.print("Projected points have origin `projected`: hidden from measured views unless switched on "
                  "(hub: Origins; compare: --include-projected).", markup=False)  # fmt: skip
    _print_how_wrong(rows, registry, keys["--from"], [keys["--to"]], curves)


@project_app.command("backtest")
def backtest(
    at_interactivity: Annotated[list[float] | None, typer.Option(help=LEVELS_HELP)] = None,
) -> None:
    """Project every measured chip onto every other chip that measured the same model, precision, engine and
    workload, and compare with its measurement; ends with the median absolute error over all pairs."""
    from analysis import backtest as backtests
    from analysis.curves import SPARSE_GAP
    from recipes.hardware import load_hardware_registry
    from recipes.model_registry import load_model_registry

    levels = tuple(at_interactivity or backtests.DEFAULT_LEVELS)
    registry = load_hardware_registry()
    result = backtests.backtest(_rows(), registry, load_model_registry(), levels)
    table = Table(title="Projection backtest (output tok/s/GPU on the frontier)")
    for column in ("curve", "source", "target", "tok/s/user", "projected", "measured", "error %", "plain %",
                   "unchanged %", "marks"):  # fmt: skip
        table.add_column(column)
    for row in result.rows:
        images = "images differ (per-arch builds of one release)" if row.one_release else "images differ"
        marks = [m for m, on in ((images, row.images_differ), ("image unknown", row.images_unknown),
                                 ("cross-vendor", not row.same_vendor),
                                 ("scale-up differs", row.scale_up_differs),
                                 ("disaggregated", row.disaggregated),
                                 (f"sparse (points >{SPARSE_GAP:g}x apart)", row.sparse)) if on]  # fmt: skip
        plain, unchanged = ("-" if e is None else f"{e:+.1f}" for e in (row.plain_error_pct, row.unchanged_error_pct))
        table.add_row(row.curve.label(), row.source, row.target, f"{row.level:g}", f"{row.projected:,.0f}",
                      f"{row.measured:,.0f}", f"{row.error_pct:+.1f}", plain, unchanged, ", ".join(marks))  # fmt: skip
    console.print(table)
    for line in result.skipped:
        console.print(f"skipped: {line}", markup=False, highlight=False)
    # Every group the benchmark and the hub report, the per-vendor ones among them: `infersweep project` names the
    # group a projection belongs to, and this is where a reader finds it.
    for name, members in backtests.groups(result.rows, registry).items():
        group = backtests.medians(members)
        peers = [f"{label}: {value:.1f} %" for label, (value, _) in (("plain roofline", group.plain),
                 ("unchanged-curve baseline", group.unchanged)) if value is not None]  # fmt: skip
        dense, dense_count = group.dense
        peers.append("every reading sparse" if dense is None else
                     f"without sparse readings: {dense:.1f} % over {dense_count}")  # fmt: skip
        against = f" ({'; '.join(peers)})" if peers else ""
        console.print(f"{name}: median absolute error {group.projection:.1f} % over {group.rows} pairs{against}",
                      markup=False)  # fmt: skip
    for kind, disaggregated in (("worst", False), ("worst disaggregated", True)):
        worst = result.worst(disaggregated=disaggregated)
        if worst is not None:
            console.print(f"{kind}: {worst.curve.label()} {worst.source} -> {worst.target} at {worst.level:g} "
                          f"tok/s/user: {worst.error_pct:+.1f} %", markup=False)  # fmt: skip
    overall = result.median_abs_error()
    if overall is None:
        console.print("no pair of chips measured the same model, precision, engine and workload at a shared level")
        raise typer.Exit(1)
    console.print(f"median absolute error {overall:.1f} % over {result.count()} pairs", markup=False)


@project_app.command("ratio")
def ratio(
    source: Annotated[str, typer.Option("--from", help="Hardware whose measured curves both projections start from.")],
    target: Annotated[str, typer.Option("--to", help="The numerator: hardware projected to (e.g. vr200).")],
    over: Annotated[str, typer.Option("--over", help="The denominator: the source itself or another chip.")],
    model: Annotated[str | None, typer.Option(help="Only this model (registry key).")] = None,
    precision: Annotated[str | None, typer.Option(help="Only this precision, e.g. fp4.")] = None,
    engine: Annotated[str | None, typer.Option(help="Only this serving engine, e.g. sglang.")] = None,
    workload: Annotated[str | None, typer.Option(help="Only this workload, e.g. 1k/1k.")] = None,
    at_interactivity: Annotated[float, typer.Option(help="Interactivity (tok/s/user) to read both at.")] = 100.0,
) -> None:
    """`--to` over `--over` in output tok/s per accelerator, both projected from `--from`'s measured curves (stores
    nothing): at one interactivity and at each frontier's highest throughput, one row per end of a figure range."""
    from analysis.curves import SPARSE_GAP
    from analysis.projection import ProjectionError, chip_ratios
    from recipes.hardware import load_hardware_registry
    from recipes.model_registry import load_model_registry

    registry = load_hardware_registry()
    keys = _hardware_keys(registry, {"--from": source, "--to": target, "--over": over})
    rows = _rows()
    curves = _source_curves(rows, keys["--from"], model=model, precision=precision, engine=engine, workload=workload)
    models = load_model_registry()
    numerator, denominator = keys["--to"], keys["--over"]
    table = Table(title=f"{numerator} over {denominator}, both from {keys['--from']}'s measured curves "
                        "(output tok/s per accelerator)")  # fmt: skip
    at = f"@{at_interactivity:g}"
    for column in ("curve", "edge", f"{numerator} {at}", f"{denominator} {at}", f"ratio {at}", f"{numerator} peak",
                   f"{denominator} peak", "ratio at peak"):  # fmt: skip
        table.add_column(column)
    for curve in curves:
        try:
            ratios = chip_ratios(curve, registry[keys["--from"]], registry[numerator], registry[denominator],
                                 models.get(curve.key.model), at_interactivity)  # fmt: skip
        except ProjectionError as error:
            errors.print(f"error (projection, not retryable): {curve.key.label()}: {error}", markup=False)
            raise typer.Exit(2) from error
        for row in ratios:
            read = [f"{v:,.0f}" if v is not None else "-" for v in (row.numerator_at_level, row.denominator_at_level)]
            unread = row.numerator_at_level is None or not row.denominator_at_level
            ratio_at = "-" if unread else "sparse" if row.sparse else f"{row.at_level:.2f}x"
            peaks = f"{row.numerator_peak:,.0f}", f"{row.denominator_peak:,.0f}", f"{row.at_peak:.2f}x"
            table.add_row(curve.key.label(), row.edge, *read, ratio_at, *peaks)
    console.print(table)
    console.print("'-': the frontier does not reach that interactivity; 'sparse': a frontier is read there between "
                  f"points more than {SPARSE_GAP:g}x apart in interactivity or throughput, the interpolation's guess, "
                  "so no ratio. A ratio of two projections is a model's output, never a measurement "
                  "(docs/METHODOLOGY.md, Projections).", markup=False)  # fmt: skip
    _print_how_wrong(rows, registry, keys["--from"], [numerator, denominator], curves)
