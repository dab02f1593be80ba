"""Engines launched as containers (`engine.environment.kind: container`) by a container runtime CLI.

The runtime is a plugin registered by name (`docker`, `podman`: they share the argv used here). The
engine runs with host networking (the load generator and the health check reach it on 127.0.0.1:port
like a process engine), the model directory bind-mounted read-only at its host path (the adapters pass
host paths in the engine's argv), and the job's log directory as working directory (LaunchPlan.files).

A container outlives the `docker run` client that started it (the daemon owns it), so killing the
client's process group is not enough: every stop, reap and last-resort stop removes the container by
name. Containers carry labels with their run id, owner pid and owner host, so the next job on the host
reaps those of dead runs even if their pidfile is gone (another INFERSWEEP_HOME, a wiped data dir).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from recipes.errors import ConfigurationError, InfrastructureError
from recipes.hardware import load_hardware_registry
from recipes.registry import Registry
from recipes.schema import ContainerEnvironment
from runners.host.process import EngineProcess, _alive

RUN_LABEL = "infersweep.run"
OWNER_PID_LABEL = "infersweep.owner-pid"
OWNER_HOST_LABEL = "infersweep.owner-host"
# Short CLI calls (inspect, rm, ps) answer in well under a second on a healthy daemon.
CLI_TIMEOUT_S = 60.0
# Listing for the reaper runs before every job, container or not: a hung daemon must not stall them all long.
LIST_TIMEOUT_S = 15.0
# A pull of a multi-GB engine image over a slow link: generous, but not forever.
PULL_TIMEOUT_S = 3600.0

# Device flags by the hardware registry's vendor: what the engine needs to see its accelerators.
GPU_FLAGS: dict[str, tuple[str, ...]] = {
    "NVIDIA": ("--gpus", "all"),  # needs the NVIDIA container toolkit on the host
    "AMD": ("--device", "/dev/kfd", "--device", "/dev/dri"),
}


def container_name(run_id: str) -> str:
    """The container's name: runtimes accept only [a-zA-Z0-9][a-zA-Z0-9_.-]* there."""
    return "infersweep-" + re.sub(r"[^a-zA-Z0-9_.-]", "-", run_id)


def _missing(stderr: str) -> bool:
    """The runtime says the container does not exist (docker: "No such container", podman: "no container")."""
    return any(phrase in stderr.lower() for phrase in ("no such container", "no container with"))


def output_tail(completed: subprocess.CompletedProcess[str], lines: int = 10) -> str:
    """The last lines of a command's output and errors, for an error message."""
    return "\n".join((completed.stdout + completed.stderr).strip().splitlines()[-lines:])


@dataclass(frozen=True)
class ContainerLaunch:
    """One engine to start in a container, whatever the runtime (`ContainerRuntime.run_argv` renders it)."""

    image: str
    argv: list[str]  # what runs inside the image
    name: str  # the container's name: container_name(run id)
    run_id: str
    env_names: list[str]  # variables passed by name: their values stay in the client's environment
    mounts: list[tuple[str, bool]]  # host paths mounted at the same path, and whether writable
    workdir: str
    device_flags: tuple[str, ...]  # the runtime's accelerator flags (docker's --gpus), from the hardware vendor


@dataclass(frozen=True)
class ContainerRuntime:
    """A container runtime CLI with docker's argv (docker, podman)."""

    name: str

    def _cli(self, args: list[str], timeout_s: float = CLI_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                [self.name, *args], capture_output=True, text=True, timeout=timeout_s, check=False
            )  # fmt: skip
        except subprocess.TimeoutExpired as error:
            raise InfrastructureError(
                f"`{self.name} {' '.join(args)}` did not answer within {timeout_s:g} s (is its daemon healthy?)"
            ) from error

    def installed(self) -> bool:
        return shutil.which(self.name) is not None

    def check_ready(self) -> None:
        """Pre-flight: the CLI exists and its daemon answers."""
        if not self.installed():
            raise ConfigurationError(
                f"engine.environment.runtime: got {self.name!r}; no {self.name!r} executable on PATH on host "
                f"{socket.gethostname()!r} (install it there, or use a venv environment)"
            )
        completed = self._cli(["info", "--format", "{{.ServerVersion}}"])
        if completed.returncode != 0:
            raise InfrastructureError(
                f"engine.environment.runtime: {self.name!r} on host {socket.gethostname()!r} does not answer "
                f"(`{self.name} info` exited {completed.returncode}):\n{output_tail(completed)}"
            )

    def image_id(self, image: str) -> str | None:
        """The local image's id (a sha256 digest of its config), or None when the image is not present."""
        completed = self._cli(["image", "inspect", "--format", "{{.Id}}", image])
        return (completed.stdout.strip() or None) if completed.returncode == 0 else None

    def pull(self, image: str) -> None:
        completed = self._cli(["pull", image], timeout_s=PULL_TIMEOUT_S)
        if completed.returncode != 0:
            raise InfrastructureError(
                f"engine.environment.image: got {image!r}; it is not on host {socket.gethostname()!r} and "
                f"`{self.name} pull {image}` failed (exit {completed.returncode}):\n{output_tail(completed)}"
            )

    def run_argv(self, launch: ContainerLaunch) -> list[str]:
        """`run` in the foreground: the client's output is the engine's log, its exit code the engine's."""
        name, workdir = launch.name, launch.workdir
        command = [
            self.name, "run", "--rm",
            # An init as PID 1 forwards SIGTERM and reaps zombies; an engine as PID 1 ignores SIGTERM (no
            # default handlers for PID 1), so `stop` would always wait out its 10 s before SIGKILL.
            "--init",
            "--network", "host",
            "--name", name,
            "--label", f"{RUN_LABEL}={launch.run_id}",
            "--label", f"{OWNER_PID_LABEL}={os.getpid()}",
            "--label", f"{OWNER_HOST_LABEL}={socket.gethostname()}",
            "--workdir", workdir,
            *launch.device_flags,
        ]  # fmt: skip
        for key in launch.env_names:
            # `-e NAME` takes the value from the client's environment: values (tokens) stay out of `ps`.
            command += ["-e", key]
        for path, writable in launch.mounts:
            command += ["-v", f"{path}:{path}:{'rw' if writable else 'ro'}"]
        return [*command, launch.image, *launch.argv]

    def prepare(self, image: str, container: str, log: Callable[[str], None] = print) -> str:
        """Make the image ready to start `container` without a download (before the engine-start timer);
        return what the preflight records as the engine's image (here the local image id)."""
        return ensure_image(self, image, log)

    def slurm_problem(self, srun_help: str) -> str | None:
        """Why this runtime cannot start an engine as a Slurm job step on a cluster whose `srun --help` printed
        `srun_help`; None when it can. Docker and podman never do: their containers belong to a daemon."""
        return f"container runtime {self.name!r} does not launch engines as Slurm job steps"

    def stop_argv(self, name: str) -> list[str]:
        """What the pidfile reaper runs to stop the named container when its owner died (no group kill reaches
        a daemon's container)."""
        return [self.name, "rm", "-f", name]

    def state(self, name: str) -> int | None:
        """The container's exit code once it has stopped; None while it is created, starting or running, or once
        it is gone (--rm). A container the daemon has created but not started yet is not running either, with exit
        code 0: only the `exited`, `removing` (--rm) and `dead` states mean the engine ended (a loaded daemon made
        the old Running-flag check report "engine exited with code 0 before becoming healthy")."""
        completed = self._cli(["inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", name])
        status, _, code = completed.stdout.strip().partition(" ")
        stopped = status in ("exited", "dead", "removing", "stopped")  # podman says stopped where docker says exited
        if completed.returncode != 0 or not stopped or not code.lstrip("-").isdigit():
            return None
        return int(code)

    def remove(self, name: str) -> bool:
        """Kill and remove the named container; True once it is gone (also when it never existed)."""
        completed = self._cli(["rm", "-f", name])
        return completed.returncode == 0 or _missing(completed.stderr)

    def labelled(self) -> list[dict[str, str]]:
        """Containers this project started on the host (any state): name, run id, owner pid and host."""
        listed = self._cli(["ps", "-a", "--filter", f"label={RUN_LABEL}", "--format", "{{.ID}}"], LIST_TIMEOUT_S)
        ids = listed.stdout.split() if listed.returncode == 0 else []
        if not ids:
            return []
        fields = (RUN_LABEL, OWNER_PID_LABEL, OWNER_HOST_LABEL)
        template = "{{.Name}}" + "".join(f'\t{{{{index .Config.Labels "{label}"}}}}' for label in fields)
        inspected = self._cli(["inspect", "--format", template, *ids], LIST_TIMEOUT_S)
        found = []
        for line in inspected.stdout.splitlines():  # a container removed meanwhile is just missing here
            parts = line.split("\t")
            if len(parts) == 4:
                found.append(dict(zip(("name", "run_id", "owner_pid", "owner_host"), parts, strict=True)))
                found[-1]["name"] = found[-1]["name"].lstrip("/")  # docker prints "/name", podman "name"
        return found


CONTAINER_RUNTIMES: Registry[ContainerRuntime] = Registry("container runtime")


def register_runtime(runtime: ContainerRuntime) -> ContainerRuntime:
    return CONTAINER_RUNTIMES.register(runtime.name, runtime)


register_runtime(ContainerRuntime("docker"))
register_runtime(ContainerRuntime("podman"))


def container_runtime(name: str, field: str = "engine.environment.runtime") -> ContainerRuntime:
    """The runtime registered under `name`; `field` names where the name came from (recipe or inventory)."""
    if name not in CONTAINER_RUNTIMES:
        raise ConfigurationError(f"{field}: got {name!r}; expected one of {', '.join(sorted(CONTAINER_RUNTIMES))}")
    return CONTAINER_RUNTIMES[name]


def _pull_lock_path(runtime: ContainerRuntime, image: str) -> Path:
    # The image store is the daemon's, shared by every job and INFERSWEEP_HOME on the host: lock host-wide.
    digest = hashlib.sha256(f"{runtime.name}\0{image}".encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"infersweep-pull-{digest}.lock"


def ensure_image(runtime: ContainerRuntime, image: str, log: Callable[[str], None] = print) -> str:
    """Make sure `image` is present (pulling it once per host under a lock); return its image id."""
    present = runtime.image_id(image)
    if present is not None:
        return present
    lock_path = _pull_lock_path(runtime, image)
    descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)  # a second job waits for the first pull instead of repeating it
        present = runtime.image_id(image)  # pulled by whoever held the lock before us
        if present is None:
            log(f"pulling container image {image} with {runtime.name}")
            runtime.pull(image)
            present = runtime.image_id(image)
        if present is None:
            raise InfrastructureError(
                f"engine.environment.image: got {image!r}; `{runtime.name} pull` succeeded but "
                f"`{runtime.name} image inspect` does not find it"
            )
        return present
    finally:
        os.close(descriptor)  # closing releases the flock


def device_flags(hardware_key: str) -> tuple[str, ...]:
    hardware = load_hardware_registry().get(hardware_key)
    return GPU_FLAGS.get(hardware.vendor, ()) if hardware is not None else ()


def reap_orphaned_containers(log: Callable[[str], None] = print) -> list[str]:
    """Remove labelled containers of this host whose owner process is gone; return their run ids.

    The pidfile reaper (process.reap_orphaned_engines) removes the containers it knows about; this one
    catches containers whose pidfile is elsewhere or lost. Runtimes not installed here are skipped."""
    reaped = []
    host = socket.gethostname()
    for runtime in CONTAINER_RUNTIMES.values():
        if not runtime.installed():
            continue
        try:
            containers = runtime.labelled()
        except InfrastructureError as error:
            log(f"cannot list {runtime.name} containers to reap: {error}")
            continue
        for container in containers:
            owner = container["owner_pid"]
            if container["owner_host"] != host or not owner.isdigit() or _alive(int(owner)):
                continue  # another host's (a shared daemon) or a live run's
            log(f"reaping {runtime.name} container {container['name']} of dead run {container['run_id']}")
            if runtime.remove(container["name"]):
                reaped.append(container["run_id"])
    return reaped


class ContainerEngine(EngineProcess):
    """An engine in a container: EngineProcess's health, log and pidfile handling, with a container underneath.

    The tracked process is the foreground `run` client (its output is the engine log, its exit the
    engine's exit); stopping removes the container by name first, then the client's group."""

    def __init__(
        self,
        environment: ContainerEnvironment,
        argv: list[str],
        env: dict[str, str],
        port: int,
        log_path: Path,
        run_id: str,
        *,
        model_dir: Path | None,
        devices: tuple[str, ...] = (),
        health_path: str = "/health",
        ready_model: str | None = None,
        files: dict[str, str] | None = None,
        runtime: ContainerRuntime | None = None,
    ) -> None:
        super().__init__(
            argv, env, port, log_path, run_id, health_path, stop_grace_s=10.0, ready_model=ready_model, files=files
        )  # fmt: skip
        # A runner whose target launches containers its own way (slurm: pyxis) passes that runtime instead.
        self.runtime = runtime or container_runtime(environment.runtime)
        self.image = environment.image
        self.name = container_name(run_id)
        workdir = str(log_path.parent.resolve())
        mounts = [(workdir, True)]
        if model_dir is not None:
            mounts.append((str(model_dir.resolve()), False))
        mounts += [(path, False) for path in environment.mounts]
        env_names = sorted({*env, "INFERSWEEP_RUN_ID"})
        self.run_argv = self.runtime.run_argv(
            ContainerLaunch(self.image, argv, self.name, run_id, env_names, mounts, workdir, devices)
        )

    def _launch_argv(self) -> list[str]:
        # A container left by an earlier attempt of this run id would make `run --name` fail.
        self.runtime.remove(self.name)
        return self.run_argv

    def exited(self) -> int | None:
        code = super().exited()
        if code is not None or self.process is None:
            return code
        # The client outlives its engine by the daemon's teardown (--rm): ask the daemon, or a point that ends
        # right after the engine died would be measured as if it were alive.
        code = self.runtime.state(self.name)
        if code is None:
            return None
        try:
            return self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return code

    def _pidfile_extra(self) -> dict[str, object]:
        return {"container": self.name, "stop_argv": self.runtime.stop_argv(self.name)}

    def stop(self) -> None:
        removed = self.runtime.remove(self.name)
        super().stop()
        if not removed:
            # The daemon did not confirm: keep the pidfile (with its stop_argv) for the next run's reaper. Not
            # raised: stop runs on the way out of a job, where it would hide the error that ended the job.
            self._pidfile.write_text(self._pidfile_text())
            with open(self.log_path, "a", encoding="utf-8") as log:
                log.write(f"[infersweep] could not remove container {self.name}; the next job on this host retries\n")
