"""Engine command lines: the catalogue's rendered commands are pinned by golden files, and each adapter turns
the typed recipe fields into its engine's flags or refuses, naming the field and the value.

Golden files live in tests/golden/engine_commands/<recipe name>.txt. After an intended change, rewrite them
with `INFERSWEEP_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/runners/engines/test_commands.py` and
review the diff (docs/RECIPES.md).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from recipes.errors import ConfigurationError
from recipes.loader import load_recipe, recipe_files_in
from recipes.schema import Recipe
from runners.engines.base import LaunchPlan
from runners.engines.registry import engine_adapter
from runners.engines.render import render_command_lines

ROOT = Path(__file__).resolve().parents[4]
CATALOGUE = ROOT / "recipes" / "catalogue"
GOLDEN = ROOT / "tests" / "golden" / "engine_commands"
UPDATE = os.environ.get("INFERSWEEP_UPDATE_GOLDEN") == "1"
CATALOGUE_FILES = recipe_files_in(CATALOGUE)


# --- golden files ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", CATALOGUE_FILES, ids=[path.stem for path in CATALOGUE_FILES])
def test_catalogue_command_lines_match_golden_files(path: Path) -> None:
    recipe = load_recipe(path).recipe
    rendered = "\n".join(render_command_lines(recipe)) + "\n"
    golden = GOLDEN / f"{recipe.name}.txt"
    if UPDATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(rendered)
    assert golden.is_file(), f"no golden file {golden}; create it with INFERSWEEP_UPDATE_GOLDEN=1"
    assert rendered == golden.read_text(), (
        f"{path}: rendered command lines differ from {golden}; if the change is intended, rerun with "
        "INFERSWEEP_UPDATE_GOLDEN=1 and review the diff"
    )


def test_every_golden_file_belongs_to_a_catalogue_recipe() -> None:
    names = {load_recipe(path).name for path in CATALOGUE_FILES}
    orphans = sorted(golden.stem for golden in GOLDEN.glob("*.txt") if golden.stem not in names)
    assert not orphans, f"golden files without a catalogue recipe (delete them): {orphans}"


def test_rendering_uses_placeholders_not_host_values() -> None:
    lines = render_command_lines(load_recipe(ROOT / "recipes/local/tiny-llama-cpu.yaml").recipe)
    command = lines[-1]
    assert "--model {model_dir}" in command and "--port {port}" in command
    assert command.split(" python3 ", 1)[0].startswith("env ")  # environment first, through env(1)


# --- recipes built in code (schema-valid; the loader's methodology rules are not the adapters' concern) ----


BASE: dict[str, Any] = {
    "name": "adapter-test",
    "hardware": "b200",
    "model": {"name": "deepseek-r1", "source": {"kind": "hub", "repo": "deepseek-ai/DeepSeek-R1-0528"}},
    "engine": {"kind": "sglang", "environment": {"kind": "container", "image": "img:1"}, "max_model_len": 10240},
    "precision": "fp8",
    "parallelism": {"tp": 8, "ep": 8},
    "methodology": {"prefix_caching": True},
    "runner": {"kind": "ssh"},
    "workload": {"kind": "agentic-replay", "trace": "trace.json", "concurrency": [4], "duration_s": 60},
}


def make(**changes: Any) -> Recipe:
    """BASE with top-level sections replaced; `engine` and `methodology` changes are merged into BASE's."""
    data = copy.deepcopy(BASE)
    for key, value in changes.items():
        if key in ("engine", "methodology"):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return Recipe.model_validate(data)


def argv_of(recipe: Recipe) -> list[str]:
    return engine_adapter(recipe.engine.kind).launch_plan(recipe, 8000, Path("python3"), Path("/m")).argv


def value_after(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


# --- sglang ----------------------------------------------------------------------------------------


def test_sglang_prefix_caching_on_keeps_the_radix_cache_and_off_disables_it() -> None:
    assert "--disable-radix-cache" not in argv_of(make())
    assert "--disable-radix-cache" in argv_of(make(methodology={"prefix_caching": False}))


def test_sglang_dp_attention_makes_tp_the_world_and_dp_split_it() -> None:
    argv = argv_of(make(parallelism={"tp": 1, "dp": 8, "ep": 8, "dp_attention": True}))
    assert value_after(argv, "--tp-size") == "8" and value_after(argv, "--dp-size") == "8"
    assert "--enable-dp-attention" in argv and value_after(argv, "--ep-size") == "8"


def test_sglang_dram_tier_is_hicache_per_rank_in_decimal_gb() -> None:
    argv = argv_of(make(methodology={"kv_offload": {"backend": "dram", "dram_gib": 1024}}))
    assert "--enable-hierarchical-cache" in argv
    assert value_after(argv, "--hicache-size") == str(int(1024 * 2**30 / 1e9 / 8))  # 137 GB on each of 8 ranks


def test_sglang_dram_tier_of_a_linear_attention_model_is_split_over_two_host_pools() -> None:
    # InferenceX's Qwen3.5 AgentX sizing on an H200 node: 1,234 GB over TP8 and two host pools (KV, Mamba) = 77 GB.
    offload = {"prefix_caching": True, "kv_offload": {"backend": "dram", "dram_gib": 1234e9 / 2**30}}
    qwen = {"name": "qwen3.5-397b-a17b", "source": {"kind": "hub", "repo": "Qwen/Qwen3.5-397B-A17B-FP8"}}
    assert value_after(argv_of(make(model=qwen, methodology=offload)), "--hicache-size") == "77"
    assert value_after(argv_of(make(methodology=offload)), "--hicache-size") == "154"  # DeepSeek-R1: one pool


def test_sglang_typed_tuning_fields_become_flags() -> None:
    engine = {
        "kv_cache_dtype": "fp8",
        "max_num_seqs": 256,
        "gpu_memory_utilization": 0.85,
        "max_num_batched_tokens": 8192,
    }
    argv = argv_of(make(engine=engine))
    assert value_after(argv, "--kv-cache-dtype") == "fp8_e4m3"
    assert value_after(argv, "--max-running-requests") == "256"
    assert value_after(argv, "--mem-fraction-static") == "0.85"
    assert value_after(argv, "--chunked-prefill-size") == "8192"


def test_sglang_speculative_mtp_is_an_eagle_chain() -> None:
    spec = {"method": "mtp", "num_speculative_tokens": 3, "golden_acceptance_length": 2.5}
    argv = argv_of(make(methodology={"speculative_decoding": spec}))
    assert value_after(argv, "--speculative-algorithm") == "EAGLE"
    assert value_after(argv, "--speculative-num-steps") == "3"
    assert value_after(argv, "--speculative-num-draft-tokens") == "4"


def test_pinned_acceptance_is_each_engines_own_setting_and_engine_env_cannot_contradict_it() -> None:
    spec = {"method": "mtp", "num_speculative_tokens": 3, "golden_acceptance_length": 3.39}
    sglang_env = engine_adapter("sglang").launch_plan(make(methodology={"speculative_decoding": spec}), 8000,
                                                      Path("python3"), Path("/m")).env  # fmt: skip
    assert {name: sglang_env[name] for name in sglang_env if name.startswith("SGLANG_SIMULATE_ACC")} == {
        "SGLANG_SIMULATE_ACC_LEN": "3.39", "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
        "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token",
    }  # fmt: skip
    trt_recipe = trtllm(methodology={"speculative_decoding": {**spec, "golden_acceptance_length": 2.78}})
    trt_env = engine_adapter("trtllm").launch_plan(trt_recipe, 8000, Path("python3"), Path("/m")).env
    assert trt_env["TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"] == "1.78"  # accepted drafts: the length minus one
    dynamo_plan = plan_of(dynamo("sglang", methodology={"speculative_decoding": spec}))
    assert all(p.env["SGLANG_SIMULATE_ACC_LEN"] == "3.39" for p in dynamo_plan.processes if p.role == "decode")
    contradicting = make(engine={"env": {"SGLANG_SIMULATE_ACC_LEN": "4.0"}}, methodology={"speculative_decoding": spec})
    with pytest.raises(ConfigurationError, match=r"engine\.env\.SGLANG_SIMULATE_ACC_LEN: got '4\.0'; the methodology"):
        argv_of(contradicting)


@pytest.mark.parametrize("routing", ["kv-aware", "session-affinity"])
def test_sglang_refuses_prefix_aware_routing_naming_field_and_value(routing: str) -> None:
    recipe = make(methodology={"routing": {"kind": routing}})
    with pytest.raises(ConfigurationError, match=rf"methodology\.routing\.kind: got '{routing}'"):
        argv_of(recipe)


def test_sglang_refuses_int8_precision() -> None:
    with pytest.raises(ConfigurationError, match=r"precision: got 'int8'"):
        argv_of(make(precision="int8"))


# --- trtllm ----------------------------------------------------------------------------------------


def trtllm(**changes: Any) -> Recipe:
    return make(engine={"kind": "trtllm", **changes.pop("engine", {})}, **changes)


def options_of(recipe: Recipe) -> dict[str, Any]:
    plan = engine_adapter("trtllm").launch_plan(recipe, 8000, Path("python3"), Path("/m"))
    assert value_after(plan.argv, "--extra_llm_api_options") in plan.files
    return yaml.safe_load(plan.files[value_after(plan.argv, "--extra_llm_api_options")])


def test_every_option_a_typed_field_writes_is_refused_as_a_free_option() -> None:
    # engine.llm_api_options may not set what a typed field, the methodology or the parallelism writes: every entry
    # the adapter writes with every knob set must be one the refusal list names (or lie under one), so a typed option
    # added to llm_api_options() without its refusal fails here.
    from runners.engines import trtllm as adapter

    everything = trtllm(
        precision="bf16",
        engine={"kv_cache_dtype": "fp8", "max_num_seqs": 64, "gpu_memory_utilization": 0.9, "chunked_prefill": True,
                "max_num_batched_tokens": 16384, "attention_backend": "TRTLLM", "cuda_graph_max_batch_size": 64,
                "stream_interval": 10},
        parallelism={"tp": 1, "dp": 8, "ep": 8, "dp_attention": True},
        methodology={"prefix_caching": True, "kv_offload": {"backend": "dram", "dram_gib": 64},
                     "speculative_decoding": {"method": "mtp", "num_speculative_tokens": 3,
                                              "golden_acceptance_length": 2.5}},
    )  # fmt: skip
    written = adapter.llm_api_options(everything, everything.parallelism, "parallelism")

    def paths(table: dict[str, Any], prefix: str = "") -> list[str]:
        return [p for key, value in table.items()
                for p in (paths(value, f"{prefix}{key}.") if isinstance(value, dict) else [f"{prefix}{key}"])]  # fmt: skip

    def refused(path: str) -> bool:
        parts = path.split(".")
        return any(".".join(parts[:end]) in adapter._TYPED_OPTIONS for end in range(1, len(parts) + 1))

    unguarded = [path for path in paths(written) if not refused(path)]
    assert not unguarded, f"typed options engine.llm_api_options could override: {unguarded}"
    assert len(paths(written)) >= 15  # every knob above wrote its entry


def test_trtllm_prefix_caching_is_block_reuse_in_the_options_file() -> None:
    assert options_of(trtllm())["kv_cache_config"]["enable_block_reuse"] is True
    assert options_of(trtllm(methodology={"prefix_caching": False}))["kv_cache_config"]["enable_block_reuse"] is False


def test_trtllm_attention_dp_and_dram_tier() -> None:
    recipe = trtllm(
        parallelism={"tp": 1, "dp": 8, "ep": 8, "dp_attention": True},
        methodology={"kv_offload": {"backend": "dram", "dram_gib": 64}},
    )
    argv = argv_of(recipe)
    assert value_after(argv, "--tp_size") == "8" and value_after(argv, "--ep_size") == "8"
    options = options_of(recipe)
    assert options["enable_attention_dp"] is True
    assert options["kv_cache_config"]["host_cache_size"] == 64 * 2**30 // 8


def test_trtllm_speculative_mtp_and_refused_eagle() -> None:
    mtp = {"method": "mtp", "num_speculative_tokens": 3, "golden_acceptance_length": 2.5}
    config = options_of(trtllm(methodology={"speculative_decoding": mtp}))["speculative_config"]
    assert config == {"decoding_type": "MTP", "num_nextn_predict_layers": 3}
    eagle = {**mtp, "method": "eagle", "draft_model": "org/draft"}
    with pytest.raises(ConfigurationError, match=r"methodology\.speculative_decoding\.method: got 'eagle'"):
        argv_of(trtllm(methodology={"speculative_decoding": eagle}))


def test_trtllm_refuses_data_parallel_replicas_without_attention_dp() -> None:
    with pytest.raises(ConfigurationError, match=r"parallelism\.dp: got 2 without parallelism\.dp_attention"):
        argv_of(trtllm(parallelism={"tp": 4, "dp": 2}))


# --- dynamo ----------------------------------------------------------------------------------------

DISAGGREGATED = {
    "disaggregated": {
        "prefill": {"num_workers": 2, "tp": 4, "ep": 4},
        "decode": {"num_workers": 1, "tp": 1, "dp": 16, "ep": 16, "dp_attention": True},
    }
}


def dynamo(backend: str, **changes: Any) -> Recipe:
    engine = {"kind": "dynamo", "dynamo": {"backend": backend}, **changes.pop("engine", {})}
    changes.setdefault("parallelism", DISAGGREGATED)
    changes.setdefault("hardware", "gb300-nvl72")
    return make(
        engine=engine, methodology={"routing": {"kind": "kv-aware"}, **changes.pop("methodology", {})}, **changes
    )


def plan_of(recipe: Recipe) -> LaunchPlan:
    return engine_adapter("dynamo").launch_plan(recipe, 8000, Path("python3"), Path("/m"))


def test_dynamo_disaggregated_plan_is_frontend_prefill_and_decode_with_kv_router_and_nixl() -> None:
    plan = plan_of(dynamo("sglang"))
    names = [process.name for process in plan.processes]
    assert names == ["etcd-0", "nats-0", "frontend-0", "prefill-0", "prefill-1", "decode-0"]
    frontend = plan.processes[2]
    assert plan.argv == frontend.argv and frontend.argv[:3] == ["python3", "-m", "dynamo.frontend"]
    assert value_after(frontend.argv, "--router-mode") == "kv" and value_after(frontend.argv, "--http-port") == "8000"
    assert (plan.health_path, plan.ready_model) == ("/v1/models", "deepseek-r1")
    prefill, decode = plan.processes[3], plan.processes[5]
    assert prefill.argv[:3] == ["python3", "-m", "dynamo.sglang"] and prefill.accelerators == 4
    assert value_after(prefill.argv, "--disaggregation-mode") == "prefill"
    assert value_after(decode.argv, "--disaggregation-mode") == "decode"
    assert value_after(decode.argv, "--disaggregation-transfer-backend") == "nixl"
    assert decode.nodes == 4 and value_after(decode.argv, "--node-rank") == "{node_rank}"  # 16 GPUs, 4 per tray
    ports = {json.loads(value_after(p.argv, "--kv-events-config"))["endpoint"] for p in plan.processes[3:]}
    assert len(ports) == 3  # one KV-event publisher per worker


def test_dynamo_per_role_settings_reach_only_that_roles_workers() -> None:
    engine = {
        "gpu_memory_utilization": 0.9, "extra_args": ["--trust-remote-code"], "env": {"SHARED": "1", "OVER": "engine"},
        "per_role": {
            "prefill": {"gpu_memory_utilization": 0.95, "extra_args": ["--disable-cuda-graph"]},
            "decode": {"cuda_graph_max_batch_size": 512, "env": {"OVER": "decode", "DECODE_ONLY": "1"}},
        },
    }  # fmt: skip
    plan = plan_of(dynamo("sglang", engine=engine))
    prefill, decode = plan.processes[3], plan.processes[5]
    assert value_after(prefill.argv, "--mem-fraction-static") == "0.95"
    assert value_after(decode.argv, "--mem-fraction-static") == "0.9"  # the engine's, not the other role's
    assert "--cuda-graph-max-bs" not in prefill.argv and value_after(decode.argv, "--cuda-graph-max-bs") == "512"
    # extra_args: the engine's on every worker, the role's after them and only there
    assert prefill.argv[-2:] == ["--trust-remote-code", "--disable-cuda-graph"]
    assert decode.argv[-1] == "--trust-remote-code" and "--disable-cuda-graph" not in decode.argv
    assert (prefill.env["SHARED"], prefill.env["OVER"], "DECODE_ONLY" in prefill.env) == ("1", "engine", False)
    assert (decode.env["SHARED"], decode.env["OVER"], decode.env["DECODE_ONLY"]) == ("1", "decode", "1")


def test_per_role_settings_are_checked_as_an_engine_of_their_own() -> None:
    with pytest.raises(ValidationError, match=r"engine\.per_role\.decode: got max_num_tokens"):
        dynamo("sglang", engine={"per_role": {"decode": {"max_num_tokens": 8}}})
    with pytest.raises(ValidationError, match=r"engine\.per_role\.prefill: gpu_memory_utilization: Input should be"):
        dynamo("sglang", engine={"per_role": {"prefill": {"gpu_memory_utilization": 1.5}}})
    with pytest.raises(ValidationError, match=r"credential"):
        dynamo("sglang", engine={"per_role": {"prefill": {"env": {"HF_TOKEN": "x"}}}})


def test_an_adapter_that_runs_no_roles_refuses_per_role_settings() -> None:
    recipe = make(engine={"kind": "sglang", "environment": {"kind": "container", "image": "lmsysorg/sglang:v0.5.12"}})
    engine = recipe.engine.model_copy(update={"per_role": {"decode": {"max_num_seqs": 8}}})
    with pytest.raises(ConfigurationError, match=r"engine\.per_role: got 'decode'; the sglang adapter does not"):
        argv_of(recipe.model_copy(update={"engine": engine}))


def test_dynamo_vllm_workers_use_the_nixl_connector_and_trtllm_the_nixl_transceiver() -> None:
    single_host = {"disaggregated": {"prefill": {"tp": 4}, "decode": {"tp": 4}}}
    vllm = plan_of(dynamo("vllm", parallelism=single_host))
    prefill = vllm.processes[3]
    assert prefill.argv[:3] == ["python3", "-m", "dynamo.vllm"]
    assert json.loads(value_after(prefill.argv, "--kv-transfer-config"))["kv_connector"] == "NixlConnector"
    assert json.loads(value_after(prefill.argv, "--kv-events-config"))["enable_kv_cache_events"] is True
    trt = plan_of(dynamo("trtllm", parallelism=single_host))
    decode = trt.processes[4]
    options = yaml.safe_load(decode.files[value_after(decode.argv, "--extra-engine-args")])
    assert options["cache_transceiver_config"] == {"backend": "NIXL"}
    assert options["kv_cache_config"]["enable_block_reuse"] is True
    assert "--publish-events-and-metrics" in decode.argv


def test_dynamo_refuses_mooncake_for_vllm_workers() -> None:
    parallelism = {"disaggregated": {"prefill": {"tp": 4}, "decode": {"tp": 4}, "kv_transfer": "mooncake"}}
    with pytest.raises(ConfigurationError, match=r"parallelism\.disaggregated\.kv_transfer: got 'mooncake'"):
        plan_of(dynamo("vllm", parallelism=parallelism))


def test_dynamo_kv_router_needs_prefix_caching() -> None:
    with pytest.raises(ConfigurationError, match=r"methodology\.routing\.kind: got 'kv-aware'"):
        plan_of(dynamo("sglang", methodology={"prefix_caching": False}))


def test_dynamo_aggregated_replicas_are_separate_workers() -> None:
    recipe = dynamo("sglang", hardware="b200", parallelism={"tp": 2, "dp": 4})
    workers = [process for process in plan_of(recipe).processes if process.role == "worker"]
    assert len(workers) == 4 and all(value_after(w.argv, "--tp-size") == "2" for w in workers)
    assert all("--disaggregation-mode" not in w.argv for w in workers)


MOCKER_PAIR = {"disaggregated": {"prefill": {"tp": 1}, "decode": {"tp": 1}}}


def mocker(**changes: Any) -> Recipe:
    changes.setdefault("engine", {"dynamo": {"backend": "mocker", "discovery": "file"}})
    changes.setdefault("methodology", {"prefix_caching": False, "routing": {"kind": "round-robin"}})
    return dynamo("mocker", hardware="cpu-local", parallelism=MOCKER_PAIR, **changes)


def test_dynamo_mocker_with_file_discovery_starts_no_etcd_or_nats_and_is_simulated() -> None:
    recipe = mocker()
    plan = plan_of(recipe)
    assert [process.name for process in plan.processes] == ["frontend-0", "prefill-0", "decode-0"]
    for process in plan.processes:
        planes = process.argv[process.argv.index("--discovery-backend") :][:6]
        assert planes == ["--discovery-backend", "file", "--request-plane", "tcp", "--event-plane", "zmq"]
        assert process.env["DYN_FILE_KV"] == "dynamo-discovery"  # relative: one store per job directory
    prefill, decode = plan.processes[1:]
    assert prefill.argv[:3] == ["python3", "-m", "dynamo.mocker"] and value_after(prefill.argv, "--model-path") == "/m"
    assert value_after(prefill.argv, "--disaggregation-mode") == "prefill"
    assert value_after(decode.argv, "--disaggregation-mode") == "decode"
    assert "--no-enable-prefix-caching" in decode.argv and "--kv-events-config" not in decode.argv
    assert plan.ready_workers == 2 and plan.ready_model == recipe.model.name
    adapter = engine_adapter("dynamo")
    assert adapter.origin_of(recipe) == "simulated" and not adapter.uses_accelerators(recipe)
    assert adapter.origin_of(dynamo("sglang")) == "measured"
    # etcd discovery (the default) keeps the etcd and NATS processes in front of the workers.
    etcd = plan_of(mocker(engine={"dynamo": {"backend": "mocker"}}))
    assert [process.name for process in etcd.processes][:2] == ["etcd-0", "nats-0"]


def test_dynamo_mocker_refuses_what_it_does_not_simulate() -> None:
    offload = {"prefix_caching": True, "routing": {"kind": "round-robin"},
               "kv_offload": {"backend": "dram", "dram_gib": 4}}  # fmt: skip
    with pytest.raises(ConfigurationError, match=r"methodology\.kv_offload\.backend: got 'dram'; the dynamo adapter"):
        plan_of(mocker(methodology=offload))
    assert value_after(plan_of(mocker(engine={"dynamo": {"backend": "mocker"}, "max_num_seqs": 8})).processes[-1].argv,
                       "--max-num-seqs") == "8"  # fmt: skip


def test_dynamo_settings_are_required_for_dynamo_and_refused_elsewhere() -> None:
    data = copy.deepcopy(BASE)
    data["engine"]["kind"] = "dynamo"
    with pytest.raises(ValueError, match=r"engine\.kind 'dynamo' needs engine\.dynamo\.backend"):
        Recipe.model_validate(data)
    data["engine"].update(kind="sglang", dynamo={"backend": "vllm"})
    with pytest.raises(ValueError, match=r"engine\.dynamo is only allowed"):
        Recipe.model_validate(data)


# --- vllm-tpu and the field guard ------------------------------------------------------------------


def tpu(**changes: Any) -> Recipe:
    engine = {"kind": "vllm-tpu", **changes.pop("engine", {})}
    changes.setdefault("parallelism", {"tp": 4})
    return make(engine=engine, hardware="tpu-v7", precision="bf16", **changes)


def test_vllm_tpu_counts_chips_in_the_recipe_and_tensorcores_on_the_command_line() -> None:
    argv = argv_of(tpu())
    assert argv[:3] == ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    assert value_after(argv, "--tensor-parallel-size") == "8"  # 4 TPU7x chips x 2 TensorCores
    assert "--enable-prefix-caching" in argv and value_after(argv, "--dtype") == "bfloat16"


def test_vllm_tpu_attention_data_parallel_makes_each_tensorcore_a_rank() -> None:
    argv = argv_of(tpu(parallelism={"tp": 1, "dp": 4, "ep": 4, "dp_attention": True}))
    assert value_after(argv, "--tensor-parallel-size") == "1" and value_after(argv, "--data-parallel-size") == "8"
    assert "--enable-expert-parallel" in argv
    with pytest.raises(ConfigurationError, match=r"parallelism\.tp: got 2 with parallelism\.dp_attention"):
        argv_of(tpu(parallelism={"tp": 2, "dp": 2, "dp_attention": True}))


def test_vllm_tpu_refuses_a_dram_tier_and_gpu_hardware() -> None:
    with pytest.raises(ConfigurationError, match=r"methodology\.kv_offload\.backend: got 'dram'"):
        argv_of(tpu(methodology={"kv_offload": {"backend": "dram", "dram_gib": 64}}))
    with pytest.raises(ConfigurationError, match=r"hardware: got 'b200'"):
        argv_of(make(engine={"kind": "vllm-tpu"}, precision="bf16"))


def test_an_adapter_never_ignores_a_typed_field_it_does_not_map() -> None:
    simulated = {"kind": "simulated", "environment": {"kind": "project"}, "kv_cache_dtype": "fp8"}
    with pytest.raises(ConfigurationError, match=r"engine\.kv_cache_dtype: got 'fp8'; the simulated adapter"):
        argv_of(make(engine=simulated))
    # vLLM maps the tuning fields (the GPU and TPU adapters share the mapping).
    argv = argv_of(make(engine={"kind": "vllm", "kv_cache_dtype": "fp8", "max_num_seqs": 64}))
    assert value_after(argv, "--kv-cache-dtype") == "fp8" and value_after(argv, "--max-num-seqs") == "64"


KERNEL_KNOBS = {"attention_backend": "trtllm_mla", "cuda_graph_max_batch_size": 128, "stream_interval": 30}


def test_kernel_knobs_become_each_engines_own_flags() -> None:
    sglang = argv_of(make(engine=KERNEL_KNOBS))
    assert value_after(sglang, "--attention-backend") == "trtllm_mla"
    assert value_after(sglang, "--cuda-graph-max-bs") == "128" and value_after(sglang, "--stream-interval") == "30"
    vllm = argv_of(make(engine={"kind": "vllm", **KERNEL_KNOBS, "attention_backend": "FLASHINFER"}))
    assert value_after(vllm, "--attention-backend") == "FLASHINFER"
    assert value_after(vllm, "--max-cudagraph-capture-size") == "128" and value_after(vllm, "--stream-interval") == "30"
    options = options_of(trtllm(engine={**KERNEL_KNOBS, "attention_backend": "TRTLLM"}))
    assert options["attn_backend"] == "TRTLLM" and options["stream_interval"] == 30
    assert options["cuda_graph_config"] == {"max_batch_size": 128}
    # Left out when unset: the engine's own default applies.
    assert "--attention-backend" not in argv_of(make()) and "cuda_graph_config" not in options_of(trtllm())


def test_the_dram_tier_connector_is_vllms_choice_and_refused_elsewhere() -> None:
    connector = {
        "prefix_caching": True,
        "kv_offload": {"backend": "dram", "dram_gib": 64, "connector": "simple-cpu-offload"},
    }
    plan = engine_adapter("vllm").launch_plan(make(engine={"kind": "vllm"}, methodology=connector), 8000,
                                              Path("python3"), Path("/m"))  # fmt: skip
    config = json.loads(value_after(plan.argv, "--kv-transfer-config"))
    assert config["kv_connector"] == "SimpleCPUOffloadConnector" and "--kv-offloading-backend" not in plan.argv
    assert config["kv_connector_extra_config"]["cpu_bytes_to_use_per_rank"] == 64 * 2**30 // 8  # BASE: tp 8
    assert plan.env["PYTHONHASHSEED"] == "42"
    native = argv_of(
        make(engine={"kind": "vllm"}, methodology={**connector, "kv_offload": {"backend": "dram", "dram_gib": 64}})
    )
    assert value_after(native, "--kv-offloading-backend") == "native" and "--kv-transfer-config" not in native
    with pytest.raises(
        ConfigurationError, match=r"methodology\.kv_offload\.connector: got 'simple-cpu-offload'; the sglang"
    ):
        argv_of(make(methodology=connector))
    with pytest.raises(ValueError, match=r"kv_offload\.connector"):
        make(methodology={"kv_offload": {"backend": "none", "connector": "simple-cpu-offload"}})


def test_vllm_tpu_refuses_a_cuda_graph_size_and_the_schema_refuses_a_flag_as_a_backend_name() -> None:
    with pytest.raises(ConfigurationError, match=r"engine\.cuda_graph_max_batch_size: got 64"):
        argv_of(tpu(engine={"cuda_graph_max_batch_size": 64}))
    with pytest.raises(ValueError, match="attention_backend"):
        make(engine={"attention_backend": "aiter --trust-remote-code"})


def test_new_engine_fields_at_their_defaults_leave_the_dump_and_so_the_fingerprint_alone() -> None:
    dumped = make().model_dump(mode="json")
    assert not {"kv_cache_dtype", "max_num_seqs", "gpu_memory_utilization", "dynamo"} & set(dumped["engine"])
    assert "kv_transfer" not in dynamo("sglang").model_dump(mode="json")["parallelism"]["disaggregated"]
    assert make(engine={"kv_cache_dtype": "fp8"}).model_dump()["engine"]["kv_cache_dtype"] == "fp8"


# Readiness by model list (a real HTTP server): tests/integration/runners/engines/test_readiness.py


# --- chunked prefill (engine.chunked_prefill): each engine's own switch ------------------------------


def test_chunked_prefill_is_each_engines_own_switch_and_absent_by_default() -> None:
    vllm = {"kind": "vllm", "environment": {"kind": "container", "image": "img:1"}}
    assert "--enable-chunked-prefill" in argv_of(make(engine={**vllm, "chunked_prefill": True}))
    assert "--no-enable-chunked-prefill" in argv_of(make(engine={**vllm, "chunked_prefill": False}))
    assert not any("chunked" in arg for arg in argv_of(make(engine=vllm)))
    # SGLang: -1 turns chunking off; its chunk size is the same flag, so the two together are refused.
    assert value_after(argv_of(make(engine={"chunked_prefill": False})), "--chunked-prefill-size") == "-1"
    with pytest.raises(
        ConfigurationError, match=r"engine\.max_num_batched_tokens: got 4096 with engine\.chunked_prefill"
    ):
        argv_of(make(engine={"chunked_prefill": False, "max_num_batched_tokens": 4096}))
    assert "--chunked-prefill-size" not in argv_of(make(engine={"chunked_prefill": True}))


def test_trtllm_limits_prompts_to_max_num_tokens_unless_it_chunks() -> None:
    trtllm = {"kind": "trtllm", "environment": {"kind": "container", "image": "img:1"}}
    adapter = engine_adapter("trtllm")
    default = adapter.prompt_limit(make(engine=trtllm))
    assert default is not None and (default.tokens, default.field) == (8192, "engine.max_num_batched_tokens")
    assert adapter.prompt_limit(make(engine={**trtllm, "max_num_batched_tokens": 32768})).tokens == 32768  # type: ignore[union-attr]
    assert adapter.prompt_limit(make(engine={**trtllm, "chunked_prefill": True})) is None
    # vLLM and SGLang chunk long prompts by default: no limit beyond the context length.
    assert engine_adapter("sglang").prompt_limit(make()) is None


def test_trtllm_free_options_merge_into_the_options_file_but_never_over_a_typed_setting() -> None:
    # InferenceX's B200 TensorRT-LLM script writes these beside the typed ones (moe backend, padded CUDA graphs).
    options = options_of(trtllm(engine={
        "cuda_graph_max_batch_size": 32, "kv_cache_dtype": "fp8",
        "llm_api_options": {"cuda_graph_config": {"enable_padding": True}, "moe_config": {"backend": "CUTLASS"},
                            "print_iter_log": True},
    }))  # fmt: skip
    assert options["cuda_graph_config"] == {"max_batch_size": 32, "enable_padding": True}
    assert options["moe_config"] == {"backend": "CUTLASS"} and options["print_iter_log"] is True
    assert options["kv_cache_config"]["dtype"] == "fp8"
    with pytest.raises(ConfigurationError, match=r"llm_api_options\.kv_cache_config\.enable_block_reuse: got False; "
                                                 r"set methodology\.prefix_caching instead"):  # fmt: skip
        options_of(trtllm(engine={"llm_api_options": {"kv_cache_config": {"enable_block_reuse": False}}}))
    with pytest.raises(ConfigurationError, match=r"llm_api_options\.speculative_config: .*methodology\.speculative"):
        options_of(trtllm(engine={"llm_api_options": {"speculative_config": {"decoding_type": "MTP"}}}))
    with pytest.raises(ConfigurationError, match=r"llm_api_options\.kv_cache_config: got 'x'; the adapter already"):
        options_of(trtllm(engine={"llm_api_options": {"kv_cache_config": "x"}}))
    with pytest.raises(ConfigurationError, match=r"engine\.llm_api_options: got \['print_iter_log'\]; the sglang"):
        argv_of(make(engine={"llm_api_options": {"print_iter_log": True}}))


def test_dynamo_kv_routing_binds_sessions_by_the_dynamo_session_header() -> None:
    adapter = engine_adapter("dynamo")
    kv = adapter.launch_plan(dynamo("sglang"), 8000, Path("python3"), Path("/m"))
    assert kv.session_headers == ("X-Session-ID", "X-Dynamo-Session-ID")
    assert kv.parent_session_headers == ("X-Dynamo-Parent-Session-ID",)
    plain = adapter.launch_plan(dynamo("sglang", methodology={"routing": {"kind": "round-robin"},
                                                              "prefix_caching": False}),
                                8000, Path("python3"), Path("/m"))  # fmt: skip
    assert plain.session_headers == ("X-Session-ID",) and plain.parent_session_headers == ()
    assert engine_adapter("vllm").launch_plan(make(engine={"kind": "vllm"}), 8000, Path("python3"),
                                              Path("/m")).session_headers == ("X-Session-ID",)  # fmt: skip
