"""SQL tables (SQLModel). Alembic migrations in db/migrations create them; nothing else does.

Adding a column means adding a migration: a released revision never changes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, UniqueConstraint
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    return datetime.now(UTC)


class HardwareRow(SQLModel, table=True):
    __tablename__ = "hardware"

    key: str = Field(primary_key=True, description="Registry key, e.g. 'b200'.")
    vendor: str
    name: str
    accelerator_unit: str
    spec: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False), description="Registry entry snapshot.")
    updated_at: datetime = Field(default_factory=utcnow)


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

    id: str = Field(primary_key=True, description="Run id of this job attempt.")
    sweep_id: int = Field(foreign_key="sweep.id", index=True)
    recipe_id: int = Field(foreign_key="recipe.id", index=True)
    attempt: int = Field(default=1)
    status: str = Field(default="queued", description="A db.lifecycle.JobState value.")
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
    __table_args__ = (UniqueConstraint("sweep_id", "point_key", name="uq_point_result_sweep_point"),)

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
    origin: str = Field(description="measured|simulated|dry-run|imported")
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
    records_path: str | None = Field(default=None, description="Artifact with every request record.")
    source: str | None = Field(default=None, description="Where an imported result came from (tool and file).")
    started_at: datetime
    finished_at: datetime
    retracted: bool = Field(default=False)
    retraction_reason: str | None = None
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
    kind: str = Field(description="records|engine-log|snapshot")
    key: str = Field(description="Content-addressed key in the store: <kind>/<sha256><suffix>.")
    local_path: str = Field(description="Staged copy on the orchestrator host (kept until stored).")
    sha256: str
    size_bytes: int = Field(sa_type=BigInteger, description="File size (files can exceed 2 GiB).")
    status: str = Field(default="pending", index=True, description="pending|stored")
    uri: str | None = Field(default=None, description="Where the store has it, once stored.")
    error: str | None = Field(default=None, description="Last upload error while pending.")
    created_at: datetime = Field(default_factory=utcnow)
    stored_at: datetime | None = None
