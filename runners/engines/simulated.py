"""Simulated engine adapter: launches `runners.engines.simulated_server` with the project's Python (or, in a
container environment, the interpreter the recipe names inside the image, which must import the project).

Its results always carry origin `simulated` and are never shown as measurements.
"""

from __future__ import annotations

from pathlib import Path

from recipes.model_registry import kv_bytes_per_token, load_model_registry
from recipes.schema import Recipe, SimulatedEngineSettings
from runners.engines.base import EngineAdapter, LaunchPlan, register_engine

# KV bytes per token of a model the registry does not know: a tiny model's (2 layers x 2 KV heads x 64 x K,V x bf16).
UNKNOWN_MODEL_KV_BYTES_PER_TOKEN = 1024.0


def _kv_bytes_per_token(model_name: str) -> float:
    registry = load_model_registry()
    if model_name in registry:
        return kv_bytes_per_token(registry[model_name])
    return UNKNOWN_MODEL_KV_BYTES_PER_TOKEN


@register_engine
class SimulatedAdapter(EngineAdapter):
    kind = "simulated"
    origin = "simulated"
    default_step_tokens = None  # its cache is an LRU that never pins running requests
    honoured_fields = frozenset({"max_num_seqs"})  # its batch cap (--max-batch)
    # Its DRAM tier stands in for any way a real engine attaches one (a dry run of a recipe using vLLM's
    # SimpleCPUOffloadConnector runs here).
    offload_connectors = frozenset({"native", "simple-cpu-offload"})

    def kv_block_size(self, recipe: Recipe) -> int:
        return (recipe.engine.simulated or SimulatedEngineSettings()).block_size

    def methodology_flags(self, recipe: Recipe) -> list[str]:
        flags = ["--prefix-caching"] if recipe.methodology.prefix_caching else []
        offload = recipe.methodology.kv_offload
        if offload.backend == "dram" and offload.dram_gib is not None:
            # The DRAM tier holds dram_gib of KV at the model's bytes per token (model registry), like a real one.
            settings = recipe.engine.simulated or SimulatedEngineSettings()
            block_bytes = _kv_bytes_per_token(recipe.model.name) * settings.block_size
            flags += ["--dram-blocks", str(int(offload.dram_gib * 2**30 // block_bytes))]
            flags += ["--kv-bytes-per-token", str(_kv_bytes_per_token(recipe.model.name))]
        return flags

    def launch_plan(self, recipe: Recipe, port: int, python: Path, model_dir: Path | None) -> LaunchPlan:
        settings = recipe.engine.simulated or SimulatedEngineSettings()
        argv = [
            str(python), "-m", "runners.engines.simulated_server",
            "--port", str(port),
            "--model", recipe.model.name,
            "--ttft-ms", str(settings.ttft_ms),
            "--itl-ms", str(settings.itl_ms),
            "--prefill-ms-per-1k", str(settings.prefill_ms_per_1k_tokens),
            "--max-batch", str(recipe.engine.max_num_seqs or settings.max_batch),
            "--max-model-len", str(recipe.engine.max_model_len),
            "--fault", settings.fault,
            "--fault-after", str(settings.fault_after),
            "--cache-blocks", str(settings.cache_blocks),
            "--block-size", str(settings.block_size),
        ]  # fmt: skip
        if settings.fault_once_file:
            argv += ["--fault-once-file", settings.fault_once_file]
        argv += self.methodology_flags(recipe) + recipe.engine.extra_args
        return LaunchPlan(
            argv=argv, env=dict(recipe.engine.env), port=port, served_model=recipe.model.name, model_dir=model_dir
        )
