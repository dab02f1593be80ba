"""A coding agent's session time from its trace's own records: model time against tool and user time, and what
faster serving would change in it (docs/METRICS.md, "Fast tokens").

The timeline of one root session with its subagents (a trajectory tree) is rebuilt from the records with the
replay's rules: a request is sent when the one before it in its session has ended plus its recorded think time
(`Session.think_before`), and a subagent starts its recorded offset after the parent request it follows was
*sent* (`Session.spawn_delay`); subagents run on their own timelines, in parallel with their parent, and nobody
waits for them that the record does not show. (Here the replay's rules and the record's differ on purpose: a replay
following AgentX, `Session.spawn_groups`, starts a subagent recorded after its parent's answer as that answer ends,
dropping the recorded gap, which is tool and user time this module measures.) Each request takes its recorded
response time (`api_time`), or the latency a what-if gives it.

- **Model time** is the time at least one request of the tree is in flight (the union of their intervals), so
  a subagent answering while its parent answers is not counted twice; **tool and user time** is the rest of the
  tree's wall time (tools running, the user reading and typing).
- **Capped**: as AgentX replays a trajectory tree under load (its 300 s per-tree idle cap: the whole system is
  never idle then), whenever the tree has had nothing in flight for the cap, all its pending timers advance
  together, so no idle stretch lasts longer than the cap and no request is reordered.
- **What-if**: the same timeline with every request's latency recomputed. `decode_speedup(K)` keeps the recorded
  time to first token (`ttft`, where the trace has it; without it the whole response time counts as decode, an
  assumption) and divides the rest by K.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from recipes.errors import ConfigurationError
from runners.traces.models import Session, Trace, TraceRequest

Latency = Callable[[TraceRequest], float]  # seconds one request takes, send to last token


@dataclass(frozen=True)
class TreeTime:
    """The wall time of one trajectory tree, split into model time and tool/user time."""

    root: int
    session: str  # the root session's id
    requests: int
    wall_s: float
    model_s: float

    @property
    def tool_s(self) -> float:
        return self.wall_s - self.model_s

    @property
    def model_share(self) -> float:
        return self.model_s / self.wall_s if self.wall_s > 0 else 0.0


def recorded_latency(request: TraceRequest) -> float:
    """The recorded response time; a trace without it cannot say how long the model took."""
    if request.api_time is None:
        raise ConfigurationError(
            f"request {request.key}: no recorded api_time; the session-time split needs each request's recorded "
            "response time (Weka traces with api_time)"
        )
    return request.api_time


def decode_speedup(factor: float) -> Latency:
    """The recorded latency with its decode part (after the recorded TTFT, else all of it) `factor` times faster."""
    if factor <= 0:
        raise ValueError(f"decode speedup: got {factor}; expected a positive factor")

    def latency(request: TraceRequest) -> float:
        total = recorded_latency(request)
        first = min(request.ttft or 0.0, total)
        return first + (total - first) / factor

    return latency


def tree_time(
    root: Session, index: int = 0, latency: Latency = recorded_latency, idle_cap_s: float | None = None,
    time_scale: float = 1.0,
) -> TreeTime:  # fmt: skip
    """The tree of `root` on its rebuilt timeline (module doc); `idle_cap_s` applies the idle cap. `time_scale`
    multiplies every recorded think time, spawn offset and the cap, as a replay with that `time_scale` does."""
    if idle_cap_s is not None:
        idle_cap_s *= time_scale
    tie = itertools.count()
    # (time, order, tie, session, turn): ends (order 0) before sends (order 1) at the same instant, so a request
    # due the moment another ends is sent after the tree's in-flight count has dropped.
    pending: list[tuple[float, int, int, Session, int]] = [(0.0, 1, next(tie), root, 0)]
    in_flight = requests = 0
    busy_since = idle_since = last_end = model = 0.0
    while pending:
        when, order, _, session, turn = heapq.heappop(pending)
        if order == 1 and in_flight == 0 and idle_cap_s is not None and when - idle_since > idle_cap_s:
            # Idle for the cap: every pending timer (only timers are pending now) advances by the same amount.
            advance = when - idle_since - idle_cap_s
            when -= advance
            pending = [(due - advance, o, t, s, k) for due, o, t, s, k in pending]
            heapq.heapify(pending)
        if order == 1:
            if in_flight == 0:
                busy_since = when
            in_flight += 1
            requests += 1
            heapq.heappush(pending, (when + latency(session.requests[turn]), 0, next(tie), session, turn))
            # Spawn offsets are on the parent's clock from the send of the request they follow (or the session's
            # start, which is its first send, for a subagent spawned before any request).
            before_first = session.subagents_after(-1) if turn == 0 else ()
            for child in (*before_first, *session.subagents_after(turn)):
                offset = max(0.0, session.spawn_delay(child)) * time_scale
                heapq.heappush(pending, (when + offset, 1, next(tie), child, 0))
            continue
        in_flight -= 1
        last_end = max(last_end, when)
        if in_flight == 0:
            model += when - busy_since
            idle_since = when
        if turn + 1 < len(session.requests):
            due = when + session.think_before(turn + 1) * time_scale
            heapq.heappush(pending, (due, 1, next(tie), session, turn + 1))
    return TreeTime(root=index, session=root.id, requests=requests, wall_s=last_end, model_s=model)


def trace_times(
    trace: Trace, latency: Latency = recorded_latency, idle_cap_s: float | None = None, time_scale: float = 1.0
) -> list[TreeTime]:
    """Every root session's tree of `trace`, each on its own timeline."""
    return [tree_time(session, index, latency, idle_cap_s, time_scale) for index, session in enumerate(trace.sessions)]


def model_share(times: Sequence[TreeTime]) -> float:
    """Model time over wall time, summed over trees (a corpus's share)."""
    wall = sum(time.wall_s for time in times)
    return sum(time.model_s for time in times) / wall if wall > 0 else 0.0


def saving(before: Sequence[TreeTime], after: Sequence[TreeTime]) -> float:
    """The share of the trees' summed wall time that `after` saves against `before`."""
    wall = sum(time.wall_s for time in before)
    return 1 - sum(time.wall_s for time in after) / wall if wall > 0 else 0.0
