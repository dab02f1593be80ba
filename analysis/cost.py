"""Cost, power efficiency, revenue and profit from measured throughput (docs/ARCHITECTURE.md §7).

Throughput per GPU only matters to a buyer through what a token costs and earns. These functions
turn tok/s/GPU into:

- cost per million tokens = ($/GPU/hr) / (tok/s/GPU × 3600 / 10⁶), for total, input and output
  tokens, at one TCO tier of the hardware registry;
- tokens per all-in MW = tok/s/GPU × 1000 / (all-in kW per GPU), i.e. tok/s per MW of facility power;
- joules per token = measured accelerator power per GPU (W) / tok/s/GPU, where power was sampled;
- revenue ($/GPU/hr) = total tok/s/GPU × 3600 / 10⁶ × blended price, the blended price mixing the
  input price (split by the measured cache-hit share into cached and uncached prices) and the output
  price by their token shares;
- profit = revenue × utilisation − TCO − licence fee × revenue × utilisation, and
  margin = profit / (revenue × utilisation).

At a target interactivity, pass the *interpolated throughput* (see `interpolate.py`): $/Mtok is a
reciprocal of throughput and is derived from it, never splined itself. Pure Python; the hardware and
price registries come from `recipes`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, TypeVar

from pydantic import Field, model_validator

from recipes.hardware import Hardware
from recipes.prices import ModelPrice
from recipes.strict import StrictModel

if TYPE_CHECKING:
    import numpy as np

SECONDS_PER_HOUR = 3600.0
TOKENS_PER_MILLION = 1e6
Rate = TypeVar("Rate", float, "np.ndarray")  # one figure, or one per point (analysis/axes.py)
DEFAULT_LICENCE_FEE = 0.30  # InferenceX default: 30 % of revenue goes to the model's licensor.


class TokenPrices(StrictModel):
    """List prices in USD per million tokens."""

    input_per_m: float = Field(ge=0, description="USD per million uncached input (prompt) tokens.")
    cached_input_per_m: float = Field(ge=0, description="USD per million cached input tokens (prefix-cache hits).")
    output_per_m: float = Field(ge=0, description="USD per million output (generated) tokens.")

    @classmethod
    def from_price(cls, price: ModelPrice) -> TokenPrices:
        """The prices of one entry of `recipes/prices.yaml`."""
        return cls(
            input_per_m=price.input_usd_per_m,
            cached_input_per_m=price.cached_input_usd_per_m,
            output_per_m=price.output_usd_per_m,
        )


class TokenMix(StrictModel):
    """The measured token mix: counts (or rates) of input, cached input and output tokens."""

    input_tokens: float = Field(ge=0, description="Input (prompt) tokens, cached ones included.")
    cached_input_tokens: float = Field(ge=0, description="Input tokens served from the prefix cache.")
    output_tokens: float = Field(ge=0, description="Output (generated) tokens.")

    @model_validator(mode="after")
    def _consistent(self) -> TokenMix:
        if self.cached_input_tokens > self.input_tokens:
            raise ValueError("cached_input_tokens cannot exceed input_tokens")
        if self.input_tokens + self.output_tokens <= 0:
            raise ValueError("the mix needs at least one token")
        return self

    @property
    def input_share(self) -> float:
        """Input tokens / all tokens."""
        return self.input_tokens / (self.input_tokens + self.output_tokens)

    @property
    def cache_hit_share(self) -> float:
        """Cached input tokens / input tokens (0 when there is no input)."""
        return self.cached_input_tokens / self.input_tokens if self.input_tokens else 0.0


class CostPerMillion(StrictModel):
    """USD per million tokens at one TCO rate, per kind of token."""

    total: float = Field(description="USD per million tokens of any kind (total tok/s/GPU).")
    input: float = Field(description="USD per million input tokens, charging all cost to input.")
    output: float = Field(description="USD per million output tokens, charging all cost to output.")


class ProfitInputs(StrictModel):
    """Everything the profit of one operating point depends on."""

    total_tokens_per_s_per_gpu: float = Field(gt=0, description="Input + output tok/s per GPU (measured or read).")
    prices: TokenPrices = Field(description="List prices the tokens are sold at.")
    mix: TokenMix = Field(description="Measured token mix (input share and cache-hit share).")
    tco_usd_per_gpu_hour: float = Field(ge=0, description="Total cost of ownership per GPU-hour (one TCO tier).")
    utilisation: float = Field(
        gt=0, le=1, description="Share of hours the GPU sells tokens at this rate (e.g. 0.6 'saturated')."
    )
    licence_fee: float = Field(
        DEFAULT_LICENCE_FEE, ge=0, le=1, description="Share of realised revenue paid to the model's licensor."
    )


class Profit(StrictModel):
    """Revenue, cost and profit per GPU-hour of one operating point."""

    revenue_usd_per_gpu_hour: float = Field(description="Revenue at full utilisation: tokens/hr × blended price.")
    realised_revenue_usd_per_gpu_hour: float = Field(description="Revenue × utilisation.")
    licence_usd_per_gpu_hour: float = Field(description="Licence fee × realised revenue.")
    tco_usd_per_gpu_hour: float = Field(description="TCO per GPU-hour.")
    profit_usd_per_gpu_hour: float = Field(description="Realised revenue − TCO − licence.")
    margin: float | None = Field(description="Profit / realised revenue; None when realised revenue is 0.")


def _positive(name: str, value: float) -> float:
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return value


def _non_negative(name: str, value: float) -> float:
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a non-negative finite number, got {value!r}")
    return value


def millions_of_tokens_per_hour(tokens_per_s: Rate) -> Rate:
    """tok/s × 3600 / 10⁶."""
    return tokens_per_s * SECONDS_PER_HOUR / TOKENS_PER_MILLION


def cost_per_million_tokens(usd_per_gpu_hour: float, tokens_per_s_per_gpu: float) -> float:
    """($/GPU/hr) / (tok/s/GPU × 3600 / 10⁶)."""
    _non_negative("usd_per_gpu_hour", usd_per_gpu_hour)
    _positive("tokens_per_s_per_gpu", tokens_per_s_per_gpu)
    return usd_per_gpu_hour / millions_of_tokens_per_hour(tokens_per_s_per_gpu)


def cost_band(
    usd_per_gpu_hour: float | None, throughput: tuple[float | None, float | None] | None
) -> tuple[float | None, float | None]:
    """The $/M tokens at the ends of a throughput band (low, high tok/s/GPU): (lowest cost, highest cost), the ends
    swapped (more tokens, lower cost); an end that is missing or not positive has no cost (None), and nothing has one
    without a price or a band. The one conversion of a band (an interval, a run spread, a projection band) into
    costs: four copies of it swapped the ends each its own way."""

    def at(tokens: float | None) -> float | None:
        if not usd_per_gpu_hour or tokens is None or not tokens > 0:
            return None
        return cost_per_million_tokens(usd_per_gpu_hour, tokens)

    low, high = throughput or (None, None)
    return at(high), at(low)


def cost_breakdown(
    usd_per_gpu_hour: float, input_tokens_per_s_per_gpu: float, output_tokens_per_s_per_gpu: float
) -> CostPerMillion:
    """Cost per million total, input and output tokens (each divides the whole $/GPU/hr by that rate)."""
    return CostPerMillion(
        total=cost_per_million_tokens(usd_per_gpu_hour, input_tokens_per_s_per_gpu + output_tokens_per_s_per_gpu),
        input=cost_per_million_tokens(usd_per_gpu_hour, input_tokens_per_s_per_gpu),
        output=cost_per_million_tokens(usd_per_gpu_hour, output_tokens_per_s_per_gpu),
    )


def tokens_per_all_in_mw(tokens_per_s_per_gpu: float, all_in_kw_per_gpu: float) -> float:
    """tok/s/GPU × 1000 / (all-in kW per GPU): tok/s per MW of all-in (facility) power."""
    _non_negative("tokens_per_s_per_gpu", tokens_per_s_per_gpu)
    _positive("all_in_kw_per_gpu", all_in_kw_per_gpu)
    return tokens_per_s_per_gpu * 1000.0 / all_in_kw_per_gpu


def joules_per_token(power_w_per_gpu: float, tokens_per_s_per_gpu: float) -> float:
    """Energy per token = accelerator power (W = J/s) ÷ tokens/s, per GPU; only where power was measured."""
    return _non_negative("power_w_per_gpu", power_w_per_gpu) / _positive("tokens_per_s_per_gpu", tokens_per_s_per_gpu)


def usd_per_gpu_hour(hardware: Hardware, tier: str) -> float:
    """TCO of `hardware` at `tier` ($/GPU/hr); ValueError when the registry has no figure for it."""
    value = hardware.tco(tier)
    if value is None:
        raise ValueError(f"hardware {hardware.key!r} has no TCO figure for tier {tier!r} in recipes/hardware.yaml")
    return value


def all_in_kw_per_gpu(hardware: Hardware) -> float:
    """All-in kW per GPU of `hardware`; ValueError when the registry has no figure."""
    figure = hardware.all_in_kw
    if figure is None or figure.value is None:
        raise ValueError(f"hardware {hardware.key!r} has no all-in kW figure in recipes/hardware.yaml")
    return figure.value


def blended_price_per_m(prices: TokenPrices, mix: TokenMix) -> float:
    """USD per million tokens of the mix.

    input share × (hit × cached price + (1 − hit) × input price) + output share × output price.
    """
    hit = mix.cache_hit_share
    input_price = hit * prices.cached_input_per_m + (1.0 - hit) * prices.input_per_m
    return mix.input_share * input_price + (1.0 - mix.input_share) * prices.output_per_m


def revenue_usd_per_gpu_hour(total_tokens_per_s_per_gpu: float, prices: TokenPrices, mix: TokenMix) -> float:
    """Total tok/s/GPU × 3600 / 10⁶ × blended price (at full utilisation)."""
    _non_negative("total_tokens_per_s_per_gpu", total_tokens_per_s_per_gpu)
    return millions_of_tokens_per_hour(total_tokens_per_s_per_gpu) * blended_price_per_m(prices, mix)


def profit(inputs: ProfitInputs) -> Profit:
    """Profit and margin per GPU-hour.

    profit = revenue × utilisation − TCO − licence fee × revenue × utilisation;
    margin = profit / (revenue × utilisation).
    """
    revenue = revenue_usd_per_gpu_hour(inputs.total_tokens_per_s_per_gpu, inputs.prices, inputs.mix)
    realised = revenue * inputs.utilisation
    licence = inputs.licence_fee * realised
    value = realised - inputs.tco_usd_per_gpu_hour - licence
    return Profit(
        revenue_usd_per_gpu_hour=revenue,
        realised_revenue_usd_per_gpu_hour=realised,
        licence_usd_per_gpu_hour=licence,
        tco_usd_per_gpu_hour=inputs.tco_usd_per_gpu_hour,
        profit_usd_per_gpu_hour=value,
        margin=value / realised if realised > 0 else None,
    )
