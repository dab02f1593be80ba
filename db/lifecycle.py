"""The lifecycle of sweeps, jobs and Points: ordered states, stored as their string values.

Every change of state is a row in the `transition` table (time and reason), written by the
orchestrator's driver; `infersweep status` and the hub read them. The order below is the order a
healthy run goes through; the terminal states end it.
"""

from __future__ import annotations

from enum import StrEnum


class SweepState(StrEnum):
    PLANNED = "planned"  # recipes registered, nothing dispatched yet
    RUNNING = "running"  # jobs are queued or running
    CANCELLING = "cancelling"  # `infersweep cancel` asked the driver to stop
    FINISHED = "finished"  # every job succeeded (or nothing was left to measure)
    FAILED = "failed"  # at least one job failed for good
    CANCELLED = "cancelled"  # stopped on request
    INTERRUPTED = "interrupted"  # the driver was stopped (Ctrl-C, SIGTERM, crash); re-running resumes


class JobState(StrEnum):
    QUEUED = "queued"  # recorded, waiting for a slot of its hardware pool
    PLACED = "placed"  # a host (Ray node, SSH host, Slurm allocation) took it
    PREPARING = "preparing"  # pre-flight checks, engine environment and model staged
    LAUNCHING = "launching"  # engine started, waiting for health (the engine-start timer runs)
    WARMING = "warming"  # engine healthy, before the first measured Point
    MEASURING = "measuring"  # a Point is running
    COLLECTING = "collecting"  # Points done; logs and artifacts being gathered, engine stopping
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"
    IMPORTED = "imported"  # not run here: holds a result measured by another tool


class PointState(StrEnum):
    MEASURING = "measuring"
    RECORDED = "recorded"
    # Finished, but its figures cannot be (NaN, infinity, beyond any chip): not stored; the reason says which.
    REFUSED = "refused"


TERMINAL_JOB_STATES = frozenset(
    {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED, JobState.INTERRUPTED, JobState.IMPORTED}
)
TERMINAL_SWEEP_STATES = frozenset(
    {SweepState.FINISHED, SweepState.FAILED, SweepState.CANCELLED, SweepState.INTERRUPTED}
)
