"""Matrix expansion: recipes -> Jobs (one engine launch each) -> Points (one load level x repeat each).

A Point's identity is (recipe fingerprint, workload parameters, repeat index): the same recipe run in
the same sweep maps to the same keys, which is how a re-run knows what is already done.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from recipes.loader import LoadedRecipe
from recipes.schema import AgenticReplayWorkload
from runners.job import PointRequest
from runners.loadgen.records import FixedLengthPoint, ReplayPoint


@dataclass(frozen=True)
class PlannedJob:
    recipe: LoadedRecipe
    points: list[PointRequest]


def point_key(fingerprint: str, workload: FixedLengthPoint | ReplayPoint, repeat_index: int) -> str:
    if isinstance(workload, ReplayPoint):
        # The trace's content, not its path on this machine, is part of the identity.
        fields = workload.model_dump(mode="json", exclude={"trace_path"})
        label = f"replay-c{workload.concurrency}"
    else:
        fields = workload.model_dump(mode="json", exclude={"kind"})  # keys predate the kind field
        label = f"{workload.isl}x{workload.osl}-c{workload.concurrency}"
    identity = {"recipe": fingerprint, "workload": fields, "repeat": repeat_index}
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:20]
    return f"{label}-r{repeat_index}-{digest}"


def _replay_points(loaded: LoadedRecipe, workload: AgenticReplayWorkload) -> list[PointRequest]:
    from runners.traces.formats import load_trace  # parses (and so validates) the trace once, at plan time

    trace = load_trace(workload.trace)
    points = []
    for concurrency in sorted(set(workload.concurrency)):
        for repeat in range(loaded.recipe.repeats):
            spec = ReplayPoint(
                **{**workload.replay_settings(), "seed": workload.seed + repeat},
                trace_path=workload.trace, trace_version=trace.content_hash, concurrency=concurrency,
            )  # fmt: skip
            points.append(
                PointRequest(point_key=point_key(loaded.fingerprint, spec, repeat), repeat_index=repeat, workload=spec)
            )
    return points


def expand_points(loaded: LoadedRecipe) -> list[PointRequest]:
    """Points in run order: each ISL/OSL pair (or trace), concurrency ascending, repeats of a level together."""
    recipe = loaded.recipe
    workload = recipe.workload
    if isinstance(workload, AgenticReplayWorkload):
        return _replay_points(loaded, workload)
    points = []
    for lengths in workload.sequences:
        for concurrency in sorted(set(workload.concurrency)):
            for repeat in range(recipe.repeats):
                spec = FixedLengthPoint.of(workload, lengths, concurrency, repeat)
                key = point_key(loaded.fingerprint, spec, repeat)
                points.append(PointRequest(point_key=key, repeat_index=repeat, workload=spec))
    return points


def plan_jobs(recipes: list[LoadedRecipe]) -> list[PlannedJob]:
    return [PlannedJob(recipe=loaded, points=expand_points(loaded)) for loaded in recipes]
