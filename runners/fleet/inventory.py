"""The fleet inventory: machines reached over SSH (plain hosts, TPU VMs) and Slurm clusters.

Recipes say *what* to run (`hardware: b200`, `runner.kind: ssh`); the inventory says *where* this
fleet has that hardware. It is a YAML file kept outside the repository's recipes (`--inventory` or
`INFERSWEEP_INVENTORY`), and it never holds a secret: keys come from the SSH agent or from a file
named by an environment variable (`identity_file_env`).

    targets:
      - kind: ssh
        name: b200-a
        hardware: b200
        ssh: {address: 10.0.0.5, user: bench, known_hosts: ~/.ssh/known_hosts}
        install: {python: /opt/infersweep/.venv/bin/python, workdir: /srv/infersweep}
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator

from recipes.errors import ConfigurationError, RecipeError
from recipes.hardware import load_hardware_registry
from recipes.strict import Strict
from recipes.yamlio import load_validated

INVENTORY_ENV = "INFERSWEEP_INVENTORY"

# How a Slurm cluster launches a container engine as a job step (a plugin registered under this name in
# runners.host.containers.CONTAINER_RUNTIMES; runners/host/pyxis.py).
SlurmContainerRuntime = Literal["pyxis"]


class SshAccess(Strict):
    """How to open an SSH session; host keys are always verified against `known_hosts`."""

    address: str = Field(description="Host name or IP address.")
    port: int = Field(22, ge=1, le=65535, description="SSH port.")
    user: str = Field(description="Login user.")
    known_hosts: str = Field(
        "~/.ssh/known_hosts",
        description="known_hosts file holding this host's key; unknown or changed keys are refused.",
    )
    identity_file_env: str | None = Field(
        None,
        description="Environment variable naming the private key file (the key itself never sits in the inventory); "
        "without it the SSH agent and default keys are used.",
    )
    connect_timeout_s: float = Field(10.0, gt=0, description="TCP and SSH handshake deadline.")

    def identity_file(self) -> str | None:
        if self.identity_file_env is None:
            return None
        value = os.environ.get(self.identity_file_env)
        if not value:
            raise ConfigurationError(
                f"inventory: identity_file_env names {self.identity_file_env!r}, which is not set in the environment"
            )
        return os.path.expanduser(value)


class RemoteInstall(Strict):
    """Where the project (`pip install infersweep[client]` or a checkout) lives on the remote machine."""

    python: str = Field(description="Python interpreter on the remote machine that can import `runners`.")
    workdir: str = Field(
        description="Absolute remote directory for job specs, logs and pidfiles (the agent's INFERSWEEP_HOME)."
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Non-secret environment for the remote agent (e.g. INFERSWEEP_CACHE)."
    )


class _SshReachable(Strict):
    """A single machine reached over SSH, running one job at a time."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", description="Unique target name (one job at a time).")
    hardware: str = Field(description="Hardware registry key of this machine's accelerators (its pool).")
    labels: dict[str, str] = Field(default_factory=dict, description="Free-form labels shown with results.")
    ssh: SshAccess = Field(description="SSH access.")
    install: RemoteInstall = Field(description="The project's install on the machine.")


class SshTarget(_SshReachable):
    kind: Literal["ssh"] = Field(description="A machine reached over SSH; its engine runs as a process or container.")


class TpuProvisioning(Strict):
    via: Literal["gke", "compute-engine"] = Field(
        description="How the TPU v7 VM was created (the legacy Cloud TPU API does not offer v7)."
    )
    project: str = Field(description="Google Cloud project.")
    zone: str = Field(description="Zone, e.g. us-central1-c.")
    resource: str = Field(description="Node pool (GKE) or instance/queued-resource name (Compute Engine).")


class TpuVmTarget(_SshReachable):
    kind: Literal["tpu-vm"] = Field(description="A TPU VM reached over SSH; runs the vLLM-TPU / JAX engine.")
    provisioning: TpuProvisioning = Field(description="How the VM was provisioned, recorded with results.")


# sbatch options the slurm runner sets itself (runners/slurm/runner.py `_sbatch_argv`), long and short forms.
RUNNER_SBATCH_OPTIONS = (
    "--job-name", "-J", "--comment", "--nodes", "-N", "--output", "-o", "--chdir", "-D", "--time", "-t",
    "--parsable", "--partition", "-p", "--account", "-A",
)  # fmt: skip


class SlurmTarget(Strict):
    kind: Literal["slurm"] = Field(description="A Slurm cluster: jobs go through sbatch on its login node.")
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", description="Unique target name.")
    hardware: str = Field(description="Hardware registry key of the partition's nodes.")
    labels: dict[str, str] = Field(default_factory=dict, description="Free-form labels shown with results.")
    login: SshAccess | None = Field(
        None, description="SSH access to the login node; absent when the orchestrator host is itself a login node."
    )
    install: RemoteInstall = Field(description="The project's install on the cluster's shared filesystem.")
    partition: str | None = Field(None, description="Partition (-p); the cluster default when absent.")
    account: str | None = Field(None, description="Account (-A), when the cluster needs one.")
    slurm_conf: str | None = Field(None, description="SLURM_CONF for every Slurm command (non-default clusters).")
    concurrent_jobs: int = Field(1, ge=1, description="Jobs this cluster may run at once for the orchestrator.")
    container_flags: list[str] = Field(
        default_factory=list, description="Extra srun flags for pyxis/enroot, e.g. ['--container-mounts=/lustre']."
    )
    container_runtime: SlurmContainerRuntime | None = Field(
        None,
        description="How this cluster runs recipes whose engine.environment is a container: 'pyxis' launches the "
        "engine as a job step with `srun --container-image` (needs the pyxis SPANK plugin and enroot on the "
        "cluster). Absent: container recipes are not placed on this target.",
    )
    sbatch_flags: list[str] = Field(
        default_factory=list,
        description="Extra sbatch options, one argv word each, e.g. ['--gres=gpu:8'] or ['--gpus-per-node=4'] "
        "(clusters that constrain devices show a job no GPU it did not request), ['--constraint=gb300']. The "
        "options the runner sets itself (job name, comment, nodes, output, working directory, time) are refused.",
    )
    poll_s: float = Field(2.0, gt=0, description="Seconds between squeue / event-file polls.")

    @field_validator("sbatch_flags")
    @classmethod
    def _not_ours(cls, flags: list[str]) -> list[str]:
        for flag in flags:
            option = flag.split("=", 1)[0]
            if option in RUNNER_SBATCH_OPTIONS:
                raise ValueError(
                    f"sbatch options other than the slurm runner's own; {flag!r} sets {option}, which the runner "
                    f"sets itself (its own: {', '.join(RUNNER_SBATCH_OPTIONS)}; the job name is the run id, the node "
                    "count follows the recipe)"
                )
            if not flag.startswith("-"):
                raise ValueError(f"sbatch options such as '--gres=gpu:8', one word each; {flag!r} is not one")
        return flags


Target = Annotated[SshTarget | TpuVmTarget | SlurmTarget, Field(discriminator="kind")]


class Inventory(Strict):
    targets: list[Target] = Field(default_factory=list, description="Machines and clusters of this fleet.")

    def for_job(self, runner_kind: str, hardware: str) -> list[Target]:
        """Targets a job of this runner kind and hardware may use."""
        return [target for target in self.targets if target.kind == runner_kind and target.hardware == hardware]

    def slots(self) -> dict[str, int]:
        """Jobs each hardware pool can run at once through this inventory."""
        slots: dict[str, int] = {}
        for target in self.targets:
            count = target.concurrent_jobs if isinstance(target, SlurmTarget) else 1
            slots[target.hardware] = slots.get(target.hardware, 0) + count
        return slots


def load_inventory(path: str | Path) -> Inventory:
    file = Path(path)
    inventory = load_validated(file, Inventory, what="inventory")
    problems = []
    known = load_hardware_registry()
    names: set[str] = set()
    for index, target in enumerate(inventory.targets):
        if target.hardware not in known:
            problems.append((f"targets[{index}].hardware", target.hardware, "expected a key of recipes/hardware.yaml"))
        if target.name in names:
            problems.append((f"targets[{index}].name", target.name, "expected a name not used by another target"))
        names.add(target.name)
    if problems:
        raise RecipeError(str(file), problems, what="inventory")
    return inventory


def inventory_from_environment(path: str | Path | None = None) -> Inventory:
    """The inventory named by `path` or INFERSWEEP_INVENTORY; an empty one (local only) otherwise."""
    chosen = path or os.environ.get(INVENTORY_ENV)
    return load_inventory(chosen) if chosen else Inventory()
