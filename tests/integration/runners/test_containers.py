"""Container engines against a real Docker daemon: the simulated engine runs in a registry-free test image.

The image holds only a skeleton root; the host's /usr, the base interpreter, the venv and the project are
bind-mounted read-only at their own paths (conftest.docker_host), so the project's engine runs inside it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from orchestrator.plan import expand_points
from recipes.loader import parse_recipe
from runners.fleet.inventory import SshTarget
from runners.host.containers import RUN_LABEL, ContainerRuntime, _pull_lock_path, container_name, ensure_image
from runners.host.process import running_engines
from runners.job import JobEvent, JobSpec
from runners.local.runner import LocalRunner
from runners.ssh.runner import SshRunner
from tests.conftest import SIMULATED_RECIPE, deep_update, processes_of_runs
from tests.integration.runners.conftest import PROJECT, DockerHost, Sshd

pytestmark = [pytest.mark.timeout(90)]

DOCKER = ContainerRuntime("docker")


def make_job(
    tmp_path: Path, docker_host: DockerHost, changes: dict | None = None, targets: list | None = None
) -> JobSpec:
    container = {"environment": docker_host.environment(), "env": {"PYTHONPATH": str(PROJECT)}}
    data = deep_update(SIMULATED_RECIPE, {"engine": container, "workload": {"concurrency": [1]}})
    loaded = parse_recipe(deep_update(data, changes or {}), str(tmp_path / "recipe.yaml"))
    job_id = f"container-test-{uuid.uuid4().hex[:10]}"
    return JobSpec(
        job_id=job_id, sweep="container-test", recipe=loaded.recipe, points=expand_points(loaded)[:1],
        log_dir=str(tmp_path / "logs" / job_id), targets=targets or [],
    )  # fmt: skip


def containers_of(run_id: str) -> list[str]:
    """Names of the daemon's containers (any state) labelled with this run id."""
    listed = subprocess.run(
        ["docker", "ps", "-a", "--filter", f"label={RUN_LABEL}={run_id}", "--format", "{{.Names}}"],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    return listed.stdout.split()


def failure(events: list[JobEvent]) -> list[str | None]:
    return [event.message for event in events if event.kind == "job_failed"]


def test_local_runner_measures_a_point_in_a_container(docker_host: DockerHost, tmp_path: Path) -> None:
    job = make_job(tmp_path, docker_host)
    events = list(LocalRunner().run_job(job))
    assert events[-1].kind == "job_finished", failure(events)
    outcome = next(event.outcome for event in events if event.kind == "point_finished")
    assert outcome is not None and outcome.origin == "simulated"
    assert outcome.metrics.validity.valid, outcome.metrics.validity.reasons
    assert outcome.metrics.completed == 10
    preflight = outcome.metrics.host.preflight if outcome.metrics.host else None
    assert preflight is not None and preflight.engine_image == DOCKER.image_id(docker_host.image)
    assert preflight.engine_image.startswith("sha256:")
    # Gone: the container, its pidfile, and every process carrying the run id (the client, the engine).
    assert containers_of(job.job_id) == []
    assert [entry for entry in running_engines() if entry["run_id"] == job.job_id] == []
    assert processes_of_runs(job.job_id) == []


def test_container_is_removed_after_the_engine_fails(docker_host: DockerHost, tmp_path: Path) -> None:
    crash = {"engine": {"simulated": {"fault": "exit-after-requests", "fault_after": 3}}}
    job = make_job(tmp_path, docker_host, crash)
    events = list(LocalRunner().run_job(job))
    assert events[-1].kind == "job_failed"
    error = events[-1].error
    assert error is not None and error.kind == "InfrastructureError" and error.retryable
    assert "engine exited with code" in error.message
    assert containers_of(job.job_id) == []
    assert processes_of_runs(job.job_id) == []


def _orphan(docker_host: DockerHost, tmp_path: Path, run_id: str) -> None:
    """Start a container engine from a process that then dies without stopping it (a killed Ray worker)."""
    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from recipes.schema import ContainerEnvironment\n"
        "from runners.host.containers import ContainerEngine\n"
        f"environment = ContainerEnvironment.model_validate({docker_host.environment()!r})\n"
        f"engine = ContainerEngine(environment, [{docker_host.python!r}, '-c', 'import time; time.sleep(300)'], {{}},"
        f" 1, Path({str(tmp_path / run_id / 'engine.log')!r}), {run_id!r}, model_dir=None)\n"
        "engine.port = 0\n"  # nothing listens: only the container matters here
        "engine.start()\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=PROJECT, check=True, timeout=60)
    deadline = time.monotonic() + 20
    while not containers_of(run_id) and time.monotonic() < deadline:
        time.sleep(0.2)  # the client asks the daemon to create it after the owner is gone
    assert containers_of(run_id) == [container_name(run_id)]


def test_orphaned_containers_are_reaped_before_the_next_job(docker_host: DockerHost, tmp_path: Path) -> None:
    with_pidfile, label_only = f"orphan-a-{uuid.uuid4().hex[:8]}", f"orphan-b-{uuid.uuid4().hex[:8]}"
    _orphan(docker_host, tmp_path, with_pidfile)
    _orphan(docker_host, tmp_path, label_only)
    # A lost pidfile (another INFERSWEEP_HOME, a wiped data dir): only the container's labels are left.
    pidfile = Path(os.environ["INFERSWEEP_HOME"]) / "engines-running" / f"{label_only}.json"
    pidfile.unlink()
    job = make_job(tmp_path, docker_host)
    events = list(LocalRunner().run_job(job))
    assert events[-1].kind == "job_finished", failure(events)
    assert containers_of(with_pidfile) == [] and containers_of(label_only) == []
    outcome = next(event.outcome for event in events if event.kind == "point_finished")
    assert outcome is not None and outcome.metrics.host is not None and outcome.metrics.host.preflight is not None
    # At least the orphan with a pidfile is this job's to reap; the label-only one may be reaped first by another
    # worker's job on the same Docker daemon (containers are the daemon's, not this test's): either way it is gone.
    assert outcome.metrics.host.preflight.leftover_engines >= 1
    assert [entry for entry in running_engines() if entry["run_id"] in (with_pidfile, label_only)] == []


def test_missing_image_that_cannot_be_pulled_is_a_retryable_error(docker_host: DockerHost, tmp_path: Path) -> None:
    absent = "infersweep-test/absent:1"
    job = make_job(tmp_path, docker_host, {"engine": {"environment": {"image": absent}}})
    started = time.monotonic()
    events = list(LocalRunner().run_job(job))
    assert time.monotonic() - started < 60
    assert [event.kind for event in events] == ["engine_preparing", "job_failed"]  # before any engine launch
    error = events[-1].error
    assert error is not None and error.kind == "InfrastructureError" and error.retryable
    assert error.message.startswith(f"engine.environment.image: got '{absent}'; it is not on host ")
    assert f"`docker pull {absent}` failed (exit 1)" in error.message
    # Present images are found without a pull, and the lock file is the host's, not the session's.
    assert ensure_image(DOCKER, docker_host.image, log=pytest.fail) == DOCKER.image_id(docker_host.image)


def test_ssh_runner_runs_a_container_engine(docker_host: DockerHost, sshd: Sshd, tmp_path: Path) -> None:
    target = SshTarget(
        kind="ssh", name="loopback", hardware="cpu-local", ssh=sshd.access(),
        install=sshd.install(tmp_path / "remote-workdir"),
    )  # fmt: skip
    job = make_job(tmp_path, docker_host, {"runner": {"kind": "ssh"}}, targets=[target])
    assert SshRunner.limitations(job.recipe) == []
    events = list(SshRunner().run_job(job))
    assert events[-1].kind == "job_finished", failure(events)
    outcome = next(event.outcome for event in events if event.kind == "point_finished")
    assert outcome is not None and outcome.metrics.validity.valid
    assert outcome.metrics.host is not None and outcome.metrics.host.preflight is not None
    assert outcome.metrics.host.preflight.engine_image == DOCKER.image_id(docker_host.image)
    assert containers_of(job.job_id) == []


def test_parallel_jobs_pull_a_missing_image_once(docker_host: DockerHost) -> None:
    """Two jobs that miss the same image: one pulls under the host's lock, the other waits and finds it."""
    image = f"infersweep-test/pulled-{uuid.uuid4().hex[:8]}:1"
    pulls: list[str] = []

    class ImportingRuntime(ContainerRuntime):
        # The real daemon; only the registry is replaced, by importing the skeleton under the pulled name.
        def pull(self, name: str) -> None:
            pulls.append(name)
            time.sleep(0.5)  # a slow pull: the other job must be waiting on the lock by now
            exported = subprocess.run(["docker", "save", docker_host.image], capture_output=True, check=True)
            subprocess.run(["docker", "load"], input=exported.stdout, capture_output=True, check=True)
            subprocess.run(["docker", "tag", docker_host.image, name], capture_output=True, check=True)

    runtime = ImportingRuntime("docker")
    with ThreadPoolExecutor(2) as pool:
        ids = list(pool.map(lambda _: ensure_image(runtime, image, log=lambda _line: None), range(2)))
    try:
        assert pulls == [image]
        assert ids[0] == ids[1] == DOCKER.image_id(image)
    finally:
        subprocess.run(["docker", "rmi", image], capture_output=True, check=False)
        _pull_lock_path(runtime, image).unlink(missing_ok=True)  # one per random name: do not pile them up


def test_a_runtime_missing_on_the_host_fails_the_preflight(docker_host: DockerHost, tmp_path: Path) -> None:
    if shutil.which("podman") is not None:
        pytest.skip("podman is installed here: nothing is missing")
    job = make_job(tmp_path, docker_host, {"engine": {"environment": {"runtime": "podman"}}})
    events = list(LocalRunner().run_job(job))
    error = events[-1].error
    assert error is not None and error.kind == "ConfigurationError" and not error.retryable
    assert error.message == (
        f"engine.environment.runtime: got 'podman'; no 'podman' executable on PATH on host {socket.gethostname()!r} "
        "(install it there, or use a venv environment)"
    )
