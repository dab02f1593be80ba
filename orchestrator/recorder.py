"""The driver's single writer: turns runner events into database rows and artifacts.

Besides lifecycle states and Point results it keeps where each result comes from: the registry tables
(hardware, models), the engine each job ran (kind, version, image), and a provenance row per job attempt
(recipe path, project commit, the engine's command line and the NAMES of the environment variables its
launch sets, the host it was placed on, the host's pre-flight checks). Each Point's server-counter deltas
are written in the Point's own transaction.

A finished Point's per-request records are staged as Parquet on this host, then the Point row and its
artifact rows (status `pending`) are committed in one transaction, and only then is the artifact
uploaded to the store. A failed upload leaves the artifact pending (the staged file stays) for
`infersweep publish`; the database write never waits on the store.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic_core import to_json
from sqlalchemy import Engine, event
from sqlalchemy.exc import DBAPIError, IntegrityError, InterfaceError, OperationalError, SQLAlchemyError

from db import recording
from db.artifacts import sha256_of
from db.faults import disk_full
from db.lifecycle import JobState, PointState, SweepState
from db.local_paths import without_local_paths
from db.models import ArtifactRow, ModelRow, PointResultRow, ServerMetricDeltaRow
from db.session import open_session
from orchestrator.artifacts import STAGING_SPARE_ENV, ArtifactStore, content_key, staging_dirs, store_from_environment
from orchestrator.uploads import upload_artifacts
from recipes.errors import InfrastructureError, problem
from recipes.hardware import load_hardware_registry
from recipes.loader import LoadedRecipe
from recipes.model_registry import attention_summary, kv_bytes_per_token, load_model_registry
from recipes.schema import ContainerEnvironment
from runners.host.server_metrics import COUNTER_SERIES
from runners.job import JobEvent, PointOutcome, PointRequest
from runners.loadgen.records import FixedLengthPoint, PointMetrics, ServerCounters, records_frame

log = logging.getLogger(__name__)
T = TypeVar("T")


def _stage(kind: str, suffix: str, write: Callable[[Path], object], what: str, name: str | None = None) -> Path | None:
    """Write an artifact into staging under its own content hash (`staging/<kind>/<sha256><suffix>`, or
    `staging/<kind>/<sha256>/<name>` where the file's own name says what it is: engine-prefill-0.log).

    A name of its own per content, never per Point: a later sweep of the same recipe writes other bytes to
    another file, so a pending upload can never pick up somebody else's bytes (it once did, under
    `<kind>-<point key>`). Written to a unique partial file first, then renamed: never half a file. On a full disk
    the next staging folder is tried (`staging_dirs`: the spare, where one is named)."""
    full = []
    for folder in staging_dirs():
        partial = folder / f".{kind}-{uuid.uuid4().hex}{suffix}.partial"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            write(partial)
            digest = sha256_of(partial)
            target = folder / kind / (f"{digest}/{name}" if name else f"{digest}{suffix}")
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(partial, target)
        except OSError as error:
            partial.unlink(missing_ok=True)
            if disk_full(error):
                full.append(str(folder))
                continue
            log.warning("could not stage the %s of %s: %s", kind, what, error)
            return None
        if full:
            log.warning("staged the %s of %s in %s: the disk of %s is full", kind, what, folder, ", ".join(full))
        return target
    # Nothing more can be kept: the sweep stops here, named for what it is (a re-run resumes).
    spare = "" if len(full) > 1 else f" (name a folder on another disk in {STAGING_SPARE_ENV} to stage there instead)"
    raise InfrastructureError(
        f"the disk is full: the {kind} of {what} could not be staged in {' or '.join(full)}; free space and run the "
        f"same command again (every Point recorded before is kept){spare}",
        retryable=False,
    )


def _stage_records(outcome: PointOutcome) -> Path | None:
    """The Point's request records as Parquet, staged under their hash."""
    return _stage(
        "records",
        ".parquet",
        lambda path: records_frame(outcome.records).to_parquet(path, index=False),
        outcome.point_key,
    )


def _stage_json(outcome: PointOutcome, kind: str, document: object) -> Path | None:
    """One JSON document of the Point (its result, or the engine's raw /metrics), staged under its hash."""
    text = json.dumps(document, sort_keys=True, default=str)
    return _stage(kind, ".json", lambda path: path.write_text(text, encoding="utf-8"), outcome.point_key)


def _result_document(
    outcome: PointOutcome, source: str | None, metrics: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A Point's result as its `result` artifact keeps it (`metrics`: its figures as JSON, where already dumped):
    published as its bytes are, so where an import was read from goes in by file name (the maintainer's database
    keeps the whole path in the row's `source`)."""
    # A source that states no date has none: its import's time is said as that, never as its finish.
    dates = (
        {"started_at": outcome.started_at.isoformat(), "finished_at": outcome.finished_at.isoformat()}
        if outcome.date_known
        else {"started_at": None, "finished_at": None, "imported_at": outcome.finished_at.isoformat()}
    )
    return {"point_key": outcome.point_key, "origin": outcome.origin, "source": without_local_paths(source), **dates,
            "metrics": metrics if metrics is not None else outcome.metrics.model_dump(mode="json")}  # fmt: skip


@dataclass(frozen=True)
class RecipeIdentity:
    """What the database keeps of a recipe: native (from a LoadedRecipe) or imported (another tool's)."""

    fingerprint: str
    name: str
    path: str
    hardware: str
    engine_kind: str
    workload_kind: str
    snapshot: dict[str, Any]

    @classmethod
    def of(cls, recipe: LoadedRecipe | RecipeIdentity) -> RecipeIdentity:
        if isinstance(recipe, RecipeIdentity):
            return recipe
        return cls(
            fingerprint=recipe.fingerprint,
            name=recipe.name,
            path=recipe.path,
            hardware=recipe.recipe.hardware,
            engine_kind=recipe.recipe.engine.kind,
            workload_kind=recipe.recipe.workload.kind,
            snapshot=recipe.recipe.model_dump(mode="json"),
        )


AnyRecipe = LoadedRecipe | RecipeIdentity


@dataclass(frozen=True)
class ImportedPoint:
    """A result not measured here, as an importer hands it to `Recorder.points_imported`."""

    recipe: AnyRecipe
    point: PointRequest
    metrics: PointMetrics
    source: str  # where it was read from (file, row), the job's reason and the Point's source
    measured_at: datetime | None  # None: the source states no date
    replaces: str | None = None  # the key of this sweep's Point it replaces, retracted in the same transaction


@dataclass(frozen=True)
class PreparedImport:
    """An imported Point made ready to store away from the database (`prepare_import`; an importer may do it in a
    worker process while the Recorder stores the rows before): its row's values but for the sweep, job and recipe
    ids, and its result document as JSON. `refused`: the Point and its judged outcome where a figure is out of
    range (stored as a refusal instead, `Recorder.prepared_imported`)."""

    point_key: str
    fingerprint: str  # its recipe's
    recipe_path: str
    source: str
    dated: bool  # False: the source states no date (the import's time is stored, marked as not the result's)
    values: dict[str, Any]
    document: bytes
    deltas: list[ServerMetricDeltaRow]
    replaces: str | None = None  # ImportedPoint.replaces
    refused: tuple[ImportedPoint, PointOutcome] | None = None


def prepare_import(item: ImportedPoint, origin: Literal["imported", "projected"] = "imported") -> PreparedImport:
    """`item` judged ("figures-possible", by the registry) and made into its row and result document: what storing
    it needs that no database has to be asked for. Without `measured_at` the time of this call is stored."""
    when = item.measured_at or datetime.now(UTC)
    outcome = PointOutcome(
        point_key=item.point.point_key, origin=origin, metrics=item.metrics.with_figures_judged(), records=[],
        started_at=when, finished_at=when, date_known=item.measured_at is not None,
    )  # fmt: skip
    prepared = functools.partial(
        PreparedImport, point_key=outcome.point_key, fingerprint=item.recipe.fingerprint, recipe_path=item.recipe.path,
        source=item.source, dated=outcome.date_known, replaces=item.replaces,
    )  # fmt: skip
    if outcome.metrics.out_of_range():
        return prepared(values={}, document=b"", deltas=[], refused=(item, outcome))
    values = point_values(item.recipe, item.point, outcome, None, item.source)
    document = to_json(_result_document(outcome, item.source, values["metrics"]), fallback=str)
    return prepared(values=values, document=document, deltas=server_metric_rows(outcome.metrics.server))


def point_values(
    loaded: AnyRecipe, point: PointRequest, outcome: PointOutcome, records_key: str | None, source: str | None
) -> dict[str, Any]:
    """The Point's row (PointResultRow's fields, its defaults and its sweep, job and recipe ids left out): its judged
    figures (`outcome.metrics`), where it came from and when. As values: a bulk insert takes them as they are,
    thousands a second."""
    metrics = outcome.metrics
    fixed = point.workload if isinstance(point.workload, FixedLengthPoint) else None
    return dict(
        point_key=outcome.point_key,
        repeat_index=point.repeat_index,
        workload_kind=RecipeIdentity.of(loaded).workload_kind,
        isl=fixed.isl if fixed else None,
        osl=fixed.osl if fixed else None,
        concurrency=point.workload.concurrency,
        origin=outcome.origin,
        valid=metrics.validity.valid,
        validity_reasons=metrics.validity.reasons,
        completed=metrics.completed,
        failed=metrics.failed,
        duration_s=metrics.duration_s,
        request_throughput=metrics.request_throughput,
        output_throughput=metrics.output_throughput,
        total_token_throughput=metrics.total_token_throughput,
        accelerators=metrics.accelerators,
        output_throughput_per_gpu=metrics.output_throughput_per_gpu,
        total_token_throughput_per_gpu=metrics.total_token_throughput_per_gpu,
        ttft_p50_ms=metrics.ttft_ms.p50,
        ttft_p99_ms=metrics.ttft_ms.p99,
        tpot_p50_ms=metrics.tpot_ms.p50,
        tpot_p90_ms=metrics.tpot_ms.p90,
        e2el_p50_ms=metrics.e2el_ms.p50,
        interactivity_p50=metrics.interactivity.p50,
        interactivity_p90=metrics.interactivity.p90,
        metrics=metrics.model_dump(mode="json"),
        records_path=records_key,
        source=source,
        started_at=outcome.started_at,
        finished_at=outcome.finished_at,
        date_known=outcome.date_known,
    )


PROJECT_ROOT = Path(__file__).resolve().parents[1]


def server_metric_rows(counters: ServerCounters | None) -> list[ServerMetricDeltaRow]:
    """One row per counter the Point's ServerCounters reports (None values are counters the engine lacks).

    ServerCounters carries deltas only, so `before` and `after` stay NULL."""
    if counters is None:
        return []
    rows = []
    series = COUNTER_SERIES.get(counters.series, {})
    for field in type(counters).model_fields:
        value = getattr(counters, field)
        if field == "series" or value is None:
            continue
        # A field without a series is still stored, under its field name, rather than dropped.
        metric, labels = series.get(field, (field, {}))
        rows.append(ServerMetricDeltaRow(metric=metric, labels=dict(labels), delta=float(value)))  # type: ignore[call-arg]  # point_result_id is set when the Point is flushed (db.recording)
    return rows


def _git(*args: str) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), *args], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


@functools.cache
def project_commit() -> tuple[str | None, bool | None]:
    """(commit, has uncommitted changes to tracked files) of the project checkout; (None, None) outside one."""
    head = _git("rev-parse", "--verify", "HEAD")
    if head is None or head.returncode != 0:
        return None, None
    diff = _git("diff", "--quiet", "HEAD", "--")
    dirty = None if diff is None or diff.returncode not in (0, 1) else diff.returncode == 1
    return head.stdout.strip(), dirty


def image_digest(image: str) -> str | None:
    """'sha256:...' of an image reference pinned by digest ('repo@sha256:...'), else None."""
    _, at, digest = image.partition("@")
    return digest if at and ":" in digest else None


@dataclass(frozen=True)
class EngineLaunch:
    """What the recorder keeps of a recipe's engine: its engine row (what was started comes with engine_ready)."""

    engine_id: int


def _engine_identity(recipe: AnyRecipe) -> tuple[str, str, str]:
    """(name, version, image) of the recipe's engine; '' where the recipe does not state it."""
    if isinstance(recipe, LoadedRecipe):
        engine = recipe.recipe.engine
        image = engine.environment.image if isinstance(engine.environment, ContainerEnvironment) else ""
        return engine.kind, engine.version or "", image
    stated = recipe.snapshot.get("engine")
    snapshot_engine: dict[str, Any] = stated if isinstance(stated, dict) else {}
    environment = snapshot_engine.get("environment")
    environment = environment if isinstance(environment, dict) else {}
    # An imported row names its image at the top of its snapshot (InferenceX's `image`).
    stated_image = environment.get("image") if environment.get("kind") == "container" else recipe.snapshot.get("image")
    return recipe.engine_kind, str(snapshot_engine.get("version") or ""), str(stated_image or "")


DATABASE_OUTAGE_S = 120.0  # how long a sweep waits for its database to come back before it stops
UPLOAD_PAUSE_S = 300.0  # after the artifact store failed, how long uploads are left pending before trying again
_FIRST_RECONNECT_DELAY_S = 0.5
_LONGEST_RECONNECT_DELAY_S = 5.0


def _connection_lost(error: SQLAlchemyError) -> bool:
    """A fault of the connection or the server (dropped, restarted, failed over, locked), not of the statement."""
    if isinstance(error, DBAPIError) and error.connection_invalidated:
        return True
    return isinstance(error, OperationalError | InterfaceError)


def _survives_database_faults(method: Callable[..., T]) -> Callable[..., T]:
    """Run a Recorder method so that a lost connection costs nothing: see `Recorder._guarded`."""

    @functools.wraps(method)
    def guarded(self: Recorder, *args: Any, **kwargs: Any) -> T:
        return self._guarded(lambda: method(self, *args, **kwargs))

    return guarded


class Recorder:
    """The driver's only way to the database: every state change and result, as it happens.

    A lost connection (a database restart, a fail-over, `pg_terminate_backend`) costs nothing: the lost
    transaction is rolled back, and once the database answers again everything that transaction held is done
    again in a new one, then the write that failed. Writes are keyed (run ids, Point keys, fingerprints), so
    doing one again cannot record it twice. Only a database that stays unreachable for `outage_s` stops the
    sweep, with every Point recorded before kept."""

    def __init__(
        self,
        engine: Engine,
        sweep_name: str,
        store: ArtifactStore | None = None,
        outage_s: float = DATABASE_OUTAGE_S,
    ) -> None:
        self.engine = engine
        self.store = store or store_from_environment()
        self.session = open_session(engine)
        self.outage_s = outage_s
        self._deferred = False
        self._uploads_paused_until = 0.0  # time.monotonic() until which uploads are not tried (the store failed)
        self._depth = 0  # nesting of guarded calls: only the outermost one recovers
        self._redoing = False  # the current operation is being done again after a lost connection
        self._open_operations: list[Callable[[], object]] = []  # done in the transaction still open
        event.listen(self.session, "after_commit", lambda _session: self._open_operations.clear())
        self.sweep, self.resumed = recording.get_or_create_sweep(self.session, sweep_name)
        assert self.sweep.id is not None  # set by the database on insert
        self._sweep_id: int = self.sweep.id
        self.recipe_ids: dict[str, int] = {}
        self.launches: dict[str, EngineLaunch] = {}  # by recipe fingerprint
        self._recipes: dict[str, AnyRecipe] = {}  # by fingerprint: registered again after a lost transaction
        self._engine_ids: dict[tuple[str, str, str], int] = {}

    @property
    def sweep_id(self) -> int:
        return self._sweep_id

    def _guarded(self, operation: Callable[[], T]) -> T:
        if self._depth:
            return operation()
        self._depth += 1
        try:
            started = time.monotonic()
            delay = _FIRST_RECONNECT_DELAY_S
            recovering = False
            while True:
                try:
                    if recovering:
                        self._redo_open_transaction()
                    self._redoing = recovering
                    result = operation()
                    break
                except SQLAlchemyError as error:
                    if disk_full(error):
                        with contextlib.suppress(SQLAlchemyError):
                            self.session.rollback()
                        cause = str(getattr(error, "orig", None) or error).strip()
                        raise InfrastructureError(
                            f"the disk holding the results database is full ({cause}): "
                            "free space and run the same command again; every Point recorded before is kept",
                            retryable=False,
                        ) from error
                    if not _connection_lost(error):
                        raise
                    waited = time.monotonic() - started
                    if waited > self.outage_s:
                        raise InfrastructureError(
                            f"the results database has been unreachable for {waited:.0f} s (over the "
                            f"{self.outage_s:g} s allowed): {str(error).splitlines()[0]}; every Point recorded "
                            "before is kept: run the same command again to resume"
                        ) from error
                    log.warning("database connection lost (%s); reconnecting in %.1f s", error, delay)
                    with contextlib.suppress(SQLAlchemyError):
                        self.session.rollback()
                    time.sleep(delay)
                    delay = min(delay * 2, _LONGEST_RECONNECT_DELAY_S)
                    recovering = True
            if self.session.in_transaction():
                self._open_operations.append(operation)  # the lost transaction's work, should it be lost
            return result
        finally:
            self._depth -= 1
            self._redoing = False

    def _redo_open_transaction(self) -> None:
        """After a rollback: what the lost transaction held, in a new one (recipes and engines first: the ids
        cached from it may no longer exist). Its operations stay listed until a commit takes them."""
        lost = list(self._open_operations)
        try:
            self._register_again()
            for operation in lost:
                operation()
        except IntegrityError:
            # A keyed row of the lost transaction is there already: its COMMIT reached the server before the
            # connection went, so all of it did (a transaction is atomic). Nothing of it is to be done again.
            self.session.rollback()
            lost = []
            self._register_again()
        self._open_operations = lost if self.session.in_transaction() else []

    def _register_again(self) -> None:
        self._engine_ids.clear()
        self.launches.clear()
        for recipe in self._recipes.values():
            self.register_recipe(recipe)

    @_survives_database_faults
    def sync_hardware(self) -> None:
        """The registry tables from the registry files: hardware, then models."""
        entries = [
            (key, hw.vendor, hw.name, hw.accelerator_unit, hw.model_dump(mode="json"))
            for key, hw in load_hardware_registry().items()
        ]
        recording.upsert_hardware(self.session, entries)
        self.sync_models()

    @_survives_database_faults
    def sync_models(self) -> None:
        rows = [
            ModelRow(
                key=key,
                name=model.name,
                hf_id=model.hf_id,
                generated=model.generated,
                architecture=model.architecture,
                attention=attention_summary(model),
                total_params_b=model.total_params_b.value,
                active_params_b=model.active_params_b.value,
                context_length=model.context_length.value,
                kv_dtype=model.kv_dtype,
                kv_bytes_per_token=kv_bytes_per_token(model),
                spec=model.model_dump(mode="json"),
            )
            for key, model in load_model_registry().items()
        ]
        recording.upsert_models(self.session, rows)

    @_survives_database_faults
    def register_recipe(self, recipe: AnyRecipe) -> int:
        loaded = RecipeIdentity.of(recipe)
        row = recording.upsert_recipe(
            self.session,
            fingerprint=loaded.fingerprint,
            name=loaded.name,
            path=loaded.path,
            hardware_key=loaded.hardware,
            engine_kind=loaded.engine_kind,
            snapshot=loaded.snapshot,
            commit=not self._deferred,
        )
        assert row.id is not None
        self.recipe_ids[loaded.fingerprint] = row.id
        self._recipes[loaded.fingerprint] = recipe
        if loaded.fingerprint not in self.launches:
            self.launches[loaded.fingerprint] = self._engine_launch(recipe)
        return row.id

    def knows_recipes_of(self, other: Recorder) -> None:
        """The recipes (and engines) `other` registered, known here too without registering them again: rows of the
        same database, not of a sweep (an import opens a Recorder per source run, of the same few configurations)."""
        self.recipe_ids.update(other.recipe_ids)
        self.launches.update(other.launches)
        self._recipes.update(other._recipes)
        self._engine_ids.update(other._engine_ids)

    def _engine_launch(self, recipe: AnyRecipe) -> EngineLaunch:
        identity = _engine_identity(recipe)
        engine_id = self._engine_ids.get(identity)
        if engine_id is None:
            engine_id = recording.get_or_create_engine(
                self.session, *identity, image_digest(identity[2]), commit=not self._deferred
            )
            self._engine_ids[identity] = engine_id
        return EngineLaunch(engine_id)

    @_survives_database_faults
    def finished_points(self) -> set[str]:
        return recording.finished_point_keys(self.session, self.sweep_id)

    @_survives_database_faults
    def sweep_status(self, status: SweepState, reason: str = "") -> None:
        recording.set_sweep_status(self.session, self.sweep, status, reason)

    @_survives_database_faults
    def set_budget(self, gpu_hours: float) -> None:
        recording.set_sweep_budget(self.session, self.sweep, gpu_hours)

    @_survives_database_faults
    def cancel_requested(self) -> bool:
        return recording.cancel_requested(self.session, self.sweep_id)

    @_survives_database_faults
    def clean_stale_jobs(self) -> int:
        return recording.mark_interrupted_jobs(self.session, self.sweep_id)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Group the state changes made inside into one transaction (one commit instead of one each).

        Only lifecycle states wait for the commit; a Point result is always committed on its own at once
        (and takes pending states with it). A crash inside a batch loses at most those state changes,
        which the next run rebuilds (unfinished jobs are marked interrupted)."""
        self._deferred = True
        try:
            yield
        finally:
            self._deferred = False
            self._guarded(self.session.commit)

    @_survives_database_faults
    def job_created(self, job_id: str, loaded: AnyRecipe, attempt: int, points: int, log_dir: str) -> None:
        """The job row, linked to its engine, and its provenance row, in one transaction. The engine's command line
        is added when the runner reports what it started (`job_status` with an engine_ready event); an imported
        result's job never has one."""
        launch = self.launches.get(loaded.fingerprint)
        recording.create_job(
            self.session, job_id, self.sweep_id, self.recipe_ids[loaded.fingerprint], attempt, points, log_dir,
            engine_id=launch.engine_id if launch else None, commit=False,
        )  # fmt: skip
        revision, dirty = project_commit()
        recording.add_provenance(
            self.session, job_id, loaded.path,
            git_commit=revision, git_dirty=dirty, commit=not self._deferred,
        )  # fmt: skip

    @_survives_database_faults
    def job_status(
        self, job_id: str, status: JobState, event: JobEvent | None = None, reason: str = "", host: str | None = None
    ) -> None:
        error = event.error if event is not None else None
        recording.update_job(
            self.session,
            job_id,
            status,
            sweep_id=self.sweep_id,
            reason=reason or (event.message if event is not None else ""),
            host=host,
            error_kind=error.kind if error else None,
            error_message=error.message if error else None,
            retryable=error.retryable if error else None,
            commit=False,
        )
        if host is not None:
            recording.set_provenance_host(self.session, job_id, host, commit=False)
        started = event.launched if event is not None else None
        if started is not None:
            recording.set_provenance_launch(self.session, job_id, started.argv, started.env_names, started.image,
                                            started.image_digest, commit=False)  # fmt: skip
        if not self._deferred:
            self.session.commit()

    @_survives_database_faults
    def point_started(self, job_id: str, point_key: str) -> None:
        recording.record_point_transition(
            self.session, self.sweep_id, job_id, point_key, PointState.MEASURING.value, commit=not self._deferred
        )

    @_survives_database_faults
    def point_imported(
        self, loaded: AnyRecipe, point: PointRequest, metrics: PointMetrics, source: str,
        measured_at: datetime | None, origin: Literal["imported", "projected"] = "imported",
    ) -> bool:  # fmt: skip
        """Store one result not measured here (`points_imported`); False when it is already stored."""
        return self.points_imported([ImportedPoint(loaded, point, metrics, source, measured_at)], origin)[0]

    def points_imported(
        self, items: Sequence[ImportedPoint], origin: Literal["imported", "projected"] = "imported"
    ) -> list[bool]:
        """Store results not measured here, origin `imported` (another tool measured them) or `projected` (a model
        derived them from another chip's measurements): each prepared (`prepare_import`), then stored together
        (`prepared_imported`)."""
        return self.prepared_imported([prepare_import(item, origin) for item in items])

    @_survives_database_faults
    def prepared_imported(self, prepared: Sequence[PreparedImport]) -> list[bool]:
        """Store prepared results not measured here: a job row per recipe, each Point with its source; where the
        source states no date, the import's time is stored and marked as not the result's date.

        All in one transaction with bulk inserts, their result documents in one staged file (an artifact row per
        Point): a batch is stored whole or not at all, and a killed import stores, run again, exactly the batches
        it had not. True for each Point stored; False for one already stored, or refused (a figure out of range,
        its transition saying which). Redone after a lost connection whose COMMIT had landed, the batch reads as
        already stored (False): nothing is stored twice."""
        finished = self.finished_points()
        stored = [False] * len(prepared)
        batch: list[PreparedImport] = []
        for index, ready in enumerate(prepared):
            if ready.point_key in finished:
                continue
            finished.add(ready.point_key)  # the same Point twice in one batch: stored once
            if ready.refused is not None:  # refused, its job and transition saying why (point_finished)
                item, outcome = ready.refused
                job_id = f"import-{uuid.uuid4().hex[:12]}"
                self.job_created(job_id, item.recipe, attempt=1, points=1, log_dir="")
                recording.update_job(self.session, job_id, JobState.IMPORTED, reason=item.source)
                self.point_finished(job_id, item.recipe, item.point, outcome, source=item.source)
                continue
            batch.append(ready)
            stored[index] = True
        if not batch:
            return stored
        # One job per recipe of the batch (its Points as one import of that configuration), named for its first source.
        jobs: dict[str, tuple[str, int, int | None, str, str]] = {}
        points, deltas = [], {}
        for ready in batch:
            fingerprint = ready.fingerprint
            if fingerprint not in jobs:
                launch = self.launches.get(fingerprint)  # the engine its recipe states (nothing launched here)
                jobs[fingerprint] = (f"import-{uuid.uuid4().hex[:12]}", self.recipe_ids[fingerprint],
                                     launch.engine_id if launch else None, ready.recipe_path, ready.source)  # fmt: skip
            points.append(dict(ready.values, sweep_id=self.sweep_id, job_id=jobs[fingerprint][0],
                               recipe_id=self.recipe_ids[fingerprint]))  # fmt: skip
            if ready.deltas:
                deltas[ready.point_key] = ready.deltas
        # The documents as one JSON object, ordered by point key (each already JSON, written by pydantic's encoder).
        text = b"{" + b",".join(to_json(ready.point_key) + b":" + ready.document
                                for ready in sorted(batch, key=lambda ready: ready.point_key)) + b"}"  # fmt: skip
        staged = _stage("result", ".json", lambda path: path.write_bytes(text), f"{len(batch)} imported result(s)")
        artifacts, staged_row = [], None
        if staged is not None:
            staged_row = self._artifact(staged, "result", None, None)
            shared = staged_row.model_dump(exclude={"id"})
            artifacts = [dict(shared, job_id=point["job_id"], point_key=point["point_key"]) for point in points]
        revision, dirty = project_commit()
        replaced = [(ready.replaces, f"the same measurement naming its image: {ready.source}")
                    for ready in batch if ready.replaces is not None]  # fmt: skip
        recording.record_imported(self.session, self.sweep_id, list(jobs.values()), points, artifacts,
                                  {"git_commit": revision, "git_dirty": dirty}, deltas, replaced)  # fmt: skip
        if staged_row is not None:  # one upload, and every row of the batch marked with it (mark_artifact_stored)
            self.upload([staged_row])
        return stored

    @_survives_database_faults
    def retract_superseded(self, identity: RecipeIdentity, reason: str) -> int:
        """Retract this sweep's points of other recipes of `identity`'s name (results it replaces)."""
        sweep = self.sweep.name
        return recording.retract_superseded(self.session, sweep, identity.name, identity.fingerprint, reason)

    @_survives_database_faults
    def point_finished(
        self, job_id: str, loaded: AnyRecipe, point: PointRequest, outcome: PointOutcome, source: str | None = None
    ) -> bool:
        metrics = outcome.metrics.with_figures_judged()  # every origin's figures judged possible where stored
        unphysical = metrics.out_of_range()
        if unphysical:
            # Not a result any reader could use, and NaN or infinity would poison the store: the Point is refused,
            # its transition saying which figure; the sweep goes on, and a re-run measures it again.
            reason = "figures out of range: " + "; ".join(
                problem(name, value, f"expected {expected}") for name, value, expected in unphysical
            )
            log.warning("point %s of job %s not recorded: %s", outcome.point_key, job_id, reason)
            recording.record_point_transition(
                self.session, self.sweep_id, job_id, outcome.point_key, PointState.REFUSED.value, reason=reason[:2000]
            )
            return False
        staged = _stage_records(outcome) if outcome.records else None
        # Besides the rows: the request records (Parquet), the result exactly as the runner reported it, and the
        # engine's raw /metrics before and after, so every stored figure can be checked against its evidence.
        judged = outcome.model_copy(update={"metrics": metrics})
        files = [(staged, "records"), (_stage_json(outcome, "result", _result_document(judged, source)), "result")]
        if outcome.server_scrapes is not None:
            files.append(
                (_stage_json(outcome, "server-metrics", outcome.server_scrapes.model_dump()), "server-metrics")
            )
        artifacts = [self._artifact(path, kind, job_id, outcome.point_key) for path, kind in files if path is not None]
        records_key = next((a.key for a in artifacts if a.kind == "records"), None)
        row = PointResultRow(**point_values(loaded, point, judged, records_key, source), sweep_id=self.sweep_id,
                             job_id=job_id, recipe_id=self.recipe_ids[loaded.fingerprint])  # fmt: skip
        if metrics.host is not None and metrics.host.preflight is not None:
            # The checks ran once, before the engine started: the job's first Point brings them.
            preflight = metrics.host.preflight.model_dump(mode="json")
            recording.set_provenance_preflight(self.session, job_id, preflight, commit=False)
        deltas = server_metric_rows(metrics.server)
        if not recording.record_point_with_artifacts(self.session, row, artifacts, deltas):
            # Already there. Done again after a lost connection, it may be this very job's own write, whose COMMIT
            # reached the server before the connection went: then it was recorded now, and its uploads are due.
            if not self._redoing or recording.job_of_point(self.session, self.sweep_id, outcome.point_key) != job_id:
                return False
            landed = recording.artifacts_of_point(self.session, self.sweep_id, outcome.point_key)
            self.upload([artifact for artifact in landed if artifact.status == "pending"])
            return True
        self.upload(artifacts)
        return True

    def _artifact(self, path: Path, kind: str, job_id: str | None, point_key: str | None) -> ArtifactRow:
        digest = sha256_of(path)
        return ArtifactRow(
            sweep_id=self.sweep_id,
            job_id=job_id,
            point_key=point_key,
            kind=kind,
            key=content_key(kind, digest, "".join(path.suffixes[-1:])),
            local_path=str(path),
            sha256=digest,
            size_bytes=path.stat().st_size,
        )

    @_survives_database_faults
    def store_file(self, path: Path, kind: str, job_id: str | None = None) -> ArtifactRow | None:
        """Register and upload a file that belongs to the sweep (an engine log, say): a copy staged under its hash,
        since the file itself may still change (an engine that outlived its killed worker writes on into its log,
        and the registered hash would no longer be the file's)."""
        if not path.is_file():
            return None
        copy = functools.partial(shutil.copyfile, path)
        staged = _stage(kind, "".join(path.suffixes[-1:]), copy, str(path), name=path.name)
        if staged is None:
            return None
        artifact = recording.add_artifact(self.session, self._artifact(staged, kind, job_id, None))
        self.upload([artifact])
        return artifact

    @_survives_database_faults
    def upload(self, artifacts: list[ArtifactRow]) -> tuple[int, int]:
        """Store the artifacts now, unless the store failed within the last UPLOAD_PAUSE_S: then they stay pending
        (rows kept, bytes staged) for `infersweep publish`, and the sweep does not wait on a store that is down."""
        if time.monotonic() < self._uploads_paused_until:
            return 0, len(artifacts)
        return upload_artifacts(self.session, self.store, artifacts, on_store_fault=self._pause_uploads)

    def _pause_uploads(self, fault: InfrastructureError) -> None:
        self._uploads_paused_until = time.monotonic() + UPLOAD_PAUSE_S
        log.warning("the artifact store failed (%s): uploads pause for %.0f s; artifacts stay pending for "
                    "`infersweep publish`", fault, UPLOAD_PAUSE_S)  # fmt: skip

    def hold_uploads(self) -> None:
        """No more uploads from this recorder (the sweep was stopped): what finishes while it stops is recorded, its
        artifacts left pending for `infersweep publish`, so a store that hangs cannot hold the stop up."""
        self._uploads_paused_until = math.inf

    def close(self) -> None:
        self.session.close()
