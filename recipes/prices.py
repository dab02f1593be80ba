"""Token-price table: what a model's tokens sell for, the revenue side of the profit figures.

`recipes/prices.yaml` holds one entry per model (keyed by its hub repository id, e.g.
'deepseek-ai/DeepSeek-R1-0528'): the list price in USD per million input tokens, per million cached
input tokens (prefix-cache hits, usually discounted) and per million output tokens, with the `source`
of the prices and the month they describe (`as_of`, YYYY-MM). `analysis.cost` blends
them by the measured token mix to turn throughput into revenue ($/GPU/hr), profit and margin.

Prices change often and differ by provider, so every entry names where its figures come from (`source`,
`url`, `as_of`) and which provider's price it took (`provider_rule`). The shipped entries are a dated snapshot
of OpenRouter's public listing. The file is validated strictly (unknown keys are errors);
any problem becomes a `RecipeError` naming the file and the dotted field path. Only pydantic, PyYAML
and the standard library are imported, like `recipes/hardware.py`.
"""

from __future__ import annotations

import math
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from recipes.keyed_file import KeyedFile
from recipes.strict import StrictModel

SCHEMA_VERSION = 1
DEFAULT_PATH = Path(__file__).with_name("prices.yaml")

# Hub-style model ids: 'org/name', letters, digits, '.', '_', '-'.
_MODEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$"


class ModelPriceSpec(StrictModel):
    """One model's token prices as written in the file (the mapping key is the model id)."""

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
    url: str | None = Field(
        None, pattern=r"^https://\S+$", description="Address of the listing the prices were read from (https)."
    )
    provider_rule: str | None = Field(
        None, min_length=1,
        description="Which provider's price of a listing of several was taken, and why (e.g. the listing's headline).",
    )  # fmt: skip

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


_TABLE = KeyedFile(
    default_path=DEFAULT_PATH, what="price table", section="models", spec=ModelPriceSpec, entry=ModelPrice,
    key_field="model", key_pattern=_MODEL_PATTERN,
    key_rule="model ids like 'org/name' (letters, digits, '.', '_', '-')",
)  # fmt: skip


# Load and validate it; the path defaults to `prices.yaml` next to this module (read once per process).
load_price_table = _TABLE.load
