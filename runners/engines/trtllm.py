"""TensorRT-LLM adapter: `trtllm-serve` with the PyTorch backend, one OpenAI-compatible server.

Most settings go through the LLM-API options file (`--extra_llm_api_options <yaml>`): prefix caching is
`kv_cache_config.enable_block_reuse`, the DRAM tier `kv_cache_config.host_cache_size`, speculative
decoding `speculative_config`, data-parallel attention `enable_attention_dp`. The file is part of the
launch plan (`LaunchPlan.files`) and of the rendered command lines, so the golden files pin it too.

Parallelism: `--tp_size` is the whole world (tp x dp of the recipe); with `dp_attention` attention runs
data-parallel inside it, which is how TensorRT-LLM serves DeepSeek's "DEP8" (`tp: 1, dp: 8, ep: 8,
dp_attention: true` -> `--tp_size 8 --ep_size 8` + `enable_attention_dp: true`).

The option builders are shared with the Dynamo adapter (`dynamo.trtllm --extra-engine-args <yaml>`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from recipes.errors import ConfigurationError
from recipes.schema import Parallelism, Recipe, SpeculativeDecoding, WorkerGroup
from runners.engines.base import (
    TUNING_FIELDS,
    EngineAdapter,
    LaunchPlan,
    PromptLimit,
    container_image,
    methodology_env,
    register_engine,
)

OPTIONS_FILE = "extra-llm-api-options.yaml"
_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
# fp8 and fp4 weights come from the checkpoint's own quantisation config (hf_quant_config.json of a
# ModelOpt checkpoint, e.g. nvidia/DeepSeek-R1-0528-FP4-v2): TensorRT-LLM has no flag to quantise on load.
_CHECKPOINT_QUANTIZED = frozenset({"fp8", "fp4"})


def world_size(group: Parallelism | WorkerGroup) -> int:
    return group.tp * group.pp * group.dp


def parallel_options(group: Parallelism | WorkerGroup, where: str) -> dict[str, Any]:
    """LLM-API parallelism of one server: tensor_parallel_size is the world, attention DP inside it."""
    if group.dp > 1 and not group.dp_attention:
        raise ConfigurationError(
            f"{where}.dp: got {group.dp} without {where}.dp_attention; one TensorRT-LLM server runs one model "
            "replica, so data parallelism is attention DP (set dp_attention) or several servers (engine.kind "
            "'dynamo')"
        )
    if group.dp_attention and group.dp == 1:
        raise ConfigurationError(
            f"{where}.dp_attention: got True with {where}.dp 1; set {where}.dp to the number of attention replicas"
        )
    options: dict[str, Any] = {
        "tensor_parallel_size": group.tp * group.dp,
        "pipeline_parallel_size": group.pp,
        "moe_expert_parallel_size": group.ep,
    }
    if group.dp_attention:
        options["enable_attention_dp"] = True
    return options


def precision_options(recipe: Recipe) -> dict[str, Any]:
    if recipe.precision in _DTYPES:
        return {"dtype": _DTYPES[recipe.precision]}
    if recipe.precision in _CHECKPOINT_QUANTIZED:
        return {}
    raise ConfigurationError(
        f"precision: got {recipe.precision!r}; the trtllm adapter serves bf16/fp16/fp32, or fp8/fp4 checkpoints "
        "quantised ahead of time (ModelOpt); other formats are not mapped"
    )


def speculative_config(spec: SpeculativeDecoding | None) -> dict[str, Any] | None:
    if spec is None:
        return None
    draft_len = spec.num_speculative_tokens
    if spec.method == "mtp":
        return {"decoding_type": "MTP", "num_nextn_predict_layers": draft_len}
    if spec.method == "ngram":
        return {"decoding_type": "NGram", "max_draft_len": draft_len}
    if spec.method == "eagle":
        raise ConfigurationError(
            "methodology.speculative_decoding.method: got 'eagle'; the TensorRT-LLM PyTorch backend runs EAGLE-3 "
            "drafts (method 'eagle3'), not EAGLE-1/2"
        )
    if not spec.draft_model:
        raise ConfigurationError(
            f"methodology.speculative_decoding.draft_model: method {spec.method!r} needs the draft model's id"
        )
    decoding_type = "Eagle3" if spec.method == "eagle3" else "DraftTarget"
    return {"decoding_type": decoding_type, "max_draft_len": draft_len, "speculative_model_dir": spec.draft_model}


def speculative_env(spec: SpeculativeDecoding | None) -> dict[str, str]:
    """TensorRT-LLM's forced acceptance, which pins the acceptance length to the recipe's golden one, as InferenceX's
    TensorRT-LLM AgentX scripts set it: the variable counts accepted draft tokens per step, one less than the
    acceptance length (which counts the target's own token too)."""
    if spec is None or spec.golden_acceptance_length is None:
        return {}
    return {"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": f"{spec.golden_acceptance_length - 1:g}"}


def kv_cache_config(recipe: Recipe, ranks: int) -> dict[str, Any]:
    """kv_cache_config: block reuse (prefix caching), dtype, memory share and the host (DRAM) tier.

    `kv_offload.dram_gib` is the DRAM the whole server gives the KV cache; `host_cache_size` is bytes per
    rank (each rank runs its own KV-cache manager), so it is divided over the ranks."""
    knobs = recipe.methodology
    engine = recipe.engine
    config: dict[str, Any] = {"enable_block_reuse": knobs.prefix_caching}
    if engine.kv_cache_dtype == "fp8":
        config["dtype"] = "fp8"
    if engine.gpu_memory_utilization is not None:
        config["free_gpu_memory_fraction"] = engine.gpu_memory_utilization
    offload = knobs.kv_offload
    if offload.backend == "dram" and offload.dram_gib is not None:
        if not knobs.prefix_caching:
            raise ConfigurationError(
                "methodology.kv_offload.backend: got 'dram' with methodology.prefix_caching false; TensorRT-LLM's "
                "host cache holds reusable blocks (enable_block_reuse), so it needs prefix caching on"
            )
        config["host_cache_size"] = int(offload.dram_gib * 2**30) // ranks
    return config


def llm_api_options(recipe: Recipe, group: Parallelism | WorkerGroup, where: str) -> dict[str, Any]:
    """The LLM-API options of one server (or one Dynamo worker) of parallelism `group`."""
    engine = recipe.engine
    options = parallel_options(group, where)
    options.update(precision_options(recipe))
    options["max_seq_len"] = engine.max_model_len
    if engine.max_num_seqs is not None:
        options["max_batch_size"] = engine.max_num_seqs
    if engine.max_num_batched_tokens is not None:
        options["max_num_tokens"] = engine.max_num_batched_tokens
    if engine.chunked_prefill is not None:
        options["enable_chunked_prefill"] = engine.chunked_prefill
    if engine.attention_backend is not None:
        options["attn_backend"] = engine.attention_backend
    if engine.cuda_graph_max_batch_size is not None:
        options["cuda_graph_config"] = {"max_batch_size": engine.cuda_graph_max_batch_size}
    if engine.stream_interval is not None:
        options["stream_interval"] = engine.stream_interval
    options["kv_cache_config"] = kv_cache_config(recipe, world_size(group))
    spec = speculative_config(recipe.methodology.speculative_decoding)
    if spec is not None:
        options["speculative_config"] = spec
    _merge_free_options(options, engine.llm_api_options, "engine.llm_api_options")
    return options


# LLM-API options a recipe sets through typed fields (or its methodology and parallelism), never free-form.
_TYPED_OPTIONS = {
    "tensor_parallel_size": "parallelism", "pipeline_parallel_size": "parallelism",
    "moe_expert_parallel_size": "parallelism", "enable_attention_dp": "parallelism.dp_attention",
    "dtype": "precision", "max_seq_len": "engine.max_model_len", "max_batch_size": "engine.max_num_seqs",
    "max_num_tokens": "engine.max_num_batched_tokens", "enable_chunked_prefill": "engine.chunked_prefill",
    "attn_backend": "engine.attention_backend", "stream_interval": "engine.stream_interval",
    "speculative_config": "methodology.speculative_decoding",
    "cuda_graph_config.max_batch_size": "engine.cuda_graph_max_batch_size",
    "kv_cache_config.enable_block_reuse": "methodology.prefix_caching",
    "kv_cache_config.host_cache_size": "methodology.kv_offload",
    "kv_cache_config.dtype": "engine.kv_cache_dtype",
    "kv_cache_config.free_gpu_memory_fraction": "engine.gpu_memory_utilization",
}  # fmt: skip


def _merge_free_options(options: dict[str, Any], extra: dict[str, Any], where: str, prefix: str = "") -> None:
    """Merge `extra` into `options` (nested tables merged key by key), refusing what typed fields set."""
    for key, value in extra.items():
        path = f"{prefix}{key}"
        typed = _TYPED_OPTIONS.get(path)
        if typed is not None:
            raise ConfigurationError(f"{where}.{path}: got {value!r}; set {typed} instead (a typed setting)")
        if isinstance(value, dict) and isinstance(options.get(key, {}), dict):
            _merge_free_options(options.setdefault(key, {}), value, where, f"{path}.")
        elif key in options:
            raise ConfigurationError(f"{where}.{path}: got {value!r}; the adapter already writes {options[key]!r}")
        else:
            options[key] = value


# TensorRT-LLM's LLM API default for max_num_tokens, the most tokens one step schedules. Without chunked prefill a
# prompt must fit in one step: a longer one is answered with a 400 ("...should not exceed max_num_tokens").
DEFAULT_MAX_NUM_TOKENS = 8192


def prompt_limit(recipe: Recipe) -> PromptLimit | None:
    """Without chunked prefill (TensorRT-LLM's default), no prompt may exceed max_num_tokens."""
    engine = recipe.engine
    if engine.chunked_prefill:
        return None
    tokens = engine.max_num_batched_tokens or DEFAULT_MAX_NUM_TOKENS
    default = "" if engine.max_num_batched_tokens else f" (TensorRT-LLM's default, {DEFAULT_MAX_NUM_TOKENS:,})"
    return PromptLimit(
        tokens=tokens, field="engine.max_num_batched_tokens",
        why=f"TensorRT-LLM without chunked prefill refuses any prompt longer than max_num_tokens{default}: set "
        "engine.chunked_prefill: true (InferenceX's agentic TensorRT-LLM configurations do, with max_num_tokens "
        "16384), or raise engine.max_num_batched_tokens above the longest prompt",
    )  # fmt: skip


def options_yaml(options: dict[str, Any]) -> str:
    return yaml.safe_dump(options, sort_keys=True, default_flow_style=False)


@register_engine
class TrtllmAdapter(EngineAdapter):
    kind = "trtllm"
    origin = "measured"
    honoured_fields = frozenset(TUNING_FIELDS)

    def takes_llm_api_options(self, recipe: Recipe) -> bool:
        return True

    def prompt_limit(self, recipe: Recipe) -> PromptLimit | None:
        return prompt_limit(recipe)

    def methodology_flags(self, recipe: Recipe) -> list[str]:
        """All methodology knobs live in the options file; only routing could be a flag, and there is none."""
        if recipe.methodology.routing.kind != "none":
            raise ConfigurationError(
                f"methodology.routing.kind: got {recipe.methodology.routing.kind!r}; one trtllm-serve server has no "
                "router (multi-worker routing needs the dynamo engine kind)"
            )
        return []

    def launch_plan(self, recipe: Recipe, port: int, python: Path, model_dir: Path | None) -> LaunchPlan:
        parallel = recipe.parallelism
        if parallel.disaggregated is not None:
            raise ConfigurationError(
                "parallelism.disaggregated: one trtllm-serve server cannot split prefill and decode; use "
                "engine.kind 'dynamo' with dynamo.backend 'trtllm'"
            )
        if model_dir is None:
            raise ConfigurationError(
                f"model.source: {recipe.model.source.kind!r} needs a model directory for TensorRT-LLM"
            )
        self.methodology_flags(recipe)
        options = llm_api_options(recipe, parallel, "parallelism")
        # Parallelism and limits go on the command line (where trtllm-serve documents them) and stay out of the
        # options file, which would override the flags.
        tp = options.pop("tensor_parallel_size")
        pp = options.pop("pipeline_parallel_size")
        ep = options.pop("moe_expert_parallel_size")
        argv = [
            "trtllm-serve", str(model_dir),
            "--served_model_name", recipe.model.name,
            "--host", "127.0.0.1",
            "--port", str(port),
            "--backend", "pytorch",
            "--tp_size", str(tp),
            "--pp_size", str(pp),
            "--ep_size", str(ep),
            "--max_seq_len", str(options.pop("max_seq_len")),
        ]  # fmt: skip
        if "max_batch_size" in options:
            argv += ["--max_batch_size", str(options.pop("max_batch_size"))]
        if "max_num_tokens" in options:
            argv += ["--max_num_tokens", str(options.pop("max_num_tokens"))]
        argv += ["--extra_llm_api_options", OPTIONS_FILE, *recipe.engine.extra_args]
        return LaunchPlan(
            argv=argv,
            env=methodology_env(recipe, speculative_env(recipe.methodology.speculative_decoding)),
            port=port,
            served_model=recipe.model.name,
            model_dir=model_dir,
            files={OPTIONS_FILE: options_yaml(options)},
            image=container_image(recipe),
        )
