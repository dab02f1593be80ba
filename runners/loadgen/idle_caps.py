"""AgentX's idle caps over a replay's pending timers: think times run in real time, idle stretches do not last.

Every wait of a closed-loop replay (a think time before a session's next request, a subagent's spawn offset) is a
timer registered here with its due time and its trajectory tree (a root session copy with its subagents). Timers
fire at their due time, except that whenever a scope has had nothing in flight for its cap, all of that scope's
pending timers advance together, so the earliest fires at once:

- the whole system, after `system_cap_s` of idle (AgentX: 10 s);
- one trajectory tree, after `tree_cap_s` of idle of that tree (AgentX: 300 s), whatever the other trees do.

Advancing keeps every gap between the scope's timers, so requests are never reordered and a subagent never
starts before the request it follows; a recorded think time is never shortened otherwise. Caps are in the
replay's own seconds (already multiplied by its time scale).

Example (AgentX's): lane A's answer ends at t = 0 and it thinks 200 s; lane B is busy from 1 to 61. The system is
idle only from 0 to 1 and from 61; at 71 it has been idle 10 s, so A's timer advances and A is sent at 71.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import Counter
from collections.abc import AsyncIterator, Hashable
from dataclasses import dataclass, field


@dataclass(eq=False)
class _Timer:
    due: float
    tree: Hashable
    fired: asyncio.Future[float] = field(repr=False)


class IdleCaps:
    def __init__(self, system_cap_s: float | None, tree_cap_s: float | None) -> None:
        self.system_cap_s = system_cap_s
        self.tree_cap_s = tree_cap_s
        self.timers: list[_Timer] = []
        self.in_flight = 0
        self.tree_in_flight: Counter[Hashable] = Counter()
        self.system_idle_since = time.perf_counter()
        self.tree_idle_since: dict[Hashable, float] = {}
        self._changed: asyncio.Event | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[IdleCaps]:
        """The timers' clock, for as long as the replay runs."""
        self._changed = asyncio.Event()
        self.system_idle_since = time.perf_counter()
        task = asyncio.create_task(self._run())
        try:
            yield self
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def wait(self, due: float, tree: Hashable, deadline: float = math.inf) -> float | None:
        """Wait for a timer of `tree` due at `due` (perf_counter seconds); returns when it fired, perhaps advanced,
        or None once `deadline` (the end of the measured window) passed first: the timer is then dropped. A timer
        due after the deadline is still registered: the idle caps may bring it into the window."""
        if self._changed is None:  # no clock running (e.g. a unit test of one request): plain real time
            if due >= deadline:
                return None
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            return due
        timer = _Timer(due, tree, asyncio.get_running_loop().create_future())
        self.timers.append(timer)
        self.tree_idle_since.setdefault(tree, time.perf_counter())
        self._changed.set()
        remaining = deadline - time.perf_counter()
        try:
            return await asyncio.wait_for(asyncio.shield(timer.fired), None if math.isinf(remaining) else remaining)
        except TimeoutError:
            if timer.fired.done():
                return timer.fired.result()
            self.timers = [pending for pending in self.timers if pending is not timer]
            return None

    def began(self, tree: Hashable) -> None:
        """A request of `tree` was sent."""
        self.in_flight += 1
        self.tree_in_flight[tree] += 1

    def ended(self, tree: Hashable) -> None:
        """A request of `tree` ended (answered or failed)."""
        now = time.perf_counter()
        self.in_flight -= 1
        self.tree_in_flight[tree] -= 1
        if self.in_flight == 0:
            self.system_idle_since = now
        if self.tree_in_flight[tree] == 0:
            self.tree_idle_since[tree] = now
        if self._changed is not None:
            self._changed.set()

    # --- the clock ---------------------------------------------------------------------------------

    async def _run(self) -> None:
        assert self._changed is not None
        while True:
            now = time.perf_counter()
            self._advance(now)
            self._fire(now)
            wake = self._next_wake()
            self._changed.clear()
            timeout = None if wake is None else max(0.0, wake - time.perf_counter())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout)

    def _advance(self, now: float) -> None:
        """Advance the pending timers of every scope idle for its cap, so the scope's earliest fires now."""
        if not self.timers:
            return
        if self.system_cap_s is not None and self.in_flight == 0 and now - self.system_idle_since >= self.system_cap_s:
            self._shift(self.timers, now)
            # The earliest fires now and its request is on its way: the next advance needs a whole cap of idle
            # again (else every timer would fire in one burst before that request has left).
            self.system_idle_since = now
        if self.tree_cap_s is None:
            return
        for tree in {timer.tree for timer in self.timers}:
            if self.tree_in_flight[tree] == 0 and now - self.tree_idle_since.get(tree, now) >= self.tree_cap_s:
                self._shift([timer for timer in self.timers if timer.tree == tree], now)
                self.tree_idle_since[tree] = now

    @staticmethod
    def _shift(timers: list[_Timer], now: float) -> None:
        earliest = min(timer.due for timer in timers)
        if earliest > now:
            for timer in timers:
                timer.due -= earliest - now

    def _fire(self, now: float) -> None:
        due = [timer for timer in self.timers if timer.due <= now]
        if not due:
            return
        self.timers = [timer for timer in self.timers if timer.due > now]
        for timer in sorted(due, key=lambda timer: timer.due):  # waiters resume in due order
            if not timer.fired.done():
                timer.fired.set_result(timer.due)

    def _next_wake(self) -> float | None:
        """The next moment a timer falls due or a scope reaches its cap."""
        if not self.timers:
            return None
        moments = [min(timer.due for timer in self.timers)]
        if self.system_cap_s is not None and self.in_flight == 0:
            moments.append(self.system_idle_since + self.system_cap_s)
        if self.tree_cap_s is not None:
            for tree in {timer.tree for timer in self.timers}:
                if self.tree_in_flight[tree] == 0:
                    moments.append(self.tree_idle_since.get(tree, moments[0]) + self.tree_cap_s)
        return min(moments)
