"""InferSweep hub, Profit estimator: what a GPU-hour earns on each chip at a target speed per user.

Each chip is read at the target interactivity along its envelope, the best of all its configurations at that
speed or faster (mean of repeats, never extrapolated), and its measured token mix is sold at the model's token
prices (recipes/prices.yaml, or custom prices), with the measured prefix-cache hit share billed at the
cached-input price: revenue × utilisation − TCO − licence fee × revenue × utilisation = profit
(`analysis.economics.profits_at`, `per_chip`). Chips whose fastest point is slower than the target
are dropped with a visible note. Presentation only: nothing here writes.
"""

from __future__ import annotations

import hashlib

import altair as alt
import pandas as pd
import streamlit as st

from analysis.cost import DEFAULT_LICENCE_FEE, TokenPrices
from analysis.economics import (
    DEFAULT_UTILISATION,
    GpuHourRate,
    best_profit_per,
    chip_key,
    model_price,
    profits_at,
)
from hubkit import charts, controls, data, page
from hubkit.page import dollars
from recipes.model_registry import load_model_registry

TABLE_PRICES, CUSTOM_PRICES = "price table", "custom"
PRICE_FIELDS = ("input_per_m", "cached_input_per_m", "output_per_m")


def percent(label: str, param: str, default: float, help: str) -> float | None:
    """A share entered in percent (0–100); None, with an error shown, when it is above 100."""
    value = controls.number(label, param, default=default * 100, min_value=0.0, step=5.0, help=help)
    if value > 100:
        st.error(f"{label} is a share: at most 100 %, got {value:g} %.")
        return None
    return value / 100


def profit_table(best: dict) -> pd.DataFrame:
    """One row per chip (its envelope's read): three significant figures, the runs behind it."""
    sig = page.sig
    records = []
    for (model, precision, workload, hardware), item in sorted(best.items()):
        read, result, prices = item.read, item.profit, item.prices
        records.append(
            {
                "model": model, "workload": workload, "precision": precision, "hardware": hardware,
                "label": page.chip_label(read), "configuration": read.configuration, "origin": ", ".join(read.origins),
                "sweep": ", ".join(read.sweeps), "read at tok/s/user": sig(read.read_at), "runs": read.runs,
                "output tok/s/GPU": sig(read.output.mean), "input tok/s/GPU": sig(read.input.mean),
                "total tok/s/GPU": sig(read.total.mean),
                "cache hit": sig(read.cache_hit), "cache hit measured": read.cache_hit_measured,
                "$/M input": prices.input_per_m, "$/M cached input": prices.cached_input_per_m,
                "$/M output": prices.output_per_m,
                "revenue $/GPU-hr (100 % utilised)": sig(result.revenue_usd_per_gpu_hour),
                "realised revenue $/GPU-hr": sig(result.realised_revenue_usd_per_gpu_hour),
                "licence $/GPU-hr": sig(result.licence_usd_per_gpu_hour),
                "TCO $/GPU-hr": sig(result.tco_usd_per_gpu_hour),
                "profit $/GPU-hr": sig(result.profit_usd_per_gpu_hour), "margin": sig(result.margin),
                "prices from": item.price_source, "note": item.reason,
            }
        )  # fmt: skip
    return pd.DataFrame.from_records(records)


def price_caption(models: list[str]) -> str:
    registry, table = load_model_registry(), data.price_registry()
    lines = []
    for name in models:
        entry = model_price(name, registry, table)
        if entry is None:
            lines.append(f"{name}: no entry in recipes/prices.yaml (use custom prices)")
        else:
            lines.append(
                f"{name} ({entry.model}): ${entry.input_usd_per_m:g} input, ${entry.cached_input_usd_per_m:g} cached "
                f"input, ${entry.output_usd_per_m:g} output per M tokens — {entry.source}"
                + (f", {entry.url}" if entry.url else "")
                + f", as of {entry.as_of}"
                + (f" ({entry.note})" if entry.note else "")
            )
    return dollars("Token prices: " + "; ".join(lines) + ".")


@st.cache_data(max_entries=16, show_spinner=False)
def margin_curve(
    version: tuple[int, ...], rows: str, levels: list[float], tier: str | None, custom_usd: float | None,
    utilisation: float, licence_fee: float, prices: tuple[float, float, float] | None, _frame: pd.DataFrame,
) -> pd.DataFrame:  # fmt: skip
    """Each chip's envelope at every level, per model, precision and workload, with its margin and profit (`rows` and
    `version` key the cache; `prices` are the custom prices, None for the table)."""
    rate = GpuHourRate(tier=tier, custom_usd=custom_usd)
    custom_prices = None if prices is None else TokenPrices(**dict(zip(PRICE_FIELDS, prices, strict=True)))
    records = []
    for level in levels:
        profits = profits_at(
            _frame.itertuples(index=False), level, data.hardware_registry(), rate, utilisation=utilisation,
            licence_fee=licence_fee, custom_prices=custom_prices, models=load_model_registry(),
            price_table=data.price_registry(), per_chip=True,
        )  # fmt: skip
        best, _ = best_profit_per(profits, key=chip_key)
        for (model, precision, workload, hardware), item in best.items():
            row = page.row_label(model, precision, workload)
            records.append({"tok/s/user": level, "hardware": hardware, "row": row,
                            "configuration": item.read.configuration, "margin": page.sig(item.profit.margin),
                            "profit $/GPU-hr": page.sig(item.profit.profit_usd_per_gpu_hour)})  # type: ignore[union-attr]  # fmt: skip
    return pd.DataFrame.from_records(records)


st.title("Profit estimator")
st.caption(
    "What one GPU-hour earns when every user gets the same speed: revenue from selling the measured tokens at "
    "the model's prices, minus the chip's cost and the model's licence fee."
)
frame = page.results_or_stop()

target = page.target_control()
rate = page.rate_control()
utilisation = percent("Utilisation (%)", "util", DEFAULT_UTILISATION, "Share of hours the GPU sells tokens.")
licence_fee = percent(
    "Licence fee (% of revenue)", "fee", DEFAULT_LICENCE_FEE,
    "Share of realised revenue paid to the model's licensor (InferenceX's default: 30 %).",
)  # fmt: skip
price_choice = controls.selectbox("Token prices", [TABLE_PRICES, CUSTOM_PRICES], "prices",
                                  help="The price table (recipes/prices.yaml) per model, or your own prices "
                                  "for every model shown.")  # fmt: skip
frame = page.filtered_or_stop(frame)
if utilisation is None or licence_fee is None or utilisation == 0:
    if utilisation == 0:
        st.error("Utilisation must be above 0 %: an idle GPU sells nothing.")
    st.stop()

models = sorted(frame["model"].astype(str).unique())
custom = None
if price_choice == CUSTOM_PRICES:
    # Start the custom prices from the table's prices of the first model shown, when it has some.
    entry = model_price(models[0], load_model_registry(), data.price_registry())
    defaults = (entry.input_usd_per_m, entry.cached_input_usd_per_m, entry.output_usd_per_m) if entry else (0, 0, 0)
    custom = TokenPrices(
        input_per_m=controls.number("Input $/M tokens", "pin", float(defaults[0]), step=0.05),
        cached_input_per_m=controls.number("Cached input $/M tokens", "pcached", float(defaults[1]), step=0.05),
        output_per_m=controls.number("Output $/M tokens", "pout", float(defaults[2]), step=0.05),
    )

# The same reads as the Overview and the TCO calculator: a chip's runs are every run of the configurations shown.
profits = profits_at(
    data.rows_of(data.database_url(), frame), target, data.hardware_registry(), rate, utilisation=utilisation,
    licence_fee=licence_fee, custom_prices=custom, models=load_model_registry(), price_table=data.price_registry(),
    per_chip=True, history=data.every_run_of(data.database_url(), frame),
)  # fmt: skip
# Chips are compared for one model, precision and workload: each chip along its envelope.
best, _ = best_profit_per(profits, key=chip_key)
table = profit_table(best)

st.subheader(
    dollars(
        f"Profit per GPU-hour at {target:g} tok/s/user · {rate.label} · {utilisation:.0%} utilised · "
        f"{licence_fee:.0%} licence fee"
    )
)
# The prices and their dated source beside the figures they make (not at the foot of the page).
if custom is None:
    st.caption(price_caption(models))
else:
    st.caption(
        dollars(
            f"Token prices: custom, for every model shown (${custom.input_per_m:g} input, "
            f"${custom.cached_input_per_m:g} cached input, ${custom.output_per_m:g} output per M tokens)."
        )
    )
page.illustrative_prices(frame["hardware"], rate)
if table.empty:
    st.warning(f"No configuration has a profit figure at {target:g} tok/s/user: see the notes below.")
else:
    chart_tab, table_tab = st.tabs(["Chart", "Table"])
    with chart_tab:
        tooltip = ["configuration", "origin", "sweep", alt.Tooltip("profit $/GPU-hr", format="$,.3r"),
                   alt.Tooltip("margin", format=".1%"), alt.Tooltip("realised revenue $/GPU-hr", format="$,.3r"),
                   alt.Tooltip("TCO $/GPU-hr", format="$,.3r"), alt.Tooltip("licence $/GPU-hr", format="$,.3r"),
                   alt.Tooltip("cache hit", format=".1%")]  # fmt: skip
        profit_column = "profit $/GPU-hr"
        domain = charts.bar_domain(table[profit_column])  # one scale for every row of bars
        # Each bar's profit and margin (profit / realised revenue) at its end, read without opening the table.
        written = table.assign(shown=[
            f"{page.money(profit)} · {margin:.0%}" if margin == margin and margin is not None else page.money(profit)
            for profit, margin in zip(table[profit_column], table["margin"], strict=True)
        ])  # fmt: skip

        def profit_bars(rows: pd.DataFrame) -> alt.LayerChart:
            order = list(rows.sort_values(profit_column, ascending=False)["label"].drop_duplicates())
            return charts.chip_bars(rows, profit_column, "profit, $ per GPU-hour", "shown", order, domain, tooltip)

        page.bars_per_row(written, profit_bars)
        st.caption("Each bar: the chip's envelope (the best of its configurations at this speed or faster) for that "
                   "model, precision and workload; at its end, the profit and the margin (profit / realised "
                   "revenue).")  # fmt: skip
    with table_tab:
        shown = table.drop(columns=["label"])
        page.table(
            shown,
            column_config={"margin": st.column_config.NumberColumn(format="percent"),
                           "cache hit": st.column_config.NumberColumn(format="percent")},
        )  # fmt: skip
        controls.csv_download(shown, "profit")
st.subheader("Margin over interactivity")
levels = page.curve_levels(frame)
curve = margin_curve(
    data.version(data.database_url()), hashlib.blake2b(frame.index.to_numpy().tobytes()).hexdigest(), levels,
    rate.tier, rate.custom_usd, utilisation, licence_fee,
    None if custom is None else tuple(getattr(custom, name) for name in PRICE_FIELDS), _frame=frame,
)  # fmt: skip
if curve.empty:
    st.info("No configuration has a profit figure at any speed in the measured range.")
else:
    zero = alt.Chart().mark_rule(color="grey").encode(y=alt.datum(0))
    chart = charts.chip_curves(
        curve, alt.Y("margin:Q", title="margin (profit / realised revenue)", axis=alt.Axis(format="%")),
        [alt.Tooltip("margin:Q", format=".1%"), alt.Tooltip("profit $/GPU-hr:Q", format="$,.3r")], target, [zero],
    )  # fmt: skip
    st.altair_chart(chart, width="stretch")
    st.caption(
        f"Each chip's envelope read at {len(levels)} speeds across the measured range (never extrapolated: a line "
        "ends at its chip's fastest point); below the grey line it loses money; the "
        "dashed line is the target above. Margins are what the measured throughput, the prices and the TCO give."
    )
page.dropped_warning(
    profits, best, "Dropped (outside their measured range or without a price; never extrapolated or clamped)"
)

st.caption(
    dollars(
        "**Revenue** ($/GPU-hr) = input tok/s/GPU × 3600 / 10⁶ × (hit × cached-input price + (1 − hit) × input price) "
        "+ output tok/s/GPU × 3600 / 10⁶ × output price, where **hit** is the measured prefix-cache hit share "
        "(realised, read at the target like throughput; 0 where not measured, e.g. random-token workloads). "
        "**Profit** = revenue × utilisation − TCO − licence fee × revenue × utilisation; **margin** = profit / "
        "(revenue × utilisation). Throughput is read at the target tok/s/user (= 1000 / TPOT p50) along each chip's "
        "envelope (the Pareto frontier over all its configurations) with a monotone cubic, averaged over repeats; "
        "below its slowest point the chip serves the target faster than asked, and chips whose fastest point is "
        "slower than the target are dropped. Imported and simulated results carry their origin in brackets."
    )
)
page.price_sources(frame["hardware"], rate)
page.methodology_link()
