"""Preparing ahead in a worker process: the same answers in the same order, user errors raised here, no worker left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrator.importers.ahead import AHEAD_FROM_ITEMS, WorkerStopped, prepared_in_turn
from recipes.errors import RecipeError
from tests.conftest import ROOT


def squared_with_pid(number: int) -> tuple[int, int]:
    return number * number, os.getpid()


def test_many_items_are_prepared_in_a_worker_in_their_order() -> None:
    items = list(range(AHEAD_FROM_ITEMS * 5))
    answers = list(prepared_in_turn(items, squared_with_pid))
    assert [value for value, _pid in answers] == [number * number for number in items]
    assert {pid for _value, pid in answers} - {os.getpid()}, "a worker process prepared them"


def test_a_few_items_are_prepared_here() -> None:
    answers = list(prepared_in_turn(list(range(AHEAD_FROM_ITEMS - 1)), squared_with_pid))
    assert {pid for _value, pid in answers} == {os.getpid()}


def refuse_seven(number: int) -> int:
    if number == 7:
        raise RecipeError(f"/rows/{number}.json", [("[3].hw", "h999", "expected a hardware key")], what="rows")
    return number


def test_a_user_error_in_the_worker_is_raised_here_as_it_is() -> None:
    taken = []
    with pytest.raises(RecipeError) as raised:
        for number in prepared_in_turn(list(range(12)), refuse_seven):
            taken.append(number)
    assert taken == list(range(7))
    assert raised.value.file == "/rows/7.json"
    assert raised.value.problems == [("[3].hw", "h999", "expected a hardware key")]
    assert str(raised.value) == "/rows/7.json: invalid rows\n  field '[3].hw': got 'h999'; expected a hardware key"


SLOW_IMPORT = """
import os, sys, time
from orchestrator.importers.ahead import prepared_in_turn
def slow(number):
    time.sleep(0.2)
    return os.getpid()
for pid in prepared_in_turn(list(range(100)), slow):
    print(pid, flush=True)
"""


def test_the_worker_ends_when_the_import_is_killed() -> None:
    importing = subprocess.Popen([sys.executable, "-c", SLOW_IMPORT], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert importing.stdout is not None
    worker = int(importing.stdout.readline())
    assert worker != importing.pid
    importing.send_signal(signal.SIGKILL)
    importing.wait(timeout=30)
    deadline = time.monotonic() + 20
    while _running(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    outlived = _running(worker)
    if outlived:  # this test's own grandchild: not left behind when the test fails
        os.kill(worker, signal.SIGKILL)
    assert not outlived, f"worker {worker} outlived its killed parent"


def _running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie waiting for its reaper has ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def die_at_five(number: int) -> int:
    if number == 5:
        os._exit(1)  # the worker gone without an answer, as when it is killed
    return number


def test_a_worker_gone_without_an_answer_is_a_retryable_error_naming_the_item() -> None:
    with pytest.raises(WorkerStopped, match="the worker preparing 5 ended without an answer") as raised:
        list(prepared_in_turn(list(range(12)), die_at_five))
    assert raised.value.retryable
