"""Matrix expansion: recipes -> Jobs (one engine launch each) -> Points (one load level x repeat each).

A Point's identity is (recipe fingerprint, workload parameters, repeat index): the same recipe run in
the same sweep maps to the same keys, which is how a re-run knows what is already done.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from recipes.loader import LoadedRecipe
from recipes.schema import FixedLengthWorkload
from runners.job import PointRequest
from runners.loadgen.records import FixedLengthPoint


@dataclass(frozen=True)
class PlannedJob:
    recipe: LoadedRecipe
    points: list[PointRequest]


def point_key(fingerprint: str, workload: FixedLengthPoint, repeat_index: int) -> str:
    identity = {"recipe": fingerprint, "workload": workload.model_dump(mode="json"), "repeat": repeat_index}
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:20]
    return f"{workload.isl}x{workload.osl}-c{workload.concurrency}-r{repeat_index}-{digest}"


def expand_points(loaded: LoadedRecipe) -> list[PointRequest]:
    """Points in run order: each ISL/OSL pair, concurrency ascending, repeats of a level together."""
    recipe = loaded.recipe
    workload = recipe.workload
    if not isinstance(workload, FixedLengthWorkload):
        raise TypeError(f"no expansion for workload kind {workload.kind!r}")
    points = []
    for lengths in workload.sequences:
        for concurrency in sorted(set(workload.concurrency)):
            spec = FixedLengthPoint(
                isl=lengths.isl,
                osl=lengths.osl,
                range_ratio=workload.range_ratio,
                concurrency=concurrency,
                num_prompts=workload.prompts_per_concurrency * concurrency,
                num_warmup=workload.warmup_per_concurrency * concurrency,
                seed=workload.seed,
                request_timeout_s=workload.request_timeout_s,
            )
            for repeat in range(recipe.repeats):
                # Repeats draw different prompts: same seed would replay identical requests.
                repeated = spec.model_copy(update={"seed": workload.seed + repeat})
                points.append(
                    PointRequest(
                        point_key=point_key(loaded.fingerprint, repeated, repeat),
                        repeat_index=repeat,
                        workload=repeated,
                    )
                )
    return points


def plan_jobs(recipes: list[LoadedRecipe]) -> list[PlannedJob]:
    return [PlannedJob(recipe=loaded, points=expand_points(loaded)) for loaded in recipes]
