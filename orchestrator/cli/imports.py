"""Results measured by other tools, imported with origin `imported`: the peer tools' native files (`import vllm-bench`,
`aiperf`, `guidellm`, `llm-d`) and InferenceX's published rows (`import inferencex`, `inferencex-snapshot`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from orchestrator.cli.output import console, errors, fail
from recipes.errors import ConfigurationError, InferSweepError, problem

if TYPE_CHECKING:
    from orchestrator.importers.store import InferenceXSummary, PeerImport


def peer_import_command(format_name: str, description: str) -> Callable[..., None]:
    """The `infersweep import <format_name>` command: a peer tool's native result files, measured on the
    hardware, model and engine a recipe describes."""

    def command(
        recipe: Annotated[Path, typer.Option(help="Recipe describing the hardware, model and engine measured.")],
        isl: Annotated[
            int | None, typer.Option(min=1, help="Input length the run used (needed when the file does not say).")
        ] = None,
        osl: Annotated[
            int | None, typer.Option(min=1, help="Output length the run used (needed when the file does not say).")
        ] = None,
        sweep: Annotated[str, typer.Option(help="Sweep to store the results in.")] = "imported",
        run_date: Annotated[
            str | None, typer.Option(help="When the run measured, as an ISO date (for files that state none).")
        ] = None,
        # A default, not an annotation: the help names this format, and annotations are evaluated lazily.
        files: list[Path] = typer.Argument(..., help=description),  # noqa: B008
    ) -> None:
        from db.session import open_database
        from orchestrator.importers import store
        from recipes.loader import load_recipe

        measured_at = _iso_date(run_date)
        try:
            loaded = load_recipe(recipe)
            engine = open_database(writes=True)
            imports = store.import_peer_results(
                engine, format_name, files, loaded, store.LengthFlags(isl=isl, osl=osl), sweep, measured_at
            )
        except InferSweepError as error:
            fail(error)
        _print_peer_imports(imports, sweep)

    command.__doc__ = (
        f"Store {description.rstrip('.')} as points with origin `imported` (their source is kept); a load level "
        "that cannot be read is refused alone, with its reason."
    )
    return command


def _iso_date(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text).replace(tzinfo=UTC)
    except ValueError:
        fail(ConfigurationError(f"--run-date: got {text!r}; expected an ISO date such as 2025-12-18"))


def _print_peer_imports(imports: list[PeerImport], sweep: str) -> None:
    for result in imports:
        for level in result.levels:
            state = "imported" if level.stored else "already imported"
            dated = "" if level.dated else ", date unknown (pass --run-date)"
            console.print(
                f"{result.path} [{level.label}]: {state} into sweep {sweep} (c={level.concurrency}, "
                f"{f'{level.isl}/{level.osl}' if level.isl else 'trace replay'}, valid={level.valid}{dated})",
                markup=False, highlight=False,
            )  # fmt: skip
        for refusal in result.refused:
            errors.print(f"{result.path}: refused {refusal}", markup=False, highlight=False)
        stored = sum(level.stored for level in result.levels)
        console.print(
            f"{result.path}: {result.tool}, model {result.model or '(not stated)'}: {stored} level(s) imported, "
            f"{len(result.levels) - stored} already present, {len(result.refused)} refused",
            markup=False, highlight=False,
        )  # fmt: skip


def import_inferencex(
    files: Annotated[list[Path], typer.Argument(help="InferenceX aggregated rows (agg_bmk.json), as JSON or CSV.")],
    sweep: Annotated[
        str | None,
        typer.Option(help="Store every file's rows in this sweep (default: one sweep per InferenceX run)."),
    ] = None,
    run_date: Annotated[
        str | None, typer.Option(help="When the run measured, as an ISO date (rows carry none).")
    ] = None,
    run_id: Annotated[
        str | None,
        typer.Option(help="The GitHub Actions run id of files whose name is neither run_<id>.json nor in run_<id>/."),
    ] = None,
) -> None:
    """Store InferenceX rows as points with origin `imported`, each source run its own sweep; a row that cannot be
    read or mapped is refused alone, and a summary says what was read, imported, already present and refused.

    A file's run is its `run_<id>/` folder or `run_<id>.json` name (GitHub Actions run ids grow with time, so they
    order runs); `--run-id` names it otherwise. A file with neither is keyed by its content: its order among runs is
    unknown, and the hub shows every such run rather than pick a 'latest'."""
    from db.session import open_database
    from orchestrator.importers import store

    measured_at = _iso_date(run_date)
    if run_id is not None and not run_id.isdigit():
        fail(ConfigurationError(f"--run-id: got {run_id!r}; expected a GitHub Actions run id (digits only)"))
    try:
        engine = open_database(writes=True)
        summary = store.import_inferencex(engine, files, sweep, measured_at, run_id=run_id)
    except InferSweepError as error:
        fail(error)
    _print_inferencex_summary(summary)


def import_inferencex_snapshot(
    file: Annotated[Path, typer.Argument(help="A dashboard snapshot: rows of conc, tp, ep, chips and metrics only.")],
    hardware: Annotated[str, typer.Option(help="Hardware registry key or alias, e.g. tpu-v7.")],
    model: Annotated[str, typer.Option(help="Model id, e.g. Qwen/Qwen3.5-397B-A17B-FP8.")],
    precision: Annotated[str, typer.Option(help="Weight precision, e.g. fp8.")],
    isl: Annotated[int, typer.Option(min=1, help="Input length of the workload.")],
    osl: Annotated[int, typer.Option(min=1, help="Output length of the workload.")],
    framework: Annotated[str, typer.Option(help="Serving stack, e.g. vllm-tpu.")],
    run_date: Annotated[str, typer.Option(help="When the snapshot's run measured, as an ISO date.")],
    sweep: Annotated[str | None, typer.Option(help="Sweep to store it in (default: one per file content).")] = None,
) -> None:
    """Store a hand-made InferenceX dashboard snapshot (e.g. its TPU v7 file) as points with origin `imported`: what
    its rows leave out comes from the flags; throughput is per chip as the rows state it (`chips`)."""
    from pydantic import ValidationError

    from db.session import open_database
    from orchestrator.importers import store
    from orchestrator.importers.inferencex import SnapshotContext

    try:
        when = datetime.fromisoformat(run_date).replace(tzinfo=UTC)
    except ValueError:
        fail(ConfigurationError(f"--run-date: got {run_date!r}; expected an ISO date such as 2026-03-01"))
    try:
        context = SnapshotContext(hardware=hardware, model=model, precision=precision, isl=isl, osl=osl,
                                  framework=framework, date=when)  # fmt: skip
    except ValidationError as error:
        fail(ConfigurationError(f"flags: {error.errors(include_url=False)[0]['msg']}"))
    try:
        engine = open_database(writes=True)
        summary = store.import_inferencex(engine, [file], sweep, when, snapshot=context)
    except InferSweepError as error:
        fail(error)
    _print_inferencex_summary(summary)


def _print_inferencex_summary(summary: InferenceXSummary) -> None:
    """What an InferenceX import read, stored, found already present and refused (with each refusal's reason)."""
    for file in summary.files:
        for index, name, value, expected in file.refused:
            errors.print(f"{file.path}: row {index} refused: {problem(name, value, expected)}", markup=False,
                         highlight=False)  # fmt: skip
        shown_runs = ", ".join(file.runs[:3]) + (f" and {len(file.runs) - 3} more" if len(file.runs) > 3 else "")
        console.print(
            f"{file.path}: run {shown_runs}: {file.read} row(s) read, {file.imported} imported, "
            f"{file.present} already present, {file.refused_rows} refused",
            markup=False, highlight=False,
        )  # fmt: skip
    console.print(
        f"InferenceX import: {summary.total('read')} row(s) read, {summary.total('imported')} imported, "
        f"{summary.total('present')} already present (same run and configuration), "
        f"{summary.total('refused_rows')} refused",
        markup=False, highlight=False,
    )  # fmt: skip
    replaced = summary.total("replaced")
    if replaced:
        console.print(f"  {replaced} row(s) name the image of a measurement stored without one: stored, and the "
                      "row without the image retracted", markup=False, highlight=False)  # fmt: skip
    undated = summary.total("undated")
    if undated:
        console.print(f"  {undated} row(s) state no date: stored as 'date unknown', ordered by run id "
                      "(pass --run-date to date them)", markup=False, highlight=False)  # fmt: skip
    for reason, count in summary.refusals.most_common():
        console.print(f"  refused {count}x: {reason}", markup=False, highlight=False)
    for label, count in summary.unknown_models.most_common():
        console.print(f"  model not in recipes/models.yaml, kept as its label: {label!r} ({count} row(s))",
                      markup=False, highlight=False)  # fmt: skip
