"""Results measured by other tools, imported with origin `imported`: `import vllm-bench`, `import inferencex`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.output import console, fail
from recipes.errors import InferSweepError


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
        fail(error)
    console.print(f"{imported} InferenceX row(s) imported into sweep {sweep}")
