"""One worker thread that makes the job due soonest first: a replay's prompt synthesis.

A replay makes each prompt off the event loop, ahead of when it is due. When many lanes start new sessions at once
(the window's opening, copies recycling), each new session's prompt is all new blocks, and a first-come queue put
every prompt due in the next milliseconds behind them: the requests left late although the thread had time for
them. Ordered by due time, the prompt needed next is made next; a prompt due later waits.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

T = TypeVar("T")


def _settle(future: asyncio.Future[Any], result: Any, error: Exception | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class DueOrderedThread:
    """`await worker.run(due, job)` runs `job()` on the thread, jobs with the smallest `due` first."""

    def __init__(self, name: str) -> None:
        self._jobs: list[tuple[float, int, Callable[[], Any], asyncio.AbstractEventLoop, asyncio.Future[Any]]] = []
        self._order = itertools.count()  # equal due times keep their order of submission
        self._ready = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)

    def __enter__(self) -> DueOrderedThread:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        with self._ready:
            self._closed = True  # jobs still queued belong to a replay that has ended: dropped
            self._ready.notify()
        self._thread.join()

    async def run(self, due: float, job: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._ready:
            heapq.heappush(self._jobs, (due, next(self._order), job, loop, future))
            self._ready.notify()
        return await future

    def _work(self) -> None:
        while True:
            with self._ready:
                while not self._jobs and not self._closed:
                    self._ready.wait()
                if self._closed:
                    return
                _, _, job, loop, future = heapq.heappop(self._jobs)
            try:
                result, error = job(), None
            except Exception as raised:  # noqa: BLE001 - not handled here: handed to the awaiting task, which raises it
                result, error = None, raised
            if not loop.is_closed():
                loop.call_soon_threadsafe(_settle, future, result, error)
