"""A scheduled sweep runs as a child process of `infersweep schedule`: its exit code comes back, and Ctrl-C is
forwarded to it and waited for. Moved from the unit tier: it starts processes."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from orchestrator.schedule import SweepInterrupted, launch_subprocess


def test_launch_forwards_ctrl_c_to_the_sweep_and_waits_for_it(tmp_path: Path) -> None:
    assert launch_subprocess([sys.executable, "-c", "raise SystemExit(3)"]) == 3

    ready = tmp_path / "ready"
    child = (
        "import pathlib, signal, sys, time\n"
        "signal.signal(signal.SIGINT, lambda *_: sys.exit(42))\n"
        f"pathlib.Path({str(ready)!r}).touch()\n"
        "time.sleep(30)\n"
        "sys.exit(1)\n"
    )

    def press_ctrl_c_when_child_is_ready() -> None:
        deadline = time.monotonic() + 20
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=press_ctrl_c_when_child_is_ready, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(SweepInterrupted) as caught:
        launch_subprocess([sys.executable, "-c", child])
    assert caught.value.exit_code == 42  # the child got exactly the forwarded SIGINT and exited by itself
    assert time.monotonic() - started < 20
