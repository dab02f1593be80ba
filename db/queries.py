"""Write and read queries. Writers are called only by the orchestrator's driver; readers by anyone."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, insert, not_, or_, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from db.lifecycle import TERMINAL_JOB_STATES, JobState, PointState, SweepState
from db.models import ArtifactRow, HardwareRow, JobRow, PointResultRow, RecipeRow, SweepRow, TransitionRow, utcnow

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
) -> RecipeRow:
    existing = session.exec(select(RecipeRow).where(RecipeRow.fingerprint == fingerprint)).first()
    if existing is not None:
        return existing
    row = RecipeRow(
        fingerprint=fingerprint,
        name=name,
        path=path,
        schema_version=int(snapshot.get("schema_version", 1)),
        hardware_key=hardware_key,
        engine_kind=engine_kind,
        snapshot=snapshot,
    )
    session.add(row)
    session.commit()
    session.refresh(row)
    return row


# The driver writes a few of these per job; at thousands of jobs the ORM's unit of work and the
# building of statements cost more than SQLite itself, so they are prepared once, as Core statements on
# the tables, and executed with parameters (benchmarks/dispatch_overhead.py measures it).
_JOB = JobRow.__table__  # type: ignore[attr-defined]
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
    commit: bool = True,
) -> None:
    now = utcnow()
    connection = session.connection()
    connection.execute(
        _INSERT_JOB,
        {"id": job_id, "sweep_id": sweep_id, "recipe_id": recipe_id, "attempt": attempt, "points_planned": points,
         "log_dir": log_dir, "status": JobState.QUEUED.value, "created_at": now},
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


def record_point_with_artifacts(session: Session, row: PointResultRow, artifacts: list[ArtifactRow]) -> bool:
    """The Point, its artifact rows and its 'recorded' transition in one transaction; False if already there."""
    session.add(row)
    for artifact in artifacts:
        session.add(artifact)
    session.add(TransitionRow(sweep_id=row.sweep_id, job_id=row.job_id, point_key=row.point_key, subject="point",
                              state=PointState.RECORDED.value, reason="valid" if row.valid else "invalid"))  # fmt: skip
    try:
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


def list_results(
    session: Session, sweep: str | None = None, include_retracted: bool = False, public: bool = False
) -> list[ResultView]:
    """Results with names attached. `public` leaves out embargoed points and dry runs (hub and snapshots)."""
    query = (
        select(PointResultRow, SweepRow, RecipeRow)
        .join(SweepRow, col(SweepRow.id) == col(PointResultRow.sweep_id))
        .join(RecipeRow, col(RecipeRow.id) == col(PointResultRow.recipe_id))
    )
    if sweep is not None:
        query = query.where(SweepRow.name == sweep)
    if not include_retracted:
        query = query.where(col(PointResultRow.retracted).is_(False))
    if public:
        query = query.where(not_embargoed(), not_dry_run())
    query = query.order_by(
        col(SweepRow.name), col(RecipeRow.name), col(PointResultRow.isl), col(PointResultRow.osl),
        col(PointResultRow.concurrency), col(PointResultRow.repeat_index),
    )  # fmt: skip
    views = []
    for point, sweep_row, recipe in session.exec(query).all():
        views.append(
            ResultView(
                sweep=sweep_row.name,
                recipe=recipe.name,
                fingerprint=recipe.fingerprint,
                hardware=recipe.hardware_key,
                engine=recipe.engine_kind,
                origin=point.origin,
                isl=point.isl,
                osl=point.osl,
                concurrency=point.concurrency,
                repeat_index=point.repeat_index,
                valid=point.valid,
                validity_reasons=list(point.validity_reasons),
                completed=point.completed,
                failed=point.failed,
                output_throughput=point.output_throughput,
                output_throughput_per_gpu=point.output_throughput_per_gpu,
                total_token_throughput_per_gpu=point.total_token_throughput_per_gpu,
                ttft_p50_ms=point.ttft_p50_ms,
                tpot_p50_ms=point.tpot_p50_ms,
                interactivity_p50=point.interactivity_p50,
                e2el_p50_ms=point.e2el_p50_ms,
                finished_at=point.finished_at,
                point_key=point.point_key,
                interactivity_p90=point.interactivity_p90,
                total_token_throughput=point.total_token_throughput,
                request_throughput=point.request_throughput,
                duration_s=point.duration_s,
                source=point.source,
                workload_kind=point.workload_kind,
                realized_hit_rate=(point.metrics.get("replay") or {}).get("realized_hit_rate"),
                theoretical_hit_rate=(point.metrics.get("replay") or {}).get("theoretical_hit_rate"),
            )
        )
    return views


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
    for row in rows:
        row.retracted, row.retraction_reason = True, reason
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
