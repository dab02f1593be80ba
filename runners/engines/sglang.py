"""SGLang adapter: `python3 -m sglang.launch_server`, one OpenAI-compatible server (flags of SGLang 0.5.x).

Parallelism. The recipe counts accelerators as tp x pp x dp (docs/ARCHITECTURE.md §4). Without data-parallel
attention SGLang does the same (`--tp-size T --dp-size D` runs D replicas of T GPUs). With it
(`parallelism.dp_attention`), SGLang's `--tp-size` is the whole world and `--dp-size` splits attention
inside it, so the recipe's (tp T, dp D, dp_attention) becomes `--tp-size T*D --dp-size D
--enable-dp-attention`: DeepSeek's "DEP8" is `tp: 1, dp: 8, ep: 8, dp_attention: true`.

The argument builders are shared with the Dynamo adapter, whose `dynamo.sglang` workers take the same
engine flags.
"""

from __future__ import annotations

from pathlib import Path

from recipes.errors import ConfigurationError
from recipes.model_registry import MixedAttention, load_model_registry, model_key_for
from recipes.schema import HubModelSource, Parallelism, Recipe, SpeculativeDecoding, WorkerGroup
from runners.engines.base import (
    TUNING_FIELDS,
    EngineAdapter,
    LaunchPlan,
    container_image,
    methodology_env,
    register_engine,
)

_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
# Checkpoint quantisation SGLang should load the weights with. fp4 is NVIDIA's ModelOpt NVFP4 format
# (e.g. nvidia/DeepSeek-R1-0528-FP4-v2); fp8 works for an FP8 checkpoint and quantises a 16-bit one.
_QUANTIZATION = {"fp8": "fp8", "fp4": "modelopt_fp4"}
_SPECULATIVE_ALGORITHMS = {
    "mtp": "EAGLE",  # DeepSeek's MTP head runs through SGLang's EAGLE worker (NEXTN is an alias)
    "eagle": "EAGLE",
    "eagle3": "EAGLE3",
    "ngram": "NGRAM",
    "draft-model": "STANDALONE",
}
BYTES_PER_GB = 10**9  # SGLang's --hicache-size is in decimal GB (host_size * 1e9 bytes)


def world_size(group: Parallelism | WorkerGroup) -> int:
    """Accelerators one SGLang server (or one Dynamo worker) of this parallelism uses: tp x pp x dp."""
    return group.tp * group.pp * group.dp


def parallel_args(group: Parallelism | WorkerGroup, where: str) -> list[str]:
    """`--tp-size/--dp-size/--enable-dp-attention/--ep-size/--pp-size` of one server, from the recipe's
    tp/ep/pp/dp/dp_attention (`group` is `parallelism` or a disaggregated worker group at `where`)."""
    tp, ep, pp, dp, dp_attention = group.tp, group.ep, group.pp, group.dp, group.dp_attention
    if dp_attention and dp == 1:
        raise ConfigurationError(
            f"{where}.dp_attention: got True with {where}.dp 1; data-parallel attention splits attention over "
            f"dp ranks, so set {where}.dp to the number of attention replicas (e.g. tp 1, dp 8, ep 8)"
        )
    args = ["--tp-size", str(tp * dp if dp_attention else tp)]
    if dp > 1:
        args += ["--dp-size", str(dp)]
    if dp_attention:
        args += ["--enable-dp-attention"]
    if ep > 1:
        moe_world = tp * dp if dp_attention else tp
        if moe_world % ep:
            raise ConfigurationError(
                f"{where}.ep: got {ep}; SGLang splits experts inside the tensor-parallel world of {moe_world} "
                "GPUs, so ep must divide it"
            )
        args += ["--ep-size", str(ep)]
    if pp > 1:
        args += ["--pp-size", str(pp)]
    return args


def precision_args(recipe: Recipe) -> list[str]:
    if recipe.precision in _DTYPES:
        return ["--dtype", _DTYPES[recipe.precision]]
    if recipe.precision in _QUANTIZATION:
        return ["--quantization", _QUANTIZATION[recipe.precision]]
    raise ConfigurationError(
        f"precision: got {recipe.precision!r}; the sglang adapter maps bf16, fp16, fp32, fp8 and fp4 (NVFP4) only "
        "(an int8/int4 checkpoint needs its quantisation method named, which this adapter does not guess)"
    )


def tuning_args(recipe: Recipe) -> list[str]:
    engine = recipe.engine
    args: list[str] = []
    if engine.kv_cache_dtype == "fp8":
        args += ["--kv-cache-dtype", "fp8_e4m3"]
    if engine.max_num_seqs is not None:
        args += ["--max-running-requests", str(engine.max_num_seqs)]
    if engine.gpu_memory_utilization is not None:
        args += ["--mem-fraction-static", f"{engine.gpu_memory_utilization:g}"]
    if engine.chunked_prefill is False:
        if engine.max_num_batched_tokens is not None:
            raise ConfigurationError(
                f"engine.max_num_batched_tokens: got {engine.max_num_batched_tokens} with engine.chunked_prefill "
                "false; SGLang's --chunked-prefill-size is both the chunk and the switch (-1 turns chunking off): "
                "set one of the two"
            )
        args += ["--chunked-prefill-size", "-1"]
    elif engine.max_num_batched_tokens is not None:
        args += ["--chunked-prefill-size", str(engine.max_num_batched_tokens)]
    if engine.attention_backend is not None:
        args += ["--attention-backend", engine.attention_backend]
    if engine.cuda_graph_max_batch_size is not None:
        args += ["--cuda-graph-max-bs", str(engine.cuda_graph_max_batch_size)]
    if engine.stream_interval is not None:
        args += ["--stream-interval", str(engine.stream_interval)]
    return args


def speculative_args(spec: SpeculativeDecoding | None) -> list[str]:
    """A chain of `num_speculative_tokens` drafts (top-k 1), the usual DeepSeek MTP / EAGLE setting."""
    if spec is None:
        return []
    if spec.method in ("eagle", "eagle3", "draft-model") and not spec.draft_model:
        raise ConfigurationError(
            f"methodology.speculative_decoding.draft_model: method {spec.method!r} needs the draft model's id"
        )
    steps = spec.num_speculative_tokens
    args = ["--speculative-algorithm", _SPECULATIVE_ALGORITHMS[spec.method]]
    if spec.method != "ngram":
        args += ["--speculative-num-steps", str(steps), "--speculative-eagle-topk", "1"]
    args += ["--speculative-num-draft-tokens", str(steps + 1)]
    if spec.draft_model:
        args += ["--speculative-draft-model-path", spec.draft_model]
    return args


def speculative_env(spec: SpeculativeDecoding | None) -> dict[str, str]:
    """SGLang's simulated acceptance (0.5.16 and later), which pins the acceptance length to the recipe's golden one,
    as InferenceX's SGLang AgentX scripts set it: each verify step accepts drafted tokens by that expected length
    whatever the target's logits say (so throughput is comparable, and answers are not meant to be right)."""
    if spec is None or spec.golden_acceptance_length is None:
        return {}
    return {
        "SGLANG_SIMULATE_ACC_LEN": f"{spec.golden_acceptance_length:g}",
        "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
        "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token",
    }


def host_pools(recipe: Recipe) -> int:
    """HiCache host pools per rank: one for the KV cache, and for a model with linear-attention layers (Qwen3.5's
    Gated DeltaNet) a second for their recurrent (Mamba) state, each `--hicache-size` GB, as InferenceX's Qwen3.5
    AgentX scripts size them (HICACHE_HOST_POOL_COUNT 2)."""
    source = recipe.model.source
    key = model_key_for(recipe.model.name, source.repo if isinstance(source, HubModelSource) else None)
    model = load_model_registry().get(key) if key else None
    attention = model.attention if model is not None else None
    return 2 if isinstance(attention, MixedAttention) and attention.has_linear_layers else 1


def hicache_args(recipe: Recipe, ranks: int) -> list[str]:
    """HiCache (SGLang's host-DRAM tier under the radix cache) sized from `kv_offload.dram_gib`, the DRAM the
    whole server gives the KV cache: `--hicache-size` is per rank and host pool, in decimal GB, and an integer."""
    offload = recipe.methodology.kv_offload
    if offload.backend != "dram" or offload.dram_gib is None:
        return []
    if not recipe.methodology.prefix_caching:
        raise ConfigurationError(
            "methodology.kv_offload.backend: got 'dram' with methodology.prefix_caching false; SGLang's DRAM "
            "tier (HiCache) extends the radix (prefix) cache, so it needs prefix caching on"
        )
    pools = host_pools(recipe)
    per_rank_gb = int(offload.dram_gib * 2**30 / BYTES_PER_GB / ranks / pools)
    if per_rank_gb < 1:
        raise ConfigurationError(
            f"methodology.kv_offload.dram_gib: got {offload.dram_gib:g}; SGLang sizes HiCache per rank and host pool "
            f"in whole GB, and {offload.dram_gib:g} GiB over {ranks} ranks x {pools} pool(s) is less than 1 GB each"
        )
    return ["--enable-hierarchical-cache", "--hicache-size", str(per_rank_gb)]


def methodology_args(recipe: Recipe, ranks: int) -> list[str]:
    """Prefix caching, speculative decoding and the DRAM tier (routing is the caller's: it differs)."""
    knobs = recipe.methodology
    args = [] if knobs.prefix_caching else ["--disable-radix-cache"]
    args += speculative_args(knobs.speculative_decoding)
    args += hicache_args(recipe, ranks)
    return args


@register_engine
class SglangAdapter(EngineAdapter):
    kind = "sglang"
    counter_series = "sglang"
    origin = "measured"
    honoured_fields = frozenset(TUNING_FIELDS)

    def methodology_flags(self, recipe: Recipe) -> list[str]:
        parallel = recipe.parallelism
        flags = methodology_args(recipe, world_size(parallel))
        routing = recipe.methodology.routing.kind
        if routing == "round-robin" and parallel.dp > 1:
            flags += ["--load-balance-method", "round_robin"]
        elif routing != "none":
            raise ConfigurationError(
                f"methodology.routing.kind: got {routing!r}; one SGLang server spreads requests over its dp "
                f"replicas ({parallel.dp}) itself, round-robin at most and without regard to cached prefixes "
                "(KV-aware or session-affine routing over several workers needs the dynamo engine kind)"
            )
        return flags

    def launch_plan(self, recipe: Recipe, port: int, python: Path, model_dir: Path | None) -> LaunchPlan:
        parallel = recipe.parallelism
        if parallel.disaggregated is not None:
            raise ConfigurationError(
                "parallelism.disaggregated: one SGLang server cannot split prefill and decode; use engine.kind "
                "'dynamo' with dynamo.backend 'sglang'"
            )
        if model_dir is None:
            raise ConfigurationError(f"model.source: {recipe.model.source.kind!r} needs a model directory for SGLang")
        argv = [
            str(python), "-m", "sglang.launch_server",
            "--model-path", str(model_dir),
            "--served-model-name", recipe.model.name,
            "--host", "127.0.0.1",
            "--port", str(port),
            "--context-length", str(recipe.engine.max_model_len),
            *parallel_args(parallel, "parallelism"),
            *precision_args(recipe),
            *tuning_args(recipe),
            "--enable-metrics",  # Prometheus /metrics (sglang:cached_tokens_total, prompt_tokens_total, ...)
        ]  # fmt: skip
        argv += self.methodology_flags(recipe)
        argv += recipe.engine.extra_args
        return LaunchPlan(
            argv=argv,
            env=methodology_env(recipe, speculative_env(recipe.methodology.speculative_decoding)),
            port=port,
            served_model=recipe.model.name,
            model_dir=model_dir,
            image=container_image(recipe),
        )
