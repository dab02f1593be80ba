"""Container recipes on Slurm through pyxis: the engine step's srun argv, and what the slurm runner refuses.

No pyxis here (see runners/slurm/NOTES.md): a real pyxis launch is untested; the argv is checked exactly.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from recipes.errors import ConfigurationError
from recipes.schema import ContainerEnvironment, Recipe
from runners.fleet.inventory import RemoteInstall, SlurmTarget
from runners.host.containers import ContainerEngine, ContainerLaunch, container_runtime
from runners.host.pyxis import PYXIS, PyxisRuntime, pyxis_image
from runners.slurm import SlurmRunner
from runners.slurm.runner import container_problem
from tests.conftest import SIMULATED_RECIPE, deep_update

IMAGE = "nvcr.io/nvidia/vllm:25.09-py3"


@pytest.fixture
def allocation(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the agent's own step sees: the job and the node it runs on."""
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("SLURMD_NODENAME", "gpu-07")


def target(name: str = "cluster-a", **changes: object) -> SlurmTarget:
    return SlurmTarget(
        kind="slurm", name=name, hardware="cpu-local",
        install=RemoteInstall(python="/opt/py/bin/python", workdir="/lustre/infersweep"), **changes,
    )  # fmt: skip


def contained_recipe() -> Recipe:
    return Recipe.model_validate(
        deep_update(
            SIMULATED_RECIPE,
            {"runner": {"kind": "slurm"}, "engine": {"environment": {"kind": "container", "image": IMAGE}}},
        )
    )


def test_the_engine_step_argv(tmp_path: Path, allocation: None) -> None:
    environment = ContainerEnvironment(kind="container", image=IMAGE, mounts=["/datasets"])
    model = tmp_path / "model"
    engine = ContainerEngine(
        environment, ["python3", "-m", "vllm.entrypoints.openai.api_server"],
        {"HF_TOKEN": "secret-value", "VLLM_LOGGING_LEVEL": "DEBUG"}, 8000, tmp_path / "logs" / "engine.log",
        "job/1 a", model_dir=model, devices=("--gpus", "all"), runtime=container_runtime("pyxis"),
    )  # fmt: skip
    logs = str((tmp_path / "logs").resolve())
    assert engine.run_argv == [
        "srun", "--overlap", "--jobid=4242", "--nodes=1", "--ntasks=1", "--nodelist=gpu-07",
        "--job-name=infersweep-job-1-a",
        "--container-image=nvcr.io#nvidia/vllm:25.09-py3",  # enroot's registry separator
        "--container-name=infersweep-job-1-a",  # from the run id, like docker's --name
        f"--container-workdir={logs}",
        f"--container-mounts={logs}:{logs},{model.resolve()}:{model.resolve()}:ro,/datasets:/datasets:ro",
        "--container-env=HF_TOKEN,INFERSWEEP_RUN_ID,VLLM_LOGGING_LEVEL",  # names only; srun's env has the values
        "--no-container-mount-home",
        "--", "python3", "-m", "vllm.entrypoints.openai.api_server",
    ]  # fmt: skip
    assert "secret-value" not in " ".join(engine.run_argv)
    assert "--gpus" not in engine.run_argv  # docker's device flags mean nothing to srun
    # The reaper cancels the step by name when the agent died without stopping it.
    assert engine._pidfile_extra() == {
        "container": "infersweep-job-1-a",
        "stop_argv": [sys.executable, "-m", "runners.host.pyxis", "cancel", "--job", "4242", "infersweep-job-1-a"],
    }


def test_image_references_in_enroot_form() -> None:
    assert pyxis_image("vllm/vllm-openai:v0.11.0") == "vllm/vllm-openai:v0.11.0"  # Docker Hub: unchanged
    assert pyxis_image("ubuntu@sha256:abc") == "ubuntu@sha256:abc"
    assert pyxis_image("nvcr.io/nvidia/pytorch:24.01-py3") == "nvcr.io#nvidia/pytorch:24.01-py3"
    assert pyxis_image("registry:5000/team/engine:1") == "registry:5000#team/engine:1"
    assert pyxis_image("localhost/engine:1") == "localhost#engine:1"
    for unchanged in ("nvcr.io#nvidia/pytorch:24.01-py3", "/lustre/images/vllm.sqsh", "docker://ubuntu:24.04"):
        assert pyxis_image(unchanged) == unchanged


def test_pyxis_needs_the_agent_inside_a_slurm_job(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.delenv("SLURMD_NODENAME", raising=False)
    with pytest.raises(ConfigurationError, match=r"runs outside one \(SLURM_JOB_ID='', SLURMD_NODENAME=''\)"):
        PYXIS.run_argv(ContainerLaunch(IMAGE, ["true"], "n", "r", [], [], "/w", ()))
    assert PYXIS.remove("infersweep-r") is True  # outside a job no step of ours can be running


def test_mount_paths_pyxis_cannot_say_are_refused(allocation: None) -> None:
    with pytest.raises(ConfigurationError, match=r"container mount: got '/data/a,b'; pyxis .* cannot mount"):
        PYXIS.run_argv(ContainerLaunch(IMAGE, ["true"], "n", "r", [], [("/data/a,b", False)], "/w", ()))


def test_no_docker_style_cli_call_reaches_a_shell() -> None:
    with pytest.raises(ConfigurationError, match=r"container runtime 'pyxis' has no `pyxis image inspect"):
        PYXIS.image_id(IMAGE)


def test_srun_help_decides_whether_pyxis_is_there() -> None:
    assert PyxisRuntime().slurm_problem("  --container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH\n") is None
    assert PyxisRuntime().slurm_problem("Usage: srun [OPTIONS(0)...]\n") == (
        "its srun has no --container-image option: the pyxis plugin is not installed (or not loaded) there"
    )
    assert container_runtime("docker").slurm_problem("--container-image") == (
        "container runtime 'docker' does not launch engines as Slurm job steps"
    )


def test_target_field_is_strict() -> None:
    assert target(container_runtime="pyxis").container_runtime == "pyxis"
    with pytest.raises(ValueError, match=r"container_runtime\n  Input should be 'pyxis'"):
        target(container_runtime="enroot")


def test_limitations_name_the_targets_that_cannot_run_containers() -> None:
    recipe = contained_recipe()
    plain, flagged = target("plain"), target("flagged", container_runtime="pyxis", container_flags=["--x=1"])
    assert SlurmRunner.limitations(recipe, [plain, target("pyxis-ok", container_runtime="pyxis")]) == []
    assert SlurmRunner.limitations(recipe) == []  # targets unknown: the sweep's NoCapacity check speaks instead
    (problem,) = SlurmRunner.limitations(recipe, [plain, flagged])
    assert problem == (
        f"engine.environment.image: got {IMAGE!r}; the slurm runner launches container engines only as pyxis "
        "steps (srun --container-image), and no slurm target for hardware 'cpu-local' can: "
        "target 'plain': container_runtime is None (set container_runtime: pyxis on a target whose srun has the "
        "pyxis plugin); target 'flagged': container_flags ['--x=1'] run the agent itself in a container, from "
        "where it cannot start the engine's pyxis step (drop container_flags for container recipes)"
    )
    # A venv recipe runs on any target.
    venv = Recipe.model_validate(deep_update(SIMULATED_RECIPE, {"runner": {"kind": "slurm"}}))
    assert SlurmRunner.limitations(venv, [plain]) == []
    assert container_problem(target(container_runtime="pyxis")) is None
