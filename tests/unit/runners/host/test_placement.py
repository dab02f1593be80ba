"""Where a multi-process engine's processes run (runners/host/placement.py), worked by hand on Dynamo's plans."""

from __future__ import annotations

from pathlib import Path

import pytest

from recipes.errors import ConfigurationError
from recipes.schema import Recipe
from runners.engines.registry import engine_adapter, hosts_needed
from runners.host import placement
from runners.host.placement import Node, engine_members
from tests.conftest import SIMULATED_RECIPE, deep_update

GROUP = {"num_workers": 1, "tp": 1}


def dynamo(hardware: str, parallelism: dict, backend: str = "sglang") -> Recipe:
    engine = {"kind": "dynamo", "environment": {"kind": "venv", "name": "dynamo"}, "simulated": None,
              "dynamo": {"backend": backend, "discovery": "file"}}  # fmt: skip
    methodology = {"prefix_caching": False, "routing": {"kind": "round-robin"}}
    changes = {"engine": engine, "hardware": hardware, "parallelism": parallelism, "methodology": methodology}
    return Recipe.model_validate(deep_update(SIMULATED_RECIPE, changes))


def members_of(recipe: Recipe, nodes: list[Node] | None, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    monkeypatch.setattr(placement, "slurm_allocation", lambda: nodes)
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    plan = engine_adapter("dynamo").launch_plan(recipe, 8000, Path("python3"), Path("/m"))
    members = engine_members(plan, recipe, "run-1")
    assert [member.name for member in members if member.entry] == ["frontend-0"]
    return {member.name: member.argv for member in members} | {
        f"{member.name} env": [f"{k}={v}" for k, v in sorted(member.env.items()) if k.endswith("VISIBLE_DEVICES")]
        for member in members
    }


NODES = [Node("gpu-a", "10.0.0.1"), Node("gpu-b", "10.0.0.2"), Node("gpu-c", "10.0.0.3")]


def test_workers_that_fit_one_host_share_it_with_disjoint_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    four = {"num_workers": 1, "tp": 4}
    members = members_of(dynamo("b200", {"disaggregated": {"prefill": four, "decode": four}}), None, monkeypatch)
    assert members["prefill-0"][:3] == ["python3", "-m", "dynamo.sglang"]  # started here, no srun
    assert members["decode-0"][:3] == ["python3", "-m", "dynamo.sglang"]
    assert members["prefill-0 env"] == ["CUDA_VISIBLE_DEVICES=0,1,2,3"]
    assert members["decode-0 env"] == ["CUDA_VISIBLE_DEVICES=4,5,6,7"]
    assert members["frontend-0 env"] == []


def test_each_group_gets_nodes_of_its_own_and_remote_workers_are_job_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two prefill workers of four GPUs share the first B200 node; the decode worker of eight has the second.
    parallelism = {"disaggregated": {"prefill": {"num_workers": 2, "tp": 4}, "decode": {"num_workers": 1, "tp": 8}}}
    members = members_of(dynamo("b200", parallelism), NODES[:2], monkeypatch)
    assert members["prefill-0"][:3] == members["prefill-1"][:3] == ["python3", "-m", "dynamo.sglang"]
    assert (members["prefill-0 env"], members["prefill-1 env"]) == (
        ["CUDA_VISIBLE_DEVICES=0,1,2,3"], ["CUDA_VISIBLE_DEVICES=4,5,6,7"]
    )  # fmt: skip
    decode = members["decode-0"]
    assert decode[:7] == ["srun", "--overlap", "--jobid=42", "--nodes=1", "--ntasks=1", "--nodelist=gpu-b",
                          "--job-name=infersweep-run-1-decode-0"]  # fmt: skip
    assert decode[7:10] == ["python3", "-m", "dynamo.sglang"]
    assert members["decode-0 env"] == []  # alone on its node: all of its devices


def test_a_worker_wider_than_a_node_runs_once_per_node_with_its_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    # GB300 trays have four GPUs: an eight-GPU decode worker spans two of them, after the prefill tray.
    parallelism = {"disaggregated": {"prefill": {"num_workers": 1, "tp": 4}, "decode": {"num_workers": 1, "tp": 8}}}
    members = members_of(dynamo("gb300-nvl72", parallelism), NODES, monkeypatch)
    first, second = members["decode-0-node0"], members["decode-0-node1"]
    assert "--nodelist=gpu-b" in first and "--nodelist=gpu-c" in second
    for rank, argv in enumerate((first, second)):
        assert argv[argv.index("--node-rank") + 1] == str(rank)
        assert argv[argv.index("--dist-init-addr") + 1] == "10.0.0.2:29500"  # the worker's first node


def test_several_hosts_without_an_allocation_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    eight = {"num_workers": 1, "tp": 8}
    recipe = dynamo("b200", {"disaggregated": {"prefill": eight, "decode": eight}})
    with pytest.raises(ConfigurationError, match=r"need 2 hosts of 'b200' and this job runs in no Slurm allocation"):
        members_of(recipe, None, monkeypatch)
    with pytest.raises(ConfigurationError, match=r"runs in an allocation of 1 node\(s\)"):
        members_of(recipe, NODES[:1], monkeypatch)


def test_mocker_workers_stand_in_for_the_hardware_they_name(monkeypatch: pytest.MonkeyPatch) -> None:
    pair = {"disaggregated": {"prefill": GROUP, "decode": GROUP}}
    on_cpu = members_of(dynamo("cpu-local", pair, backend="mocker"), None, monkeypatch)
    assert on_cpu["decode-0"][:3] == ["python3", "-m", "dynamo.mocker"]  # no accelerators: one host
    eight = {"num_workers": 1, "tp": 8}
    rehearsal = members_of(dynamo("b200", {"disaggregated": {"prefill": eight, "decode": eight}}, "mocker"),
                           NODES[:2], monkeypatch)  # fmt: skip
    assert "--nodelist=gpu-b" in rehearsal["decode-0"] and rehearsal["prefill-0"][0] == "python3"


def test_workers_are_packed_whole_and_the_node_count_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    # Five prefill workers of three GPUs on eight-GPU hosts: two per host, so three hosts (not ceil(15 / 8) = 2),
    # then the decode worker's own host.
    parallelism = {"disaggregated": {"prefill": {"num_workers": 5, "tp": 3}, "decode": {"num_workers": 1, "tp": 8}}}
    recipe = dynamo("b200", parallelism)
    assert hosts_needed(recipe) == 4
    nodes = [*NODES, Node("gpu-d", "10.0.0.4")]
    members = members_of(recipe, nodes, monkeypatch)
    where = {name: next((word for word in argv if word.startswith("--nodelist=")), "here") for name, argv in
             members.items() if not name.endswith(" env")}  # fmt: skip
    assert [where[f"prefill-{index}"] for index in range(5)] == [
        "here", "here", "--nodelist=gpu-b", "--nodelist=gpu-b", "--nodelist=gpu-c"
    ]  # fmt: skip
    assert where["decode-0"] == "--nodelist=gpu-d"
    assert members["prefill-1 env"] == ["CUDA_VISIBLE_DEVICES=3,4,5"]


def test_replicas_are_packed_whole_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # Aggregated: five replicas of three GPUs need three hosts (two per host), not ceil(15 / 8) = 2.
    recipe = dynamo("b200", {"tp": 3, "dp": 5})
    assert hosts_needed(recipe) == 3
    members = members_of(recipe, NODES, monkeypatch)
    assert "--nodelist=gpu-c" in members["worker-4"] and members["worker-1"][0] == "python3"
    with pytest.raises(ConfigurationError, match=r"need 3 hosts of 'b200' and this job runs in an allocation of 2"):
        members_of(recipe, NODES[:2], monkeypatch)
