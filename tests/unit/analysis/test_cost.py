"""Cost, power and profit formulas (docs/ARCHITECTURE.md §7) against figures worked by hand."""

from __future__ import annotations

import pytest

from analysis.cost import (
    ProfitInputs,
    TokenMix,
    TokenPrices,
    all_in_kw_per_gpu,
    blended_price_per_m,
    cost_breakdown,
    cost_per_million_tokens,
    profit,
    revenue_usd_per_gpu_hour,
    tokens_per_all_in_mw,
    usd_per_gpu_hour,
)
from recipes.hardware import load_hardware_registry
from recipes.prices import load_price_table

PRICES = TokenPrices(input_per_m=0.50, cached_input_per_m=0.125, output_per_m=2.00)
# 750 input tok/s of which 300 cached (hit share 0.4), 250 output tok/s: input share 0.75.
MIX = TokenMix(input_tokens=750, cached_input_tokens=300, output_tokens=250)


def test_cost_per_million_tokens() -> None:
    # $2.00/GPU/hr at 1000 tok/s: 1000 × 3600 / 1e6 = 3.6 Mtok/hr, so 2.00 / 3.6 = 0.5555… $/Mtok.
    assert cost_per_million_tokens(2.00, 1000) == pytest.approx(0.555555556)
    # Input 750 tok/s → 2.7 Mtok/hr → 0.7407…; output 250 tok/s → 0.9 Mtok/hr → 2.2222….
    costs = cost_breakdown(2.00, 750, 250)
    assert costs.total == pytest.approx(2.00 / 3.6)
    assert costs.input == pytest.approx(0.740740741)
    assert costs.output == pytest.approx(2.222222222)
    with pytest.raises(ValueError):
        cost_per_million_tokens(2.00, 0)


def test_tokens_per_all_in_mw() -> None:
    # 1000 tok/s/GPU at 1.37 kW/GPU: 1000 × 1000 / 1.37 = 729,927.007… tok/s per MW.
    assert tokens_per_all_in_mw(1000, 1.37) == pytest.approx(729927.007, rel=1e-9)


def test_registry_helpers() -> None:
    registry = load_hardware_registry()
    assert usd_per_gpu_hour(registry["h100"], "rental_3yr") == pytest.approx(2.00)
    assert all_in_kw_per_gpu(registry["h100"]) == pytest.approx(1.37)
    with pytest.raises(ValueError, match="tpu-v7"):
        usd_per_gpu_hour(registry["tpu-v7"], "neocloud")
    with pytest.raises(ValueError, match="cpu-local"):
        all_in_kw_per_gpu(registry["cpu-local"])


def test_blended_price_and_revenue() -> None:
    # Input price = 0.4 × 0.125 + 0.6 × 0.50 = 0.05 + 0.30 = 0.35 $/Mtok;
    # blended = 0.75 × 0.35 + 0.25 × 2.00 = 0.2625 + 0.5 = 0.7625 $/Mtok.
    assert blended_price_per_m(PRICES, MIX) == pytest.approx(0.7625)
    # 1000 tok/s/GPU → 3.6 Mtok/hr × 0.7625 = 2.745 $/GPU/hr.
    assert revenue_usd_per_gpu_hour(1000, PRICES, MIX) == pytest.approx(2.745)


def test_profit_and_margin() -> None:
    # 10,000 tok/s/GPU → revenue 36 Mtok/hr × 0.7625 = 27.45 $/GPU/hr; × 0.6 utilisation = 16.47;
    # licence 30 % × 16.47 = 4.941; TCO 1.17; profit = 16.47 − 1.17 − 4.941 = 10.359;
    # margin = 10.359 / 16.47 = 0.628961….
    result = profit(
        ProfitInputs(
            total_tokens_per_s_per_gpu=10_000, prices=PRICES, mix=MIX, tco_usd_per_gpu_hour=1.17, utilisation=0.6
        )
    )
    assert result.revenue_usd_per_gpu_hour == pytest.approx(27.45)
    assert result.realised_revenue_usd_per_gpu_hour == pytest.approx(16.47)
    assert result.licence_usd_per_gpu_hour == pytest.approx(4.941)
    assert result.profit_usd_per_gpu_hour == pytest.approx(10.359)
    assert result.margin == pytest.approx(0.628961749, rel=1e-8)


def test_loss_making_point() -> None:
    # 1000 tok/s/GPU: realised 2.745 × 0.6 = 1.647; licence 0.4941; profit = 1.647 − 1.17 − 0.4941 = −0.0171.
    result = profit(
        ProfitInputs(
            total_tokens_per_s_per_gpu=1000, prices=PRICES, mix=MIX, tco_usd_per_gpu_hour=1.17, utilisation=0.6
        )
    )
    assert result.profit_usd_per_gpu_hour == pytest.approx(-0.0171)
    assert result.margin == pytest.approx(-0.0171 / 1.647)


def test_no_licence_fee_and_prices_from_table() -> None:
    # Licence 0: profit = 16.47 − 1.17 = 15.30.
    result = profit(
        ProfitInputs(
            total_tokens_per_s_per_gpu=10_000,
            prices=PRICES,
            mix=MIX,
            tco_usd_per_gpu_hour=1.17,
            utilisation=0.6,
            licence_fee=0.0,
        )
    )
    assert result.profit_usd_per_gpu_hour == pytest.approx(15.30)
    entry = load_price_table()["deepseek-ai/DeepSeek-R1-0528"]
    prices = TokenPrices.from_price(entry)
    assert prices.input_per_m == entry.input_usd_per_m and prices.output_per_m == entry.output_usd_per_m


def test_inconsistent_inputs_are_rejected() -> None:
    with pytest.raises(ValueError):
        TokenMix(input_tokens=10, cached_input_tokens=11, output_tokens=1)
    with pytest.raises(ValueError):
        ProfitInputs(total_tokens_per_s_per_gpu=1, prices=PRICES, mix=MIX, tco_usd_per_gpu_hour=1, utilisation=1.5)


def test_a_throughput_band_becomes_a_cost_band_with_its_ends_swapped_and_no_cost_at_zero() -> None:
    """The one conversion of a band into costs (`cost_band`): more tokens, lower cost; an end at or below 0 tok/s
    has no cost, nor has anything without a price."""
    from analysis.cost import cost_band, cost_per_million_tokens

    assert cost_band(2.0, (500.0, 1000.0)) == (
        cost_per_million_tokens(2.0, 1000.0),
        cost_per_million_tokens(2.0, 500.0),
    )
    assert cost_band(2.0, (0.0, 1000.0)) == (cost_per_million_tokens(2.0, 1000.0), None)
    assert cost_band(2.0, None) == cost_band(2.0, (None, None)) == (None, None) and cost_band(
        None, (500.0, 1000.0)
    ) == (None, None)
