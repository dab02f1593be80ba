"""Helpers the integration tests share for the real services they start: installing what they need."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

# Two test workers may each need a package at once (the system groups run side by side): apt-get update refuses a
# second update while one holds its lists' lock, so installs wait for each other here.
APT_LOCK = Path("/tmp/infersweep-tests-apt.lock")


@contextlib.contextmanager
def one_install_at_a_time() -> Iterator[None]:
    with APT_LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure_package(package: str, binary: Path, needed_for: str) -> None:
    """Install `package` with apt-get when `binary` is missing; fail under CI=true, else skip, if that cannot work."""
    if binary.exists():
        return
    with one_install_at_a_time():
        if not binary.exists():  # another worker installed it while this one waited
            _install(package, needed_for)


def _install(package: str, needed_for: str) -> None:
    commands = [
        ["apt-get", "update", "-qq"],
        ["apt-get", "-o", "DPkg::Lock::Timeout=300", "install", "-y", "-qq", package],
    ]
    for argv in commands:
        if shutil.which(argv[0]) is None:
            completed = None
            reason = f"{argv[0]} is not available to install {package}"
        else:
            env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            completed = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False, env=env)
            tail = "\n".join((completed.stdout + completed.stderr).strip().splitlines()[-10:])
            reason = f"{' '.join(argv)!r} exited with {completed.returncode}:\n{tail}"
        if completed is None or completed.returncode != 0:
            message = f"{package} is needed for {needed_for} and could not be installed: {reason}"
            if os.environ.get("CI") == "true":
                pytest.fail(message)
            pytest.skip(message)
