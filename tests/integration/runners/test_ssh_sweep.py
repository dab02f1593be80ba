"""A whole sweep through the `ssh` runner (CLI -> Ray -> SshRunner -> real sshd -> agent -> engine -> SQL),
including a dropped connection mid-job that is retried on the pool's other host."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from db import reads
from db.session import make_engine, migrate, open_session
from tests.conftest import ROOT, SIMULATED_RECIPE, deep_update, processes_of_runs
from tests.integration.runners.conftest import Sshd

pytestmark = [pytest.mark.timeout(240)]


def write_inventory(sshd: Sshd, tmp_path: Path, names: list[str]) -> Path:
    targets = [
        {
            "kind": "ssh", "name": name, "hardware": "h100",
            "ssh": sshd.access().model_dump(mode="json"),
            "install": sshd.install(tmp_path / f"workdir-{name}").model_dump(mode="json"),
        }
        for name in names
    ]  # fmt: skip
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump({"targets": targets}, sort_keys=False))
    return path


def jobs_and_points(sweep: str) -> tuple[list[tuple[int, str, str | None, bool | None, str | None]], list[str]]:
    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        row = reads.sweep_by_name(session, sweep)
        if row is None:
            return [], []
        jobs = [
            (j.attempt, j.status, j.host, j.retryable, j.error_message) for j in reads.jobs_of_sweep(session, row.id)
        ]
        points = [view.point_key for view in reads.list_results(session, sweep=sweep)]
    return jobs, points


def test_dropped_connection_is_retried_on_the_other_host(sshd: Sshd, tmp_path: Path) -> None:
    inventory = write_inventory(sshd, tmp_path, ["gpu-a", "gpu-b"])
    # Slow Points (32 tokens at 30 ms, ~1 s a request) so the connection surely drops mid-measurement.
    recipe = deep_update(
        SIMULATED_RECIPE,
        {
            "name": "ssh-sweep", "hardware": "h100", "runner": {"kind": "ssh"},
            "engine": {"simulated": {"itl_ms": 30}}, "workload": {"concurrency": [1, 2]},
        },
    )  # fmt: skip
    recipe_path = tmp_path / "ssh-sweep.yaml"
    recipe_path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    before = set(sshd.session_pids())
    process = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "run", str(recipe_path), "--sweep", "ssh-sweep",
         "--inventory", str(inventory), "--retry-backoff", "0.5"],
        cwd=ROOT, env={**os.environ, "COLUMNS": "200"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            jobs, _ = jobs_and_points("ssh-sweep")
            if jobs and jobs[0][1] == "measuring":
                break
            time.sleep(0.3)
        else:
            pytest.fail(f"the job never started measuring: {jobs_and_points('ssh-sweep')}")
        first_host = jobs[0][2] or ""
        time.sleep(1.0)
        sessions = set(sshd.session_pids()) - before
        assert sessions, "no sshd session serving the job was found"
        for pid in sessions:
            os.kill(pid, signal.SIGKILL)
        stdout, stderr = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stdout + stderr
    jobs, points = jobs_and_points("ssh-sweep")
    assert [(attempt, status, retryable) for attempt, status, _, retryable, _ in jobs] == [
        (1, "failed", True),
        (2, "succeeded", None),
    ]
    assert "dropped" in (jobs[0][4] or "")
    # The retry went to the pool's other host; both Points are recorded exactly once.
    hosts = {first_host.split()[0], (jobs[1][2] or "").split()[0]}
    assert hosts == {"gpu-a", "gpu-b"}, jobs
    assert len(points) == 2 and len(set(points)) == 2
    deadline = time.monotonic() + 20
    while processes_of_runs("ssh-sweep-") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_of_runs("ssh-sweep-") == []
