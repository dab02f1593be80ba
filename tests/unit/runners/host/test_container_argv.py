"""The container runtime's `run` argv: what every engine container is started with (no daemon needed)."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from recipes.errors import ConfigurationError
from recipes.schema import ContainerEnvironment
from runners.host.containers import ContainerEngine, ContainerRuntime, container_name, container_runtime, device_flags


def test_run_argv_for_an_nvidia_host(tmp_path: Path) -> None:
    environment = ContainerEnvironment(kind="container", image="vllm/vllm-openai:v0.11.0", mounts=["/data"])
    model = tmp_path / "model"
    engine = ContainerEngine(
        environment, ["python3", "-m", "vllm.entrypoints.openai.api_server"], {"HF_TOKEN": "secret"}, 8000,
        tmp_path / "logs" / "engine.log", "job/1 a", model_dir=model, devices=device_flags("h100"),
    )  # fmt: skip
    logs = str((tmp_path / "logs").resolve())
    assert engine.run_argv == [
        "docker", "run", "--rm", "--init", "--network", "host",
        "--name", "infersweep-job-1-a",
        "--label", "infersweep.run=job/1 a",
        "--label", f"infersweep.owner-pid={os.getpid()}",
        "--label", f"infersweep.owner-host={socket.gethostname()}",
        "--workdir", logs,
        "--gpus", "all",
        "-e", "HF_TOKEN", "-e", "INFERSWEEP_RUN_ID",  # values travel in the client's environment, not argv
        "-v", f"{logs}:{logs}:rw", "-v", f"{model.resolve()}:{model.resolve()}:ro", "-v", "/data:/data:ro",
        "vllm/vllm-openai:v0.11.0", "python3", "-m", "vllm.entrypoints.openai.api_server",
    ]  # fmt: skip
    assert "secret" not in " ".join(engine.run_argv)


def test_device_flags_follow_the_hardware_vendor() -> None:
    assert device_flags("b200") == ("--gpus", "all")
    assert device_flags("mi300x") == ("--device", "/dev/kfd", "--device", "/dev/dri")
    assert device_flags("cpu-local") == ()
    assert device_flags("tpu-v7") == ()


def test_runtime_names_and_mounts_are_checked() -> None:
    assert container_runtime("podman").name == "podman"
    with pytest.raises(
        ConfigurationError, match=r"engine.environment.runtime: got 'lxc'; expected one of docker, podman"
    ):
        container_runtime("lxc")
    with pytest.raises(ValueError, match=r"got 'data'; expected an absolute host path"):
        ContainerEnvironment(kind="container", image="i:1", mounts=["data"])
    assert container_name("a:b@c") == "infersweep-a-b-c"
    # Fields added later are dumped only when set: existing container recipes keep their fingerprints.
    assert ContainerEnvironment(kind="container", image="i:1").model_dump() == {"kind": "container", "image": "i:1"}


@pytest.mark.parametrize(
    ("inspected", "code"),
    [("created 0", None), ("running 0", None), ("restarting 0", None), ("exited 0", 0), ("exited 137", 137), ("removing 3", 3),
     ("dead 1", 1), ("", None)],
)  # fmt: skip
def test_a_container_has_exited_only_in_the_exited_or_dead_state(
    inspected: str, code: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Created but not started yet (a loaded daemon), a container is not running and reports exit code 0: that is
    # no exit of the engine.
    answer = subprocess.CompletedProcess(["docker"], 0 if inspected else 1, stdout=inspected + "\n", stderr="")
    monkeypatch.setattr(ContainerRuntime, "_cli", lambda self, args, timeout_s=0: answer)
    assert container_runtime("docker").state("engine") == code
