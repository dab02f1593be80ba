"""Engine adapters turn typed methodology fields into flags, and refuse what they cannot do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recipes.errors import ConfigurationError
from recipes.loader import load_recipe
from recipes.schema import Recipe
from runners.engines.registry import engine_adapter

VLLM = {"engine": {"kind": "vllm", "environment": {"kind": "venv", "name": "vllm-cpu"}, "simulated": None}}


def vllm_recipe(write_recipe, changes: dict | None = None):
    data = {**VLLM, **(changes or {})}
    path = write_recipe(data)
    text = path.read_text().replace("  simulated: null\n", "")
    path.write_text(text)
    return load_recipe(path).recipe


def test_vllm_argv_from_typed_fields(write_recipe) -> None:
    recipe = vllm_recipe(write_recipe, {"parallelism": {"tp": 2}})
    plan = engine_adapter("vllm").launch_plan(recipe, 8123, Path("/venv/bin/python"), Path("/models/tiny"))
    argv = plan.argv
    assert argv[:3] == ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    assert argv[argv.index("--port") + 1] == "8123"
    assert argv[argv.index("--tensor-parallel-size") + 1] == "2"
    assert argv[argv.index("--max-model-len") + 1] == "4096"
    assert argv[argv.index("--dtype") + 1] == "bfloat16"
    assert "--load-format" in argv and "--no-enable-prefix-caching" in argv
    assert "--enable-prefix-caching" not in argv
    assert plan.env["HF_HUB_OFFLINE"] == "1"


def test_vllm_speculative_and_offload_flags(write_recipe) -> None:
    spec = {
        "method": "eagle3",
        "num_speculative_tokens": 3,
        "draft_model": "org/draft",
        "golden_acceptance_length": 2.5,
    }
    loaded = vllm_recipe(write_recipe, {"methodology": {"speculative_decoding": spec}})
    # DRAM offload is only allowed on agentic workloads (a methodology rule); the adapter's flags do not
    # depend on the workload, so the schema-valid model is enough here.
    recipe = Recipe.model_validate(
        {**loaded.model_dump(), "methodology": {**loaded.methodology.model_dump(),
                                                "kv_offload": {"backend": "dram", "dram_gib": 64}}}
    )  # fmt: skip
    flags = engine_adapter("vllm").methodology_flags(recipe)
    config = json.loads(flags[flags.index("--speculative-config") + 1])
    # The golden acceptance length pins vLLM's synthetic rejection sampler (as InferenceX's vLLM AgentX scripts do).
    assert config == {
        "method": "eagle3", "num_speculative_tokens": 3, "model": "org/draft",
        "rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.5,
    }  # fmt: skip
    assert flags[flags.index("--kv-offloading-size") + 1] == "64"


def test_vllm_refuses_disaggregation(write_recipe) -> None:
    recipe = vllm_recipe(write_recipe, {"parallelism": {"disaggregated": {"prefill": {"tp": 2}, "decode": {"tp": 4}}}})
    assert recipe.parallelism.accelerators == 6
    with pytest.raises(ConfigurationError, match=r"parallelism\.disaggregated"):
        engine_adapter("vllm").launch_plan(recipe, 8000, Path("python"), Path("/m"))


def test_unknown_engine_kind_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match=r"engine\.kind: got 'tgi'"):
        engine_adapter("tgi")


def test_step_token_budget_for_the_planners_scheduler_model(write_recipe) -> None:
    vllm = engine_adapter("vllm")
    assert vllm.step_token_budget(vllm_recipe(write_recipe)) == 2048  # the base recipe runs on cpu-local
    on_b200 = vllm_recipe(write_recipe).model_copy(update={"hardware": "b200"})
    assert vllm.step_token_budget(on_b200) == 8192
    tuned = vllm_recipe(write_recipe, {"engine": {**VLLM["engine"], "max_num_batched_tokens": 512}})
    assert vllm.step_token_budget(tuned) == 512
    # The simulated engine's LRU never pins running requests: no scheduler model.
    assert engine_adapter("simulated").step_token_budget(load_recipe(write_recipe()).recipe) is None
