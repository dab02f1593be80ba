"""Real services more than one integration folder uses: a Docker daemon (runner containers, the hub image)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.services import ensure_package

DOCKERD = Path("/usr/sbin/dockerd")


def _docker_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    completed = subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False)
    return completed.returncode == 0


@pytest.fixture(scope="session")
def docker_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A Docker daemon that answers: the one running, else one started here and stopped at the end."""
    ensure_package("docker.io", DOCKERD, "the container tests")
    daemon = None
    if not _docker_answers():
        directory = tmp_path_factory.mktemp("dockerd")
        with open(directory / "dockerd.log", "wb") as log:
            daemon = subprocess.Popen([str(DOCKERD)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 30
        while not _docker_answers():
            if daemon.poll() is not None or time.monotonic() > deadline:
                daemon.kill()
                message = f"dockerd did not answer within 30 s:\n{(directory / 'dockerd.log').read_text()[-3000:]}"
                if os.environ.get("CI") == "true":
                    pytest.fail(message)
                pytest.skip(message)
            time.sleep(0.2)
    try:
        yield
    finally:
        if daemon is not None:
            daemon.terminate()  # ours: stop it, with whatever containers a failed test left
            try:
                daemon.wait(timeout=20)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
