"""AgentX's idle caps over pending timers, in real time scaled down (1 recorded second = SCALE real seconds)."""

from __future__ import annotations

import asyncio
import time

import pytest

from runners.loadgen.idle_caps import IdleCaps

SCALE = 0.005
TOLERANCE = 0.03  # seconds of real time (6 recorded seconds here) on a loaded 2-core machine
EXAMPLE_SCALE = 0.05  # the AgentX example at 1 recorded second = 50 ms: 71 +- 1 s is +- 50 ms of real time


async def _busy(caps: IdleCaps, tree: str, start: float, end: float, origin: float) -> None:
    await asyncio.sleep(max(0.0, origin + start - time.perf_counter()))
    caps.began(tree)
    await asyncio.sleep(max(0.0, origin + end - time.perf_counter()))
    caps.ended(tree)


def _a_thinks_while_b_works(scale: float, think: float, b_busy: tuple[float, float]) -> float:
    """Lane A's answer ends at 0 and it thinks `think` recorded seconds while lane B is busy over `b_busy`; with
    AgentX's caps (10 s whole system, 300 s per tree), when A is sent, in recorded seconds."""

    async def scenario() -> float:
        caps = IdleCaps(system_cap_s=10 * scale, tree_cap_s=300 * scale)
        async with caps.running():
            origin = time.perf_counter()
            caps.began("A")
            caps.ended("A")
            lane_b = asyncio.create_task(_busy(caps, "B", b_busy[0] * scale, b_busy[1] * scale, origin))
            fired = await caps.wait(origin + think * scale, "A")
            sent = time.perf_counter()
            await lane_b
        assert fired <= sent  # the timer fired (perhaps advanced), then A was sent
        return (sent - origin) / scale

    return asyncio.run(scenario())


def test_the_agentx_example_sends_a_at_71_s() -> None:
    # A thinks 200 s; B is busy from 1 s to 61 s: A is sent at 71 s (61 s + 10 s of whole-system idle), not at
    # 10 s and not at 200 s.
    assert _a_thinks_while_b_works(EXAMPLE_SCALE, 200.0, (1.0, 61.0)) == pytest.approx(71.0, abs=1.0)


def test_a_tree_idle_for_its_cap_advances_while_the_system_is_busy() -> None:
    # A thinks 500 s while B is busy throughout: the system is never idle, so only A's 300 s cap applies.
    assert _a_thinks_while_b_works(SCALE, 500.0, (0.0, 400.0)) == pytest.approx(300.0, abs=TOLERANCE / SCALE)


def test_advancing_keeps_the_order_and_the_gap_between_a_scopes_timers() -> None:
    # Nothing in flight: a subagent due at 200 s and the parent's next turn at 250 s. After 10 s of idle both
    # advance by 190 s together: the subagent at 10 s, and the turn 50 s after it (it goes alone, within the cap).
    async def scenario() -> list[tuple[str, float]]:
        caps = IdleCaps(system_cap_s=10 * SCALE, tree_cap_s=300 * SCALE)
        fired: list[tuple[str, float]] = []
        async with caps.running():
            origin = time.perf_counter()

            async def timer(name: str, due: float, busy_for: float) -> None:
                await caps.wait(origin + due * SCALE, "A")
                fired.append((name, (time.perf_counter() - origin) / SCALE))
                caps.began("A")
                await asyncio.sleep(busy_for * SCALE)
                caps.ended("A")

            await asyncio.gather(timer("subagent", 200.0, 60.0), timer("turn", 250.0, 1.0))
        return fired

    (first, at_first), (second, at_second) = asyncio.run(scenario())
    assert (first, second) == ("subagent", "turn")
    assert at_first == pytest.approx(10.0, abs=TOLERANCE / SCALE)
    assert at_second - at_first == pytest.approx(50.0, abs=TOLERANCE / SCALE)


def test_without_caps_a_timer_fires_at_its_due_time() -> None:
    async def scenario() -> float:
        caps = IdleCaps(system_cap_s=None, tree_cap_s=None)
        async with caps.running():
            origin = time.perf_counter()
            await caps.wait(origin + 30 * SCALE, "A")
            return (time.perf_counter() - origin) / SCALE

    assert asyncio.run(scenario()) == pytest.approx(30.0, abs=TOLERANCE / SCALE)
