"""The contract between orchestrator and runners: a Job to execute, the events it streams back.

A Job is one engine launch; its Points run in order against that one server. Runners yield events
as they go (engine ready, each Point's result), so the orchestrator can persist every finished Point
the moment it exists: an interrupted job loses nothing that had finished.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from recipes.errors import ConfigurationError
from recipes.schema import Recipe
from runners.loadgen.records import FixedLengthPoint, Origin, PointMetrics, ReplayPoint, RequestRecord

PointWorkload = Annotated[FixedLengthPoint | ReplayPoint, Field(discriminator="kind")]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PointRequest(Strict):
    point_key: str = Field(description="Identity of the Point within its sweep (see orchestrator.plan).")
    repeat_index: int = Field(ge=0, description="Which repeat of the same Point this is.")
    workload: PointWorkload = Field(description="What to run for this Point.")


class JobSpec(Strict):
    job_id: str = Field(description="Run id of this job attempt; keys pidfiles, logs and events.")
    sweep: str = Field(description="Name of the sweep the job belongs to.")
    recipe: Recipe = Field(description="The validated recipe.")
    points: list[PointRequest] = Field(description="Points still to measure, in order.")
    log_dir: str = Field(description="Directory for the engine log and other artifacts of this job.")


class ErrorInfo(Strict):
    kind: str = Field(description="Error class name.")
    message: str = Field(description="What went wrong, quoting the bad value or the engine log tail.")
    retryable: bool = Field(description="True for infrastructure faults that a new attempt may not hit.")


class PointOutcome(Strict):
    point_key: str = Field(description="The Point measured.")
    origin: Origin = Field(description="measured (real engine) or simulated.")
    metrics: PointMetrics = Field(description="Aggregates and validity verdict.")
    records: list[RequestRecord] = Field(description="Every request of the Point, warmup included.")
    started_at: datetime = Field(description="Wall-clock start (UTC).")
    finished_at: datetime = Field(description="Wall-clock end (UTC).")


class JobEvent(Strict):
    kind: Literal[
        "engine_preparing",
        "engine_launching",
        "engine_ready",
        "point_started",
        "point_finished",
        "job_failed",
        "job_finished",
    ]
    job_id: str
    point_key: str | None = None
    message: str = ""
    outcome: PointOutcome | None = None
    error: ErrorInfo | None = None


class Runner:
    """A way to reach machines. Subclasses register under the recipe's `runner.kind`."""

    kind: ClassVar[str]

    def run_job(self, job: JobSpec) -> Iterator[JobEvent]:
        raise NotImplementedError


RUNNERS: dict[str, type[Runner]] = {}


def register_runner(runner: type[Runner]) -> type[Runner]:
    RUNNERS[runner.kind] = runner
    return runner


def runner_for(kind: str) -> Runner:
    import runners.local  # noqa: F401  (registers the built-in runner kinds)

    if kind not in RUNNERS:
        raise ConfigurationError(
            f"runner.kind: got {kind!r}; not available yet (registered: {', '.join(sorted(RUNNERS))})"
        )
    return RUNNERS[kind]()
