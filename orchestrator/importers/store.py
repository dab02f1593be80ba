"""Imported results into the database: each importer's rows as Points with origin `imported`, through the Recorder.

The parsers (`inferencex.py`, `vllm_bench.py`) say what a file means; this module gives each result its Point (one
constructor per Point kind: `FixedLengthPoint.of` with the source's methodology written as a workload), its key
and its sweep, stores it once, and returns a summary for the CLI to print. Importing a file again stores nothing
and says so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.engine import Engine

from orchestrator.importers.inferencex import SnapshotContext, read_row_file, to_point_metrics
from orchestrator.importers.vllm_bench import load_vllm_bench
from orchestrator.plan import point_key
from orchestrator.recorder import RecipeIdentity, Recorder
from recipes.loader import LoadedRecipe
from recipes.schema import FixedLengthWorkload, SequenceLengths
from runners.job import PointRequest
from runners.loadgen.records import FixedLengthPoint

# The fixed-length methodology InferenceX rows are measured with, as DESIGN.md section 4 states it (ours too):
# lengths uniform in [0.8 L, L], 10 x concurrency measured prompts after 2 x concurrency warm-up prompts.
INFERENCEX_METHOD = FixedLengthWorkload(
    kind="fixed-length", sequences=[SequenceLengths(isl=1, osl=1)], concurrency=[1], range_ratio=0.8,
    prompts_per_concurrency=10, warmup_per_concurrency=2,
)  # fmt: skip


@dataclass
class FileSummary:
    path: Path
    runs: list[str]
    read: int
    imported: int
    present: int
    refused: list[tuple[int, str, object, str]]  # index, field, value, expected

    @property
    def refused_rows(self) -> int:
        """Rows refused (a row refused for several fields counts once)."""
        return len({index for index, *_ in self.refused})


@dataclass
class InferenceXSummary:
    files: list[FileSummary] = field(default_factory=list)
    refusals: Counter[str] = field(default_factory=Counter)
    unknown_models: Counter[str] = field(default_factory=Counter)

    def total(self, what: str) -> int:
        """Summed over the files: 'read', 'imported', 'present' or 'refused_rows'."""
        return sum(getattr(summary, what) for summary in self.files)


@contextmanager
def _recorders(engine: Engine) -> Iterator[dict[str, Recorder]]:
    recorders: dict[str, Recorder] = {}
    try:
        yield recorders
    finally:
        for recorder in recorders.values():
            recorder.close()


def import_inferencex(
    engine: Engine, files: list[Path], sweep: str | None, run_date: datetime | None,
    snapshot: SnapshotContext | None = None,
) -> InferenceXSummary:  # fmt: skip
    """Store every readable row of `files`, each source run in its sweep `inferencex-run-<id>` (or all in `sweep`),
    dated by the row's date, else `run_date`, else the import."""
    undated = run_date or datetime.now(UTC)
    summary = InferenceXSummary()
    with _recorders(engine) as recorders:
        for file in files:
            read = read_row_file(file, snapshot)
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
                workload = FixedLengthPoint.of(INFERENCEX_METHOD, SequenceLengths(isl=row.isl, osl=row.osl), row.conc)
                point = PointRequest(
                    point_key="inferencex-" + point_key(item.fingerprint, workload, 0), repeat_index=0,
                    workload=workload,
                )  # fmt: skip
                source = f"InferenceX run {item.source_run}, row {item.index}: {file.resolve()}"
                when = row.date.replace(tzinfo=UTC) if row.date is not None else undated
                if recorder.point_imported(identity, point, to_point_metrics(row), source, when):
                    imported += 1
                else:
                    present += 1
            for _index, name, _value, expected in read.refused:
                summary.refusals[f"{name}: {expected}"[:160]] += 1
            summary.unknown_models.update(read.unknown_models)
            runs = sorted({item.source_run for item in read.rows}) or [read.source_run]
            summary.files.append(FileSummary(file, runs, read.read, imported, present, read.refused))
            # Each Recorder holds a database connection: closed after every file, so importing a whole corpus
            # (35 runs, one sweep each) never holds more than one file's sweeps' connections at once.
            for recorder in recorders.values():
                recorder.close()
            recorders.clear()
    return summary


@dataclass(frozen=True)
class BenchImport:
    path: Path
    stored: bool
    concurrency: int
    valid: bool


def import_vllm_bench(engine: Engine, files: list[Path], loaded: LoadedRecipe, lengths: SequenceLengths,
                      sweep: str) -> list[BenchImport]:  # fmt: skip
    """Store `vllm bench serve` results measured with the recipe `loaded` describes, at the lengths given."""
    stored: list[BenchImport] = []
    with _recorders(engine) as recorders:
        recorder = recorders[sweep] = Recorder(engine, sweep)
        recorder.sync_hardware()
        recorder.register_recipe(loaded)
        for file in files:
            parsed, metrics = load_vllm_bench(file, loaded.recipe.parallelism.accelerators, loaded.recipe.validity)
            # One load level of its own: the run's concurrency and requests, random lengths of exactly L.
            workload = FixedLengthPoint(
                isl=lengths.isl, osl=lengths.osl, range_ratio=1.0, concurrency=parsed.max_concurrency or 1,
                num_prompts=max(parsed.completed + parsed.failed, 1), num_warmup=0, seed=0, request_timeout_s=600,
            )  # fmt: skip
            point = PointRequest(
                point_key="import-" + point_key(loaded.fingerprint, workload, 0), repeat_index=0, workload=workload
            )
            was_stored = recorder.point_imported(
                loaded, point, metrics, f"vllm bench serve: {file.resolve()}", datetime.now(UTC)
            )
            stored.append(BenchImport(file, was_stored, workload.concurrency, metrics.validity.valid))
    return stored
