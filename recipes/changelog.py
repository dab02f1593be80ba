"""Results changelog: what changed in the recipes, and when, so the hub can annotate its trends.

`recipes/CHANGES.yaml` is a list of entries, appended at the end. Each entry has the `date` of the change
(the day its pull request is written; maintainers correct it when merging much later),
the `recipes` it touched (by recipe name), a one-line `summary` and, when it came through a pull
request, its number (`pr`). A change that adds or removes a recipe, or changes its fingerprint (anything
but the `runner` section), needs an entry: `infersweep recipe changelog-check` enforces it in CI. The
file is append-only: entries already merged never change, so a date range always reads the same.

The hub reads it with `load_changelog()` and `changes_between()`: a jump in a trend between two sweeps
is shown next to the entries dated between them. Only pydantic, PyYAML and the standard library are
imported, like the other registries of `recipes/`.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from recipes.strict import StrictModel
from recipes.yamlio import load_validated

SCHEMA_VERSION = 1
FILE_NAME = "CHANGES.yaml"
DEFAULT_PATH = Path(__file__).with_name(FILE_NAME)

# The same pattern as recipes.schema.Recipe.name.
_RECIPE_NAME = r"^[a-z0-9][a-z0-9._-]*$"


class ChangelogEntry(StrictModel):
    """One change to the recipes, as the hub shows it next to the results it affects."""

    date: dt.date = Field(..., description="Day of the change (UTC), as YYYY-MM-DD: when its PR was written or merged.")
    recipes: list[str] = Field(
        ...,
        min_length=1,
        description="Names of the recipes the change adds, removes or changes (their `name`, not the file).",
    )
    summary: str = Field(
        ...,
        min_length=1,
        max_length=300,
        description="What changed and why, in one line, e.g. 'vLLM 0.11 -> 0.12; concurrency 256 added'.",
    )
    pr: int | None = Field(None, ge=1, description="Number of the pull request that made the change, if any.")

    @field_validator("recipes")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        bad = [name for name in value if not re.fullmatch(_RECIPE_NAME, name)]
        if bad:
            raise ValueError(f"recipe names are lowercase letters, digits, '.', '_' and '-': {bad}")
        if len(set(value)) != len(value):
            raise ValueError("each recipe is named once per entry")
        return value

    @field_validator("summary")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if "\n" in value.strip() or not value.strip():
            raise ValueError("the summary is one non-empty line")
        return value.strip()


class ChangelogFile(StrictModel):
    """The whole of `CHANGES.yaml`."""

    schema_version: Literal[1] = Field(..., description="Version of this file's schema; only 1 exists.")
    entries: list[ChangelogEntry] = Field(
        ...,
        description=(
            "Changes, appended at the end; merged entries never change. Readers sort by `date` (a change's"
            " entry is written before it merges, so the file's order is not guaranteed to be by date)."
        ),
    )


def load_changelog(path: Path | None = None) -> list[ChangelogEntry]:
    """Load and validate the changelog (entries in file order); `path` defaults to recipes/CHANGES.yaml."""
    return list(load_validated(Path(path) if path is not None else DEFAULT_PATH, ChangelogFile, "changelog").entries)


def changes_between(
    entries: list[ChangelogEntry], start: dt.date, end: dt.date, recipe: str | None = None
) -> list[ChangelogEntry]:
    """Entries dated in (start, end], by date, optionally only those naming `recipe`: what changed between two
    sweeps."""
    chosen = [entry for entry in entries if start < entry.date <= end and (recipe is None or recipe in entry.recipes)]
    return sorted(chosen, key=lambda entry: entry.date)
