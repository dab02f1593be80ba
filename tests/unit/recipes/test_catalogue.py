"""Every YAML file under recipes/ is a valid recipe or a known registry file, and the catalogue covers the
configurations the project promises (docs/RECIPES.md)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from recipes.loader import REGISTRY_FILES, load_recipe, recipe_files_in
from recipes.schema import AgenticReplayWorkload, ContainerEnvironment, FixedLengthWorkload

ROOT = Path(__file__).resolve().parents[3]
RECIPES = ROOT / "recipes"
YAML_FILES = sorted(RECIPES.rglob("*.yaml"))
CATALOGUE = [load_recipe(path) for path in recipe_files_in(RECIPES / "catalogue")]


@pytest.mark.parametrize("path", YAML_FILES, ids=[str(path.relative_to(RECIPES)) for path in YAML_FILES])
def test_every_yaml_file_is_a_recipe_or_a_registry_file(path: Path) -> None:
    if path.name in REGISTRY_FILES:
        assert path.parent == RECIPES, f"{path}: registry files live at the top of recipes/, not in a subfolder"
        return
    load_recipe(path)  # an unknown kind of YAML file fails here, with the file and field named


def test_catalogue_recipes_pin_their_image_and_sit_in_their_hardware_folder() -> None:
    for item in CATALOGUE:
        recipe = item.recipe
        assert Path(item.path).parent.name == recipe.hardware, f"{item.path}: folder must be the hardware key"
        assert isinstance(recipe.engine.environment, ContainerEnvironment), f"{item.path}: expected an image"
        assert recipe.engine.version, f"{item.path}: engine.version records the engine release in the image"
        assert recipe.model.source.kind == "hub", f"{item.path}: catalogue models come from the hub"


def _by(attribute: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for item in CATALOGUE:
        recipe = item.recipe
        value = {"engine": recipe.engine.kind, "runner": recipe.runner.kind, "workload": recipe.workload.kind}
        found[recipe.hardware].add(value[attribute])
    return found


def test_catalogue_covers_the_promised_hardware_engines_and_runners() -> None:
    engines, runners, workloads = _by("engine"), _by("runner"), _by("workload")
    assert {"vllm", "sglang"} <= engines["b200"] and {"fixed-length", "agentic-replay"} <= workloads["b200"]
    assert engines["b300"] & {"vllm", "trtllm"}
    for nvl72 in ("gb300-nvl72", "vr200-nvl72"):
        assert engines[nvl72] == {"dynamo"} and runners[nvl72] == {"slurm"}
    assert engines["tpu-v7"] == {"vllm-tpu"} and runners["tpu-v7"] == {"tpu-vm"}
    assert engines["h200"] and engines["mi355x"]


def test_nvl72_recipes_are_disaggregated_and_agentic_ones_route_by_kv() -> None:
    # KV moves over NIXL, or Mooncake where the public recipe a layout follows uses it (DeepSeek-V4's GB300 AgentX arm).
    for item in CATALOGUE:
        recipe = item.recipe
        if recipe.hardware not in ("gb300-nvl72", "vr200-nvl72"):
            continue
        disaggregated = recipe.parallelism.disaggregated
        assert disaggregated is not None, item.path
        assert disaggregated.kv_transfer == "nixl" or recipe.model.name == "deepseek-v4-pro", item.path
        if isinstance(recipe.workload, AgenticReplayWorkload):
            assert recipe.methodology.routing.kind == "kv-aware", item.path


def test_agentic_recipes_come_in_hbm_and_dram_arms_with_prefix_caching() -> None:
    arms: dict[str, set[str]] = defaultdict(set)
    for item in CATALOGUE:
        recipe = item.recipe
        if isinstance(recipe.workload, FixedLengthWorkload):
            assert not recipe.methodology.prefix_caching, item.path
            continue
        assert recipe.methodology.prefix_caching, f"{item.path}: agentic replay measures prefix reuse"
        base, _, arm = recipe.name.rpartition("-")
        expected = {"hbm": "none", "dram": "dram"}
        assert expected.get(arm) == recipe.methodology.kv_offload.backend, f"{item.path}: name ends -hbm or -dram"
        arms[base].add(arm)
    assert arms and all(found == {"hbm", "dram"} for found in arms.values()), dict(arms)
