"""The built-in engine adapters, each imported here so it registers under its `engine.kind`, and the answers
that need a recipe's adapter: which adapter, how many hosts its processes need, and what no runner can launch.

It sits above the adapters (they import `base.py`, never this module), so nothing has to import the package
for its side effect.
"""

from __future__ import annotations

from recipes.errors import ConfigurationError
from recipes.hardware import load_hardware_registry
from recipes.schema import Recipe
from runners.engines import dynamo, sglang, simulated, trtllm, vllm, vllm_tpu
from runners.engines.base import ENGINE_ADAPTERS, EngineAdapter, group_hosts

BUILTIN_ADAPTERS = (dynamo, sglang, simulated, trtllm, vllm, vllm_tpu)  # the modules whose import registers them


def engine_adapter(kind: str) -> EngineAdapter:
    if kind not in ENGINE_ADAPTERS:
        raise ConfigurationError(
            f"engine.kind: got {kind!r}; no adapter registered (available: {', '.join(sorted(ENGINE_ADAPTERS))})"
        )
    return ENGINE_ADAPTERS[kind]()


def hosts_needed(recipe: Recipe) -> int:
    """Hosts the engine's processes need: 1 when the recipe's accelerators fit one host of its hardware (or it uses
    none), else the hosts its workers fill packed whole (`group_hosts`): a disaggregated recipe gives each worker
    group hosts of its own, an aggregated one packs its dp replicas of tp x pp."""
    adapter = engine_adapter(recipe.engine.kind)
    hardware = load_hardware_registry().get(recipe.hardware)
    if hardware is None or not adapter.uses_accelerators(recipe):
        return 1
    per_host = hardware.gpus_per_node
    disaggregated = recipe.parallelism.disaggregated
    if disaggregated is not None:
        groups = (disaggregated.prefill, disaggregated.decode)
        if sum(group.accelerators for group in groups) <= per_host:
            return 1
        return sum(group_hosts(group.num_workers, group.tp * group.pp * group.dp, per_host) for group in groups)
    parallel = recipe.parallelism
    if parallel.dp_attention:  # one server whose attention is data-parallel inside it
        return group_hosts(1, parallel.accelerators, per_host)
    return group_hosts(parallel.dp, parallel.tp * parallel.pp, per_host)  # dp replicas of tp x pp


def engine_launch_limitations(recipe: Recipe, kind: str, *, single_host: bool) -> list[str]:
    """What no runner kind can launch yet, and what a runner reaching one host cannot: shared by every kind."""
    problems = []
    hosts = hosts_needed(recipe)
    if single_host and hosts > 1:
        problems.append(
            f"parallelism: the engine's workers need {hosts} hosts of {recipe.hardware!r}, which the {kind} runner "
            "cannot reserve together (use the slurm runner)"
        )
    problems += engine_adapter(recipe.engine.kind).launch_limitations(recipe)
    return problems
