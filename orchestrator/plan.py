"""Matrix expansion: recipes -> Jobs (one engine launch each) -> Points (one load level x repeat each).

A Point's identity is (recipe fingerprint, workload parameters, repeat index): the same recipe run in
the same sweep maps to the same keys, which is how a re-run knows what is already done.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recipes.errors import MISSING, RecipeError
from recipes.loader import LoadedRecipe
from recipes.schema import AgenticReplayWorkload
from runners.job import PointRequest
from runners.loadgen.records import FixedLengthPoint, ReplayPoint

if TYPE_CHECKING:
    from runners.traces.models import Trace


@dataclass(frozen=True)
class PlannedJob:
    recipe: LoadedRecipe
    points: list[PointRequest]


def point_key(fingerprint: str, workload: FixedLengthPoint | ReplayPoint, repeat_index: int) -> str:
    if isinstance(workload, ReplayPoint):
        # The trace's content, not its path on this machine, is part of the identity.
        fields = ReplayPoint.identity_of(workload.model_dump(mode="json", exclude={"trace_path"}))
        label = f"replay-c{workload.concurrency}"
    else:
        fields = workload.model_dump(mode="json", exclude={"kind"})  # keys predate the kind field
        label = f"{workload.isl}x{workload.osl}-c{workload.concurrency}"
    identity = {"recipe": fingerprint, "workload": fields, "repeat": repeat_index}
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:20]
    return f"{label}-r{repeat_index}-{digest}"


@dataclass(frozen=True)
class LongestRequest:
    """The request of a workload with the longest prompt, as the engine receives it."""

    prompt: int
    output: int
    where: str  # which request, for the error message


def longest_replayed_request(trace: Trace, workload: AgenticReplayWorkload) -> LongestRequest:
    """The trace's longest prompt at the workload's length_scale and output cap (the replayer's own lengths)."""
    from runners.traces.planner import scaled_lengths

    best: LongestRequest | None = None
    for _root, session in trace.walk_sessions():
        for turn, request in enumerate(session.requests):
            prompt, output, _block = scaled_lengths(request.input_tokens, request.output_tokens, trace.block_size,
                                                    workload.length_scale, workload.max_output_tokens)  # fmt: skip
            if best is None or prompt > best.prompt:
                where = f"session {session.path} ({session.id}) turn {turn} of {Path(trace.source).name}"
                best = LongestRequest(prompt, output, where)
    if best is None:
        raise RecipeError(str(workload.trace), [("requests", MISSING, "a trace with at least one request")], "trace")
    return best


def check_servable(loaded: LoadedRecipe, longest: LongestRequest) -> None:
    """Refuse a recipe whose workload holds a request its engine, as configured, would refuse: a Point of such
    requests measures errors, not serving. Engine facts (TensorRT-LLM's max_num_tokens without chunked prefill)
    come from the engine's adapter; the context length applies to every engine."""
    from runners.engines.registry import engine_adapter

    engine = loaded.recipe.engine
    problems: list[tuple[str, Any, str]] = []
    if longest.prompt + longest.output > engine.max_model_len:
        problems.append((
            "engine.max_model_len", engine.max_model_len,
            f"recipe {loaded.name!r}: the workload's longest request ({longest.where}: {longest.prompt:,} prompt + "
            f"{longest.output:,} output tokens) must fit in the context length",
        ))  # fmt: skip
    limit = engine_adapter(engine.kind).prompt_limit(loaded.recipe)
    if limit is not None and longest.prompt > limit.tokens:
        problems.append((
            limit.field, limit.tokens,
            f"recipe {loaded.name!r}: the workload's longest prompt is {longest.prompt:,} tokens ({longest.where}); "
            f"{limit.why}",
        ))  # fmt: skip
    if problems:
        raise RecipeError(loaded.path, problems)


def _replay_points(loaded: LoadedRecipe, workload: AgenticReplayWorkload) -> list[PointRequest]:
    from runners.traces.formats import load_trace  # parses (and so validates) the trace once, at plan time

    trace = load_trace(workload.trace)
    check_servable(loaded, longest_replayed_request(trace, workload))
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
    longest = max(workload.sequences, key=lambda lengths: lengths.isl)
    check_servable(loaded, LongestRequest(longest.isl, longest.osl, f"isl {longest.isl} / osl {longest.osl}"))
    points = []
    for lengths in workload.sequences:
        for concurrency in sorted(set(workload.concurrency)):
            for repeat in range(recipe.repeats):
                spec = FixedLengthPoint.of(workload, lengths, concurrency, repeat)
                key = point_key(loaded.fingerprint, spec, repeat)
                points.append(PointRequest(point_key=key, repeat_index=repeat, workload=spec))
    return points


def plan_jobs(recipes: list[LoadedRecipe]) -> list[PlannedJob]:
    return [job for loaded in recipes for job in _launches(loaded, expand_points(loaded))]


def _launches(loaded: LoadedRecipe, points: list[PointRequest]) -> list[PlannedJob]:
    """One job per engine launch: a load level with its own settings (`engine.per_concurrency`) gets a launch of its
    own, with those settings; the other levels share one. Every job keeps the recipe's identity (fingerprint), so
    the Points of all launches form one configuration's curve, and its recipe says how its engine was launched."""
    engine = loaded.recipe.engine
    if not engine.per_concurrency:
        return [PlannedJob(recipe=loaded, points=points)]
    groups: dict[int | None, list[PointRequest]] = {}
    for point in points:
        concurrency = point.workload.concurrency
        groups.setdefault(concurrency if concurrency in engine.per_concurrency else None, []).append(point)
    jobs = []
    for level, members in groups.items():
        recipe = loaded.recipe.model_copy(update={"engine": engine.at_concurrency(level)}) if level else loaded.recipe
        launched = LoadedRecipe(recipe=recipe, path=loaded.path, fingerprint=loaded.fingerprint)
        jobs.append(PlannedJob(recipe=launched, points=members))
    return jobs
