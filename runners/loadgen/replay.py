"""Agentic trace replay (AgentX-style), v0: closed-loop session trees and open-loop timelines.

Closed loop (session traces, e.g. Weka/Claude Code): `concurrency` lanes, each running one live session
tree (a root session with its subagents) at a time, on AgentX's rules (AIPerf's agentic replay; the schedule
comparison in tests/integration/loadgen/test_aiperf_schedule.py holds us to it): a session sends its next
request when the previous answer ends plus the recorded idle gap (`Session.think_before`), scaled by
`time_scale`, and timers are advanced only by the idle caps (runners/loadgen/idle_caps.py). Subagents spawn in
groups (`Session.spawn_groups`) and a request that joins a group still running waits for it. When a tree ends,
the lane takes the next copy of a root session with a new salt, so copies never share cache the real traffic
would not have shared (runners/traces/synthesis.py).
Warmup: each lane's first tree starts at a random turn in [25 %, 75 %] of its root session (or at its first turn,
without `warmup`), with the history primed by one unmeasured request carrying the previous turn's prompt, then
(AgentX's accelerated warm-up, `warmup_requests_per_lane`) that many more turns sent one after another as one-token
requests; the next turn is then due its own think time after the window opens, so lanes are at random phases as in
steady traffic, or that less the smallest of them (`phase_start`, the harness's default: runners/traces/planner.py,
phase_start_delays). When the window closes on a tree (its next request is due after the end), the lane stops.

Schedule: a request is due at the end of the answer before it plus the think time. Its prompt is made
(synthesised and JSON-encoded) during that think time, on one synthesis thread, so the event loop only
sends; schedule lag (sent - due) is then the client's own delay. The trace is frozen out of the garbage
collector while it replays.

Open loop (`mode="timeline"`, e.g. Mooncake): every request is sent at its recorded time x time_scale.

Lengths can be scaled (`length_scale`) for small engines: inputs, outputs and the trace's block size are
multiplied alike, which keeps the sharing structure (which blocks repeat) intact.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import math
import multiprocessing
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import aiohttp
import numpy as np

from recipes.errors import ConfigurationError, InferSweepError, InfrastructureError
from recipes.schema import ReplaySettings, ValidityThresholds
from runners.host.server_metrics import CacheShape
from runners.loadgen.breakdown import by_context, by_turn, measured_positions
from runners.loadgen.chat_text import PromptText
from runners.loadgen.client import Endpoint, PreparedRequest, client_session, encode_body, send_one
from runners.loadgen.due_order import DueOrderedThread
from runners.loadgen.fixed_length import DEFAULT_ID_RANGE, Vocabulary
from runners.loadgen.idle_caps import IdleCaps
from runners.loadgen.metrics import compute_point_metrics, summarize
from runners.loadgen.records import PlannerPrediction, PointMetrics, ReplayPoint, ReplayStats, RequestRecord
from runners.traces.formats import load_trace
from runners.traces.hit_rate import replayed_hit_rate
from runners.traces.models import Session, Trace, TraceRequest
from runners.traces.planner import (
    ReplayShape,
    ReplayTraffic,
    lane_trees,
    phase_start_delays,
    scaled_lengths,
    sent_order,
)
from runners.traces.scheduler_sim import StepTiming, scheduled_hit_rate
from runners.traces.synthesis import BlockCache, TokenPrompt, copy_salt, point_salt, scope_key, synthesize_prompt


def replay_shape(settings: ReplaySettings, concurrency: int) -> ReplayShape:
    """What of a replay's settings shapes its cache traffic (what the planner needs)."""
    return ReplayShape(concurrency=concurrency, seed=settings.seed, warmup=settings.warmup,
                       length_scale=settings.length_scale, max_output_tokens=settings.max_output_tokens,
                       warmup_requests_per_lane=settings.warmup_requests_per_lane,
                       phase_start=settings.phase_start)  # fmt: skip


def e2e_interactivity_p90(records: list[RequestRecord]) -> float | None:
    """Output tokens per second of a request's whole life (E2E ÷ output tokens), at the slow 90th percentile of
    seconds per token: numpy's linear percentile, as every other percentile of a Point (docs/METRICS.md)."""
    ratios = [
        (r.end - r.sent) / r.output_tokens
        for r in records
        if r.end is not None and r.sent is not None and r.output_tokens > 0
    ]
    if not ratios:
        return None
    p90 = float(np.percentile(ratios, 90))
    return 1 / p90 if p90 > 0 else None


T = TypeVar("T")

# One replay process holds 256 live sessions of AgentX's ~75k-token prompts with a schedule lag p99 of 8-18 ms on a
# 2-core machine whose other core runs the engine (docs/BENCHMARKS.md, "Replay at AgentX scale"); beyond that, the
# lanes are split among more processes by default.
LANES_PER_PROCESS = 256
_OPENING_NOTICE_S = 0.05  # the processes of a split replay are told the window's opening this far ahead
_SHARD_EXIT_S = 30.0  # a replay process that sent its results has this long to exit before it is killed


def replay_processes(settings: ReplaySettings, concurrency: int) -> int:
    """Client processes a replay's lanes are split among: the settings' `processes`, else one per LANES_PER_PROCESS
    live sessions, at most the cores this process may run on (a runner pinned away from the engine's cores sees
    only its own); never more than the lanes, and one for an open-loop timeline."""
    if settings.mode != "sessions":
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    wanted = settings.processes or min(math.ceil(concurrency / LANES_PER_PROCESS), cores)
    return max(1, min(wanted, concurrency))


@dataclass(frozen=True)
class ReplayRequest:
    lane: int
    session: str
    turn: int
    record: RequestRecord


@dataclass(frozen=True)
class _Outgoing:
    """A request synthesised and encoded ahead of its due time."""

    request: PreparedRequest
    body: bytes
    session_id: str
    headers: dict[str, str]  # the session headers the engine's router reads, made with the body
    turn: int
    due: float


@dataclass(frozen=True)
class ShardOutcome:
    """What one process of a split replay brings back: its requests and figures (Replayer.absorb merges them)."""

    records: list[ReplayRequest]
    lags: list[float]
    dispatch_lags: list[float]
    session_times: list[float]
    client_cpu_share: float | None


@dataclass(frozen=True)
class _ShardFailure:
    """A replay process's own error, sent back as text (not every error type survives pickling)."""

    message: str
    retryable: bool


def _scaled(request: TraceRequest, settings: ReplaySettings, block_size: int) -> tuple[TraceRequest, int]:
    inputs, out, scaled_block = scaled_lengths(request.input_tokens, request.output_tokens, block_size,
                                               settings.length_scale, settings.max_output_tokens)  # fmt: skip
    return replace(request, input_tokens=inputs, output_tokens=out), scaled_block


@dataclass(frozen=True)
class SessionId:
    """A replayed session's id, `<seed>.<concurrency>-<copy>-<path>`: unique per Point, as its copies' salt is
    (copy_salt). A router binds a session id to the worker holding its prefix; a later Point's session must not
    inherit an earlier binding. `path` is the trace's ("0", or "0/1" for subagent 1 of root session 0)."""

    seed: int
    concurrency: int
    copy: int
    path: str

    def __str__(self) -> str:
        return f"{self.seed}.{self.concurrency}-{self.copy}-{self.path}"

    @property
    def parent(self) -> str | None:
        """The id of the session that spawned this one (a subagent's), else None."""
        return str(replace(self, path=self.path.rsplit("/", 1)[0])) if "/" in self.path else None

    @classmethod
    def parse(cls, text: str) -> SessionId:
        """The parts of an id this module wrote (stored with each replayed request's record)."""
        point, copy, path = text.split("-", 2)
        seed, concurrency = point.split(".")
        return cls(int(seed), int(concurrency), int(copy), path)


class Replayer:
    def __init__(
        self, trace: Trace, endpoint: Endpoint, settings: ReplaySettings, concurrency: int,
        vocabulary: tuple[int, int] = DEFAULT_ID_RANGE, window_opened: Callable[[], None] | None = None,
        text: Callable[[TokenPrompt], str] | None = None, share: tuple[int, int] = (0, 1),
    ) -> None:  # fmt: skip
        if endpoint.kind == "chat" and text is None:
            raise ConfigurationError(
                "workload.api: got 'chat'; a chat replay sends its prompts as text and needs the model's tokenizer "
                "to decode them (infersweep replay --tokenizer DIR)"
            )
        # A chat replay's prompts: the synthesised blocks made into text (runners/loadgen/chat_text.py; the server
        # tokenises it again, and equal blocks stay equal text, so prefixes stay shared).
        self.text = text
        self.trace = trace
        # Called once every lane is primed, just before the measured window opens (the runner scrapes the
        # engine's counters there, so they cover the window and not the priming requests).
        self.window_opened = window_opened
        self.endpoint = endpoint
        self.settings = settings
        self.concurrency = concurrency
        # The lanes this process runs: all of them, or its share (index, count) of a split replay (replay_sharded).
        self.lanes = list(range(share[0], concurrency, share[1]))
        self.vocabulary = vocabulary
        self.blocks = BlockCache()
        self.records: list[ReplayRequest] = []
        # AgentX's idle caps (runners/loadgen/idle_caps.py): the whole system's and each trajectory tree's, in
        # the replay's own seconds. Every think time and spawn offset of a session replay waits through them.
        self.caps = IdleCaps(settings.idle_cap_s * settings.time_scale, settings.think_cap_s * settings.time_scale)
        self.index = itertools.count()
        shape = replay_shape(settings, concurrency)
        self.trees = lane_trees(trace, shape, share)
        # Recorded seconds from the window's opening to each lane's first measured request.
        self.phase_start_delays = phase_start_delays(trace, shape)
        self.window_start = math.inf
        self.window_end = math.inf
        self._cpu_at_open = 0.0
        self.client_cpu_share: float | None = None
        self.session_times: list[float] = []
        self.lags: list[float] = []
        self.dispatch_lags: list[float] = []
        self._synthesis: DueOrderedThread | None = None  # one thread: prompts are made off the event loop

    # --- one request -----------------------------------------------------------------------------

    async def _prepare(
        self, copy: int, root: int, session: Session, turn: int, due: float,
        max_tokens: int | None = None, warmup: bool = False,
    ) -> _Outgoing:  # fmt: skip
        """Synthesise and encode a request ahead of `due`, on the synthesis thread, soonest due first.

        Off the event loop: when many lanes recycle at once, each new session's blocks are all new, and
        making them in the loop would hold back every other session's due request behind them
        (runners/loadgen/due_order.py).
        """
        make = functools.partial(self._make, copy, root, session, turn, due, max_tokens, warmup)
        if self._synthesis is None:
            return make()
        return await self._synthesis.run(due, make)

    def _make(
        self, copy: int, root: int, session: Session, turn: int, due: float, max_tokens: int | None, warmup: bool
    ) -> _Outgoing:
        # Only the synthesis thread runs this while a replay runs: the block cache has one user.
        request, block = _scaled(session.requests[turn], self.settings, self.trace.block_size)
        scope = scope_key(self.trace, copy_salt(self.settings.seed, self.concurrency, copy), root)
        prompt = synthesize_prompt(request, block, scope, self.vocabulary, cache=self.blocks)
        prepared = PreparedRequest(
            index=next(self.index), prompt=prompt, max_tokens=max_tokens or request.output_tokens,
            warmup=warmup or due < self.window_start, prompt_text=self.text(prompt) if self.text else None,
        )  # fmt: skip
        session_id = SessionId(self.settings.seed, self.concurrency, copy, session.path)
        headers = self._session_headers(session_id)
        return _Outgoing(prepared, encode_body(self.endpoint, prepared), str(session_id), headers, turn, due)

    async def _send(
        self, http: aiohttp.ClientSession, lane: int, outgoing: _Outgoing, due: float, tree: Hashable
    ) -> RequestRecord:
        """Send a request now, `due` being when its timer fired; its schedule lag is how late it left the client."""
        self.caps.began(tree)
        try:
            record = await send_one(
                http, self.endpoint, outgoing.request, due, self.settings.request_timeout_s,
                outgoing.headers, body=outgoing.body,
            )  # fmt: skip
        finally:
            self.caps.ended(tree)
        record.session, record.turn = outgoing.session_id, outgoing.turn  # kept with the Point's records
        if not record.warmup and record.sent is not None:
            self.lags.append((record.sent - due) * 1000)
        if not record.warmup and record.dispatched is not None:
            self.dispatch_lags.append((record.dispatched - due) * 1000)
        self.records.append(ReplayRequest(lane, outgoing.session_id, outgoing.turn, record))
        return record

    def _session_headers(self, session_id: SessionId) -> dict[str, str]:
        """The session id in every header the engine's router reads, and a subagent's parent's id."""
        headers = dict.fromkeys(self.endpoint.session_headers, str(session_id))
        parent = session_id.parent
        if parent is not None:
            headers.update(dict.fromkeys(self.endpoint.parent_session_headers, parent))
        return headers

    def _gap(self, seconds: float) -> float:
        """A recorded gap in the replay's seconds: never shortened here (the idle caps advance timers instead)."""
        return seconds * self.settings.time_scale

    # --- closed loop -------------------------------------------------------------------------------

    async def _session(
        self, http: aiohttp.ClientSession, lane: int, copy: int, root: int, session: Session, first_turn: int,
        due: float | None = None,
    ) -> bool:  # fmt: skip
        """Run `session` from `first_turn` (due at `due`, now by default) to its end or the window's.

        Subagents follow AgentX (`Session.spawn_groups`): a group spawns at its recorded offset from the send of the
        request it follows when it overlapped that request, else from that request's end; a request that joins a
        group still running when the request before it ended is sent as soon as the group's last member ends, or
        (`join: after-recorded-gap`, the AgentX harness's rule) at the later of that and its own recorded gap.
        True when the whole tree ran; False when the window closed first (a request was due after it).
        """
        children: list[asyncio.Task[bool]] = []
        joins: dict[int, list[asyncio.Task[bool]]] = {}  # parent request index -> the subagents it waits for
        tree = (lane, copy)

        def spawn(after: int, at_send: bool, origin: float) -> None:
            for group in session.groups_spawned(after, at_send):
                tasks = [
                    asyncio.create_task(self._session(http, lane, copy, root, child, 0,
                                                      origin + self._gap(group.offset(session, child))))
                    for child in group.children
                ]  # fmt: skip
                children.extend(tasks)
                if group.join is not None:
                    joins.setdefault(group.join, []).extend(tasks)

        start = time.perf_counter() if due is None else due
        if first_turn == 0:
            spawn(-1, False, start)
        outgoing = await self._prepare(copy, root, session, first_turn, start)
        completed = True
        for turn in range(first_turn, len(session.requests)):
            running = [task for task in joins.get(turn, ()) if not task.done()]
            if running:
                await asyncio.wait(running)
                joined = time.perf_counter()
                fired: float | None = joined
                if self.settings.join == "after-recorded-gap":
                    # agentx-harness 1.0.12: at the later of the subagents' end and the join's recorded gap after the
                    # request before it ended (a timer the idle caps may advance, as every other).
                    fired = await self.caps.wait(max(outgoing.due, joined), tree, deadline=self.window_end)
                # else AIPerf 0.13.0's AgentX: at once when the subagents end, no think time.
            else:
                # Each next prompt is made during the think time before it, so synthesis is off the schedule. The
                # timer may be advanced by the idle caps; one that has not fired when the window closes is dropped.
                fired = await self.caps.wait(outgoing.due, tree, deadline=self.window_end)
            sent = time.perf_counter()
            if fired is None or sent >= self.window_end:
                completed = False
                break
            spawn(turn, True, sent)
            record = await self._send(http, lane, outgoing, fired, tree)
            ended = record.end if record.end is not None else time.perf_counter()
            spawn(turn, False, ended)
            if turn + 1 < len(session.requests):
                due = ended + self._gap(session.think_before(turn + 1))
                outgoing = await self._prepare(copy, root, session, turn + 1, due)
        if children:
            completed &= all(await asyncio.gather(*children))
        return completed

    async def _lane(self, http: aiohttp.ClientSession, lane: int, primed: asyncio.Event) -> None:
        # The planner's own tree plans (copy numbers, salts and warm starts), so it predicts what is replayed.
        trees = self.trees[lane]
        first = True
        while time.perf_counter() < self.window_end:
            plan = next(trees)
            copy, root, session, start_turn = plan.copy, plan.root, plan.session, plan.first_turn
            for turn in plan.primers:
                # Prime the history (the turn before the drawn start), then AgentX's warm-up turns: each prompt in
                # turn, one token out, no idle gap, never measured.
                now = time.perf_counter()
                priming = await self._prepare(copy, root, session, turn, now, 1, warmup=True)
                await self._send(http, lane, priming, now, (lane, copy))
            due = None
            if first:
                first = False
                primed.set()
                await self._all_primed.wait()
                if plan.primed:
                    # A primed session is mid-conversation: its next turn follows its think time, as the settings'
                    # phase start says (by default its own whole, so lanes are at random phases as in steady traffic).
                    due = self.window_start + self._gap(self.phase_start_delays[lane])
            started = time.perf_counter() if due is None else due
            completed = await self._session(http, lane, copy, root, session, start_turn, due)
            if not completed:
                return  # the window closed on this tree: the lane is done, no new copy starts
            ended = time.perf_counter()
            if started >= self.window_start and ended <= self.window_end:  # the whole tree inside the window
                self.session_times.append(ended - started)

    @contextlib.asynccontextmanager
    async def _client(self) -> AsyncIterator[aiohttp.ClientSession]:
        """The replay's HTTP session (no connection limit: every live session has its own) and its synthesis
        thread, for as long as the replay runs."""
        with DueOrderedThread("replay-synthesis") as self._synthesis:
            async with client_session(aiohttp.TCPConnector(limit=0)) as http:
                yield http

    async def run_sessions(self, open_window: Callable[[], Awaitable[float]] | None = None) -> None:
        """Run every lane; once all are primed, `open_window` (by default: call `window_opened`, then now) says
        when the measured window opens, on perf_counter's clock (one clock for every process of a machine)."""
        events = {lane: asyncio.Event() for lane in self.lanes}
        self._all_primed = asyncio.Event()
        async with self._client() as http, self.caps.running():
            tasks = [asyncio.create_task(self._lane(http, lane, events[lane])) for lane in self.lanes]
            await asyncio.gather(*(event.wait() for event in events.values()))
            self._open_window(await (open_window or self._open_window_here)())
            self._all_primed.set()
            await asyncio.gather(*tasks)

    async def _open_window_here(self) -> float:
        if self.window_opened is not None:
            await asyncio.get_running_loop().run_in_executor(None, self.window_opened)
        return time.perf_counter()

    # --- open loop ---------------------------------------------------------------------------------

    async def run_timeline(self) -> None:
        slots = asyncio.Semaphore(self.concurrency)
        async with self._client() as http:
            start = time.perf_counter()
            self._open_window(start)
            tasks = []
            for item in self.trace.timeline():
                due = start + item.time * self.settings.time_scale
                if due >= self.window_end:
                    break
                outgoing = await self._prepare(0, item.root, item.session, item.index, due)

                async def one(outgoing: _Outgoing = outgoing) -> None:
                    # Open loop on the trace's own clock: no idle caps (AgentX's caps are for session replays).
                    await asyncio.sleep(max(0.0, outgoing.due - time.perf_counter()))
                    async with slots:
                        await self._send(http, 0, outgoing, outgoing.due, ("timeline", 0))

                tasks.append(asyncio.create_task(one()))
            await asyncio.gather(*tasks)

    def _open_window(self, now: float) -> None:
        self.window_start, self.window_end = now, now + self.settings.duration_s
        self._cpu_at_open = time.process_time()

    def finished(self) -> None:
        """Called when the replay's last request has ended: the client's CPU share is read from the window's
        opening to here (every thread of this process: the event loop and the synthesis thread)."""
        if math.isfinite(self.window_start):
            wall = time.perf_counter() - self.window_start
            self.client_cpu_share = (time.process_time() - self._cpu_at_open) / wall if wall > 0 else None

    # --- results -----------------------------------------------------------------------------------

    def outcome(self) -> ShardOutcome:
        return ShardOutcome(self.records, self.lags, self.dispatch_lags, self.session_times, self.client_cpu_share)

    def absorb(self, shards: Sequence[ShardOutcome]) -> None:
        """Take the records and figures of processes that ran this replay's lanes (replay_sharded). Requests are
        numbered again in order of their schedule, as one process would have numbered them; the client's CPU
        share is its busiest process's (the one that may have set the pace)."""
        for shard in shards:
            self.records.extend(shard.records)
            self.lags.extend(shard.lags)
            self.dispatch_lags.extend(shard.dispatch_lags)
            self.session_times.extend(shard.session_times)
        self.records.sort(key=lambda item: item.record.scheduled)
        for index, item in enumerate(self.records):
            item.record.index = index
        shares = [shard.client_cpu_share for shard in shards if shard.client_cpu_share is not None]
        self.client_cpu_share = max(shares, default=None)

    def stats(self) -> ReplayStats:
        measured = [item.record for item in self.records if not item.record.warmup and item.record.ok]
        prompt = sum(r.prompt_tokens or r.prompt_tokens_sent for r in measured)
        with_details = [r for r in measured if r.cached_tokens is not None]
        cached = sum(r.cached_tokens or 0 for r in with_details)
        return ReplayStats(
            requests_measured=len([item for item in self.records if not item.record.warmup]),
            sessions_completed=len(self.session_times),
            session_time_s=summarize(self.session_times),
            schedule_lag_ms=summarize(self.lags),
            dispatch_lag_ms=summarize(self.dispatch_lags),
            client_cpu_share=self.client_cpu_share,
            prompt_tokens=prompt,
            cached_tokens=cached,
            realized_hit_rate=(cached / sum(r.prompt_tokens or 0 for r in with_details)) if with_details else None,
            e2e_interactivity_p90=e2e_interactivity_p90(measured),
        )


def replay(
    trace: Trace,
    endpoint: Endpoint,
    settings: ReplaySettings,
    concurrency: int,
    vocabulary: tuple[int, int] = DEFAULT_ID_RANGE,
    window_opened: Callable[[], None] | None = None,
    text: Callable[[TokenPrompt], str] | None = None,
) -> tuple[ReplayStats, list[ReplayRequest]]:
    """Replay `trace` against `endpoint` with `concurrency` live session trees (the in-flight cap in timeline
    mode); `vocabulary` is the token ids [lo, hi) synthesised prompts are made of; `window_opened` is called
    when the measured window opens (sessions mode: after every lane's priming request). The settings' `api` picks
    the endpoint's API; a chat replay sends the prompts as the text `text` makes of them (runners/loadgen/chat_text.py:
    picklable, as a split replay's processes are spawned)."""
    from runners.loadgen import loop

    endpoint = replace(endpoint, kind=settings.api)
    replayer = Replayer(trace, endpoint, settings, concurrency, vocabulary, window_opened, text)
    processes = replay_processes(settings, concurrency)
    if processes > 1:
        replayer.absorb(replay_sharded(trace, endpoint, settings, concurrency, vocabulary, window_opened, text,
                                       processes))  # fmt: skip
        return replayer.stats().model_copy(update={"client_processes": processes}), replayer.records
    # The trace's many small objects never die during a replay: loop.run freezes them out of the collector and
    # holds full collections until the replay has ended.
    loop.run(replayer.run_sessions() if settings.mode == "sessions" else replayer.run_timeline())
    replayer.finished()
    return replayer.stats().model_copy(update={"client_processes": 1}), replayer.records


def replay_sharded(
    trace: Trace, endpoint: Endpoint, settings: ReplaySettings, concurrency: int, vocabulary: tuple[int, int],
    window_opened: Callable[[], None] | None, text: Callable[[TokenPrompt], str] | None, processes: int,
) -> list[ShardOutcome]:  # fmt: skip
    """Run a session replay's lanes in `processes` processes, lane i in process i mod `processes`: each lane starts
    as it would in one process, and no two processes make the same copy (runners/traces/planner.py, lane_trees). Each
    process primes its lanes and says so; when all have, `window_opened` is called here and every process opens
    the measured window at one instant of perf_counter's clock (CLOCK_MONOTONIC, one clock for a machine's
    processes). AgentX's whole-system idle cap then sees each process's lanes, not all of them (at the hundreds of
    live sessions that need several processes, the system is seldom idle for its 10 s)."""
    context = multiprocessing.get_context("spawn")  # never a fork of a process that holds threads (Ray's, a loop's)
    shards: list[tuple[multiprocessing.process.BaseProcess, Any]] = []
    try:
        for number in range(processes):
            ours, theirs = context.Pipe()
            child = context.Process(
                target=_shard_main, name=f"replay-process-{number}", daemon=True,
                args=(theirs, trace, endpoint, settings, concurrency, (number, processes), vocabulary, text),
            )  # fmt: skip
            child.start()
            theirs.close()  # only the child holds its end: its exit is an end of file here
            shards.append((child, ours))
        _receive_all(shards, str)  # "primed"
        if window_opened is not None:
            window_opened()
        opening = time.perf_counter() + _OPENING_NOTICE_S
        for _, pipe in shards:
            pipe.send(opening)
        outcomes = _receive_all(shards, ShardOutcome)
    except BaseException:
        # One process failed or died, or this one was stopped: the others' measurement is of a replay that did not
        # run whole. They are ours (started above): stopped now, not when their window would have ended.
        for process, _ in shards:
            if process.is_alive():
                process.terminate()
        raise
    finally:
        for process, pipe in shards:
            pipe.close()
            process.join(timeout=_SHARD_EXIT_S)
            if process.is_alive():  # started above: ours to stop
                process.kill()
                process.join()
    return outcomes


def _receive_all(shards: list[tuple[multiprocessing.process.BaseProcess, Any]], expected: type[T]) -> list[T]:
    """One message of type `expected` from every replay process, in their order, read as each arrives: a process
    that fails or dies (its pipe's end of file) ends the wait at once, whichever process it is."""
    from multiprocessing.connection import wait

    owners = {id(pipe): (process, pipe) for process, pipe in shards}
    received: dict[int, T] = {}
    while len(received) < len(shards):
        for ready in wait([pipe for key, (_, pipe) in owners.items() if key not in received]):
            process, pipe = owners[id(ready)]
            received[id(pipe)] = _receive(process, pipe, expected)
    return [received[id(pipe)] for _, pipe in shards]


def _receive(process: multiprocessing.process.BaseProcess, pipe: Any, expected: type[T]) -> T:
    """The next message of a replay process, of type `expected`; its error, or its death, raised here."""
    try:
        message = pipe.recv()
    except EOFError:
        process.join(timeout=_SHARD_EXIT_S)
        raise InfrastructureError(
            f"replay: {process.name} ended before it sent its results (exit code {process.exitcode}); the other "
            "processes were stopped and what they measured is discarded: run the Point again"
        ) from None
    if isinstance(message, _ShardFailure):
        error = InfrastructureError if message.retryable else ConfigurationError
        raise error(message.message)
    if not isinstance(message, expected):
        raise InfrastructureError(f"replay: {process.name} sent {type(message).__name__}, not {expected.__name__}")
    return message


def _shard_main(
    pipe: Any, trace: Trace, endpoint: Endpoint, settings: ReplaySettings, concurrency: int, share: tuple[int, int],
    vocabulary: tuple[int, int], text: Callable[[TokenPrompt], str] | None,
) -> None:  # fmt: skip
    """One process of a split replay: run its `share` of the lanes, open the window when told, send back what was
    measured."""
    from runners.loadgen import loop

    try:
        replayer = Replayer(trace, endpoint, settings, concurrency, vocabulary, text=text, share=share)

        async def open_window() -> float:
            pipe.send("primed")
            opening = float(await asyncio.get_running_loop().run_in_executor(None, pipe.recv))
            await asyncio.sleep(max(0.0, opening - time.perf_counter()))
            return opening

        loop.run(replayer.run_sessions(open_window))
        replayer.finished()
        pipe.send(replayer.outcome())
    except InferSweepError as error:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the parent stopped listening (below)
            pipe.send(_ShardFailure(str(error), error.retryable))
    except (EOFError, BrokenPipeError, ConnectionResetError):
        # The parent closed its end: another process died or the replay was stopped, and what this one measured is
        # discarded. Nothing to say, and no traceback: the parent names the cause.
        return


def run_replay_point(
    endpoint: Endpoint,
    point: ReplayPoint,
    vocabulary: Vocabulary,
    accelerators: int,
    thresholds: ValidityThresholds,
    engine_block_size: int,
    cache: CacheShape | None = None,
    token_budget: int | None = None,
    window_opened: Callable[[], None] | None = None,
) -> tuple[PointMetrics, list[RequestRecord]]:
    """One replay Point of a recipe: replay, then the usual aggregates plus the replay figures.

    With the engine's cache shape (`cache`, from its /metrics) the Point also stores the KV capacity
    planner's prediction for that cache and the traffic that was replayed, next to the realised rates.
    `token_budget` (the engine's step token budget) says the engine schedules like vLLM, pinning the blocks
    of running requests: the prediction then replays its scheduler (traces/scheduler_sim.py) at the speed
    this Point measured; without it (the simulated engine) the planner's LRU (traces/planner.py).
    """
    trace = load_trace(point.trace_path)
    if trace.content_hash != point.trace_version:
        raise ConfigurationError(
            f"workload.trace: {point.trace_path} changed since the sweep was planned "
            f"(version {trace.content_hash[:12]}, planned {point.trace_version[:12]}); plan a new sweep"
        )
    low = max(vocabulary.excluded, default=-1) + 1
    text = PromptText(vocabulary.text_tokenizer(), point.chat_text) if point.api == "chat" else None
    stats, items = replay(trace, endpoint, point, point.concurrency, (low, vocabulary.size), window_opened, text)
    records = [item.record for item in items]
    # A replay is closed over its sessions: the minimum of measured requests scales with them, as a fixed-length
    # Point's with its concurrency; the client must have kept to the schedule (recipes/validity.py).
    evidence = {
        "load": point.concurrency, "load_label": f"{point.concurrency} live sessions",
        "schedule_lag_p99_ms": stats.schedule_lag_ms.p99, "max_schedule_lag_p99_ms": point.max_schedule_lag_p99_ms,
        "dispatch_lag_p99_ms": stats.dispatch_lag_ms.p99 if stats.dispatch_lag_ms else None,
        "client_cpu_share": stats.client_cpu_share,
    }  # fmt: skip
    metrics = compute_point_metrics(
        records, point.concurrency, accelerators, thresholds, open_loop=True, origin="replayed", evidence=evidence
    )
    walk = replayed_hit_rate(trace, engine_block_size, point.length_scale)
    timing = _timing(records, metrics, token_budget)
    metrics.replay = stats.model_copy(
        update={
            "theoretical_hit_rate": walk.rate,
            "agentx_theoretical_hit_rate": walk.block_rate(measured_positions(records, walk, trace_path)),
            "per_turn": by_turn(records, walk, trace_path),
            "per_context": by_context(records, walk, trace_path),
            "planner": _prediction(trace, point, cache, stats, timing, records),
            "trace_version": trace.content_hash,
            "prompt_salt": point_salt(point.seed, point.concurrency),
        }
    )
    return metrics, records


def trace_path(session_id: str) -> str:
    """The trace session a replayed session id stands for (its path, the replayed walk's key prefix)."""
    return SessionId.parse(session_id).path


def _timing(records: list[RequestRecord], metrics: PointMetrics, token_budget: int | None) -> StepTiming | None:
    """The engine's speed as this Point measured it, for the scheduler model: a step takes the median TPOT,
    and a prompt token the median TTFT beyond that over the median prompt tokens not served from cache."""
    decode_ms, first_ms = metrics.tpot_ms.p50, metrics.ttft_ms.p50
    uncached = sorted(
        (record.prompt_tokens or record.prompt_tokens_sent) - (record.cached_tokens or 0)
        for record in records
        if record.ok and not record.warmup
    )
    if token_budget is None or decode_ms is None or first_ms is None or not uncached:
        return None
    per_token = max(0.0, first_ms - decode_ms) / 1000 / max(1, uncached[len(uncached) // 2])
    return StepTiming(step_s=decode_ms / 1000, prefill_s_per_token=per_token, token_budget=token_budget)


def _prediction(
    trace: Trace, point: ReplayPoint, cache: CacheShape | None, stats: ReplayStats, timing: StepTiming | None,
    records: list[RequestRecord],
) -> PlannerPrediction | None:  # fmt: skip
    """The planner's hit rates for the engine's cache: its scheduler replayed for the requests the Point measured when
    `timing` is known and there is no DRAM tier, else the LRU over the requests in the order they were sent."""
    if cache is None or cache.gpu_blocks is None or point.mode != "sessions" or not stats.requests_measured:
        return None
    shape = replay_shape(point, point.concurrency)
    if timing is not None and not cache.cpu_blocks and cache.gpu_blocks > 0:
        # As many requests as the Point measured: the model's own speed would decide how much of the trace a
        # window holds, and the hit rate depends on which turns those are (an early turn of a copy hits less).
        scheduled = scheduled_hit_rate(trace, shape, cache.block_size, cache.gpu_blocks, timing, point.duration_s,
                                       time_scale=point.time_scale, tree_cap_s=point.think_cap_s,
                                       system_cap_s=point.idle_cap_s,
                                       requests=stats.requests_measured, join=point.join)  # fmt: skip
        return PlannerPrediction(
            model="scheduler", block_size=cache.block_size, hbm_blocks=cache.gpu_blocks, dram_blocks=0,
            requests_per_lane=max(1, round(scheduled.requests / point.concurrency)),
            hbm_hit_rate=scheduled.rate, dram_hit_rate=0.0, hit_rate=scheduled.rate,
            preemptions=scheduled.preemptions,
        )  # fmt: skip
    per_lane = max(1, round(stats.requests_measured / point.concurrency))
    sent = sorted(
        ((r.sent, SessionId.parse(r.session), r.turn, r.warmup)
         for r in records if r.sent is not None and r.session is not None and r.turn is not None),
        key=lambda item: item[0],
    )  # fmt: skip
    order = sent_order(trace, [(session.copy, session.path, turn, warmup) for _, session, turn, warmup in sent])
    traffic = ReplayTraffic(trace, shape, cache.block_size, order=order)
    predicted = traffic.hit_rate(cache.gpu_blocks, cache.cpu_blocks)
    return PlannerPrediction(
        block_size=cache.block_size, hbm_blocks=cache.gpu_blocks, dram_blocks=cache.cpu_blocks,
        requests_per_lane=per_lane, hbm_hit_rate=predicted.hbm_rate, dram_hit_rate=predicted.dram_rate,
        hit_rate=predicted.rate,
    )  # fmt: skip
