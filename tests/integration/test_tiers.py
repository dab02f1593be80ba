"""The tiers hold under parallel workers: an integration module's tests share one worker (its module fixtures start
once), and so do all system tests (they share machine-wide services). Run as `make test` runs pytest, on two
modules, in a pytest of its own."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import ROOT

MODULE = "tests/integration/runners/engines/test_readiness.py"  # two tests, a module of their own


def test_a_modules_tests_share_one_worker_under_loadgroup() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider",
         "tests/unit/test_tier_guard.py", MODULE],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    workers = re.findall(rf"\[(gw\d)\] \[ *\d+%\] PASSED {re.escape(MODULE)}::\S+@{re.escape(MODULE)}", done.stdout)
    # pytest-xdist's loadgroup names the group in each node id; on pytest 9.2 it silently stopped (issue 1386).
    assert len(workers) == 2 and len(set(workers)) == 1, done.stdout[-3000:]
