"""The one strict pydantic base of the project's own formats.

Our files and messages (recipes, registries, the runner contract, result records) refuse an unknown key:
a typo must never be silently ignored. Formats of other tools are read with `extra="ignore"` where they
are parsed (orchestrator/importers/), never with these bases.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """Unknown keys are errors. Instances may be updated (result records are filled in as a Point runs)."""

    model_config = ConfigDict(extra="forbid")


class StrictModel(Strict):
    """A strict model whose instances never change: configuration read from files (recipes, registries)."""

    model_config = ConfigDict(frozen=True)
