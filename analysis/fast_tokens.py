"""What fast tokens buy an agent: a trace's session time at each chip's serving operating points.

The trace's timeline is rebuilt as runners/traces/workflow.py does (think times, tool time and spawn offsets as
recorded), with each request's model time recomputed at an operating point of a chip, read from the results
(measured, imported or simulated Points, each labelled with its origin):

- time to first token = the prompt's uncached tokens ÷ the point's prefill rate, where the uncached tokens are
  what the trace's own prefix reuse leaves (runners/traces/hit_rate.py, an unbounded cache) and the prefill
  rate is the point's input length ÷ its median TTFT (a fixed-length point prefills a whole, uncached prompt
  in that time, queueing included);
- decode = the request's output tokens ÷ the point's median interactivity (tokens/s/user).

Operating points are each chip's Pareto frontier of output throughput per accelerator against interactivity,
per engine, valid points only. "K× faster decode" divides the decode part by K and keeps the prefill part.
These are assumptions (a point measured on random prompts of one length stands for every request of the
trace); the page and the CLI say so.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from analysis.pareto import frontier_by_group
from recipes.agentx import AGENTX_TREE_IDLE_CAP_S
from runners.traces.hit_rate import theoretical_hit_rate
from runners.traces.models import Trace, TraceRequest
from runners.traces.planner import scaled_lengths
from runners.traces.workflow import (
    Latency,
    TreeTime,
    decode_speedup,
    model_share,
    saving,
    trace_times,
)

IDLE_CAP_S = AGENTX_TREE_IDLE_CAP_S  # one trajectory tree's idle cap, AgentX's: what the hub quotes


@dataclass(frozen=True)
class OperatingPoint:
    """One frontier point of a chip: the speeds a request would see there."""

    hardware: str
    engine: str
    origin: str
    model: str
    precision: str
    isl: int
    osl: int
    concurrency: int
    interactivity: float  # output tokens per second per user (median)
    prefill_tokens_per_s: float  # one request's prompt tokens per second of TTFT (median)
    throughput_per_gpu: float  # output tokens per second per accelerator
    accelerators: int = 1  # of the deployment (prefill_tokens_per_s is the whole deployment's)

    @property
    def prefill_tokens_per_s_per_gpu(self) -> float:
        return self.prefill_tokens_per_s / self.accelerators

    @property
    def label(self) -> str:
        origin = "" if self.origin == "measured" else f", {self.origin}"
        return f"{self.hardware} ({self.engine}{origin}) at {self.interactivity:.0f} tok/s/user, c={self.concurrency}"


def operating_points(views: Iterable[object]) -> list[OperatingPoint]:
    """The frontier points of each chip, engine, model, precision and ISL/OSL, among valid results with a TTFT, an
    input length and an interactivity (a frontier never mixes workloads or models)."""
    usable = [
        view for view in views
        if getattr(view, "valid", False) and getattr(view, "ttft_p50_ms", None) and getattr(view, "isl", None)
        and getattr(view, "interactivity_p50", None)
    ]  # fmt: skip
    fronts = frontier_by_group(
        usable,
        lambda view: (view.hardware, view.engine, view.model, view.precision, view.isl, view.osl),
        "interactivity_p50",
        "output_throughput_per_gpu",
    )
    return [
        OperatingPoint(
            hardware=view.hardware,
            engine=view.engine,
            origin=view.origin,
            model=view.model,
            precision=view.precision,
            isl=view.isl,
            osl=view.osl or 0,
            concurrency=view.concurrency,
            interactivity=view.interactivity_p50,
            prefill_tokens_per_s=view.isl / (view.ttft_p50_ms / 1000),
            throughput_per_gpu=view.output_throughput_per_gpu,
            accelerators=int(getattr(view, "accelerators", 1) or 1),
        )
        for group in fronts.values()
        for view in group
    ]


def uncached_tokens(trace: Trace) -> dict[str, int]:
    """Per request key, the prompt tokens the trace's own prefix reuse leaves to compute."""
    walk = theoretical_hit_rate(trace)
    return {
        key: int(total - hit) for key, total, hit in zip(walk.keys, walk.input_tokens, walk.hit_tokens, strict=True)
    }


def serving_latency(point: OperatingPoint, uncached: dict[str, int], decode_speedup: float = 1.0) -> Latency:
    """A request's model time at `point` (module doc), its decode `decode_speedup` times faster."""

    def latency(request: TraceRequest) -> float:
        prefill = uncached[request.key] / point.prefill_tokens_per_s
        return prefill + request.output_tokens / (point.interactivity * decode_speedup)

    return latency


@dataclass(frozen=True)
class ChipSessionTime:
    point: OperatingPoint
    wall_s: float  # the corpus's trees, summed
    model_share: float
    savings: dict[float, float]  # decode speedup K -> share of wall time saved


def chip_session_times(
    traces: Sequence[Trace], points: Sequence[OperatingPoint], speedups: Sequence[float], idle_cap_s: float | None
) -> list[ChipSessionTime]:
    """Session wall time of `traces` served at each point, and what each decode speedup saves of it."""
    uncached = [uncached_tokens(trace) for trace in traces]

    def times(point: OperatingPoint, speedup: float) -> list[TreeTime]:
        return [
            time
            for trace, left in zip(traces, uncached, strict=True)
            for time in trace_times(trace, serving_latency(point, left, speedup), idle_cap_s)
        ]

    rows = []
    for point in points:
        base = times(point, 1.0)
        rows.append(ChipSessionTime(
            point=point, wall_s=sum(time.wall_s for time in base), model_share=model_share(base),
            savings={speedup: saving(base, times(point, speedup)) for speedup in speedups},
        ))  # fmt: skip
    return rows


def nearest_point(points: Iterable[OperatingPoint], hardware: str, model: str,
                  interactivity: float) -> OperatingPoint | None:  # fmt: skip
    """The frontier point of `hardware` serving `model` closest to `interactivity` tok/s/user (in ratio), if any."""
    mine = [point for point in points if point.hardware == hardware and point.model == model]
    return min(mine, key=lambda point: abs(math.log(point.interactivity / interactivity)), default=None)


def nearest_per_chip(rows: Sequence[ChipSessionTime], interactivity: float) -> list[ChipSessionTime]:
    """Per hardware, the row whose operating point is closest to `interactivity` tok/s/user (in ratio)."""
    best: dict[str, ChipSessionTime] = {}
    for row in rows:
        distance = abs(math.log(row.point.interactivity / interactivity))
        kept = best.get(row.point.hardware)
        if kept is None or distance < abs(math.log(kept.point.interactivity / interactivity)):
            best[row.point.hardware] = row
    return list(best.values())


def replay_estimate(
    trace: Trace, ttft_ms: float, tpot_ms: float, time_scale: float = 1.0, length_scale: float = 1.0,
    max_output_tokens: int | None = None, idle_cap_s: float | None = AGENTX_TREE_IDLE_CAP_S,
) -> list[TreeTime]:  # fmt: skip
    """What the timeline model says a replay's session trees take, at the replay's own median TTFT and TPOT, its
    time scale and its scaled output lengths: the model's figure beside the session times a replay measured."""

    def latency(request: TraceRequest) -> float:
        _, output, _ = scaled_lengths(request.input_tokens, request.output_tokens, trace.block_size, length_scale,
                                      max_output_tokens)  # fmt: skip
        return (ttft_ms + max(0, output - 1) * tpot_ms) / 1000

    return trace_times(trace, latency, idle_cap_s, time_scale)


def takeaway(row: ChipSessionTime, speedup: float) -> str:
    """The one sentence a reader takes away."""
    return (
        f"{speedup:g}× faster decode saves {row.savings[speedup]:.1%} of this agent's session time on "
        f"{row.point.hardware} at {row.point.interactivity:.0f} tok/s/user (concurrency {row.point.concurrency}, "
        f"{row.point.engine}{'' if row.point.origin == 'measured' else ', ' + row.point.origin})."
    )


def recorded_split(trace: Trace, idle_cap_s: float = IDLE_CAP_S) -> list[dict[str, object]]:
    """Each root session's model, tool/user and wall time from the trace's own records, as recorded and with the
    idle cap applied (one row per session and view)."""
    rows: list[dict[str, object]] = []
    for view, times in (
        ("as recorded", trace_times(trace)),
        (f"idle capped at {idle_cap_s:g} s", trace_times(trace, idle_cap_s=idle_cap_s)),
    ):
        for tree in times:
            rows.append({"view": view, "session": tree.session, "requests": tree.requests, "model_s": tree.model_s,
                         "tool_s": tree.tool_s, "wall_s": tree.wall_s, "model_share": tree.model_share})  # fmt: skip
    return rows


def recorded_decode_saving(trace: Trace, speedup: float) -> float:
    """The share of the trace's recorded wall time that `speedup`-times faster decode would save."""
    return saving(trace_times(trace), trace_times(trace, decode_speedup(speedup)))
