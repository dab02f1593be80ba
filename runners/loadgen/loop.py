"""The load generator's event loop: uvloop where available (lower, steadier scheduling latency)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

try:
    import uvloop
except ImportError:  # e.g. Windows: the standard loop measures correctly, only with more overhead
    uvloop = None  # type: ignore[assignment]  # the module or None: run() checks which


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Like asyncio.run (Ctrl-C cancels the coroutine and raises KeyboardInterrupt), on uvloop if present."""
    factory = uvloop.new_event_loop if uvloop is not None else None
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(coroutine)
