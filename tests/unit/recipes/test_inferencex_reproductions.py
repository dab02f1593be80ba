"""Recipes that say they reproduce a public InferenceX configuration, checked against the public facts.

The facts are in tests/data/inferencex-configs/<key>.yaml, written down from InferenceX's own files at a pinned commit
(that folder's README says how). Each catalogue recipe whose `reference.reproduces.key` names one of them is matched
to the public arm with its parallelism, and its rendered engine command must carry every public flag with the public
value, every public environment variable, the public image, and the public workload. Nothing on the expected side
comes from our recipes or adapters.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from recipes.loader import load_recipe, recipe_files_in
from recipes.references import replace_references_section
from recipes.schema import AgenticReplayWorkload, FixedLengthWorkload, Recipe, agentx_differences
from runners.engines.base import LaunchPlan, ProcessSpec
from runners.engines.registry import engine_adapter

ROOT = Path(__file__).resolve().parents[3]
PUBLIC = ROOT / "tests" / "data" / "inferencex-configs"
CATALOGUE = ROOT / "recipes" / "catalogue"
PUBLIC_KEYS = sorted(path.stem for path in PUBLIC.glob("*.yaml"))

# SGLang declares several spellings of one option (ServerArgs.add_cli_args): the public scripts use the long
# ones, our adapter the short ones.
SGLANG_ALIASES = {
    "--tensor-parallel-size": "--tp-size", "--data-parallel-size": "--dp-size", "--expert-parallel-size": "--ep-size",
}  # fmt: skip
# Options our SGLang adapter leaves out when the recipe holds SGLang's own default: the public value must then
# be that default for the command to mean the same.
SGLANG_DEFAULTS = {
    "--data-parallel-size": "1", "--dp-size": "1", "--ep-size": "1", "--expert-parallel-size": "1",
}  # fmt: skip
# TensorRT-LLM options-file entries our adapter leaves out at TensorRT-LLM's own default.
TRTLLM_DEFAULTS = {"enable_attention_dp": False}
MISSING = object()


def at_level(public: Any, level: int) -> Any:
    """A public value for one concurrency: a value keyed by concurrency is the script's for it; "$CONC" is it."""
    if isinstance(public, dict):
        return public[level]
    return public.replace("$CONC", str(level)) if isinstance(public, str) else public


def dotted(options: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """An options file's entries as dotted paths (nested tables flattened)."""
    flat: dict[str, Any] = {}
    for key, value in options.items():
        if isinstance(value, dict):
            flat.update(dotted(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def public_facts(key: str) -> dict[str, Any]:
    return yaml.safe_load((PUBLIC / f"{key}.yaml").read_text())


def reproducing_recipes() -> list[Recipe]:
    recipes = [load_recipe(path).recipe for path in recipe_files_in(CATALOGUE)]
    return [r for r in recipes if r.reference is not None and r.reference.reproduces is not None]


def parse_argv(argv: list[str]) -> dict[str, str | None]:
    """`--flag value`, `--flag=value` and switches (None) of a command line."""
    flags: dict[str, str | None] = {}
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if not token.startswith("--"):
            continue
        if "=" in token:
            name, value = token.split("=", 1)
            flags[name] = value
        elif index < len(argv) and not argv[index].startswith("--"):
            flags[token] = argv[index]
            index += 1
        else:
            flags[token] = None
    return flags


def our_layout(recipe: Recipe) -> dict[str, Any]:
    """The recipe's parallelism in the public facts' terms: tp/ep/dp of one server, or per role of a disaggregated
    recipe InferenceX's worker count, tp (the whole tensor-parallel world of one worker), ep and dp-attn."""
    parallel = recipe.parallelism
    if parallel.disaggregated is None:
        return {"tp": parallel.tp, "ep": parallel.ep, "dp": parallel.dp}
    groups = {"prefill": parallel.disaggregated.prefill, "decode": parallel.disaggregated.decode}
    return {
        role: {"num-worker": group.num_workers, "tp": group.tp * group.dp if group.dp_attention else group.tp,
               "ep": group.ep, "dp-attn": group.dp_attention}
        for role, group in groups.items()
    }  # fmt: skip


def layout_key(parallelism: dict[str, Any]) -> str:
    return json.dumps(parallelism, sort_keys=True)


def arm_key(arm: dict[str, Any]) -> str:
    """An arm's identity: its layout, and its KV offloading where two arms share a layout (AgentX HBM and DRAM)."""
    return layout_key({**arm["parallelism"], "kv-offloading": arm.get("kv_offloading", "none")})


def public_arm(facts: dict[str, Any], recipe: Recipe) -> dict[str, Any]:
    ours = our_layout(recipe)
    offload = recipe.methodology.kv_offload.backend
    for arm in facts["arms"]:
        same_layout = all(ours.get(name) == value for name, value in arm["parallelism"].items())
        if same_layout and arm.get("kv_offloading", "none") == offload:
            return arm
    raise AssertionError(f"{recipe.name}: no arm of {facts['key']} has the parallelism {ours} and offload {offload}")


def launched_processes(plan: LaunchPlan, arm: dict[str, Any]) -> list[tuple[str, dict[str, Any], ProcessSpec]]:
    """(label, public role facts, our process) for every process the public arm describes: the one server, or
    each prefill and decode worker (every worker of a role carries that role's public flags)."""
    if "roles" not in arm:
        return [("server", arm, ProcessSpec(role="server", index=0, argv=plan.argv, env=plan.env, files=plan.files))]
    matched = [
        (process.name, arm["roles"][process.role], process)
        for process in plan.processes
        if process.role in arm["roles"]
    ]
    for role in arm["roles"]:
        assert any(process.role == role for _, _, process in matched), f"no {role} process in the plan"
    return matched


def differences(level: int, label: str, public: dict[str, Any], process: ProcessSpec, plumbing: list[str]) -> list[str]:
    """Where one of our processes departs from its public flags, environment and options file at one load level."""
    ours = parse_argv(process.argv)
    where = f"concurrency {level}, {label}"
    wrong = []
    for flag, public_flag in public["flags"].items():
        if flag in plumbing:
            continue
        public_value = at_level(public_flag, level)
        spelled = flag if flag in ours else SGLANG_ALIASES.get(flag, flag)
        if spelled not in ours:
            if SGLANG_DEFAULTS.get(flag) == public_value:
                continue
            wrong.append(f"{where}, {flag}: missing (public {public_value!r})")
        elif ours[spelled] != public_value:
            wrong.append(f"{where}, {flag}: ours {ours[spelled]!r}, public {public_value!r}")
    for name, public_value in public["env"].items():
        if process.env.get(name) != public_value:
            wrong.append(f"{where}, env {name}: ours {process.env.get(name)!r}, public {public_value!r}")
    if "options" in public:  # the options file of TensorRT-LLM (--extra_llm_api_options)
        written = dotted(yaml.safe_load(process.files[ours["--extra_llm_api_options"]]))
        for path, public_option in public["options"].items():
            public_value, mine = at_level(public_option, level), written.get(path, TRTLLM_DEFAULTS.get(path, MISSING))
            if mine is MISSING or mine != public_value or type(mine) is not type(public_value):
                shown = "missing" if mine is MISSING else repr(mine)
                wrong.append(f"{where}, option {path}: ours {shown}, public {public_value!r}")
    return wrong


def test_parse_argv_reads_both_spellings_and_switches() -> None:
    argv = ["python3", "-m", "x", "--a", "1", "--b=2", "--switch", "--neg", "-1"]
    assert parse_argv(argv) == {"--a": "1", "--b": "2", "--switch": None, "--neg": "-1"}


@pytest.mark.parametrize("key", PUBLIC_KEYS)
def test_every_public_key_has_a_reproducing_arm_for_each_of_its_arms(key: str) -> None:
    facts = public_facts(key)
    reproductions = [r for r in reproducing_recipes() if r.reference.reproduces.key == key]
    covered = {arm_key(public_arm(facts, r)) for r in reproductions}
    wanted = {arm_key(arm) for arm in facts["arms"]}
    assert covered == wanted, f"{key}: arms without a reproducing recipe: {sorted(wanted - covered)}"


REPRODUCTIONS = reproducing_recipes()


@pytest.mark.parametrize("recipe", REPRODUCTIONS, ids=[r.name for r in REPRODUCTIONS])
def test_reproducing_recipe_renders_every_public_flag_and_variable(recipe: Recipe) -> None:
    reference = recipe.reference.reproduces
    assert reference.key in PUBLIC_KEYS, f"{recipe.name}: no public facts for {reference.key} in {PUBLIC}"
    facts = public_facts(reference.key)
    assert (reference.repository, reference.commit, reference.file) == (
        facts["repository"],
        facts["commit"],
        facts["config"]["file"],
    )
    arm = public_arm(facts, recipe)
    wrong = []
    # Each load level as its engine is launched (engine.per_concurrency); "$CONC" in a public value is the level, as
    # the public scripts launch one server per concurrency.
    for level in arm["concurrency"]:
        launched = recipe.model_copy(update={"engine": recipe.engine.at_concurrency(level)})
        plan = engine_adapter(recipe.engine.kind).launch_plan(launched, 8000, Path("python3"), Path("/models/x"))
        for label, public, process in launched_processes(plan, arm):
            wrong += differences(level, label, public, process, facts["plumbing"])
    assert not wrong, f"{recipe.name} differs from {reference.key}: " + "; ".join(wrong)
    assert plan.image == facts["image"]
    assert recipe.precision == facts["precision"]
    assert recipe.model.source.repo == facts["model"]
    if "dynamo" in facts:  # the Dynamo release the public launch installs beside the engine image
        assert recipe.engine.version == facts["dynamo"]


@pytest.mark.parametrize("recipe", REPRODUCTIONS, ids=[r.name for r in REPRODUCTIONS])
def test_reproducing_recipe_measures_the_public_workload(recipe: Recipe) -> None:
    facts = public_facts(recipe.reference.reproduces.key)
    workload = recipe.workload
    public = facts["workload"]
    assert workload.concurrency == public_arm(facts, recipe)["concurrency"]
    if public.get("kind") == "agentic":  # an AgentX run: the replay settings are AgentX's, with the public window
        assert isinstance(workload, AgenticReplayWorkload)
        assert agentx_differences(workload.model_dump()) == []
        assert (workload.duration_s, workload.warmup_requests_per_lane) == (
            public["duration_s"],
            public["warmup_requests_per_lane"],
        )
        return
    assert isinstance(workload, FixedLengthWorkload)
    assert [(s.isl, s.osl) for s in workload.sequences] == [(public["isl"], public["osl"])]
    assert workload.range_ratio == public["range_ratio"]
    assert workload.prompts_per_concurrency == public["prompts_per_concurrency"]
    assert workload.warmup_per_concurrency == public["warmup_per_concurrency"]


def test_recipes_md_holds_the_current_references_table() -> None:
    document = (ROOT / "docs" / "RECIPES.md").read_text(encoding="utf-8")
    assert replace_references_section(document) == document, "run: python -m recipes.references --write docs/RECIPES.md"
    for recipe in REPRODUCTIONS:
        assert f"| `{recipe.name}` |" in document and recipe.reference.reproduces.key in document
