"""The contract between orchestrator and runners: a Job to execute, the events it streams back.

A Job is one engine launch; its Points run in order against that one server. Runners yield events
as they go (engine ready, each Point's result), so the orchestrator can persist every finished Point
the moment it exists: an interrupted job loses nothing that had finished.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Annotated, ClassVar, Literal

from pydantic import Field

from recipes.errors import InferSweepError
from recipes.registry import Registry
from recipes.schema import Recipe
from recipes.strict import Strict
from runners.fleet.inventory import SlurmContainerRuntime, Target
from runners.loadgen.records import FixedLengthPoint, Origin, PointMetrics, RawScrapes, ReplayPoint, RequestRecord

PointWorkload = Annotated[FixedLengthPoint | ReplayPoint, Field(discriminator="kind")]


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
    targets: list[Target] = Field(
        default_factory=list,
        description="Inventory targets (SSH hosts, TPU VMs, Slurm clusters) this job may use; empty for `local`.",
    )
    avoid_targets: list[str] = Field(
        default_factory=list, description="Targets an earlier attempt failed on; used only if nothing else is free."
    )
    dry_run: bool = Field(
        False, description="A dry run on a stand-in engine: every result is labelled origin 'dry-run'."
    )
    container_runtime: SlurmContainerRuntime | None = Field(
        None,
        description="Set by a runner whose target launches container engines its own way (slurm: the target's "
        "container_runtime); replaces engine.environment.runtime for the agent that runs the job.",
    )


class ErrorInfo(Strict):
    kind: str = Field(description="Error class name.")
    message: str = Field(description="What went wrong, quoting the bad value or the engine log tail.")
    retryable: bool = Field(description="True for infrastructure faults that a new attempt may not hit.")


class PointOutcome(Strict):
    point_key: str = Field(description="The Point measured.")
    origin: Origin = Field(description="measured (real engine) or simulated.")
    metrics: PointMetrics = Field(description="Aggregates and validity verdict.")
    records: list[RequestRecord] = Field(description="Every request of the Point, warmup included.")
    server_scrapes: RawScrapes | None = Field(None, description="The engine's raw /metrics before and after.")
    started_at: datetime = Field(description="Wall-clock start (UTC).")
    finished_at: datetime = Field(description="Wall-clock end (UTC).")
    date_known: bool = Field(
        True, description="False for an imported result whose source stated no date (the times are the import's)."
    )


class LaunchedEngine(Strict):
    """What a runner started as the engine, reported once it is up: the provenance of what ran, not a prediction."""

    argv: list[str] = Field(description="The engine's command line as started (a multi-process engine: its entry "
                            "process; a container engine: the command inside the image).")  # fmt: skip
    env_names: list[str] = Field(description="Names (never values) of the variables the launch set, sorted.")
    image: str | None = Field(None, description="The container image it ran in, as the recipe names it.")
    image_digest: str | None = Field(None, description="The image's id or digest as the runtime resolved it.")


class JobEvent(Strict):
    kind: Literal[
        "job_placed",
        "engine_preparing",
        "engine_launching",
        "engine_ready",
        "point_started",
        "point_finished",
        "job_collecting",
        "job_failed",
        "job_finished",
    ]
    job_id: str
    point_key: str | None = None
    message: str = ""
    node_id: str | None = Field(None, description="Ray node that ran the job (on job_placed from the dispatcher).")
    target: str | None = Field(None, description="Inventory target a runner placed the job on (on job_placed).")
    outcome: PointOutcome | None = None
    error: ErrorInfo | None = None
    launched: LaunchedEngine | None = Field(None, description="On engine_ready: what was started (its argv).")


def error_event(job: JobSpec, error: InferSweepError) -> JobEvent:
    """The `job_failed` event for a project error: its class name, message and whether a retry may help."""
    info = ErrorInfo(kind=error.kind, message=str(error), retryable=error.retryable)
    return JobEvent(kind="job_failed", job_id=job.job_id, message=str(error), error=info)


class Runner:
    """A way to reach machines. Subclasses register under the recipe's `runner.kind`."""

    kind: ClassVar[str]

    def run_job(self, job: JobSpec) -> Iterator[JobEvent]:
        """The job's events; a project error ends them with a `job_failed` saying whether to retry."""
        try:
            yield from self.execute(job)
        except InferSweepError as error:
            yield error_event(job, error)

    def execute(self, job: JobSpec) -> Iterator[JobEvent]:
        """Run the job, yielding events; raise InferSweepError for what went wrong."""
        raise NotImplementedError

    @classmethod
    def limitations(cls, recipe: Recipe, targets: Sequence[Target] = ()) -> list[str]:
        """What this runner kind cannot do for `recipe`, each with the reason; checked before anything is reserved.

        `targets` are the inventory targets the job may use, when known (a kind whose targets differ in what
        they can launch refuses by them; empty means "not known here" and refuses nothing for that reason)."""
        return []


RUNNERS: Registry[type[Runner]] = Registry("runner kind")


def register_runner(runner: type[Runner]) -> type[Runner]:
    return RUNNERS.register(runner.kind, runner)
