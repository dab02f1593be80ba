"""Container engines on Slurm through pyxis: the engine runs as a job step, `srun --container-image=...`.

Registered as the container runtime "pyxis" (runners.host.containers.CONTAINER_RUNTIMES). The slurm runner
asks for it when the target it placed a container recipe on declares `container_runtime: pyxis`; the
agent, running inside that Slurm job, then starts the engine as a second step of the job on its own
node:

    srun --overlap --jobid=$SLURM_JOB_ID --nodes=1 --ntasks=1 --nodelist=<node> --job-name=<container>
         --container-image=<image> --container-name=<container> --container-workdir=<log dir>
         --container-mounts=<path>:<path>[:ro],... --container-env=<NAMES> --no-container-mount-home -- <argv>

The srun client is the tracked process (its output is the engine log, its exit the engine's exit), as
`docker run` is for docker. `ContainerEngine` drives it unchanged: `prepare` imports the image before
the engine-start timer, `remove` cancels the engine's step by its name, `stop_argv` lets the pidfile
reaper do the same after the agent died. Nothing here was run against a real pyxis (see
runners/slurm/NOTES.md): only the argv and the "pyxis missing" path are tested.

Run as `python -m runners.host.pyxis cancel --job JOB NAME` it cancels the steps of JOB named NAME: the
`stop_argv` a pidfile keeps for the reaper.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

from recipes.errors import ConfigurationError, InfrastructureError
from runners.host.containers import (
    CLI_TIMEOUT_S,
    PULL_TIMEOUT_S,
    ContainerLaunch,
    ContainerRuntime,
    output_tail,
    register_runtime,
)
from runners.host.placement import job_step_argv

# The option pyxis adds to `srun --help` (a SPANK plugin's options are listed there): present means loaded.
PYXIS_OPTION = "--container-image"
# How the step shows in `squeue --steps`: jobid.stepid and the step name (--job-name of the srun).
STEP_FORMAT = "%i|%j"


def pyxis_image(image: str) -> str:
    """The recipe's image reference as pyxis/enroot take it: `[REGISTRY#]IMAGE[:TAG|@DIGEST]`.

    Docker writes the registry as the first path component (`nvcr.io/nvidia/pytorch:24.01`); enroot
    separates it with '#' instead (`nvcr.io#nvidia/pytorch:24.01`), or it would look the whole path up
    on Docker Hub. Docker's rule decides what is a registry: a first component with a '.' or ':', or
    `localhost`. Squashfs paths, explicit `docker://`-style URIs and references already in enroot's form
    are passed on unchanged."""
    if image.startswith(("/", "./")) or "://" in image or "#" in image:
        return image
    first, slash, rest = image.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        return f"{first}#{rest}"
    return image


def _allocation() -> tuple[str, str]:
    """The Slurm job and node this process runs in (the agent's step sets both)."""
    job, node = os.environ.get("SLURM_JOB_ID", ""), os.environ.get("SLURMD_NODENAME", "")
    if not job or not node:
        raise ConfigurationError(
            f"container runtime 'pyxis' launches the engine as a step of the agent's Slurm job, but the agent on host "
            f"{socket.gethostname()!r} runs outside one (SLURM_JOB_ID={job!r}, SLURMD_NODENAME={node!r}); "
            "only the slurm runner asks for pyxis"
        )
    return job, node


def _pyxis_path(path: str) -> str:
    # pyxis splits --container-mounts at ',' and each mount at ':': such a path cannot be said there.
    if "," in path or ":" in path:
        raise ConfigurationError(
            f"container mount: got {path!r}; pyxis (--container-mounts=SRC:DST[:FLAGS],...) cannot mount a path "
            "with ',' or ':' (move the model or workdir to a path without them)"
        )
    return path


def cancel_steps(job: str, name: str, timeout_s: float = CLI_TIMEOUT_S) -> bool:
    """scancel the steps of Slurm job `job` named `name`; True once none is left (also when none ran)."""
    try:
        listed = subprocess.run(
            ["squeue", "--steps", "--me", "-h", "-o", STEP_FORMAT],
            capture_output=True, text=True, timeout=timeout_s, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return False  # no answer from the controller: the caller keeps the pidfile and tries again
    if listed.returncode != 0:
        return False
    steps = []
    for line in listed.stdout.splitlines():
        step, _, step_name = line.strip().partition("|")
        if step.startswith(f"{job}.") and step_name == name:
            steps.append(step)
    if not steps:
        return True
    try:
        cancelled = subprocess.run(["scancel", *steps], capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    # scancel of a step that ended meanwhile says "already completed" and fails: gone is what was asked.
    return cancelled.returncode == 0 or "already completed" in cancelled.stderr.lower()


@dataclass(frozen=True)
class PyxisRuntime(ContainerRuntime):
    """pyxis (a Slurm SPANK plugin over enroot): no daemon and no CLI of its own, only srun's options."""

    name: str = "pyxis"

    def _cli(self, args: list[str], timeout_s: float = CLI_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        # The docker-style calls of the base class (inspect, pull, ps) have no pyxis equivalent: never run them.
        raise ConfigurationError(f"container runtime 'pyxis' has no `{self.name} {' '.join(args)}` (pyxis is srun)")

    def installed(self) -> bool:
        return shutil.which("srun") is not None

    def slurm_problem(self, srun_help: str) -> str | None:
        if PYXIS_OPTION in srun_help:
            return None
        return f"its srun has no {PYXIS_OPTION} option: the pyxis plugin is not installed (or not loaded) there"

    def check_ready(self) -> None:
        """Pre-flight on the engine's node: inside a Slurm job, and this node's srun has pyxis."""
        _job, node = _allocation()
        try:
            completed = subprocess.run(["srun", "--help"], capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise ConfigurationError(
                f"container runtime 'pyxis': `srun --help` failed on node {node!r}: {error}"
            ) from error
        problem = self.slurm_problem(completed.stdout + completed.stderr)
        if problem is not None:
            raise ConfigurationError(f"container runtime 'pyxis' on node {node!r}: {problem} (not retryable)")

    def _step_argv(self, job: str, node: str, name: str, image: str) -> list[str]:
        return [
            # Named after the container, so `remove` and the reaper find the step (scancel has no --name for steps).
            *job_step_argv(job, node, name),
            f"--container-image={pyxis_image(image)}",
            # Named: the container `prepare` imported is the one the engine step starts (import skipped).
            f"--container-name={name}",
        ]

    def prepare(self, image: str, container: str, log: Callable[[str], None] = print) -> str:
        """Import the image into the named container with a step that runs `true`: the download and unpack
        happen here, before the engine-start timer; the engine's step then reuses the container."""
        job, node = _allocation()
        argv = [*self._step_argv(job, node, container, image), "--no-container-mount-home", "--", "true"]
        log(f"importing container image {image} with pyxis on node {node}")
        try:
            completed = subprocess.run(argv, capture_output=True, text=True, timeout=PULL_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired as error:
            raise InfrastructureError(
                f"engine.environment.image: got {image!r}; pyxis did not import it on node {node!r} within "
                f"{PULL_TIMEOUT_S:g} s"
            ) from error
        if completed.returncode != 0:
            raise InfrastructureError(
                f"engine.environment.image: got {image!r} (pyxis {pyxis_image(image)!r}); importing it on node "
                f"{node!r} with `srun --container-image` failed (exit {completed.returncode}):\n"
                + output_tail(completed)
            )
        return pyxis_image(image)

    def run_argv(self, launch: ContainerLaunch) -> list[str]:
        """The engine's step. `device_flags` (docker's --gpus) are not srun's: enroot's hooks give the container
        the GPUs Slurm gave the step. Host networking is enroot's default (no network namespace)."""
        job, node = _allocation()
        command = [
            *self._step_argv(job, node, launch.name, launch.image),
            f"--container-workdir={_pyxis_path(launch.workdir)}",
        ]
        if launch.mounts:
            command.append(
                "--container-mounts="
                + ",".join(
                    f"{_pyxis_path(path)}:{path}" + ("" if writable else ":ro") for path, writable in launch.mounts
                )
            )
        if launch.env_names:
            # Names only: pyxis takes each value from srun's environment (the engine's env), so values stay out of
            # `ps`, and these win over the image's own ENV lines.
            command.append("--container-env=" + ",".join(launch.env_names))
        # The user's home stays out: a benchmark must not read ~/.cache or ~/.config of whoever submitted it.
        command.append("--no-container-mount-home")
        return [*command, "--", *launch.argv]

    def state(self, name: str) -> int | None:
        # The srun client exits with its step: its own exit code is the engine's, nothing else to ask.
        return None

    def remove(self, name: str) -> bool:
        job = os.environ.get("SLURM_JOB_ID", "")
        if not job:
            return True  # outside a Slurm job no step of ours can run: steps end with their job
        return cancel_steps(job, name)

    def stop_argv(self, name: str) -> list[str]:
        job, _node = _allocation()
        return [sys.executable, "-m", "runners.host.pyxis", "cancel", "--job", job, name]

    def labelled(self) -> list[dict[str, str]]:
        # Steps die with their job; within a live job the pidfile reaper finds an orphaned step by its run id.
        return []


PYXIS = register_runtime(PyxisRuntime())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runners.host.pyxis", description="Cancel an engine's pyxis step.")
    commands = parser.add_subparsers(dest="command", required=True)
    cancel = commands.add_parser("cancel", help="scancel the steps of a job that carry a name")
    cancel.add_argument("--job", required=True, help="Slurm job id.")
    cancel.add_argument("name", help="Step name (the engine's container name).")
    args = parser.parse_args(argv)
    return 0 if cancel_steps(args.job, args.name) else 1


if __name__ == "__main__":
    sys.exit(main())
