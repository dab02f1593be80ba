"""The tpu-vm runner: its limitations, and a Point measured over SSH with the simulated engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from recipes.loader import parse_recipe
from runners.fleet.inventory import SshTarget, TpuProvisioning, TpuVmTarget
from runners.registry import runner_class
from runners.tpu_vm.runner import TpuVmRunner
from tests.conftest import SIMULATED_RECIPE, deep_update
from tests.integration.runners.conftest import Sshd
from tests.integration.runners.test_ssh_runner import make_job, wait_gone

VLLM = {
    "engine": {"kind": "vllm", "environment": {"kind": "venv", "name": "vllm-cpu"}, "simulated": None},
    "runner": {"kind": "tpu-vm"},
}

pytestmark = [pytest.mark.timeout(60)]


def test_tpu_vm_limitations(tmp_path: Path) -> None:
    vllm = parse_recipe(deep_update(SIMULATED_RECIPE, VLLM), str(tmp_path / "r.yaml")).recipe
    assert runner_class("tpu-vm") is TpuVmRunner
    assert TpuVmRunner.limitations(vllm) == [
        "engine.kind: got 'vllm'; a TPU VM runs only simulated or vllm-tpu (the other engines need GPUs)"
    ]
    simulated = parse_recipe(deep_update(SIMULATED_RECIPE, {"runner": {"kind": "tpu-vm"}}), "r.yaml").recipe
    assert TpuVmRunner.limitations(simulated) == []
    container = deep_update(SIMULATED_RECIPE, VLLM)
    container["engine"]["environment"] = {"kind": "container", "image": "vllm/vllm-tpu:v1"}  # type: ignore[index]
    # Containers run through the agent's local pipeline (runners/host/containers.py): only the engine kind is refused.
    assert TpuVmRunner.limitations(parse_recipe(container, "r.yaml").recipe) == [
        "engine.kind: got 'vllm'; a TPU VM runs only simulated or vllm-tpu (the other engines need GPUs)"
    ]


def test_tpu_vm_runner_measures_a_point(sshd: Sshd, tmp_path: Path) -> None:
    target = TpuVmTarget(
        kind="tpu-vm", name="tpu-loopback", hardware="cpu-local", ssh=sshd.access(),
        install=sshd.install(tmp_path / "remote-workdir"),
        provisioning=TpuProvisioning(via="gke", project="bench", zone="us-central1-c", resource="tpu7-pool"),
    )  # fmt: skip
    plain = SshTarget(
        kind="ssh", name="not-a-tpu", hardware="cpu-local", ssh=sshd.access(port=1), install=target.install
    )
    job = make_job(tmp_path, [plain, target], runner="tpu-vm")
    events = list(TpuVmRunner().run_job(job))
    kinds = [event.kind for event in events]
    assert kinds[-1] == "job_finished", [event.message for event in events if event.kind == "job_failed"]
    assert events[0].message == (
        f"tpu-loopback (root@127.0.0.1:{sshd.port}, hardware cpu-local, via gke in us-central1-c, "
        "project bench, resource tpu7-pool)"
    )
    outcome = next(event.outcome for event in events if event.kind == "point_finished")
    assert outcome is not None and outcome.metrics.validity.valid
    assert wait_gone(job.job_id, tmp_path / "remote-workdir", 5) == []
