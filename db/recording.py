"""The orchestrator's writes, and the driver's own reads for resuming and cancelling.

Only the orchestrator calls these (its driver records every state change; its CLI curates: retract, embargo);
runners never open the database and the hub reads through `db.reads`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, bindparam, delete, func, insert, update
from sqlalchemy import select as core_select
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
    PointVerificationRow,
    ProvenanceRow,
    RecipeRow,
    ServerMetricDeltaRow,
    SweepLeaseRow,
    SweepRow,
    TransitionRow,
    stored_id,
    table_of,
    utcnow,
)


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


_ENGINE = table_of(EngineRow)

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
    session.add(TransitionRow(sweep_id=stored_id(sweep), subject="sweep", state=status.value, reason=reason))
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
    session.add(TransitionRow(sweep_id=stored_id(sweep), subject="sweep", state=SweepState.CANCELLING.value,
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
    values: dict[str, Any] = {
        "fingerprint": fingerprint, "name": name, "path": path,
        "schema_version": int(snapshot.get("schema_version", 1)), "hardware_key": hardware_key,
        "engine_kind": engine_kind, "snapshot": snapshot, "created_at": utcnow(),
    }  # fmt: skip
    inserted = connection.execute(_INSERT_RECIPE, values).inserted_primary_key
    if inserted is None:  # an INSERT of one row always returns its key; a recipe must never be stored without one
        raise RuntimeError(f"recipe {fingerprint}: the database returned no id for the inserted row")
    (recipe_id,) = inserted
    if commit:
        session.commit()
    return RecipeRow(id=recipe_id, **values)


# The driver writes a few of these per job; at thousands of jobs the ORM's unit of work and the
# building of statements cost more than SQLite itself, so they are prepared once, as Core statements on
# the tables, and executed with parameters (benchmarks/dispatch_overhead.py measures it).
_JOB = table_of(JobRow)

_RECIPE = table_of(RecipeRow)

_SELECT_RECIPE = core_select(_RECIPE).where(_RECIPE.c.fingerprint == bindparam("fingerprint"))

_INSERT_RECIPE = insert(_RECIPE)

_TRANSITION = table_of(TransitionRow)

_INSERT_JOB = insert(_JOB)

_INSERT_TRANSITION = insert(_TRANSITION)

_KEEP_HOST: Any = func.coalesce(  # the host column's type; SQLAlchemy cannot infer it here
    bindparam("new_host"), _JOB.c.host
)

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


_PROVENANCE = table_of(ProvenanceRow)

_INSERT_PROVENANCE = insert(_PROVENANCE)

_SET_PROVENANCE_HOST = (
    update(_PROVENANCE).where(_PROVENANCE.c.job_id == bindparam("of_job")).values(host=bindparam("new_host"))
)

_SET_PROVENANCE_LAUNCH = (
    update(_PROVENANCE)
    .where(_PROVENANCE.c.job_id == bindparam("of_job"))
    .values(
        engine_argv=bindparam("new_argv", type_=_PROVENANCE.c.engine_argv.type),
        env_names=bindparam("new_env_names", type_=_PROVENANCE.c.env_names.type),
        engine_image=bindparam("new_image"),
        engine_image_digest=bindparam("new_image_digest"),
    )
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
         "preflight": None, "engine_image": None, "engine_image_digest": None, "created_at": utcnow()},
    )  # fmt: skip
    if commit:
        session.commit()


def set_provenance_host(session: Session, job_id: str, host: str, *, commit: bool = True) -> None:
    session.connection().execute(_SET_PROVENANCE_HOST, {"of_job": job_id, "new_host": host})
    if commit:
        session.commit()


def set_provenance_launch(
    session: Session, job_id: str, argv: list[str], env_names: Iterable[str], image: str | None,
    image_digest: str | None, *, commit: bool = True,
) -> None:  # fmt: skip
    """What the runner started as the job's engine (names of its variables only: never pass values)."""
    session.connection().execute(
        _SET_PROVENANCE_LAUNCH,
        {"of_job": job_id, "new_argv": argv, "new_env_names": sorted(env_names), "new_image": image,
         "new_image_digest": image_digest},
    )  # fmt: skip
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
    session: Session, sweep_id: int, job_id: str, point_key: str, state: str, *, commit: bool = True, reason: str = ""
) -> None:
    session.connection().execute(
        _INSERT_TRANSITION,
        {"sweep_id": sweep_id, "job_id": job_id, "point_key": point_key, "subject": "point", "state": state,
         "reason": reason, "at": utcnow()},
    )  # fmt: skip
    if commit:
        session.commit()


def record_verifications(
    session: Session, sweep: str, states: Mapping[str, str], signer: str, key_id: str, envelope_sha256: str
) -> int:
    """What one signed bundle says of the sweep's Points (`states`: point key -> signed | verified | hash-only), in one
    transaction; returns how many of them this database holds (a bundle made elsewhere may hold others)."""
    found = session.exec(
        select(PointResultRow)
        .join(SweepRow, col(SweepRow.id) == col(PointResultRow.sweep_id))
        .where(SweepRow.name == sweep, col(PointResultRow.point_key).in_(list(states)))
    ).all()
    now = utcnow()
    session.add_all(
        PointVerificationRow(point_result_id=stored_id(point), state=states[point.point_key], signer=signer,
                             key_id=key_id, envelope_sha256=envelope_sha256, at=now)
        for point in found
    )  # fmt: skip
    session.commit()
    return len(found)


def job_of_point(session: Session, sweep_id: int, point_key: str) -> str | None:
    """The job attempt that recorded the Point, or None when it is not recorded."""
    query = select(PointResultRow.job_id).where(
        PointResultRow.sweep_id == sweep_id, PointResultRow.point_key == point_key
    )
    return session.exec(query).first()


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
                delta.point_result_id = stored_id(row)
                session.add(delta)
        session.commit()
    except IntegrityError:
        session.rollback()
        return False
    return True


_POINT = table_of(PointResultRow)
# What a Point's row holds unless told otherwise (not retracted, no embargo): for bulk inserts, which take no
# model's defaults.
_POINT_DEFAULTS = {name: field.default for name, field in PointResultRow.model_fields.items()
                   if name != "id" and not field.is_required() and field.default_factory is None}  # fmt: skip
_ARTIFACT = table_of(ArtifactRow)
_DELTA = table_of(ServerMetricDeltaRow)


def record_imported(
    session: Session,
    sweep_id: int,
    jobs: Sequence[tuple[str, int, int | None, str, str]],
    points: Sequence[dict[str, Any]],
    artifacts: Sequence[dict[str, Any]],
    provenance: dict[str, Any],
    deltas: Mapping[str, Sequence[ServerMetricDeltaRow]] | None = None,
    replaced: Sequence[tuple[str, str]] = (),
) -> None:
    """Results not measured here, in one transaction with bulk inserts: the `jobs` (job id, recipe id, engine id,
    recipe path, reason) in state imported, each with its provenance (`provenance`: the project's commit); the
    `points` (column values, each naming its job) with their 'recorded' transitions, `artifacts` rows and
    server-counter `deltas` (by point key); and the Points of `replaced` (point key, reason) retracted. Whatever
    stops it rolls it back: IntegrityError where one is already stored (the caller leaves out what it knows to be
    stored), a lost connection, Ctrl-C."""
    if not points:
        return
    now, connection = utcnow(), session.connection()
    planned = Counter(point["job_id"] for point in points)
    try:
        connection.execute(_INSERT_JOB, [
            {"id": job_id, "sweep_id": sweep_id, "recipe_id": recipe_id, "attempt": 1,
             "points_planned": planned[job_id], "log_dir": "", "status": JobState.IMPORTED.value, "created_at": now,
             "started_at": None, "finished_at": now, "engine_id": engine_id}
            for job_id, recipe_id, engine_id, *_ in jobs
        ])  # fmt: skip
        connection.execute(_INSERT_PROVENANCE, [
            {"job_id": job_id, "engine_argv": None, "env_names": None, "host": None, "accelerator_driver": None,
             "accelerator_runtime": None, "preflight": None, "engine_image": None, "engine_image_digest": None,
             "created_at": now, "recipe_path": recipe_path, **provenance}
            for job_id, _, _, recipe_path, _ in jobs
        ])  # fmt: skip
        transitions = [
            {"sweep_id": sweep_id, "job_id": job_id, "point_key": None, "subject": "job", "at": now, "state": state,
             "reason": reason}
            for job_id, *_, imported in jobs
            for state, reason in ((JobState.QUEUED.value, f"attempt 1, {planned[job_id]} point(s)"),
                                  (JobState.IMPORTED.value, imported))
        ] + [
            {"sweep_id": sweep_id, "job_id": point["job_id"], "point_key": point["point_key"], "subject": "point",
             "at": now, "state": PointState.RECORDED.value, "reason": "valid" if point["valid"] else "invalid"}
            for point in points
        ]  # fmt: skip
        connection.execute(_INSERT_TRANSITION, transitions)
        connection.execute(insert(_POINT), [{**_POINT_DEFAULTS, **point} for point in points])
        if artifacts:
            connection.execute(insert(_ARTIFACT), list(artifacts))
        if deltas:
            query = core_select(_POINT.c.point_key, _POINT.c.id).where(
                _POINT.c.sweep_id == sweep_id, _POINT.c.point_key.in_(deltas)
            )
            ids = dict(connection.execute(query).tuples().all())
            rows = [dict(delta.model_dump(exclude={"id"}), point_result_id=ids[key])
                    for key, of_point in deltas.items() for delta in of_point]  # fmt: skip
            connection.execute(insert(_DELTA), rows)
        for point_key, reason in replaced:
            connection.execute(
                update(_POINT)
                .where(_POINT.c.sweep_id == sweep_id, _POINT.c.point_key == point_key, _POINT.c.retracted.is_(False))
                .values(retracted=True, retraction_reason=reason, retracted_at=now)
            )
        session.commit()
    except BaseException:  # an IntegrityError, a lost connection, Ctrl-C: no part of the batch may be committed later
        session.rollback()
        raise


def add_artifact(session: Session, artifact: ArtifactRow) -> ArtifactRow:
    session.add(artifact)
    session.commit()
    session.refresh(artifact)
    return artifact


def _pending_same_bytes(artifact: ArtifactRow) -> ColumnElement[bool]:
    return and_(_ARTIFACT.c.key == artifact.key, _ARTIFACT.c.local_path == artifact.local_path,
                _ARTIFACT.c.status == "pending")  # fmt: skip


def mark_artifact_stored(session: Session, artifact: ArtifactRow, uri: str) -> None:
    """The artifact is stored at `uri`, and so is every other pending row of the same bytes staged at the same path
    (content-addressed: one file, several rows, as a batch of imported results shares one). `artifact` is a row
    read back or the values a batch's rows were inserted with: the rows are found by their bytes, not by id."""
    artifact.status, artifact.uri, artifact.error, artifact.stored_at = "stored", uri, None, utcnow()
    session.connection().execute(
        update(_ARTIFACT).where(_pending_same_bytes(artifact))
        .values(status="stored", uri=uri, error=None, stored_at=artifact.stored_at)
    )  # fmt: skip
    session.commit()


def mark_artifact_failed(session: Session, artifact: ArtifactRow, error: str) -> None:
    """Every pending row of the artifact's bytes keeps why its upload failed (found as `mark_artifact_stored` finds
    them)."""
    artifact.error = error[:2000]
    session.connection().execute(update(_ARTIFACT).where(_pending_same_bytes(artifact)).values(error=artifact.error))
    session.commit()


def artifact_pending_at(session: Session, local_path: str) -> bool:
    """Whether an artifact is still to upload from this staged file (content-addressed: the same bytes, several
    rows)."""
    query = core_select(_ARTIFACT.c.id).where(_ARTIFACT.c.status == "pending", _ARTIFACT.c.local_path == local_path)
    return session.connection().execute(query.limit(1)).first() is not None


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


def finished_point_keys(session: Session, sweep_id: int) -> set[str]:
    return set(session.exec(select(PointResultRow.point_key).where(PointResultRow.sweep_id == sweep_id)).all())


def embargo(session: Session, sweep: str, until: datetime) -> int:
    """Keep a sweep's results from public readers until `until` (e.g. before a vendor's launch date)."""
    query = select(PointResultRow).join(SweepRow, col(SweepRow.id) == col(PointResultRow.sweep_id))
    rows = session.exec(query.where(SweepRow.name == sweep)).all()
    for row in rows:
        row.embargo_until = until
        session.add(row)
    session.commit()
    return len(rows)


def _retract_rows(session: Session, rows: list[PointResultRow], reason: str) -> int:
    now = utcnow()
    for row in rows:
        row.retracted, row.retraction_reason, row.retracted_at = True, reason, now
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
    return _retract_rows(session, list(session.exec(query).all()), reason)


def retract_superseded(session: Session, sweep: str, recipe_name: str, fingerprint: str, reason: str) -> int:
    """Hide a sweep's results of recipes named `recipe_name` other than `fingerprint` (the same configuration, made
    again from other inputs: a projection from newer source measurements). Returns rows changed."""
    query = (
        select(PointResultRow)
        .join(SweepRow, col(SweepRow.id) == col(PointResultRow.sweep_id))
        .join(RecipeRow, col(RecipeRow.id) == col(PointResultRow.recipe_id))
        .where(
            SweepRow.name == sweep, RecipeRow.name == recipe_name, RecipeRow.fingerprint != fingerprint,
            col(PointResultRow.retracted).is_(False),
        )
    )  # fmt: skip
    return _retract_rows(session, list(session.exec(query).all()), reason)


# --- sweep leases: one driver per sweep (orchestrator/lease.py) ------------------------------------

_LEASE = table_of(SweepLeaseRow)


def try_insert_lease(session: Session, lease: SweepLeaseRow) -> bool:
    """Take a free sweep: True when this insert created the lease, False when somebody holds it."""
    try:
        session.execute(insert(_LEASE).values(**lease.model_dump()))
        session.commit()
    except IntegrityError:
        session.rollback()
        return False
    return True


def lease_of(session: Session, sweep: str) -> SweepLeaseRow | None:
    row = session.execute(core_select(_LEASE).where(_LEASE.c.sweep == sweep)).mappings().first()
    session.commit()  # a read of its own: the next one sees the latest holder
    return SweepLeaseRow.model_validate(dict(row)) if row is not None else None


def replace_lease(session: Session, previous_token: str, lease: SweepLeaseRow) -> bool:
    """Take over a lease whose holder is gone; False when somebody else took or renewed it first."""
    changed = session.execute(
        update(_LEASE)
        .where(_LEASE.c.sweep == lease.sweep, _LEASE.c.token == previous_token)
        .values(**lease.model_dump(exclude={"sweep"}))
    )
    session.commit()
    return changed.rowcount == 1  # type: ignore[attr-defined]  # an UPDATE's result has a row count


def renew_lease(session: Session, sweep: str, token: str, now: datetime, expires_at: datetime) -> bool:
    """Extend the lease this holder has; False when it is no longer theirs (taken over after it expired)."""
    changed = session.execute(
        update(_LEASE)
        .where(_LEASE.c.sweep == sweep, _LEASE.c.token == token)
        .values(heartbeat_at=now, expires_at=expires_at)
    )
    session.commit()
    return changed.rowcount == 1  # type: ignore[attr-defined]  # an UPDATE's result has a row count


def release_lease(session: Session, sweep: str, token: str) -> None:
    session.execute(delete(_LEASE).where(_LEASE.c.sweep == sweep, _LEASE.c.token == token))
    session.commit()
