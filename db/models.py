"""SQL tables (SQLModel). Alembic migrations in db/migrations create them; nothing else does.

Adding a column means adding a migration: a released revision never changes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, Index, Table, UniqueConstraint
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    return datetime.now(UTC)


def table_of(model: type[SQLModel]) -> Table:
    """The Core table of a table model, for statements prepared once (SQLModel leaves `__table__` untyped)."""
    table = getattr(model, "__table__", None)
    if not isinstance(table, Table):
        raise TypeError(f"{model.__name__} is not a table model")
    return table


def stored_id(row: SQLModel) -> int:
    """The primary key of a row read from or flushed to the database (None only before its first flush)."""
    row_id = getattr(row, "id", None)
    if not isinstance(row_id, int):  # a bug in the caller: the row was never stored
        raise RuntimeError(f"{type(row).__name__} has no id yet: it was not flushed")
    return row_id


class HardwareRow(SQLModel, table=True):
    __tablename__ = "hardware"

    key: str = Field(primary_key=True, description="Registry key, e.g. 'b200'.")
    vendor: str
    name: str
    accelerator_unit: str
    spec: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False), description="Registry entry snapshot.")
    updated_at: datetime = Field(default_factory=utcnow)


class ModelRow(SQLModel, table=True):
    """One model of recipes/models.yaml (the model registry), replaced from the file on every sweep start."""

    __tablename__ = "model"

    key: str = Field(primary_key=True, description="Registry key, e.g. 'deepseek-r1'.")
    name: str = Field(description="Human-readable name, e.g. 'DeepSeek-R1 (0528)'.")
    hf_id: str | None = Field(default=None, description="Upstream hub repository id; None for a generated model.")
    generated: str | None = Field(default=None, description="Preset that generates the model locally, if any.")
    architecture: str = Field(description="dense|moe")
    attention: str = Field(description="Attention summary, e.g. 'MLA × 61 (latent 512 + rope 64)'.")
    total_params_b: float = Field(description="Total parameters, in billions.")
    active_params_b: float = Field(description="Parameters active per token, in billions.")
    context_length: int
    kv_dtype: str = Field(description="KV-cache element type the model is served with by default.")
    kv_bytes_per_token: float = Field(
        description="KV-cache bytes per token at kv_dtype, long-context limit "
        "(recipes.model_registry.kv_bytes_per_token with no context length)."
    )
    spec: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False), description="Registry entry snapshot.")
    updated_at: datetime = Field(default_factory=utcnow)


class EngineRow(SQLModel, table=True):
    """A serving engine build: kind, version and container image, as the recipes that ran on it state them.

    The key columns hold '' rather than NULL when a recipe does not state the value, so that the unique
    constraint also holds for them (NULLs never collide in a SQL unique constraint)."""

    __tablename__ = "engine"
    __table_args__ = (UniqueConstraint("name", "version", "image", name="uq_engine_name_version_image"),)

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(description="Engine kind: vllm, sglang, trtllm, dynamo, vllm-tpu, simulated, or an import's.")
    version: str = Field(default="", description="Engine version the recipe states ('' when it states none).")
    image: str = Field(default="", description="Container image reference ('' when the engine runs outside one).")
    image_digest: str | None = Field(default=None, description="'sha256:...' when the image is pinned by digest.")
    created_at: datetime = Field(default_factory=utcnow)


class RecipeRow(SQLModel, table=True):
    __tablename__ = "recipe"

    id: int | None = Field(default=None, primary_key=True)
    fingerprint: str = Field(index=True, unique=True, description="Hash of the normalised recipe.")
    name: str = Field(index=True)
    path: str = Field(description="File the recipe was loaded from (first time seen).")
    schema_version: int
    hardware_key: str
    engine_kind: str
    snapshot: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False), description="Normalised recipe.")
    created_at: datetime = Field(default_factory=utcnow)


class SweepRow(SQLModel, table=True):
    __tablename__ = "sweep"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True)
    status: str = Field(default="planned", description="A db.lifecycle.SweepState value.")
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    cancel_requested_at: datetime | None = Field(
        default=None, description="Set by `infersweep cancel`; the running driver stops the sweep when it sees it."
    )
    gpu_hour_budget: float | None = Field(default=None, description="GPU-hours the sweep may plan, when capped.")


class JobRow(SQLModel, table=True):
    __tablename__ = "job"
    __table_args__ = (Index("ix_job_sweep_id_created_at", "sweep_id", "created_at"),)

    id: str = Field(primary_key=True, description="Run id of this job attempt.")
    sweep_id: int = Field(foreign_key="sweep.id", index=True)
    recipe_id: int = Field(foreign_key="recipe.id", index=True)
    attempt: int = Field(default=1)
    status: str = Field(default="queued", description="A db.lifecycle.JobState value.")
    engine_id: int | None = Field(default=None, foreign_key="engine.id", index=True, description="Engine it ran.")
    points_planned: int = Field(default=0)
    host: str | None = Field(default=None, description="Where the job was placed (Ray node, SSH host, Slurm job).")
    error_kind: str | None = None
    error_message: str | None = None
    retryable: bool | None = None
    log_dir: str = ""
    created_at: datetime = Field(default_factory=utcnow)
    started_at: datetime | None = None
    finished_at: datetime | None = None


class TransitionRow(SQLModel, table=True):
    """One change of state of a sweep, a job or a Point, with when and why (append-only)."""

    __tablename__ = "transition"
    __table_args__ = (Index("ix_transition_sweep_id_subject_at", "sweep_id", "subject", "at"),)

    id: int | None = Field(default=None, primary_key=True)
    sweep_id: int = Field(foreign_key="sweep.id", index=True)
    job_id: str | None = Field(default=None, foreign_key="job.id", index=True)
    point_key: str | None = Field(default=None, description="Set for a Point's transitions.")
    subject: str = Field(description="sweep|job|point")
    state: str = Field(description="A db.lifecycle state value.")
    reason: str = Field(default="", description="Why: the event message, error or request that caused it.")
    at: datetime = Field(default_factory=utcnow, index=True)


class PointResultRow(SQLModel, table=True):
    __tablename__ = "point_result"
    __table_args__ = (
        UniqueConstraint("sweep_id", "point_key", name="uq_point_result_sweep_point"),
        # The hub's reads: public results (origin, not retracted), a configuration's history over time,
        # a sweep's results per recipe, and which sweeps are under a running embargo.
        Index("ix_point_result_origin_retracted", "origin", "retracted"),
        Index("ix_point_result_recipe_id_finished_at", "recipe_id", "finished_at"),
        Index("ix_point_result_sweep_id_recipe_id", "sweep_id", "recipe_id"),
        Index("ix_point_result_embargo_until", "embargo_until"),
    )

    id: int | None = Field(default=None, primary_key=True)
    sweep_id: int = Field(foreign_key="sweep.id", index=True)
    job_id: str = Field(foreign_key="job.id", index=True)
    recipe_id: int = Field(foreign_key="recipe.id", index=True)
    point_key: str = Field(description="Identity of the Point within the sweep.")
    repeat_index: int
    workload_kind: str
    isl: int | None = None
    osl: int | None = None
    concurrency: int
    origin: str = Field(description="measured|simulated|dry-run|imported|projected")
    valid: bool
    validity_reasons: list[str] = Field(sa_column=Column(JSON, nullable=False))
    completed: int
    failed: int
    duration_s: float
    request_throughput: float
    output_throughput: float
    total_token_throughput: float
    accelerators: int
    output_throughput_per_gpu: float
    total_token_throughput_per_gpu: float
    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    tpot_p50_ms: float | None = None
    tpot_p90_ms: float | None = None
    e2el_p50_ms: float | None = None
    interactivity_p50: float | None = None
    interactivity_p90: float | None = None
    metrics: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False), description="Full PointMetrics.")
    records_path: str | None = Field(
        default=None,
        description="Key of the artifact holding every request record (`records/<sha256>.parquet`); its artifact "
        "row says where it is stored. Rows recorded before content-addressed staging hold a staging path.",
    )
    source: str | None = Field(default=None, description="Where an imported result came from (tool and file).")
    started_at: datetime
    finished_at: datetime
    date_known: bool = Field(
        default=True,
        description="False when the result's source stated no date: started_at and finished_at then hold when it "
        "was imported, which readers show as 'date unknown', never as the result's date.",
    )
    retracted: bool = Field(default=False)
    retraction_reason: str | None = None
    retracted_at: datetime | None = Field(default=None, description="When the result was retracted (UTC).")
    embargo_until: datetime | None = Field(
        default=None, description="Hidden from public readers (hub, snapshots) until this time (UTC)."
    )


class ArtifactRow(SQLModel, table=True):
    """A file kept outside the database (request records, engine logs, snapshots) and where it is."""

    __tablename__ = "artifact"

    id: int | None = Field(default=None, primary_key=True)
    sweep_id: int | None = Field(default=None, foreign_key="sweep.id", index=True)
    job_id: str | None = Field(default=None, foreign_key="job.id", index=True)
    point_key: str | None = Field(default=None, index=True)
    kind: str = Field(description="records|result|server-metrics|engine-log|snapshot")
    key: str = Field(description="Content-addressed key in the store: <kind>/<sha256><suffix>.")
    local_path: str = Field(description="Staged copy on the orchestrator host (kept until stored).")
    sha256: str
    size_bytes: int = Field(sa_type=BigInteger, description="File size (files can exceed 2 GiB).")
    status: str = Field(default="pending", index=True, description="pending|stored")
    uri: str | None = Field(default=None, description="Where the store has it, once stored.")
    error: str | None = Field(default=None, description="Last upload error while pending.")
    created_at: datetime = Field(default_factory=utcnow)
    stored_at: datetime | None = None


class ProvenanceRow(SQLModel, table=True):
    """How one job attempt ran: where, with which engine command line, from which project commit.

    Written by the orchestrator's recorder from what it knows when the job is created (recipe path,
    project commit, the launch plan the engine adapter renders for the recipe) and from what the runner
    reports (the host on placement, the pre-flight checks with the first Point). Unknown values stay NULL.
    Environment variables are recorded by NAME only: their values may be secrets."""

    __tablename__ = "provenance"

    job_id: str = Field(primary_key=True, foreign_key="job.id", description="The job attempt (one row each).")
    host: str | None = Field(default=None, description="Where it ran, as the runner reported on placement.")
    accelerator_driver: str | None = Field(default=None, description="Accelerator driver version, when reported.")
    accelerator_runtime: str | None = Field(
        default=None, description="Accelerator runtime version (CUDA, ROCm, libtpu), when reported."
    )
    engine_argv: list[str] | None = Field(
        default=None,
        sa_column=Column(JSON(none_as_null=True), nullable=True),
        description="The engine's command line as the runner started it (runners.job.LaunchedEngine; a multi-process "
        "launch: its entry process; a container: the command inside the image). None until the engine is up, and "
        "for imported results.",
    )
    env_names: list[str] | None = Field(
        default=None,
        sa_column=Column(JSON(none_as_null=True), nullable=True),
        description="Names (never values) of the environment variables the launch set, sorted.",
    )
    engine_image: str | None = Field(default=None, description="The image the launched engine ran in, if any.")
    engine_image_digest: str | None = Field(
        default=None, description="That image's id or digest as the container runtime resolved it."
    )
    preflight: dict[str, Any] | None = Field(
        default=None,
        sa_column=Column(JSON(none_as_null=True), nullable=True),
        description="Pre-flight checks of the host before the engine started (runners.host.telemetry.Preflight).",
    )
    git_commit: str | None = Field(default=None, description="Commit of the project the orchestrator ran from.")
    git_dirty: bool | None = Field(default=None, description="The checkout had uncommitted changes to tracked files.")
    recipe_path: str = Field(description="Recipe file of the job (or the imported file).")
    created_at: datetime = Field(default_factory=utcnow)


class ServerMetricDeltaRow(SQLModel, table=True):
    """One engine counter over one Point (runners.loadgen.records.ServerCounters), written with the Point."""

    __tablename__ = "server_metric_delta"
    __table_args__ = (Index("ix_server_metric_delta_point_metric", "point_result_id", "metric"),)

    id: int | None = Field(default=None, primary_key=True)
    point_result_id: int = Field(foreign_key="point_result.id")
    metric: str = Field(description="Prometheus series name, e.g. 'vllm:prefix_cache_hits_total'.")
    labels: dict[str, str] = Field(
        sa_column=Column(JSON, nullable=False), description="Label filter the delta sums over ({} for all series)."
    )
    before: float | None = Field(default=None, description="Counter before the Point, when the runner reports it.")
    after: float | None = Field(default=None, description="Counter after the Point, when the runner reports it.")
    delta: float = Field(description="after - before, over the Point.")


class SweepLeaseRow(SQLModel, table=True):
    """Which driver runs a sweep: one at a time (orchestrator/lease.py takes, renews and releases it)."""

    __tablename__ = "sweep_lease"

    sweep: str = Field(primary_key=True, description="Name of the sweep (a lease can exist before its sweep row).")
    token: str = Field(description="Unique to one acquisition: only its holder renews or releases it.")
    holder_host: str = Field(description="Host of the driver holding the sweep.")
    holder_pid: int = Field(description="Process id of that driver on its host.")
    holder_identity: str | None = Field(
        default=None, description="That process's boot id and start time: proves it alive (PIDs are reused)."
    )
    acquired_at: datetime = Field(default_factory=utcnow)
    heartbeat_at: datetime = Field(default_factory=utcnow, description="Last renewal by the holder.")
    expires_at: datetime = Field(description="Past this, another driver may take the sweep over.")


class PointVerificationRow(SQLModel, table=True):
    """What a signed result bundle says of a Point (orchestrator/bundles.py), newest last (append-only): `signed` when
    `infersweep bundle make` signed it, `verified` when `infersweep verify --record` recomputed every figure from its
    raw records and found them the same, `hash-only` when the bundle held no records for it (checked by hash only)."""

    __tablename__ = "point_verification"

    id: int | None = Field(default=None, primary_key=True)
    point_result_id: int = Field(foreign_key="point_result.id", index=True)
    state: str = Field(description="signed | verified | hash-only")
    signer: str = Field(description="The signing key's owner in the trusted keys, or 'an unlisted key'.")
    key_id: str = Field(description="The signing key's id: 16 hex digits of the SHA-256 of its raw public bytes.")
    envelope_sha256: str = Field(description="SHA-256 of the bundle's signed envelope: which bundle said it.")
    at: datetime = Field(default_factory=utcnow)


class SnapshotPublicationRow(SQLModel, table=True):
    """A published snapshot's own record, written only into the snapshot file (`infersweep publish --snapshot`): the
    SHA-256 of the snapshot it follows, so that each published snapshot's hash covers its parent's and the chain of
    them can be walked and checked (`infersweep verify STORE`). Empty in a results database."""

    __tablename__ = "snapshot_publication"

    id: int | None = Field(default=None, primary_key=True)
    parent_sha256: str | None = Field(default=None, description="SHA-256 of the snapshot it follows; None: the first.")
    published_at: datetime = Field(default_factory=utcnow, description="When it was published (UTC).")
    points: int = Field(description="How many Points it publishes.")


class SnapshotRetractionRow(SQLModel, table=True):
    """A Point its parent snapshot published and this snapshot no longer does, and why: publishing only adds Points,
    and one leaves only by a retraction recorded here, naming the published Point by its id and the SHA-256 of its
    bytes as published (a correction is a new Point of its own)."""

    __tablename__ = "snapshot_retraction"

    id: int | None = Field(default=None, primary_key=True)
    point_result_id: int = Field(description="The retracted Point's id, as its parent snapshot published it.")
    point_sha256: str = Field(description="SHA-256 of the Point's canonical bytes in the parent snapshot.")
    reason: str = Field(description="Why it was retracted, as `infersweep retract` recorded it.")
    retracted_at: datetime | None = Field(default=None, description="When it was retracted (UTC).")
