"""Where each process of a multi-process engine runs: all on this host, or across the job's Slurm allocation.

A launch plan (runners/engines/base.py `LaunchPlan.processes`) lists its processes in start order; the
runner that starts them (runners/local, which the ssh, tpu-vm and slurm agents run) asks `engine_members`
for the group it launches (runners/host/process.py `EngineProcessGroup`):

- When the engine's workers fit one host (`hosts_needed` is 1), every process runs here, with the other
  hosts' placeholders filled for this host.
- Otherwise the job must run inside a Slurm allocation of that many nodes (the slurm runner asks for them):
  the entry process and the singletons (frontend, etcd, NATS) run here, on the allocation's first node, and
  each worker group gets whole nodes of its own in the plan's order (prefill, then decode), as
  `hosts_needed` counts them. A worker on another node is started from here as a step of the job
  (`srun --overlap --nodelist=<node>`): its srun client is the group's member, so its output is the
  member's log, its exit the worker's exit, and stopping the group stops the step (srun forwards the
  signal; the allocation's end stops whatever is left). A worker wider than one node is started once per
  node with `{node_rank}` and `{dist_init_addr}` filled in.

Workers that share a node get disjoint devices (`CUDA_VISIBLE_DEVICES`, `HIP_VISIBLE_DEVICES`) when the
hardware's vendor has such a variable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from recipes.errors import ConfigurationError
from recipes.hardware import load_hardware_registry
from recipes.schema import Recipe
from runners.engines.base import (
    DIST_INIT_ADDR,
    LEADER_HOST,
    NODE_RANK,
    LaunchPlan,
    ProcessSpec,
    fill_placeholders,
)
from runners.engines.registry import engine_adapter, hosts_needed
from runners.host.process import GroupMember
from runners.host.shell import LocalCommands

# Port of a multi-node worker's rendezvous on its first node (SGLang's --dist-init-addr).
DIST_INIT_PORT = 29500
# The variable that picks a process's accelerators, by the hardware registry's vendor.
DEVICE_VARIABLES = {"NVIDIA": "CUDA_VISIBLE_DEVICES", "AMD": "HIP_VISIBLE_DEVICES"}
SCONTROL_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Node:
    """One node of the allocation: its Slurm name (for --nodelist) and the address other nodes reach it at."""

    name: str
    address: str


@dataclass(frozen=True)
class Placed:
    """One copy of a process on one node (index into the allocation), with the devices it may use there."""

    spec: ProcessSpec
    node: int
    devices: tuple[int, ...] = ()


def _scontrol(*args: str) -> str:
    return LocalCommands().run(["scontrol", *args], timeout_s=SCONTROL_TIMEOUT_S).check("on this node").stdout


def slurm_allocation() -> list[Node] | None:
    """The nodes of the Slurm job this process runs in, first node first; None outside a Slurm job."""
    job, nodelist = os.environ.get("SLURM_JOB_ID"), os.environ.get("SLURM_JOB_NODELIST")
    if not job or not nodelist:
        return None
    # One call for every node's address (a line each), whatever the allocation's size.
    addresses = {}
    for line in _scontrol("show", "node", "--oneliner", nodelist).splitlines():
        fields = dict(field.split("=", 1) for field in line.split() if "=" in field)
        if "NodeName" in fields:
            addresses[fields["NodeName"]] = fields.get("NodeAddr") or fields["NodeName"]
    return [Node(name, addresses.get(name, name)) for name in _scontrol("show", "hostnames", nodelist).split()]


def _assign(plan: LaunchPlan, recipe: Recipe, hosts: int) -> list[Placed]:
    """Every copy of every process with its node and devices, as `hosts_needed` counts the nodes: on one host
    the workers share node 0 (disjoint devices); on several, each worker group has whole nodes of its own."""
    if not engine_adapter(recipe.engine.kind).uses_accelerators(recipe):
        return [Placed(spec, 0) for spec in plan.processes]  # stand-in workers: no devices to share out
    per_host = load_hardware_registry()[recipe.hardware].gpus_per_node
    placed: list[Placed] = []
    group_start, node, used = 0, 0, 0
    for role in dict.fromkeys(spec.role for spec in plan.processes):
        specs = [spec for spec in plan.processes if spec.role == role]
        if not any(spec.accelerators for spec in specs):
            placed += [Placed(spec, 0) for spec in specs]  # frontend, etcd, NATS: beside the entry process
            continue
        if hosts > 1:
            node, used = group_start, 0
        for spec in specs:
            if spec.nodes > 1:  # a worker wider than a node: whole nodes, one copy on each
                node, used = (node + 1 if used else node), 0
                placed += [Placed(spec, node + rank, tuple(range(per_host))) for rank in range(spec.nodes)]
                node += spec.nodes
                continue
            if used + spec.accelerators > per_host:
                node, used = node + 1, 0
            placed.append(Placed(spec, node, tuple(range(used, used + spec.accelerators))))
            used += spec.accelerators
        group_start = node + 1 if used else node  # the next group starts on a node of its own
    return placed


def _device_env(recipe: Recipe, placed: list[Placed], copy: Placed) -> dict[str, str]:
    """Disjoint devices for workers that share a node (nothing when a worker has its node to itself)."""
    variable = DEVICE_VARIABLES.get(load_hardware_registry()[recipe.hardware].vendor)
    sharing = [other for other in placed if other.node == copy.node and other.devices]
    if variable is None or not copy.devices or len(sharing) < 2:
        return {}
    return {variable: ",".join(str(device) for device in copy.devices)}


def job_step_argv(job: str, node: str, name: str) -> list[str]:
    """srun's words for a further step of Slurm job `job` on `node`, named `name` (squeue --steps shows it, and
    it is cancelled by that name). The agent's own step holds the node's CPUs: without --overlap this step would
    wait for them forever."""
    return [
        "srun",
        "--overlap",
        f"--jobid={job}",
        "--nodes=1",
        "--ntasks=1",
        f"--nodelist={node}",
        f"--job-name={name}",
    ]


def engine_members(plan: LaunchPlan, recipe: Recipe, run_id: str) -> list[GroupMember]:
    """The processes of `plan` as the members of one process group started here (see the module's text)."""
    hosts = hosts_needed(recipe)
    nodes = [Node("localhost", "127.0.0.1")] if hosts == 1 else slurm_allocation()
    if nodes is None or len(nodes) < hosts:
        have = "no Slurm allocation" if nodes is None else f"an allocation of {len(nodes)} node(s)"
        raise ConfigurationError(
            f"parallelism: the engine's workers need {hosts} hosts of {recipe.hardware!r} and this job runs in "
            f"{have}; run it with the slurm runner, which allocates them"
        )
    placed = _assign(plan, recipe, hosts)
    members = []
    for copy in placed:
        spec = copy.spec
        first = next(other.node for other in placed if other.spec is spec)
        values = {
            LEADER_HOST: nodes[0].address, NODE_RANK: str(copy.node - first),
            DIST_INIT_ADDR: f"{nodes[first].address}:{DIST_INIT_PORT}",
        }  # fmt: skip
        filled = fill_placeholders(spec, values)
        name = filled.name if spec.nodes == 1 else f"{filled.name}-node{copy.node - first}"
        env = {**filled.env, **_device_env(recipe, placed, copy)}
        step = job_step_argv(os.environ.get("SLURM_JOB_ID", ""), nodes[copy.node].name, f"infersweep-{run_id}-{name}")
        argv = filled.argv if copy.node == 0 else [*step, *filled.argv]
        members.append(GroupMember(name, argv, env, entry=spec.argv == plan.argv))
    return members
