"""The unit tier's guard (tests/unit/conftest.py) refuses each way out of the process, naming what was tried."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time

import pytest

from tests.unit.conftest import UnitTierViolation


def test_starting_a_process_is_refused() -> None:
    with pytest.raises(UnitTierViolation, match="must not start a process"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)
    with pytest.raises(UnitTierViolation, match="must not start a process"):
        os.fork()


def test_asyncio_subprocesses_go_through_the_same_door() -> None:
    async def spawn() -> None:
        await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")

    with pytest.raises(UnitTierViolation, match="must not start a process"):
        asyncio.run(spawn())


def test_sockets_are_refused_both_ways() -> None:
    with socket.socket() as sock, pytest.raises(UnitTierViolation, match="must not open a network connection"):
        sock.connect(("127.0.0.1", 9))
    with socket.socket() as sock, pytest.raises(UnitTierViolation, match="must not listen on a socket"):
        sock.bind(("127.0.0.1", 0))


def test_sleeping_is_refused() -> None:
    with pytest.raises(UnitTierViolation, match="must not sleep"):
        time.sleep(0)
