"""Token-price table: what a model's tokens sell for, the revenue side of the profit figures.

`recipes/prices.yaml` holds one entry per model (keyed by its hub repository id, e.g.
'deepseek-ai/DeepSeek-R1-0528'): the list price in USD per million input tokens, per million cached
input tokens (prefix-cache hits, usually discounted) and per million output tokens, with the `source`
of the prices and the month they describe (`as_of`, YYYY-MM). `orchestrator.analysis.cost` blends
them by the measured token mix to turn throughput into revenue ($/GPU/hr), profit and margin.

Prices change often and differ by provider, so every entry names where its figures come from; the
seeded entries are illustrative and say so. The file is validated strictly (unknown keys are errors);
any problem becomes a `RecipeError` naming the file and the dotted field path. Only pydantic, PyYAML
and the standard library are imported, like `recipes/hardware.py`.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from recipes.yamlio import load_validated

SCHEMA_VERSION = 1
DEFAULT_PATH = Path(__file__).with_name("prices.yaml")

# Hub-style model ids: 'org/name', letters, digits, '.', '_', '-'.
_MODEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$"


class ModelPriceSpec(BaseModel):
    """One model's token prices as written in the file (the mapping key is the model id)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_usd_per_m: float = Field(
        ..., ge=0, strict=True, description="Price of one million uncached input (prompt) tokens, in USD."
    )
    cached_input_usd_per_m: float = Field(
        ...,
        ge=0,
        strict=True,
        description="Price of one million cached input tokens (prefix-cache hits), in USD; at most the input price.",
    )
    output_usd_per_m: float = Field(
        ..., ge=0, strict=True, description="Price of one million output (generated) tokens, in USD."
    )
    source: str = Field(..., min_length=1, description="Where the prices come from (provider, list, date seen).")
    as_of: str = Field(
        ...,
        pattern=r"^\d{4}-(0[1-9]|1[0-2])$",
        description="Month the prices describe or were taken, as YYYY-MM.",
    )
    note: str | None = Field(None, min_length=1, description="Caveat, e.g. 'illustrative figures, not a quote'.")

    @field_validator("input_usd_per_m", "cached_input_usd_per_m", "output_usd_per_m")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("price must be a finite number")
        return value

    @model_validator(mode="after")
    def _cached_not_dearer(self) -> ModelPriceSpec:
        if self.cached_input_usd_per_m > self.input_usd_per_m:
            raise ValueError("cached_input_usd_per_m must not exceed input_usd_per_m")
        return self


class ModelPrice(ModelPriceSpec):
    """One model's token prices, with its model id."""

    model: str = Field(..., pattern=_MODEL_PATTERN, description="Model id, e.g. 'deepseek-ai/DeepSeek-R1-0528'.")


class PriceTableFile(BaseModel):
    """The whole of `prices.yaml`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = Field(..., description="Version of this file's schema; only 1 exists.")
    models: dict[str, ModelPriceSpec] = Field(
        ..., min_length=1, description="Token prices by model id (hub repository id, e.g. 'org/name')."
    )

    @field_validator("models")
    @classmethod
    def _keys_are_model_ids(cls, value: dict[str, ModelPriceSpec]) -> dict[str, ModelPriceSpec]:
        bad = [key for key in value if not re.fullmatch(_MODEL_PATTERN, key)]
        if bad:
            raise ValueError(f"keys must be model ids like 'org/name' (letters, digits, '.', '_', '-'): {bad}")
        return value


def load_price_table(path: Path | None = None) -> dict[str, ModelPrice]:
    """Load and validate the price table; `path` defaults to `prices.yaml` next to this module (cached)."""
    if path is None:
        return dict(_load_default())
    return _load(Path(path))


@functools.lru_cache(maxsize=1)
def _load_default() -> dict[str, ModelPrice]:
    return _load(DEFAULT_PATH)


def _load(path: Path) -> dict[str, ModelPrice]:
    table = load_validated(path, PriceTableFile, "price table")
    return {key: ModelPrice.model_validate({"model": key, **dict(spec)}) for key, spec in table.models.items()}
