"""Imported results into the database: each importer's rows as Points with origin `imported`, through the Recorder.

The parsers (`inferencex.py`, and the peer tools' readers in `peer_formats.py`) say what a file means; this module
gives each result its Point (one constructor per Point kind: `FixedLengthPoint.of` with the source's methodology
written as a workload), its key and its sweep, stores it once, and returns a summary for the CLI to print.
Importing a file again stores nothing and says so.

Every row is read and judged first (a bad row refused alone, named) and made ready to store (`prepare_import`);
then a sweep's rows go to the Recorder in batches (`IMPORT_BATCH`), each one transaction of bulk inserts
(`Recorder.prepared_imported`): a killed import keeps its whole batches, and run again stores only what is missing.
Many InferenceX files are prepared in a worker process ahead of the one being stored (`ahead.py`).
"""

from __future__ import annotations

import functools
import gc
import hashlib
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import ParamSpec, TypeVar

from pydantic import ValidationError
from sqlalchemy.engine import Engine

from db import reads
from db.lifecycle import SweepState
from db.reads import ResultView
from db.session import open_session
from orchestrator.importers.ahead import prepared_in_turn
from orchestrator.importers.inferencex import (
    SnapshotContext,
    read_row_file,
    run_link,
    to_point_metrics,
)
from orchestrator.importers.peer_formats import PEER_FORMATS
from orchestrator.importers.peers import PeerLevel, Refusal
from orchestrator.plan import point_key
from orchestrator.recorder import ImportedPoint, PreparedImport, RecipeIdentity, Recorder, prepare_import
from recipes.loader import LoadedRecipe, fingerprint_of
from recipes.schema import AgenticReplayWorkload, FixedLengthWorkload, SequenceLengths
from runners.job import PointRequest
from runners.loadgen.records import FixedLengthPoint, ReplayPoint

# The fixed-length methodology InferenceX rows are measured with, as docs/ARCHITECTURE.md §4 states it (ours too):
# lengths uniform in [0.8 L, L], 10 x concurrency measured prompts after 2 x concurrency warm-up prompts.
INFERENCEX_METHOD = FixedLengthWorkload(
    kind="fixed-length", sequences=[SequenceLengths(isl=1, osl=1)], concurrency=[1], range_ratio=0.8,
    prompts_per_concurrency=10, warmup_per_concurrency=2,
)  # fmt: skip


# Rows stored per transaction: a killed import keeps every whole batch before it, and a batch's inserts go to the
# database together (thousands of rows a second, where one transaction per row made ~160).
IMPORT_BATCH = 2000

P = ParamSpec("P")
R = TypeVar("R")


@dataclass
class FileSummary:
    path: Path
    runs: list[str]
    read: int
    imported: int
    present: int
    refused: list[tuple[int, str, object, str]]  # index, field, value, expected
    undated: int = 0  # rows stored without a date (neither the row nor --run-date gave one)
    # Rows naming their image that replaced the same measurement stored without one (`_twin_of`); counted in
    # `imported`, the replaced rows retracted with the reason.
    replaced: int = 0

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


def close_imported(recorder: Recorder) -> None:
    """Close a Recorder an import used; a sweep the import itself opened is finished (it was never dispatched, so
    'planned' would read as waiting forever on the Runs page and in `infersweep status`)."""
    if recorder.sweep.status == SweepState.PLANNED:
        recorder.sweep_status(SweepState.FINISHED, "imported results")
    recorder.close()


def distinct_files(files: list[Path]) -> list[Path]:
    """`files` in their order, each once: a file named twice (or by two paths) was counted twice as "read"."""
    first: dict[Path, Path] = {}
    for file in files:
        first.setdefault(file.resolve(), file)
    return list(first.values())


@contextmanager
def _recorder(engine: Engine, sweep: str, previous: Recorder | None = None) -> Iterator[Recorder]:
    """One sweep's Recorder for an import, closed (and its sweep finished) however the import ends. The first of an
    import writes the registry tables from the registry files; a later one knows what the `previous` registered."""
    recorder = Recorder(engine, sweep)
    try:
        if previous is None:
            recorder.sync_hardware()
        else:
            recorder.knows_recipes_of(previous)
        yield recorder
    finally:
        close_imported(recorder)


def _spares_what_was_loaded(import_files: Callable[P, R]) -> Callable[P, R]:
    """The import with every object alive when it starts (modules, registries, the database engine: hundreds of
    thousands) kept out of the cyclic garbage collector's walks until it ends: none of it becomes garbage during an
    import, yet each collection the rows' objects start walked it all again (10k rows: 5.9 -> 5.3 s)."""

    @functools.wraps(import_files)
    def spared(*args: P.args, **kwargs: P.kwargs) -> R:
        gc.freeze()
        try:
            return import_files(*args, **kwargs)
        finally:
            gc.unfreeze()

    return spared


Measurement = tuple[str, int | None, int | None, int]  # recipe name, ISL, OSL, concurrency


@dataclass(frozen=True)
class PreparedRow:
    """One InferenceX row ready to store (`_prepare_file`), with what finding its twin among stored results reads."""

    measurement: Measurement
    fingerprint: str
    names_image: bool
    output_per_gpu: float
    ready: PreparedImport


@dataclass
class PreparedFile:
    """One file's rows read, judged and made into rows to store, by source run (its sweep); what was refused."""

    path: Path
    read: int
    runs: list[str]
    refused: list[tuple[int, str, object, str]]
    unknown_models: Counter[str]
    sweeps: dict[str, list[PreparedRow]]
    identities: dict[str, RecipeIdentity]  # by fingerprint


def _prepare_file(
    file: Path, sweep: str | None, run_date: datetime | None, snapshot: SnapshotContext | None, run_id: str | None
) -> PreparedFile:
    """Everything storing `file` needs that no database has to be asked for: each row read and judged (a bad row
    refused alone, naming the figure), its recipe identity, Point, and row and result document (`prepare_import`)."""
    read = read_row_file(file, snapshot, run_id)
    path = str(file.resolve())
    sweeps: dict[str, list[PreparedRow]] = defaultdict(list)  # insertion-ordered: the file's order per run
    identities: dict[str, RecipeIdentity] = {}
    for item in read.rows:
        row = item.row
        metrics = to_point_metrics(row)
        identity = identities.get(item.fingerprint) or RecipeIdentity(
            fingerprint=item.fingerprint, name=item.recipe_name, path=path, hardware=item.hardware,
            engine_kind=row.framework, workload_kind="fixed-length", snapshot=item.configuration(),
        )  # fmt: skip
        workload = FixedLengthPoint.of(INFERENCEX_METHOD, SequenceLengths(isl=row.isl, osl=row.osl), row.conc)
        point = PointRequest(point_key="inferencex-" + point_key(item.fingerprint, workload, 0), repeat_index=0,
                             workload=workload)  # fmt: skip
        link = run_link(row, item.source_run)
        run = f"InferenceX run {item.source_run}" + (f" ({link})" if link else "")
        when = row.date.replace(tzinfo=UTC) if row.date is not None else run_date
        ready = prepare_import(ImportedPoint(identity, point, metrics, f"{run}, row {item.index}: {path}", when))
        if ready.refused is not None:  # refused alone, naming the figure it would have stored
            read.refused += [(item.index, f"stored {figure}", value, expected)
                             for figure, value, expected in ready.refused[1].metrics.out_of_range()]  # fmt: skip
            continue
        identities[item.fingerprint] = identity
        sweeps[sweep or f"inferencex-run-{item.source_run}"].append(PreparedRow(
            (item.recipe_name, row.isl, row.osl, row.conc), item.fingerprint, row.image is not None,
            metrics.output_throughput_per_gpu, ready,
        ))  # fmt: skip
    runs = sorted({item.source_run for item in read.rows}) or [read.source_run]
    return PreparedFile(file, read.read, runs, read.refused, read.unknown_models, dict(sweeps), identities)


@_spares_what_was_loaded
def import_inferencex(
    engine: Engine, files: list[Path], sweep: str | None, run_date: datetime | None,
    snapshot: SnapshotContext | None = None, run_id: str | None = None,
) -> InferenceXSummary:  # fmt: skip
    """Store every readable row of `files`, each source run in its sweep `inferencex-run-<id>` (or all in `sweep`),
    dated by the row's date, else `run_date`, else 'date unknown' (ordered by run id, never by the import). `run_id`
    names the run of files whose name and folder do not. Many files are read and judged in a worker process one
    file ahead of the one being stored (`prepared_in_turn`)."""
    summary = InferenceXSummary()
    previous: Recorder | None = None
    prepare = functools.partial(_prepare_file, sweep=sweep, run_date=run_date, snapshot=snapshot, run_id=run_id)
    # Closed however the loop ends, so that a worker preparing ahead ends with it.
    with closing(prepared_in_turn(distinct_files(files), prepare)) as prepared_files:
        for prepared in prepared_files:
            stored, previous = _store_prepared(engine, prepared, previous)
            for _index, field_name, _value, expected in prepared.refused:
                summary.refusals[f"{field_name}: {expected}"[:160]] += 1
            summary.unknown_models.update(prepared.unknown_models)
            summary.files.append(stored)
    return summary


def _store_prepared(
    engine: Engine, prepared: PreparedFile, previous: Recorder | None
) -> tuple[FileSummary, Recorder | None]:
    """A prepared file's rows stored, each source run in its sweep; what it stored, and the last Recorder used."""
    imported = present = undated = replaced = 0
    # Each Recorder holds a pooled database connection, so one sweep is open at a time: a dashboard API file holds
    # rows of dozens of runs (one sweep each), and keeping them all open exhausted the pool.
    for name, rows in prepared.sweeps.items():
        batch: list[PreparedImport] = []
        with _recorder(engine, name, previous) as recorder:
            previous = recorder
            stored: dict[Measurement, list[ResultView]] = {}
            if recorder.resumed:  # a sweep of its own: one made now holds nothing to be a twin of
                with open_session(engine) as session:
                    stored = _by_measurement(reads.list_results(session, sweep=name))
            for row in rows:
                twin = _twin_of(row, stored)
                if twin is not None and not row.names_image:
                    present += 1  # the same measurement is stored, naming its image
                    continue
                if row.fingerprint not in recorder.recipe_ids:
                    recorder.register_recipe(prepared.identities[row.fingerprint])
                batch.append(row.ready if twin is None else replace(row.ready, replaces=twin.point_key))
            for start in range(0, len(batch), IMPORT_BATCH):
                part = batch[start : start + IMPORT_BATCH]
                for ready, was_stored in zip(part, recorder.prepared_imported(part), strict=True):
                    imported += was_stored
                    present += not was_stored
                    undated += was_stored and not ready.dated
                    replaced += was_stored and ready.replaces is not None
    summary = FileSummary(prepared.path, prepared.runs, prepared.read, imported, present, prepared.refused, undated,
                          replaced)  # fmt: skip
    return summary, previous


def _by_measurement(results: list[ResultView]) -> dict[Measurement, list[ResultView]]:
    found: dict[Measurement, list[ResultView]] = defaultdict(list)
    for result in results:
        found[(result.recipe, result.isl, result.osl, result.concurrency)].append(result)
    return found


def _twin_of(row: PreparedRow, stored: dict[Measurement, list[ResultView]]) -> ResultView | None:
    """The stored result that is `row`'s measurement under another fingerprint, where one of the two names no
    image: the dashboard serves one run's rows twice, naming the image in its latest results and not in its
    history (InferenceX-app's two API captures of 2026-05 share 233 such rows, figures identical), and the image
    is part of a configuration's fingerprint. The same run (the sweep), recipe name (every part of the
    configuration but the image), lengths, concurrency and output per GPU: one measurement. Two images that
    differ are two configurations."""
    for result in stored.get(row.measurement, []):
        if result.fingerprint == row.fingerprint or (result.engine_image is not None and row.names_image):
            continue
        if math.isclose(result.output_throughput_per_gpu, row.output_per_gpu, rel_tol=1e-9):
            return result
    return None


@dataclass(frozen=True)
class StoredLevel:
    label: str
    concurrency: int
    isl: int | None  # None: a trace replay
    osl: int | None
    stored: bool  # False: already present (the same file imported before)
    valid: bool
    dated: bool  # False: the file states no date and --run-date gave none: 'date unknown'


@dataclass
class PeerImport:
    """One peer file's import: its levels stored or already present, and those refused."""

    path: Path
    tool: str
    model: str | None
    levels: list[StoredLevel] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)


def _lengths(level: PeerLevel, given: LengthFlags) -> tuple[SequenceLengths | None, Refusal | None]:
    """The level's lengths: the file's, else the flags'; a flag that contradicts the file refuses the level."""
    chosen: dict[str, int] = {}
    for name, stated, flag in (("isl", level.isl, given.isl), ("osl", level.osl, given.osl)):
        if stated is not None and flag is not None and stated != flag:
            return None, Refusal(level.index, name, flag, f"the file states {name} {stated}; leave out --{name}")
        value = stated if stated is not None else flag
        if value is None:
            return None, Refusal(level.index, name, "<not stated>", f"the file does not state it: pass --{name}")
        chosen[name] = value
    return SequenceLengths(**chosen), None


@dataclass(frozen=True)
class LengthFlags:
    isl: int | None = None
    osl: int | None = None


def as_replayed(loaded: LoadedRecipe, replay: ReplayPoint) -> LoadedRecipe:
    """The recipe as a peer tool's trace replay ran it: the recipe's hardware, model and engine, with the replay's
    settings and trace as its workload (what the hub reads a replay's settings from, e.g. "not comparable with
    AgentX"), and the fingerprint of that."""
    workload = AgenticReplayWorkload(kind="agentic-replay", trace=replay.trace_path, concurrency=[replay.concurrency],
                                     **replay.replay_settings())  # fmt: skip
    recipe = loaded.recipe.model_copy(update={"workload": workload})
    return LoadedRecipe(recipe=recipe, path=loaded.path, fingerprint=fingerprint_of(recipe))


@_spares_what_was_loaded
def import_peer_results(
    engine: Engine, format_name: str, files: list[Path], loaded: LoadedRecipe, lengths: LengthFlags, sweep: str,
    run_date: datetime | None = None,
) -> list[PeerImport]:  # fmt: skip
    """Store each load level of each peer file as a Point of the recipe `loaded` describes (hardware, model,
    engine): origin `imported`, dated by the file (else `run_date`, else 'date unknown'), in `sweep`. Every file is
    read and every level judged before the sweep is opened: where every level is refused, no sweep is made."""
    reader = PEER_FORMATS[format_name]
    imports: list[PeerImport] = []
    storable: list[tuple[PeerImport, PeerLevel, PointRequest, SequenceLengths | None, str, LoadedRecipe]] = []
    for file in distinct_files(files):
        read = reader.read(file, loaded.recipe.parallelism.accelerators, loaded.recipe.validity)
        # The file's content is part of each level's identity: the same file again is already present, another
        # run at the same settings is a measurement of its own.
        content = hashlib.sha256(read.path.read_bytes()).hexdigest()[:12]
        result = PeerImport(read.path, read.tool, read.model, refused=list(read.refused))
        imports.append(result)
        for level in read.levels:
            chosen, refusal = (None, None) if level.replay is not None else _lengths(level, lengths)
            if chosen is None and refusal is not None:
                result.refused.append(refusal)
                continue
            # A figure no load level can have (NaN, infinity, a negative latency, 1e30 tok/s/GPU) refuses the
            # level: stored, one NaN made every later read of the results fail.
            unphysical = level.metrics.out_of_range()
            if unphysical:
                result.refused += [Refusal(level.index, f"stored {name}", value, expected)
                                   for name, value, expected in unphysical]  # fmt: skip
                continue
            # One load level of its own: a trace replay's settings, or its concurrency and requests at random lengths
            # of exactly L.
            try:
                workload = level.replay or FixedLengthPoint(
                    isl=chosen.isl, osl=chosen.osl, range_ratio=1.0, concurrency=level.concurrency,  # type: ignore[union-attr]  # chosen is set for a fixed-length level
                    num_prompts=max(level.metrics.completed + level.metrics.failed, 1), num_warmup=0, seed=0,
                    request_timeout_s=600,
                )  # fmt: skip
            except ValidationError as error:  # a count or length beyond what any Point can have
                result.refused += [Refusal(level.index, f"stored {'.'.join(map(str, item['loc']))}",
                                           item.get("input"), item["msg"]) for item in error.errors()]  # fmt: skip
                continue
            measured = as_replayed(loaded, level.replay) if level.replay is not None else loaded
            key = f"import-{format_name}-{content}-{level.index}-" + point_key(measured.fingerprint, workload, 0)
            point = PointRequest(point_key=key, repeat_index=0, workload=workload)
            storable.append((result, level, point, chosen, f"{read.tool}: {read.path.resolve()}, {level.label}",
                             measured))  # fmt: skip
    if not storable:
        return imports
    points = [ImportedPoint(measured, point, level.metrics, source, level.measured_at or run_date)
              for _, level, point, _, source, measured in storable]  # fmt: skip
    with _recorder(engine, sweep) as recorder:
        for measured in {item[-1].fingerprint: item[-1] for item in storable}.values():
            recorder.register_recipe(measured)
        outcomes = recorder.points_imported(points)
    for (result, level, _, chosen, _, _), stored, imported in zip(storable, outcomes, points, strict=True):
        result.levels.append(StoredLevel(level.label, level.concurrency, chosen.isl if chosen else None,
                                         chosen.osl if chosen else None, stored,
                                         level.metrics.with_figures_judged().validity.valid,
                                         imported.measured_at is not None))  # fmt: skip
    return imports
