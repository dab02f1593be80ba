"""The replay's synthesis thread makes the prompt due soonest first, and hands errors to whoever awaits them."""

from __future__ import annotations

import asyncio
import threading

import pytest

from runners.loadgen.due_order import DueOrderedThread


def test_jobs_queued_behind_a_busy_thread_run_soonest_due_first() -> None:
    ran: list[str] = []
    started, release = threading.Event(), threading.Event()

    def job(name: str):  # type: ignore[no-untyped-def]
        def run() -> str:
            if name == "first":
                started.set()
                release.wait(timeout=10)  # the thread is busy while the others queue up
            ran.append(name)
            return name

        return run

    async def main() -> list[str]:
        with DueOrderedThread("test") as worker:
            first = asyncio.create_task(worker.run(0.0, job("first")))
            await asyncio.sleep(0)  # the task submits its job
            assert started.wait(timeout=10)  # and the thread is in it
            later = [asyncio.create_task(worker.run(due, job(name))) for due, name in
                     ((30.0, "late"), (10.0, "soon"), (20.0, "middle"), (10.0, "soon-too"))]  # fmt: skip
            await asyncio.sleep(0)  # all four queued
            release.set()
            return [await first, *[await task for task in later]]

    results = asyncio.run(main())
    assert results == ["first", "late", "soon", "middle", "soon-too"]  # each awaiter gets its own job's result
    # The thread took the queued jobs by due time, equal dues in the order they came: not first come first made.
    assert ran == ["first", "soon", "soon-too", "middle", "late"]


def test_an_error_in_a_job_is_raised_where_it_is_awaited() -> None:
    def broken() -> None:
        raise ValueError("no such block")

    async def main() -> None:
        with DueOrderedThread("test") as worker:
            with pytest.raises(ValueError, match="no such block"):
                await worker.run(1.0, broken)
            assert await worker.run(2.0, lambda: 7) == 7  # the thread lives on

    asyncio.run(main())
