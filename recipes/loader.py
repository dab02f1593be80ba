"""Load recipe files: YAML -> strict `Recipe`, then the methodology rules, each error naming the field."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from recipes.errors import RecipeError
from recipes.hardware import load_hardware_registry
from recipes.rules import check_recipe
from recipes.schema import ACCURACY_QUESTION_SETS, AgenticReplayWorkload, Recipe, ReplaySettings
from recipes.yamlio import read_yaml, validation_problems


@dataclass(frozen=True)
class LoadedRecipe:
    """A validated recipe with where it came from and its identity."""

    recipe: Recipe
    path: str
    fingerprint: str

    @property
    def name(self) -> str:
        return self.recipe.name


def fingerprint_of(recipe: Recipe) -> str:
    """Hash of the normalised recipe (defaults filled in, keys sorted): same content, same identity.

    The `runner` section is left out: how a job reaches its machine, and its deadlines, do not change
    what is measured, so moving a recipe to another runner kind resumes rather than re-measures. So is
    `reference`: which public configuration a recipe cites changes nothing measured."""
    dumped = recipe.model_dump(mode="json", exclude={"runner", "reference"})
    if isinstance(recipe.workload, ReplaySettings):
        dumped["workload"] = ReplaySettings.identity_of(dumped["workload"])
    canonical = json.dumps(dumped, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def check_rules(recipe: Recipe, path: str) -> None:
    """Methodology and consistency rules that span several fields (recipes/rules.py, each named and
    documented in docs/METHODOLOGY.md); raise one RecipeError listing every problem."""
    check_recipe(recipe, path, load_hardware_registry())


def _resolve_paths(recipe: Recipe, base: Path) -> Recipe:
    """File references in a recipe are relative to the recipe's own directory."""
    workload = recipe.workload
    if isinstance(workload, AgenticReplayWorkload) and not Path(workload.trace).is_absolute():
        resolved = workload.model_copy(update={"trace": str((base / workload.trace).resolve())})
        recipe = recipe.model_copy(update={"workload": resolved})
    gate = recipe.methodology.accuracy_gate
    if gate.prompts not in ACCURACY_QUESTION_SETS and not Path(gate.prompts).is_absolute():
        # A question file (anything but a built-in set's name) is relative to the recipe file too.
        resolved_gate = gate.model_copy(update={"prompts": str((base / gate.prompts).resolve())})
        methodology = recipe.methodology.model_copy(update={"accuracy_gate": resolved_gate})
        recipe = recipe.model_copy(update={"methodology": methodology})
    return recipe


def parse_recipe(data: Any, path: str) -> LoadedRecipe:
    """Validate already-parsed YAML data (a mapping) as a recipe."""
    if not isinstance(data, dict):
        raise RecipeError(path, [("<root>", type(data).__name__, "expected a mapping of recipe fields")])
    try:
        recipe = Recipe.model_validate(data)
    except ValidationError as error:
        raise RecipeError(path, validation_problems(error, data)) from error
    # The identity is the recipe as written: a trace path resolved on this machine must not change it
    # (the trace's own content hash is part of every replay Point's identity instead).
    fingerprint = fingerprint_of(recipe)
    recipe = _resolve_paths(recipe, Path(path).parent)
    check_rules(recipe, path)
    return LoadedRecipe(recipe=recipe, path=path, fingerprint=fingerprint)


def load_recipe(path: str | Path) -> LoadedRecipe:
    """Read, validate and check one recipe file."""
    file = Path(path)
    return parse_recipe(read_yaml(file), str(file))


# Data files that live beside recipes but are not recipes.
REGISTRY_FILES = frozenset(
    {"hardware.yaml", "models.yaml", "prices.yaml", "slo_tiers.yaml", "CHANGES.yaml", "trusted_keys.yaml"}
)


def recipe_files_in(directory: Path) -> list[Path]:
    return sorted(path for path in directory.rglob("*.yaml") if path.name not in REGISTRY_FILES)


def load_recipes(paths: list[str | Path]) -> list[LoadedRecipe]:
    """Load several recipes (directories are searched for *.yaml); collect every file's errors."""
    files: list[Path] = []
    for entry in paths:
        candidate = Path(entry)
        files.extend(recipe_files_in(candidate) if candidate.is_dir() else [candidate])
    loaded: list[LoadedRecipe] = []
    failures: list[RecipeError] = []
    for file in files:
        try:
            loaded.append(load_recipe(file))
        except RecipeError as error:
            failures.append(error)
    if failures:
        if len(failures) == 1:
            raise failures[0]
        raise RecipeError(
            ", ".join(f.file for f in failures),
            [problem for failure in failures for problem in ((failure.file, "", str(failure)),)],
        )
    names = [item.name for item in loaded]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise RecipeError(", ".join(str(f) for f in files), [("name", duplicates, "recipe names must be unique")])
    return loaded
