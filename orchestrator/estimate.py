"""How long a planned job will hold its accelerators: the basis of GPU-hour budgets and cost estimates.

An estimate, stated with its assumptions so nobody mistakes it for a measurement:
- engine start: the recipe's `engine.startup_timeout_s`, capped at ENGINE_START_S (large models on
  real accelerators typically need minutes; the timeout itself is a worst case);
- a fixed-length Point: its requests (warmup included) pass through `concurrency` lanes, each request
  taking `isl / ASSUMED_PREFILL_TOKENS_PER_S + osl / ASSUMED_TOKENS_PER_S_PER_USER` seconds (lengths at
  their upper bound: the estimate errs long);
- an agentic replay Point: its measured window, plus a quarter for warm starts and drain.
Accelerator-hours = the job's hours x the accelerators the engine uses (every GPU, docs/ARCHITECTURE.md §4).
"""

from __future__ import annotations

from dataclasses import dataclass

from recipes.loader import LoadedRecipe
from runners.job import PointRequest
from runners.loadgen.records import FixedLengthPoint, ReplayPoint

ENGINE_START_S = 600.0
ASSUMED_TOKENS_PER_S_PER_USER = 30.0
ASSUMED_PREFILL_TOKENS_PER_S = 5000.0
REPLAY_OVERHEAD = 1.25


@dataclass(frozen=True)
class JobEstimate:
    recipe: str
    hardware: str
    accelerators: int
    points: int
    hours: float

    @property
    def accelerator_hours(self) -> float:
        return self.hours * self.accelerators


def point_seconds(point: PointRequest) -> float:
    workload = point.workload
    if isinstance(workload, ReplayPoint):
        return workload.duration_s * REPLAY_OVERHEAD
    assert isinstance(workload, FixedLengthPoint)
    per_request = workload.isl / ASSUMED_PREFILL_TOKENS_PER_S + workload.osl / ASSUMED_TOKENS_PER_S_PER_USER
    waves = (workload.num_prompts + workload.num_warmup) / workload.concurrency
    return waves * per_request


def estimate_job(loaded: LoadedRecipe, points: list[PointRequest]) -> JobEstimate:
    recipe = loaded.recipe
    seconds = min(recipe.engine.startup_timeout_s, ENGINE_START_S) + sum(point_seconds(p) for p in points)
    return JobEstimate(
        recipe=loaded.name,
        hardware=recipe.hardware,
        accelerators=recipe.parallelism.accelerators,
        points=len(points),
        hours=seconds / 3600.0,
    )
