"""Write and read queries. Writers are called only by the orchestrator's driver; readers by anyone."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Text, bindparam, cast, func, insert, not_, or_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from db.lifecycle import TERMINAL_JOB_STATES, JobState, PointState, SweepState
from db.models import (
    ArtifactRow,
    EngineRow,
    HardwareRow,
    JobRow,
    ModelRow,
    PointResultRow,
    ProvenanceRow,
    RecipeRow,
    ServerMetricDeltaRow,
    SweepRow,
    TransitionRow,
    utcnow,
)
from recipes.model_registry import load_model_registry

# --- writes ----------------------------------------------------------------------------------------


def upsert_hardware(session: Session, entries: Iterable[tuple[str, str, str, str, dict[str, Any]]]) -> None:
    """(key, vendor, name, unit, spec) rows, replacing what is there: the registry file is the truth."""
    for key, vendor, name, unit, spec in entries:
        row = session.get(HardwareRow, key) or HardwareRow(
            key=key, vendor=vendor, name=name, accelerator_unit=unit, spec=spec
        )
        row.vendor, row.name, row.accelerator_unit, row.spec, row.updated_at = vendor, name, unit, spec, utcnow()
        session.add(row)
    session.commit()


def upsert_models(session: Session, rows: Iterable[ModelRow]) -> None:
    """Model registry rows, replacing what is there under the same key: the registry file is the truth."""
    for row in rows:
        row.updated_at = utcnow()
        session.merge(row)
    session.commit()


_ENGINE = EngineRow.__table__  # type: ignore[attr-defined]
_SELECT_ENGINE = select(_ENGINE.c.id).where(
    _ENGINE.c.name == bindparam("name"), _ENGINE.c.version == bindparam("version"),
    _ENGINE.c.image == bindparam("image"),
)  # fmt: skip


def get_or_create_engine(
    session: Session, name: str, version: str, image: str, image_digest: str | None, *, commit: bool = True
) -> int:
    """Id of the engine row (name, version, image), inserted first if new; '' stands for "not stated".

    Safe against another orchestrator inserting the same engine at the same time (the insert does nothing
    on conflict; no rollback, so state changes batched in the same transaction are kept)."""
    connection = session.connection()
    key = {"name": name, "version": version, "image": image}
    found = connection.execute(_SELECT_ENGINE, key).scalar_one_or_none()
    if found is not None:
        return int(found)
    dialect = {"sqlite": sqlite, "postgresql": postgresql}.get(connection.dialect.name)
    statement = dialect.insert(_ENGINE).on_conflict_do_nothing() if dialect is not None else insert(_ENGINE)
    connection.execute(statement, {**key, "image_digest": image_digest, "created_at": utcnow()})
    engine_id = int(connection.execute(_SELECT_ENGINE, key).scalar_one())
    if commit:
        session.commit()
    return engine_id


def get_or_create_sweep(session: Session, name: str) -> tuple[SweepRow, bool]:
    """The named sweep and whether it already existed (resuming) or was created now."""
    existing = session.exec(select(SweepRow).where(SweepRow.name == name)).first()
    if existing is not None:
        return existing, True
    sweep = SweepRow(name=name)
    session.add(sweep)
    try:
        session.commit()
    except IntegrityError:  # another orchestrator created it between our read and write
        session.rollback()
        return session.exec(select(SweepRow).where(SweepRow.name == name)).one(), True
    session.refresh(sweep)
    return sweep, False


def set_sweep_status(session: Session, sweep: SweepRow, status: SweepState, reason: str = "") -> None:
    """Move the sweep to `status` and record the transition, in one transaction."""
    sweep.status = status.value
    sweep.updated_at = utcnow()
    if status is not SweepState.CANCELLING and status is not SweepState.RUNNING:
        sweep.cancel_requested_at = None  # a request is spent once the sweep ends
    session.add(sweep)
    session.add(TransitionRow(sweep_id=sweep.id, subject="sweep", state=status.value, reason=reason))
    session.commit()


def set_sweep_budget(session: Session, sweep: SweepRow, gpu_hours: float) -> None:
    sweep.gpu_hour_budget = gpu_hours
    session.add(sweep)
    session.commit()


def request_cancel(session: Session, name: str) -> SweepRow | None:
    """Ask the driver running sweep `name` to stop it; None when no such sweep exists."""
    sweep = session.exec(select(SweepRow).where(SweepRow.name == name)).first()
    if sweep is None:
        return None
    sweep.cancel_requested_at = utcnow()
    session.add(sweep)
    session.add(TransitionRow(sweep_id=sweep.id, subject="sweep", state=SweepState.CANCELLING.value,
                              reason="infersweep cancel"))  # fmt: skip
    session.commit()
    return sweep


def cancel_requested(session: Session, sweep_id: int) -> bool:
    """Fresh read (no cached row) of whether someone asked to cancel the sweep."""
    requested = session.exec(select(SweepRow.cancel_requested_at).where(SweepRow.id == sweep_id)).first()
    return requested is not None


def upsert_recipe(
    session: Session,
    fingerprint: str,
    name: str,
    path: str,
    hardware_key: str,
    engine_kind: str,
    snapshot: dict[str, Any],
    *,
    commit: bool = True,
) -> RecipeRow:
    """The stored recipe with this fingerprint, inserted first if new (its first path and name are kept)."""
    connection = session.connection()
    existing = connection.execute(_SELECT_RECIPE, {"fingerprint": fingerprint}).first()
    if existing is not None:
        return RecipeRow(**existing._mapping)
    values = {
        "fingerprint": fingerprint, "name": name, "path": path,
        "schema_version": int(snapshot.get("schema_version", 1)), "hardware_key": hardware_key,
        "engine_kind": engine_kind, "snapshot": snapshot, "created_at": utcnow(),
    }  # fmt: skip
    (recipe_id,) = connection.execute(_INSERT_RECIPE, values).inserted_primary_key
    if commit:
        session.commit()
    return RecipeRow(id=recipe_id, **values)


# The driver writes a few of these per job; at thousands of jobs the ORM's unit of work and the
# building of statements cost more than SQLite itself, so they are prepared once, as Core statements on
# the tables, and executed with parameters (benchmarks/dispatch_overhead.py measures it).
_JOB = JobRow.__table__  # type: ignore[attr-defined]
_RECIPE = RecipeRow.__table__  # type: ignore[attr-defined]
_SELECT_RECIPE = select(_RECIPE).where(_RECIPE.c.fingerprint == bindparam("fingerprint"))
_INSERT_RECIPE = insert(_RECIPE)
_TRANSITION = TransitionRow.__table__  # type: ignore[attr-defined]
_INSERT_JOB = insert(_JOB)
_INSERT_TRANSITION = insert(_TRANSITION)
_KEEP_HOST = func.coalesce(bindparam("new_host"), _JOB.c.host)
_SET_STATUS = (
    update(_JOB).where(_JOB.c.id == bindparam("job_id")).values(status=bindparam("new_status"), host=_KEEP_HOST)
)
_SET_PLACED = _SET_STATUS.values(started_at=func.coalesce(_JOB.c.started_at, bindparam("now")))
_SET_ENDED = _SET_STATUS.values(
    finished_at=bindparam("now"), error_kind=bindparam("new_error_kind"),
    error_message=bindparam("new_error_message"), retryable=bindparam("new_retryable"),
)  # fmt: skip


def create_job(
    session: Session,
    job_id: str,
    sweep_id: int,
    recipe_id: int,
    attempt: int,
    points: int,
    log_dir: str,
    *,
    engine_id: int | None = None,
    commit: bool = True,
) -> None:
    now = utcnow()
    connection = session.connection()
    connection.execute(
        _INSERT_JOB,
        {"id": job_id, "sweep_id": sweep_id, "recipe_id": recipe_id, "attempt": attempt, "points_planned": points,
         "log_dir": log_dir, "status": JobState.QUEUED.value, "created_at": now, "engine_id": engine_id},
    )  # fmt: skip
    connection.execute(
        _INSERT_TRANSITION,
        {"sweep_id": sweep_id, "job_id": job_id, "point_key": None, "subject": "job", "state": JobState.QUEUED.value,
         "at": now, "reason": f"attempt {attempt}, {points} point(s)"},
    )  # fmt: skip
    if commit:
        session.commit()


def update_job(
    session: Session,
    job_id: str,
    status: JobState,
    *,
    sweep_id: int | None = None,
    reason: str = "",
    host: str | None = None,
    error_kind: str | None = None,
    error_message: str | None = None,
    retryable: bool | None = None,
    commit: bool = True,
) -> None:
    """Move the job to `status` and record the transition (time and reason) in one transaction.

    With `commit=False` the caller commits, e.g. several state changes at once (Recorder.batch)."""
    now = utcnow()
    connection = session.connection()
    if sweep_id is None:
        sweep_id = connection.execute(select(_JOB.c.sweep_id).where(_JOB.c.id == job_id)).scalar_one_or_none()
    parameters: dict[str, Any] = {"job_id": job_id, "new_status": status.value, "new_host": host, "now": now}
    if status in TERMINAL_JOB_STATES:
        statement = _SET_ENDED
        parameters.update(new_error_kind=error_kind, new_error_message=error_message, new_retryable=retryable)
    else:
        statement = _SET_PLACED if status is JobState.PLACED else _SET_STATUS
    if sweep_id is None or connection.execute(statement, parameters).rowcount == 0:
        session.rollback()
        raise LookupError(f"job {job_id!r} not in the database")
    connection.execute(
        _INSERT_TRANSITION,
        {"sweep_id": sweep_id, "job_id": job_id, "point_key": None, "subject": "job", "state": status.value,
         "at": now, "reason": reason or (error_message or "")[:2000]},
    )  # fmt: skip
    if commit:
        session.commit()


_PROVENANCE = ProvenanceRow.__table__  # type: ignore[attr-defined]
_INSERT_PROVENANCE = insert(_PROVENANCE)
_SET_PROVENANCE_HOST = (
    update(_PROVENANCE).where(_PROVENANCE.c.job_id == bindparam("of_job")).values(host=bindparam("new_host"))
)
_SET_PROVENANCE_PREFLIGHT = (
    update(_PROVENANCE)
    .where(_PROVENANCE.c.job_id == bindparam("of_job"), _PROVENANCE.c.preflight.is_(None))
    .values(
        preflight=bindparam("new_preflight", type_=_PROVENANCE.c.preflight.type),
        accelerator_driver=bindparam("new_driver"),
    )
)


def add_provenance(
    session: Session,
    job_id: str,
    recipe_path: str,
    *,
    engine_argv: list[str] | None = None,
    env_names: Iterable[str] | None = None,
    git_commit: str | None = None,
    git_dirty: bool | None = None,
    commit: bool = True,
) -> None:
    """The provenance row of a job attempt, written when the job is; host and pre-flight come later.

    `env_names` are variable names only: callers must never pass values (they may be secrets)."""
    session.connection().execute(
        _INSERT_PROVENANCE,
        {"job_id": job_id, "recipe_path": recipe_path, "engine_argv": engine_argv,
         "env_names": sorted(env_names) if env_names is not None else None, "git_commit": git_commit,
         "git_dirty": git_dirty, "host": None, "accelerator_driver": None, "accelerator_runtime": None,
         "preflight": None, "created_at": utcnow()},
    )  # fmt: skip
    if commit:
        session.commit()


def set_provenance_host(session: Session, job_id: str, host: str, *, commit: bool = True) -> None:
    session.connection().execute(_SET_PROVENANCE_HOST, {"of_job": job_id, "new_host": host})
    if commit:
        session.commit()


def set_provenance_preflight(session: Session, job_id: str, preflight: dict[str, Any], *, commit: bool = True) -> None:
    """The host's pre-flight checks of the job (the first report wins: they ran once, before the engine), and
    the accelerator driver version they found."""
    values = {"of_job": job_id, "new_preflight": preflight, "new_driver": preflight.get("accelerator_driver")}
    session.connection().execute(_SET_PROVENANCE_PREFLIGHT, values)
    if commit:
        session.commit()


def record_point_transition(
    session: Session, sweep_id: int, job_id: str, point_key: str, state: str, *, commit: bool = True
) -> None:
    session.connection().execute(
        _INSERT_TRANSITION,
        {"sweep_id": sweep_id, "job_id": job_id, "point_key": point_key, "subject": "point", "state": state,
         "reason": "", "at": utcnow()},
    )  # fmt: skip
    if commit:
        session.commit()


def record_point(session: Session, row: PointResultRow) -> bool:
    """Insert one finished Point in its own transaction; False when it was already recorded (idempotent)."""
    return record_point_with_artifacts(session, row, [])


def record_point_with_artifacts(
    session: Session,
    row: PointResultRow,
    artifacts: list[ArtifactRow],
    server_metrics: Sequence[ServerMetricDeltaRow] = (),
) -> bool:
    """The Point, its artifact rows, its server-metric deltas and its 'recorded' transition in one
    transaction; False if already there."""
    session.add(row)
    for artifact in artifacts:
        session.add(artifact)
    session.add(TransitionRow(sweep_id=row.sweep_id, job_id=row.job_id, point_key=row.point_key, subject="point",
                              state=PointState.RECORDED.value, reason="valid" if row.valid else "invalid"))  # fmt: skip
    try:
        if server_metrics:
            session.flush()  # the Point's id, which its deltas refer to
            for delta in server_metrics:
                delta.point_result_id = row.id  # type: ignore[assignment]
                session.add(delta)
        session.commit()
    except IntegrityError:
        session.rollback()
        return False
    return True


def add_artifact(session: Session, artifact: ArtifactRow) -> ArtifactRow:
    session.add(artifact)
    session.commit()
    session.refresh(artifact)
    return artifact


def mark_artifact_stored(session: Session, artifact: ArtifactRow, uri: str) -> None:
    artifact.status, artifact.uri, artifact.error, artifact.stored_at = "stored", uri, None, utcnow()
    session.add(artifact)
    session.commit()


def mark_artifact_failed(session: Session, artifact: ArtifactRow, error: str) -> None:
    artifact.error = error[:2000]
    session.add(artifact)
    session.commit()


def pending_artifacts(session: Session) -> list[ArtifactRow]:
    return list(
        session.exec(select(ArtifactRow).where(ArtifactRow.status == "pending").order_by(col(ArtifactRow.id))).all()
    )


def artifacts_of_point(session: Session, sweep_id: int, point_key: str) -> list[ArtifactRow]:
    query = select(ArtifactRow).where(ArtifactRow.sweep_id == sweep_id, ArtifactRow.point_key == point_key)
    return list(session.exec(query).all())


def mark_interrupted_jobs(session: Session, sweep_id: int) -> int:
    """Jobs a crashed orchestrator left unfinished become 'interrupted' (their finished Points stay)."""
    terminal = [state.value for state in TERMINAL_JOB_STATES]
    stale = session.exec(select(JobRow).where(JobRow.sweep_id == sweep_id, col(JobRow.status).not_in(terminal))).all()
    for job in stale:
        job.status = JobState.INTERRUPTED.value
        job.finished_at = utcnow()
        session.add(job)
        session.add(TransitionRow(sweep_id=sweep_id, job_id=job.id, subject="job", state=job.status,
                                  reason="found unfinished when the sweep was started again"))  # fmt: skip
    session.commit()
    return len(stale)


# --- reads -----------------------------------------------------------------------------------------


def finished_point_keys(session: Session, sweep_id: int) -> set[str]:
    return set(session.exec(select(PointResultRow.point_key).where(PointResultRow.sweep_id == sweep_id)).all())


def jobs_of_sweep(session: Session, sweep_id: int) -> list[JobRow]:
    return list(session.exec(select(JobRow).where(JobRow.sweep_id == sweep_id).order_by(col(JobRow.created_at))).all())


@dataclass(frozen=True)
class ResultView:
    """One Point result with the names a reader needs (sweep, recipe, hardware)."""

    sweep: str
    recipe: str
    fingerprint: str
    hardware: str
    engine: str
    origin: str
    isl: int | None
    osl: int | None
    concurrency: int
    repeat_index: int
    valid: bool
    validity_reasons: list[str]
    completed: int
    failed: int
    output_throughput: float
    output_throughput_per_gpu: float
    total_token_throughput_per_gpu: float
    ttft_p50_ms: float | None
    tpot_p50_ms: float | None
    interactivity_p50: float | None
    e2el_p50_ms: float | None
    finished_at: datetime
    point_key: str = ""
    interactivity_p90: float | None = None
    total_token_throughput: float = 0.0
    request_throughput: float = 0.0
    duration_s: float = 0.0
    source: str | None = None
    workload_kind: str = "fixed-length"
    realized_hit_rate: float | None = None
    theoretical_hit_rate: float | None = None
    job_id: str = ""
    accelerators: int = 1
    ttft_p99_ms: float | None = None
    tpot_p90_ms: float | None = None
    model: str = ""
    precision: str = ""
    parallelism: str = ""
    kv_offload: str = "none"
    prefix_caching: bool | None = None
    power_w_per_gpu: float | None = None  # mean accelerator power over the Point, where the host could sample it

    @property
    def workload(self) -> str:
        """'8k/1k' for fixed-length ISL/OSL, 'agentic' for trace replay (the label the hub and CLI filter on)."""
        return workload_label(self.workload_kind, self.isl, self.osl)

    # Agentic replay (`metrics["server"]`, `metrics["replay"]`): prompt tokens by the source of their KV cache
    # (HBM prefix cache, external i.e. DRAM/CPU offload, recomputed), the engine's prefix-cache counters and
    # the usage-based counts; None for fixed-length Points and engines without these counters.
    server_prompt_tokens: float | None = None
    server_prompt_tokens_local_cache_hit: float | None = None
    server_prompt_tokens_external: float | None = None
    server_prompt_tokens_local_compute: float | None = None
    server_prefix_cache_queries: float | None = None
    server_prefix_cache_hits: float | None = None
    replay_prompt_tokens: int | None = None
    replay_cached_tokens: int | None = None
    e2e_interactivity_p90: float | None = None
    # The KV capacity planner's prediction for the engine's cache (`metrics.replay.planner`,
    # runners.loadgen.records.PlannerPrediction), when one was stored with the Point.
    planner_hbm_hit_rate: float | None = None
    planner_dram_hit_rate: float | None = None


@functools.cache
def _registry_keys_by_repo() -> dict[str, str]:
    return {entry.hf_id.lower(): key for key, entry in load_model_registry().items() if entry.hf_id}


def _registry_key(model: str) -> str:
    """An imported result's model (a hub repository id) as the model registry's key when the registry has it,
    so imported and native results of one model share a row."""
    return _registry_keys_by_repo().get(model.lower(), model)


def _tokens(count: float | None) -> str:
    if count is None or count != count:  # None or NaN
        return "?"
    count = int(count)
    return f"{count // 1024}k" if count >= 1024 and count % 1024 == 0 else str(count)


def workload_label(kind: str, isl: float | None, osl: float | None) -> str:
    """'8k/1k' for fixed-length ISL/OSL, 'agentic' for trace replay."""
    if kind == "agentic-replay":
        return "agentic"
    return f"{_tokens(isl)}/{_tokens(osl)}"


# The figures a reader needs from a Point's stored `PointMetrics` JSON, by path; the database extracts them
# (SQLite's json_extract, PostgreSQL's #>>): decoding every Point's whole JSON (a few KB each) in Python
# cost more than the rest of a 50,000-point read (docs/BENCHMARKS.md, "Hub render"). Absent keys read as None.
_METRIC_PATHS: dict[str, tuple[str, ...]] = {
    "realized_hit_rate": ("replay", "realized_hit_rate"),
    "theoretical_hit_rate": ("replay", "theoretical_hit_rate"),
    "power_w_mean": ("host", "telemetry", "power_w_mean"),
    # Agentic replay (`metrics["server"]`, `metrics["replay"]`): prompt tokens by the source of their KV cache,
    # the engine's prefix-cache counters, the usage-based counts and the KV planner's prediction.
    **{f"server_{name}": ("server", name) for name in (
        "prompt_tokens", "prompt_tokens_local_cache_hit", "prompt_tokens_external", "prompt_tokens_local_compute",
        "prefix_cache_queries", "prefix_cache_hits",
    )},
    "replay_prompt_tokens": ("replay", "prompt_tokens"),
    "replay_cached_tokens": ("replay", "cached_tokens"),
    "e2e_interactivity_p90": ("replay", "e2e_interactivity_p90"),
    "planner_hbm_hit_rate": ("replay", "planner", "hbm_hit_rate"),
    "planner_dram_hit_rate": ("replay", "planner", "dram_hit_rate"),
}  # fmt: skip
_INTEGER_METRICS = ("replay_prompt_tokens", "replay_cached_tokens")  # token counts; read as numbers, kept as int
# Point columns a ResultView carries under the same name.
_RESULT_COLUMNS = (
    "origin", "isl", "osl", "concurrency", "repeat_index", "valid", "validity_reasons", "completed", "failed",
    "output_throughput", "output_throughput_per_gpu", "total_token_throughput_per_gpu", "ttft_p50_ms", "tpot_p50_ms",
    "interactivity_p50", "e2el_p50_ms", "finished_at", "point_key", "interactivity_p90", "total_token_throughput",
    "request_throughput", "duration_s", "source", "workload_kind", "job_id", "accelerators", "ttft_p99_ms",
    "tpot_p90_ms",
)  # fmt: skip
_POINT = PointResultRow.__table__  # type: ignore[attr-defined]
_SWEEP = SweepRow.__table__  # type: ignore[attr-defined]


def _configuration(snapshot: dict[str, Any]) -> dict[str, Any]:
    """What a reader needs of a stored recipe snapshot to tell configurations apart.

    Snapshots leave fields at their defaults out (so adding a schema field keeps old fingerprints), hence
    every read here has the schema's default.
    """
    # Imported results (orchestrator/importers) keep the source tool's flat configuration: `model` is a string
    # and tp/ep sit at the top level.
    model = snapshot.get("model")
    parallelism = snapshot.get("parallelism") or {name: snapshot[name] for name in ("tp", "ep") if name in snapshot}
    parts = [f"{name}{parallelism[name]}" for name in ("tp", "ep", "pp", "dp") if int(parallelism.get(name) or 1) > 1]
    if parallelism.get("disaggregated") or snapshot.get("disagg"):
        parts.append("disagg")
    methodology = snapshot.get("methodology") or {}
    offload = methodology.get("kv_offload") or {}
    offload_label = "none"
    if offload.get("backend", "none") != "none":
        size = offload.get("dram_gib")
        offload_label = f"{offload['backend']} {size:g} GiB" if size else str(offload["backend"])
    return {
        "model": model.get("name", "") if isinstance(model, dict) else _registry_key(str(model or "")),
        "precision": snapshot.get("precision", ""),
        "parallelism": "·".join(parts) or "tp1",
        "kv_offload": offload_label,
        "prefix_caching": methodology.get("prefix_caching"),
    }


def _result_conditions(sweep: str | None, include_retracted: bool, public: bool) -> list[Any]:
    conditions: list[Any] = []
    if sweep is not None:
        conditions.append(_SWEEP.c.name == sweep)
    if not include_retracted:
        conditions.append(_POINT.c.retracted.is_(False))
    if public:
        conditions += [not_embargoed(), not_dry_run()]
    return conditions


def result_columns(
    session: Session, sweep: str | None = None, include_retracted: bool = False, public: bool = False
) -> dict[str, list[Any]]:
    """`list_results` column by column: one list per `ResultView` field (field order), rows in the same order.

    For readers that build a table (the hub's DataFrame): one Core query of the needed columns, without an ORM
    object or a frozen dataclass per row, which at 50,000 rows cost seconds (docs/BENCHMARKS.md, "Hub render").
    """
    conditions = _result_conditions(sweep, include_retracted, public)
    joined = _POINT.join(_SWEEP, _SWEEP.c.id == _POINT.c.sweep_id).join(_RECIPE, _RECIPE.c.id == _POINT.c.recipe_id)
    query = (
        select(
            _SWEEP.c.name.label("sweep"), _RECIPE.c.name.label("recipe"), _RECIPE.c.fingerprint,
            _RECIPE.c.hardware_key.label("hardware"), _RECIPE.c.engine_kind.label("engine"), _POINT.c.recipe_id,
            *(_POINT.c[name] for name in _RESULT_COLUMNS if name != "validity_reasons"),
            # As stored: nearly every Point is valid ('[]'), and decoding 50,000 of those costs more than reading them.
            cast(_POINT.c.validity_reasons, Text).label("validity_reasons"),
            *(_POINT.c.metrics[path].as_float().label(name) for name, path in _METRIC_PATHS.items()),
        )
        .select_from(joined)
        .where(*conditions)
        .order_by(
            _SWEEP.c.name, _RECIPE.c.name, _POINT.c.isl, _POINT.c.osl, _POINT.c.concurrency, _POINT.c.repeat_index
        )
    )  # fmt: skip
    connection = session.connection()
    result = connection.execute(query)
    names = list(result.keys())
    rows = result.all()
    by_column = zip(*rows, strict=True) if rows else ([] for _ in names)
    columns: dict[str, list[Any]] = {name: list(values) for name, values in zip(names, by_column, strict=True)}
    # A recipe's snapshot is read once, not once per Point (a configuration has many Points).
    recipe_ids = select(_POINT.c.recipe_id).select_from(joined).where(*conditions)
    snapshots = connection.execute(
        select(_RECIPE.c.id, _RECIPE.c.snapshot).where(_RECIPE.c.id.in_(recipe_ids.scalar_subquery()))
    ).all()
    configurations = {recipe_id: _configuration(snapshot) for recipe_id, snapshot in snapshots}
    of_rows = [configurations[recipe_id] for recipe_id in columns.pop("recipe_id")]
    for name in ("model", "precision", "parallelism", "kv_offload", "prefix_caching"):
        columns[name] = [configuration[name] for configuration in of_rows]
    columns["validity_reasons"] = [[] if text == "[]" else json.loads(text) for text in columns["validity_reasons"]]
    power = columns.pop("power_w_mean")
    columns["power_w_per_gpu"] = [
        watts / count if watts is not None and count else None
        for watts, count in zip(power, columns["accelerators"], strict=True)
    ]
    for name in _INTEGER_METRICS:
        columns[name] = [None if value is None else int(value) for value in columns[name]]
    return {field.name: columns[field.name] for field in dataclasses.fields(ResultView)}


def list_results(
    session: Session, sweep: str | None = None, include_retracted: bool = False, public: bool = False
) -> list[ResultView]:
    """Results with names attached. `public` leaves out embargoed points and dry runs (hub and snapshots)."""
    columns = result_columns(session, sweep, include_retracted, public)
    names = list(columns)
    return [ResultView(**dict(zip(names, values, strict=True))) for values in zip(*columns.values(), strict=True)]


def results_version(session: Session) -> tuple[int, int, int, int]:
    """A value that changes whenever what `list_results` returns may have: a Point recorded (highest id, count),
    retracted, or put under or out of an embargo. Cheap (each part is answered from the primary key or an
    index), so a reader can cache the results until it changes instead of re-reading them every few seconds."""
    count = func.count()
    query = select(
        select(func.coalesce(func.max(_POINT.c.id), 0)).scalar_subquery(),
        select(count).select_from(_POINT).scalar_subquery(),
        select(count).select_from(_POINT).where(_POINT.c.retracted.is_(True)).scalar_subquery(),
        select(count).select_from(_POINT).where(not_(not_embargoed())).scalar_subquery(),
    )
    highest, points, retracted, embargoed = session.connection().execute(query).one()
    return int(highest), int(points), int(retracted), int(embargoed)


def not_dry_run() -> Any:
    """SQL condition: the point was not a dry run (plumbing checks on a stand-in engine are never published)."""
    return col(PointResultRow.origin) != "dry-run"


def not_embargoed() -> Any:
    """SQL condition: the point is not under an embargo that is still running."""
    return or_(col(PointResultRow.embargo_until).is_(None), col(PointResultRow.embargo_until) <= utcnow())


def embargo(session: Session, sweep: str, until: datetime) -> int:
    """Keep a sweep's results from public readers until `until` (e.g. before a vendor's launch date)."""
    query = select(PointResultRow).join(SweepRow, col(SweepRow.id) == col(PointResultRow.sweep_id))
    rows = session.exec(query.where(SweepRow.name == sweep)).all()
    for row in rows:
        row.embargo_until = until
        session.add(row)
    session.commit()
    return len(rows)


def retract(session: Session, reason: str, sweep: str, point_key: str | None = None) -> int:
    """Hide a sweep's results (or one Point's) from readers; rows stay, with the reason. Returns rows changed."""
    query = (
        select(PointResultRow)
        .join(SweepRow, col(SweepRow.id) == col(PointResultRow.sweep_id))
        .where(SweepRow.name == sweep, col(PointResultRow.retracted).is_(False))
    )
    if point_key is not None:
        query = query.where(PointResultRow.point_key == point_key)
    rows = session.exec(query).all()
    now = utcnow()
    for row in rows:
        row.retracted, row.retraction_reason, row.retracted_at = True, reason, now
        session.add(row)
    session.commit()
    return len(rows)


def list_sweeps(session: Session) -> list[SweepRow]:
    return list(session.exec(select(SweepRow).order_by(col(SweepRow.created_at))).all())


def transitions_of_sweep(session: Session, sweep_id: int, subject: str | None = None) -> list[TransitionRow]:
    query = select(TransitionRow).where(TransitionRow.sweep_id == sweep_id)
    if subject is not None:
        query = query.where(TransitionRow.subject == subject)
    return list(session.exec(query.order_by(col(TransitionRow.id))).all())


def sweep_by_name(session: Session, name: str) -> SweepRow | None:
    return session.exec(select(SweepRow).where(SweepRow.name == name)).first()


def points_per_job(session: Session, sweep_id: int) -> dict[str, int]:
    """Recorded Points of each job of the sweep."""
    query = (
        select(PointResultRow.job_id, func.count())
        .where(PointResultRow.sweep_id == sweep_id)
        .group_by(col(PointResultRow.job_id))
    )
    return {job_id: count for job_id, count in session.exec(query).all()}


def embargoed_sweep_ids(session: Session) -> set[int]:
    """Sweeps with results under a running embargo: public readers do not learn they exist."""
    query = select(PointResultRow.sweep_id).where(not_(not_embargoed())).distinct()
    return set(session.exec(query).all())


@dataclass(frozen=True)
class PointDetail:
    """Everything the hub's run detail shows of one public Point: its row, recipe, job, files and history."""

    sweep: SweepRow
    point: PointResultRow
    recipe: RecipeRow
    job: JobRow | None
    artifacts: list[ArtifactRow]  # the Point's own (request records) and its job's (engine log, attachments)
    transitions: list[TransitionRow]  # the job's lifecycle and the Point's own states, in the order recorded
    provenance: ProvenanceRow | None = None  # engine command line, env names, commit, host (jobs since 0006)
    engine_build: EngineRow | None = None  # engine kind, version, image (and digest) the job ran


def public_point_detail(session: Session, sweep: str, point_key: str) -> PointDetail | None:
    """The Point `point_key` of sweep `sweep` with what produced it; None unless it is public.

    Public as in `list_results(public=True)`: not retracted, not under a running embargo, not a dry run. A
    reader cannot tell a hidden Point from a missing one (an embargo keeps even the existence back).
    """
    found = session.exec(
        select(PointResultRow, SweepRow, RecipeRow)
        .join(SweepRow, col(SweepRow.id) == col(PointResultRow.sweep_id))
        .join(RecipeRow, col(RecipeRow.id) == col(PointResultRow.recipe_id))
        .where(SweepRow.name == sweep, PointResultRow.point_key == point_key)
        .where(col(PointResultRow.retracted).is_(False), not_embargoed(), not_dry_run())
    ).first()
    if found is None:
        return None
    point, sweep_row, recipe = found
    job = session.get(JobRow, point.job_id)
    artifacts = session.exec(
        select(ArtifactRow)
        .where(
            or_(
                (col(ArtifactRow.sweep_id) == point.sweep_id) & (col(ArtifactRow.point_key) == point.point_key),
                (col(ArtifactRow.job_id) == point.job_id) & col(ArtifactRow.point_key).is_(None),
            )
        )
        .order_by(col(ArtifactRow.id))
    ).all()
    transitions = session.exec(
        select(TransitionRow)
        .where(
            TransitionRow.job_id == point.job_id,
            or_(col(TransitionRow.subject) == "job", col(TransitionRow.point_key) == point.point_key),
        )
        .order_by(col(TransitionRow.id))
    ).all()
    provenance = session.get(ProvenanceRow, point.job_id)
    engine_build = session.get(EngineRow, job.engine_id) if job is not None and job.engine_id is not None else None
    return PointDetail(sweep_row, point, recipe, job, list(artifacts), list(transitions), provenance, engine_build)
