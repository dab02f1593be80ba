"""The unit tier's rule, enforced: a unit test starts no process, opens no socket and does not sleep.

Such a test belongs in tests/integration (Ray, PostgreSQL, moto, the simulated engine) or tests/system (Docker,
sshd, Slurm, real vLLM, Chromium); tests/README.md says which. The guard is the reason `make test-fast` stays fast
and runs anywhere: a test that needs the world fails here with what it tried, instead of slowing the tier.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest


class UnitTierViolation(RuntimeError):
    """A unit test tried to use the world outside its process."""


def _refusal(what: str) -> Callable[..., Any]:
    def refuse(*args: object, **kwargs: object) -> Any:
        raise UnitTierViolation(
            f"a unit test must not {what} (tests/unit/conftest.py): move the test to tests/integration or "
            "tests/system, or give the code under test a seam (a fake clock, an in-memory transport)"
        )

    return refuse


# What each kind of escape goes through: Popen under subprocess.run/check_output and asyncio's subprocesses,
# fork/posix_spawn under multiprocessing, connect/bind under every client and server (asyncio's included).
GUARDED: tuple[tuple[object, str, str], ...] = (
    (subprocess.Popen, "__init__", "start a process"),
    (os, "fork", "start a process"),
    (os, "posix_spawn", "start a process"),
    (os, "system", "start a process"),
    (socket.socket, "connect", "open a network connection"),
    (socket.socket, "connect_ex", "open a network connection"),
    (socket.socket, "bind", "listen on a socket"),
    (time, "sleep", "sleep"),
)


@pytest.fixture(autouse=True)
def unit_tier_guard(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for owner, name, what in GUARDED:
        monkeypatch.setattr(owner, name, _refusal(what))
    yield
