"""vLLM-TPU adapter: vLLM's OpenAI server on Google TPUs through the tpu-inference (JAX) backend.

Same command line as vLLM on GPUs (`python3 -m vllm.entrypoints.openai.api_server`, as the `vllm/vllm-tpu`
images run it), with TPU specifics:

- Accelerators are counted in chips (docs/ARCHITECTURE.md §4), but vLLM counts JAX devices. A TPU7x (Ironwood) chip
  has two TensorCores, each its own device, so one 4-chip host is `--tensor-parallel-size 8`: the
  recipe's `parallelism.tp` (chips) is multiplied by the devices per chip of its hardware. With
  `dp_attention` (tp 1, dp = chips) every device is an attention rank of its own: `--data-parallel-size 8`
  on 4 chips, with `--enable-expert-parallel` when ep is set (the experts spread over all ranks).
- The first start compiles XLA graphs for every batch shape: give `engine.startup_timeout_s` an hour.
- No host-DRAM KV tier, disaggregation or router is mapped (refused with the field named).

vLLM's flags (`vllm_server_argv`, `vllm_engine_args`, ...) come from the GPU adapter in vllm.py.
"""

from __future__ import annotations

from pathlib import Path

from recipes.errors import ConfigurationError
from recipes.hardware import load_hardware_registry
from recipes.schema import GeneratedModelSource, Recipe
from runners.engines.base import TUNING_FIELDS, EngineAdapter, LaunchPlan, container_image, register_engine
from runners.engines.vllm import vllm_engine_args, vllm_prefix_args, vllm_server_argv, vllm_speculative_args

# JAX devices per chip, by hardware key (TPU7x exposes each of its two TensorCores as a device).
DEVICES_PER_CHIP = {"tpu-v7": 2}
TPU_VENDOR = "Google"
_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


@register_engine
class VllmTpuAdapter(EngineAdapter):
    kind = "vllm-tpu"
    origin = "measured"
    # A TPU runs XLA graphs, compiled per padded batch size; there is no CUDA graph to size.
    honoured_fields = frozenset(TUNING_FIELDS) - {"cuda_graph_max_batch_size"}

    def methodology_flags(self, recipe: Recipe) -> list[str]:
        knobs = recipe.methodology
        if knobs.kv_offload.backend != "none":
            raise ConfigurationError(
                f"methodology.kv_offload.backend: got {knobs.kv_offload.backend!r}; the vllm-tpu adapter maps no "
                "host-DRAM KV tier (expected 'none')"
            )
        if knobs.routing.kind != "none":
            raise ConfigurationError(
                f"methodology.routing.kind: got {knobs.routing.kind!r}; a single vLLM-TPU server has no router"
            )
        return vllm_prefix_args(recipe) + vllm_speculative_args(knobs.speculative_decoding)

    def launch_plan(self, recipe: Recipe, port: int, python: Path, model_dir: Path | None) -> LaunchPlan:
        parallel = recipe.parallelism
        hardware = load_hardware_registry().get(recipe.hardware)
        if hardware is None or hardware.vendor != TPU_VENDOR:
            raise ConfigurationError(
                f"hardware: got {recipe.hardware!r}; the vllm-tpu engine runs on Google TPUs only (e.g. 'tpu-v7')"
            )
        if parallel.disaggregated is not None:
            raise ConfigurationError("parallelism.disaggregated: the vllm-tpu adapter serves one engine, not split")
        if parallel.dp_attention and parallel.tp != 1:
            raise ConfigurationError(
                f"parallelism.tp: got {parallel.tp} with parallelism.dp_attention; on vLLM-TPU each attention rank is "
                "one TensorCore, so set tp 1 and dp to the chips (e.g. tp 1, dp 4, ep 4 is DP8 + EP over 4 TPU7x chips)"
            )
        if parallel.pp > 1:
            raise ConfigurationError(f"parallelism.pp: got {parallel.pp}; vLLM-TPU serves without pipeline stages")
        if model_dir is None:
            raise ConfigurationError(f"model.source: {recipe.model.source.kind!r} needs a model directory for vLLM")
        if recipe.precision in _DTYPES:
            precision = ["--dtype", _DTYPES[recipe.precision]]
        elif recipe.precision == "fp8":
            precision = ["--quantization", "fp8"]
        else:
            raise ConfigurationError(
                f"precision: got {recipe.precision!r}; the vllm-tpu adapter maps bf16, fp16, fp32 and fp8"
            )
        devices = DEVICES_PER_CHIP.get(recipe.hardware, 1)
        if parallel.dp_attention:
            # Attention data-parallel over single devices (a TPU7x chip's two TensorCores are two ranks), with the
            # experts spread over all of them when ep is set: the public TPU v7 result's "DP8" on 4 chips.
            argv = vllm_server_argv(recipe, python, model_dir, port, tensor_parallel=1)
            argv += ["--data-parallel-size", str(parallel.dp * devices)]
        else:
            argv = vllm_server_argv(recipe, python, model_dir, port, tensor_parallel=parallel.tp * devices)
            if parallel.dp > 1:
                argv += ["--data-parallel-size", str(parallel.dp)]
        if parallel.ep > 1:
            argv += ["--enable-expert-parallel"]
        argv += precision + vllm_engine_args(recipe)
        if isinstance(recipe.model.source, GeneratedModelSource):
            argv += ["--load-format", "dummy"]
        argv += self.methodology_flags(recipe) + recipe.engine.extra_args
        env = {"HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", **recipe.engine.env}
        return LaunchPlan(
            argv=argv,
            env=env,
            port=port,
            served_model=recipe.model.name,
            model_dir=model_dir,
            image=container_image(recipe),
        )
