"""Preparing ahead: an import's files read and judged in a worker process while the rows before them are stored.

An import has two halves of about equal cost: reading, judging and shaping each row (Python, no database), and
storing them (the database's own work and the Recorder's). On two cores they overlap: a worker process prepares
the next files while this one stores the last (100k InferenceX rows: see docs/BENCHMARKS.md). The worker is forked
(started in milliseconds, with the modules this process loaded) and never touches the database: it only reads files
and sends back plain values. It ends when its end of the pipe reads end-of-file: when this process closes it, and
also when this process is killed, since the worker closes its copy of this process's end first.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Generator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TypeVar

from recipes.errors import InferSweepError, InfrastructureError

Item = TypeVar("Item")
Prepared = TypeVar("Prepared")

# From this many items a worker pays off (its start and the pickling of what it sends back cost about a small file's
# preparation); fewer are prepared here, one after the other.
AHEAD_FROM_ITEMS = 4
# Items given to the worker before their results are taken: it never waits on this process, and at most this many
# prepared results wait in memory.
AHEAD = 2


@dataclass(frozen=True)
class _Refused:
    """A user error the worker met (a file that is not a row list), sent back to be raised here."""

    error: InferSweepError


class WorkerStopped(InfrastructureError):
    """The worker preparing an import's files ended without an answer (killed, or out of memory; an error of its own
    is printed above). Retryable: the import run again stores only what is missing."""


def prepared_in_turn(items: list[Item], prepare: Callable[[Item], Prepared]) -> Generator[Prepared, None, None]:
    """`prepare(item)` of each item, in order; from AHEAD_FROM_ITEMS items on, computed in a worker process up to
    AHEAD items ahead of the one taken. A user error (`InferSweepError`) in the worker is raised here, as it would be
    without one."""
    if len(items) < AHEAD_FROM_ITEMS:
        yield from map(prepare, items)
        return
    context = multiprocessing.get_context("fork")
    ours, theirs = context.Pipe()
    worker = context.Process(target=_prepare_each, args=(prepare, theirs, ours), daemon=True,
                             name="infersweep-prepare")  # fmt: skip
    worker.start()
    theirs.close()
    try:
        _send(ours, items[:AHEAD])
        for index in range(len(items)):
            try:
                answer = ours.recv()
            except (EOFError, ConnectionResetError) as error:  # the worker is gone
                raise WorkerStopped(f"the worker preparing {items[index]} ended without an answer; run the import "
                                    "again: it stores only what is missing") from error  # fmt: skip
            if isinstance(answer, _Refused):
                raise answer.error
            _send(ours, items[index + AHEAD : index + AHEAD + 1])
            yield answer
    finally:
        ours.close()  # the worker reads end-of-file and returns
        worker.join(timeout=10)


def _send(pipe: Connection, items: list[Item]) -> None:
    """`items` to the worker; where it is gone, the next answer read says so, naming the item it died on."""
    try:
        for item in items:
            pipe.send(item)
    except (BrokenPipeError, ConnectionResetError):
        return


def _prepare_each(prepare: Callable[[Item], Prepared], requests: Connection, parents_end: Connection) -> None:
    parents_end.close()  # only the parent holds its end now: when the parent ends, killed or not, recv() reads EOF
    try:
        while True:
            try:
                item = requests.recv()
            except EOFError:
                return
            try:
                answer: Prepared | _Refused = prepare(item)
            except InferSweepError as error:
                answer = _Refused(error)
            requests.send(answer)
    # Ctrl-C reaches the whole process group, and a parent that stopped early closed its end: it says what stopped.
    except (KeyboardInterrupt, BrokenPipeError, ConnectionResetError):
        return
