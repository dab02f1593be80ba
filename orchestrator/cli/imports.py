"""Results measured by other tools, imported with origin `imported`: `import vllm-bench`, `import inferencex`."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.output import console, errors, fail
from recipes.errors import ConfigurationError, InferSweepError


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
        fail(error)


def import_inferencex(
    files: Annotated[list[Path], typer.Argument(help="InferenceX aggregated rows (agg_bmk.json), as JSON or CSV.")],
    sweep: Annotated[
        str | None,
        typer.Option(help="Store every file's rows in this sweep (default: one sweep per InferenceX run)."),
    ] = None,
    run_date: Annotated[
        str | None, typer.Option(help="When the run measured, as an ISO date (rows carry none).")
    ] = None,
) -> None:
    """Store InferenceX rows as points with origin `imported`, each source run its own sweep; a row that cannot be
    read or mapped is refused alone, and a summary says what was read, imported, already present and refused."""
    from datetime import UTC, datetime

    from db.session import make_engine, migrate
    from orchestrator.importers.inferencex import read_row_file, to_point_metrics
    from orchestrator.plan import point_key
    from orchestrator.recorder import RecipeIdentity, Recorder
    from runners.job import PointRequest
    from runners.loadgen.records import FixedLengthPoint

    measured_at = datetime.now(UTC)
    if run_date is not None:
        try:
            measured_at = datetime.fromisoformat(run_date).replace(tzinfo=UTC)
        except ValueError:
            fail(ConfigurationError(f"--run-date: got {run_date!r}; expected an ISO date such as 2025-12-18"))
    totals: Counter[str] = Counter()
    refusals: Counter[str] = Counter()
    unknown_models: Counter[str] = Counter()
    try:
        engine = make_engine()
        migrate(engine)
        recorders: dict[str, Recorder] = {}
        for file in files:
            read = read_row_file(file)
            imported = present = 0
            for item in read.rows:
                row = item.row
                name = sweep or f"inferencex-run-{item.source_run}"
                recorder = recorders.get(name)
                if recorder is None:
                    recorder = recorders[name] = Recorder(engine, name)
                    recorder.sync_hardware()
                identity = RecipeIdentity(
                    fingerprint=item.fingerprint, name=item.recipe_name, path=str(file.resolve()),
                    hardware=item.hardware, engine_kind=row.framework, workload_kind="fixed-length",
                    snapshot=item.configuration(),
                )  # fmt: skip
                recorder.register_recipe(identity)
                workload = FixedLengthPoint(
                    isl=row.isl, osl=row.osl, range_ratio=0.8, concurrency=row.conc, num_prompts=10 * row.conc,
                    num_warmup=2 * row.conc, seed=0, request_timeout_s=600,
                )  # fmt: skip
                key = "inferencex-" + point_key(item.fingerprint, workload, 0)
                point = PointRequest(point_key=key, repeat_index=0, workload=workload)
                source = f"InferenceX run {item.source_run}, row {item.index}: {file.resolve()}"
                when = row.date.replace(tzinfo=UTC) if row.date is not None else measured_at
                if recorder.point_imported(identity, point, to_point_metrics(row), source, when):
                    imported += 1
                else:
                    present += 1
            for index, field, value, expected in read.refused:
                errors.print(f"{file}: row {index} refused: field '{field}': got {value!r}; {expected}",
                             markup=False, highlight=False)  # fmt: skip
                refusals[f"{field}: {expected}"[:160]] += 1
            unknown_models.update(read.unknown_models)
            refused = len({index for index, *_ in read.refused})
            totals.update(read=read.read, imported=imported, present=present, refused=refused)
            runs = sorted({item.source_run for item in read.rows}) or [read.source_run]
            shown_runs = ", ".join(runs[:3]) + (f" and {len(runs) - 3} more" if len(runs) > 3 else "")
            console.print(
                f"{file}: run {shown_runs}: {read.read} row(s) read, {imported} imported, "
                f"{present} already present, {refused} refused",
                markup=False,
                highlight=False,
            )
        for recorder in recorders.values():
            recorder.close()
    except InferSweepError as error:
        fail(error)
    console.print(
        f"InferenceX import: {totals['read']} row(s) read, {totals['imported']} imported, {totals['present']} already "
        f"present (same run and configuration), {totals['refused']} refused",
        markup=False,
        highlight=False,
    )
    for reason, count in refusals.most_common():
        console.print(f"  refused {count}x: {reason}", markup=False, highlight=False)
    for label, count in unknown_models.most_common():
        console.print(f"  model not in recipes/models.yaml, kept as its label: {label!r} ({count} row(s))",
                      markup=False, highlight=False)  # fmt: skip
