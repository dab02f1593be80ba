"""The slim install for engine hosts (`packaging/infersweep-client`): a fresh venv with only it runs the
remote agent end to end (simulated engine, one Point) and has none of the orchestrator's dependencies."""

from __future__ import annotations

import os
import subprocess
import uuid
import venv
from pathlib import Path

import pytest

from orchestrator.plan import expand_points
from recipes.loader import parse_recipe
from runners.job import JobSpec
from runners.protocol import decode_event
from tests.conftest import ROOT, SIMULATED_RECIPE, deep_update

pytestmark = [pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def client_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("client-venv")
    venv.EnvBuilder(with_pip=True).create(directory)
    python = directory / "bin" / "python"
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", str(ROOT / "packaging" / "infersweep-client")],
        capture_output=True, text=True, timeout=540, check=False,
    )  # fmt: skip
    if installed.returncode != 0:
        message = f"could not install the client package (no package index?):\n{installed.stderr[-2000:]}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return python


def test_client_install_has_none_of_the_orchestrator_dependencies(client_python: Path, tmp_path: Path) -> None:
    for module in ("ray", "sqlmodel", "streamlit", "boto3", "paramiko", "orchestrator", "db"):
        probe = subprocess.run(
            [str(client_python), "-c", f"import {module}"], capture_output=True, text=True, cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": ""},
        )  # fmt: skip
        assert probe.returncode != 0, f"{module} should not be importable from the slim install"


def test_remote_agent_runs_a_job_from_the_slim_install(client_python: Path, tmp_path: Path) -> None:
    data = deep_update(SIMULATED_RECIPE, {"name": "client-install", "workload": {"concurrency": [2]}})
    loaded = parse_recipe(data, str(tmp_path / "recipe.yaml"))
    job_id = f"client-install-{uuid.uuid4().hex[:8]}"
    spec = JobSpec(
        job_id=job_id, sweep="client", recipe=loaded.recipe, points=expand_points(loaded),
        log_dir=str(tmp_path / "logs"),
    )  # fmt: skip
    # Run from a directory without the source tree, so only the installed package can be imported.
    completed = subprocess.run(
        [str(client_python), "-m", "runners.agent", "--spec", "-"],
        input=spec.model_dump_json() + "\n", capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path,
        env={**os.environ, "INFERSWEEP_HOME": str(tmp_path / "home"), "PYTHONPATH": ""},
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    events = [event for line in completed.stdout.splitlines() if (event := decode_event(line)) is not None]
    kinds = [event.kind for event in events]
    assert kinds[0] == "job_placed" and kinds[-1] == "job_finished", kinds
    (finished,) = [event for event in events if event.kind == "point_finished"]
    assert finished.outcome is not None and finished.outcome.metrics.validity.valid
    assert finished.outcome.origin == "simulated" and finished.outcome.metrics.completed == 20
