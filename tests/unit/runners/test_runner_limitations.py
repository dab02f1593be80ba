"""What each runner kind refuses before anything is reserved: one shared rule for engine launches."""

from __future__ import annotations

from recipes.schema import Recipe
from runners.inventory import RemoteInstall, SlurmTarget
from runners.job import runner_class
from tests.conftest import SIMULATED_RECIPE, deep_update

DYNAMO = {"engine": {"kind": "dynamo", "environment": {"kind": "venv", "name": "dynamo"}, "simulated": None,
                     "dynamo": {"backend": "sglang"}}}  # fmt: skip
GROUP = {"num_workers": 1, "tp": 1}
DISAGGREGATED = {"parallelism": {"disaggregated": {"prefill": GROUP, "decode": GROUP}}}


def recipe(changes: dict) -> Recipe:
    return Recipe.model_validate(deep_update(SIMULATED_RECIPE, changes))


def test_no_runner_kind_pretends_to_launch_dynamo() -> None:
    for kind in ("local", "ssh", "tpu-vm", "slurm"):
        problems = runner_class(kind).limitations(recipe(DYNAMO))
        assert any(
            problem.startswith("engine.kind: got 'dynamo'; its frontend, etcd, NATS and workers are several processes")
            and f"which the {kind} runner does not launch yet" in problem
            for problem in problems
        ), (kind, problems)


def test_only_slurm_reserves_the_hosts_of_a_disaggregated_recipe() -> None:
    for kind in ("local", "ssh", "tpu-vm"):
        assert (
            "parallelism.disaggregated: separate prefill and decode workers span several hosts, which the "
            f"{kind} runner cannot reserve together (use the slurm runner)"
        ) in runner_class(kind).limitations(recipe(DISAGGREGATED))
    assert runner_class("slurm").limitations(recipe(DISAGGREGATED)) == []


def test_vllm_dram_offload_is_refused_on_a_cpu_host_but_not_on_a_gpu() -> None:
    vllm = {"engine": {"kind": "vllm", "environment": {"kind": "venv", "name": "vllm-cpu"}, "simulated": None},
            "methodology": {"prefix_caching": True, "kv_offload": {"backend": "dram", "dram_gib": 4}}}  # fmt: skip
    problems = runner_class("local").limitations(recipe(vllm))
    assert any("vLLM's KV offloading needs CUDA-alike or XPU GPUs" in problem for problem in problems), problems
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
