"""Profit estimator page: revenue, cost, profit and margin per hardware at a target interactivity, on the fixture.

Expected figures are worked by hand from the fixture's points (tests/site/hub_fixture.py), the TCO figures of
recipes/hardware.yaml and DeepSeek-R1's entry in recipes/prices.yaml:
revenue = input Mtok/hr × (hit × cached price + (1 − hit) × input price) + output Mtok/hr × output price;
profit = revenue × utilisation − TCO − licence fee × revenue × utilisation; margin = profit / (revenue × utilisation).
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from recipes.hardware import load_hardware_registry
from recipes.prices import load_price_table
from tests.site.conftest import assert_says_how_to_get_results, dropped_notes, open_page

OWNING = {key: spec.tco("owning_hyperscaler") for key, spec in load_hardware_registry().items()}
PRICE = load_price_table()["deepseek-ai/DeepSeek-R1-0528"]  # the recipe's model 'deepseek-r1', by its hub id


def profit(output_tok_s: float, tco: float, hit: float = 0.0, utilisation: float = 0.6, fee: float = 0.3,
           prices: tuple[float, float, float] | None = None) -> tuple[float, float, float]:  # fmt: skip
    """(revenue, profit, margin) of a point with 8 input tokens per output token (8k in, 1k out)."""
    input_price, cached_price, output_price = prices or (
        PRICE.input_usd_per_m, PRICE.cached_input_usd_per_m, PRICE.output_usd_per_m,
    )  # fmt: skip
    input_m, output_m = 8 * output_tok_s * 3600 / 1e6, output_tok_s * 3600 / 1e6
    revenue = input_m * (hit * cached_price + (1 - hit) * input_price) + output_m * output_price
    realised = revenue * utilisation
    earned = realised - tco - fee * realised
    return revenue, earned, earned / realised


def table(app: AppTest) -> pd.DataFrame:
    return app.dataframe[0].value.set_index(["workload", "hardware"])


def test_empty_database_says_what_to_do(hub_database: str) -> None:
    # Opened as a viewer navigates there, from the Overview.
    assert_says_how_to_get_results("profit", "Profit estimator", hub_database, from_overview=True)


def test_profit_per_hardware_at_50_tok_s_user(seeded_hub: str) -> None:
    app = open_page("profit", from_overview=True)
    shown = table(app)
    assert list(shown.index) == [("8k/1k", "b200"), ("8k/1k", "h200"), ("8k/1k", "mi355x")]
    b200 = shown.loc[("8k/1k", "b200")]
    # B200: 1500 output and 12,000 input tok/s/GPU → 5.4 and 43.2 M tokens/hr. At the table's OpenRouter prices
    # ($0.50 input, $2.15 output): revenue 21.60 + 11.61 = $33.21/GPU-hr; × 60 % = $19.926; licence 30 % = $5.9778;
    # TCO $1.73; profit $12.218; margin 61.3 %. No cache hits measured on random tokens: the hit share is 0.
    assert (PRICE.input_usd_per_m, PRICE.output_usd_per_m, OWNING["b200"]) == (0.50, 2.15, 1.73)
    assert b200["revenue $/GPU-hr (100 % utilised)"] == pytest.approx(33.21, rel=5e-3)
    assert b200["realised revenue $/GPU-hr"] == pytest.approx(19.926, rel=5e-3)
    assert b200["licence $/GPU-hr"] == pytest.approx(5.9778, rel=5e-3)
    assert b200["TCO $/GPU-hr"] == 1.73
    assert b200["profit $/GPU-hr"] == pytest.approx(12.2182, rel=5e-3)
    assert b200["margin"] == pytest.approx(12.2182 / 19.926, rel=5e-3)
    assert b200["cache hit"] == 0.0 and not b200["cache hit measured"]
    # H200 (566.67 tok/s/GPU at 50) and the imported MI355X (1200), the same way.
    for hardware, output in (("h200", 900 - 20 * 500 / 30), ("mi355x", 1200.0)):
        revenue, earned, margin = profit(output, OWNING[hardware])
        row = shown.loc[("8k/1k", hardware)]
        assert row["revenue $/GPU-hr (100 % utilised)"] == pytest.approx(revenue, rel=5e-3)
        assert row["profit $/GPU-hr"] == pytest.approx(earned, rel=5e-3) and row["margin"] == pytest.approx(
            margin, rel=5e-3
        )
    # H200: 2.04 M output, 16.32 M input per hour: 8.16 + 4.386 = $12.546; × 60 % = 7.5276, − 1.22 − 2.25828.
    assert shown.loc[("8k/1k", "h200")]["profit $/GPU-hr"] == pytest.approx(4.04932, rel=5e-3)
    assert shown.loc[("8k/1k", "mi355x")]["origin"] == "imported"
    # The agentic arms do not reach 50 tok/s/user: dropped, with a visible note.
    note = app.warning[0].value
    assert "Dropped" in note and "**b200** (deepseek-r1 fp8 · agentic)" in note
    why = [block.value for block in app.markdown if "**b200** (deepseek-r1 fp8 · agentic)" in block.value]
    assert why and "faster than every configuration measured (fastest 42)" in why[0]
    # The prices and their dated source, above the figures: OpenRouter's listing, its address and month.
    source = next(caption.value for caption in app.caption if "deepseek-ai/DeepSeek-R1-0528" in caption.value)
    assert "OpenRouter" in source and "https://openrouter.ai/deepseek/deepseek-r1-0528" in source
    assert "as of 2026-12" in source
    # The bars, and the margin over interactivity (test_the_margin_curve_...).
    assert len(app.get("vega_lite_chart")) == 2 and len(app.get("download_button")) == 1
    # Each bar's figure outside its end: right of a profit, left of a loss (a loss's label was drawn over its bar).
    labels = dict(_text_layers(json.loads(app.get("vega_lite_chart")[0].proto.spec)))
    assert labels == {"datum['profit $/GPU-hr'] >= 0": "left", "datum['profit $/GPU-hr'] < 0": "right"}, labels


def _text_layers(node: object) -> list[tuple[str, str]]:
    """(filter, align) of every text layer of a Vega-Lite spec."""
    found = []
    if isinstance(node, dict):
        mark = node.get("mark")
        if isinstance(mark, dict) and mark.get("type") == "text":
            filters = [step["filter"] for step in node.get("transform", []) if "filter" in step]
            found.append((" and ".join(filters), mark.get("align", "")))
        for value in node.values():
            found += _text_layers(value)
    elif isinstance(node, list):
        for value in node:
            found += _text_layers(value)
    return found


def test_measured_cache_hits_are_billed_at_the_cached_price(seeded_hub: str) -> None:
    # Custom prices with a cached-input discount (the table's OpenRouter listing states none, so bills hits at the
    # input price): $0.50 input, $0.125 cached input, $2.00 output.
    cached = {"prices": "custom", "pin": "0.5", "pcached": "0.125", "pout": "2"}
    shown = table(open_page("profit", {"at": "30", "workload": "agentic", **cached}))
    arm = shown.loc[("agentic", "b200")]
    # DRAM-offload arm, between (28 tok/s/user, 820 tok/s/GPU, 90 % hits) and (42, 320, 92 %), at 30:
    # output 820 − 2/14 × 500 = 748.571, hits 0.90 + 2/14 × 0.02 = 0.902857 (the HBM-only arm earns less).
    output, hit = 820 - 2 / 14 * 500, 0.90 + 2 / 14 * 0.02
    assert "offload dram" in arm["configuration"]
    assert arm["output tok/s/GPU"] == pytest.approx(output, rel=5e-3) and arm["cache hit"] == pytest.approx(
        hit, rel=5e-3
    )
    assert arm["cache hit measured"]
    revenue, earned, margin = profit(output, OWNING["b200"], hit=hit, prices=(0.5, 0.125, 2.0))
    assert arm["revenue $/GPU-hr (100 % utilised)"] == pytest.approx(
        revenue, rel=5e-3
    )  # $8.870 (vs $14.82 without hits)
    assert arm["profit $/GPU-hr"] == pytest.approx(earned, rel=5e-3) and arm["margin"] == pytest.approx(
        margin, rel=5e-3
    )
    assert earned == pytest.approx(1.99537, abs=1e-5)


def test_share_link_with_custom_prices_utilisation_fee_and_rate(seeded_hub: str) -> None:
    params = {"prices": "custom", "pin": "1", "pcached": "0.25", "pout": "4", "util": "100", "fee": "0",
              "tier": "custom $/GPU-hr", "usd": "2", "workload": "8k/1k"}  # fmt: skip
    app = open_page("profit", params)
    assert app.number_input(key="param-util").value == 100 and app.number_input(key="param-fee").value == 0
    b200 = table(app).loc[("8k/1k", "b200")]
    # 43.2 M input × $1 + 5.4 M output × $4 = $64.80; fully used, no fee, $2/GPU-hr: profit $62.80.
    assert b200["revenue $/GPU-hr (100 % utilised)"] == pytest.approx(64.80, rel=5e-3)
    assert b200["profit $/GPU-hr"] == pytest.approx(62.80, rel=5e-3) and b200["margin"] == pytest.approx(
        62.80 / 64.80, rel=5e-3
    )
    assert b200["prices from"] == "custom"

    halved = table(open_page("profit", {"util": "50", "fee": "20", "tier": "rental_3yr"})).loc[("8k/1k", "b200")]
    rent = load_hardware_registry()["b200"].tco("rental_3yr")
    _, earned, margin = profit(1500, rent, utilisation=0.5, fee=0.2)
    assert halved["profit $/GPU-hr"] == pytest.approx(earned, rel=5e-3) and halved["margin"] == pytest.approx(
        margin, rel=5e-3
    )

    refused = open_page("profit", {"util": "150"})
    assert "at most 100 %" in refused.error[0].value and not refused.dataframe


def test_simulated_hidden_by_default_and_labelled_when_asked(seeded_hub: str) -> None:
    link = {"at": "350", "tier": "custom $/GPU-hr", "usd": "1", "prices": "custom", "pin": "1", "pcached": "1",
            "pout": "1"}  # fmt: skip
    assert not open_page("profit", link).dataframe  # nothing measured reaches 350 tok/s/user
    app = open_page("profit", {**link, "origin": ["measured", "simulated"]})
    cpu = app.dataframe[0].value.iloc[0]
    # Simulated (400, 50) and (300, 80) → 65 output, 585 total tok/s/GPU at 350: revenue 2.106 M × $1 = $2.106;
    # × 60 % = $1.2636; licence $0.37908; TCO $1: a loss of $0.11548.
    assert cpu["hardware"] == "cpu-local" and cpu["origin"] == "simulated"
    assert cpu["profit $/GPU-hr"] == pytest.approx(1.2636 - 1 - 0.37908, rel=5e-3)
    assert any("simulated" in warning.value for warning in app.sidebar.warning)
    # With the price table, a model without prices is dropped with the reason.
    unpriced = open_page("profit", {"at": "350", "tier": "custom $/GPU-hr", "usd": "1", "origin": ["simulated"]})
    assert "no token prices for model tiny-llama" in dropped_notes(unpriced)


def test_one_hardware_only(b200_only_hub: str) -> None:
    app = open_page("profit", from_overview=True)
    shown = table(app)
    assert list(shown.index) == [("8k/1k", "b200")]
    assert shown.loc[("8k/1k", "b200")]["profit $/GPU-hr"] == pytest.approx(12.2182, rel=5e-3)
    assert not app.warning


def test_the_margin_is_on_the_chart_not_only_in_the_table(seeded_hub: str) -> None:
    import json

    app = open_page("profit", from_overview=True)
    chart = app.get("vega_lite_chart")[0]
    text = json.dumps(json.loads(chart.proto.spec))
    assert '"text": {"field": "shown"' in text and '"type": "text"' in text
    (data,) = [pa.ipc.open_stream(d.data.data).read_all().to_pandas() for d in chart.proto.datasets]
    # B200: $12.2182 profit per GPU-hour, margin 12.2182 / 19.926 (test_profit_per_hardware_at_50_tok_s_user).
    assert data.set_index("hardware").loc["b200", "shown"] == "$12.2 · 61%"
    # The bars keep their order by profit (an explicit order: Vega-Lite drops a sort by field across layers).
    assert '"sort": ["b200", "mi355x [imported]", "h200"]' in text


def line_chart_rows(app: AppTest) -> pd.DataFrame:
    """The rows behind the page's line chart (the margin over interactivity), as Streamlit sent them."""
    for chart in app.get("vega_lite_chart"):
        spec = json.loads(chart.proto.spec)
        if "layer" in spec and spec["layer"][0]["mark"]["type"] == "line":
            name = spec["layer"][0]["data"]["name"]
            (dataset,) = [data for data in chart.proto.datasets if data.name == name]
            return pa.ipc.open_stream(dataset.data.data).read_all().to_pandas()
    raise AssertionError("no line chart on the page")


def test_the_margin_curve_follows_the_measured_range_worked_by_hand(b200_only_hub: str) -> None:
    """One configuration measured at (100 tok/s/user, 500 tok/s/GPU) and (50, 1500 mean of three repeats): the
    curve runs from 50 to 100 tok/s/user (never beyond), and at its ends the margin is the hand-worked one."""
    curve = line_chart_rows(open_page("profit"))
    assert set(curve["hardware"]) == {"b200"}
    assert curve["tok/s/user"].min() == 50.0 and curve["tok/s/user"].max() == 100.0
    at = curve.set_index("tok/s/user")["margin"]
    assert at[50.0] == pytest.approx(profit(1500.0, OWNING["b200"])[2], rel=5e-3)  # 61.1 %
    assert at[100.0] == pytest.approx(profit(500.0, OWNING["b200"])[2], rel=5e-3)  # 43.3 %: a third of the tokens
    assert at.is_monotonic_decreasing  # faster per user, fewer tokens per GPU-hour
