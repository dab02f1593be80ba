"""The load generator's event loop: uvloop where available (lower, steadier scheduling latency), and no full
garbage collection while it measures.

A full (generation 2) collection walks every object the process holds and stops the event loop while it does:
in a 256-session replay, collections of 134 and 192 ms at 8.5 s and 35.2 s were exactly the two bursts of late
requests of its window (lag p99 207 ms; 2026-12-04, docs/BENCHMARKS.md "Replay at AgentX scale"). While a load
runs, the objects alive at its start are frozen out of the collector, automatic collection is off, and a task
collects the young generations every YOUNG_COLLECTION_S (they hold only what was made since the last one: a few
milliseconds); the full collection runs once the load has ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")
YOUNG_COLLECTION_S = 0.5

try:
    import uvloop
except ImportError:  # e.g. Windows: the standard loop measures correctly, only with more overhead
    uvloop = None  # type: ignore[assignment]  # the module or None: run() checks which


@contextlib.contextmanager
def _no_full_collections() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()


async def _with_young_collections(coroutine: Coroutine[Any, Any, T]) -> T:
    async def collect() -> None:
        while True:
            await asyncio.sleep(YOUNG_COLLECTION_S)
            gc.collect(1)

    collector = asyncio.create_task(collect())
    try:
        return await coroutine
    finally:
        collector.cancel()


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Like asyncio.run (Ctrl-C cancels the coroutine and raises KeyboardInterrupt), on uvloop if present, with
    only young-generation collections while it runs (see the module's docstring)."""
    factory = uvloop.new_event_loop if uvloop is not None else None
    with _no_full_collections(), asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(_with_young_collections(coroutine))
