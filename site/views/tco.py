"""InferSweep hub, TCO calculator: what a million tokens costs on each chip at a target speed per user.

For one model and workload, every configuration is read at the target interactivity (tok/s/user) along
its Pareto frontier (`orchestrator.analysis.economics.costs_at`: mean of repeats with a 95 % interval,
never extrapolated); each hardware shows its cheapest configuration, priced at a TCO tier or a custom
$/GPU-hr, with the throughput interval as error bars. Presentation only: nothing here writes.
"""

from __future__ import annotations

import hashlib

import altair as alt
import pandas as pd
import streamlit as st

from hubkit import charts, controls, data, page
from hubkit.page import dollars
from orchestrator.analysis.economics import TOKEN_KINDS, CostRead, GpuHourRate, best_per, costs_at


def best_table(best: dict, kind: str) -> pd.DataFrame:
    records = []
    for (model, workload, hardware), item in sorted(best.items()):
        read, figure, throughput = item.read, item.per_million(kind), item.read.throughput(kind)  # type: ignore[arg-type]
        records.append(
            {
                "model": model, "workload": workload, "precision": read.precision, "hardware": hardware,
                "label": page.chip_label(read), "configuration": read.configuration,
                "origin": ", ".join(read.origins), "source": "; ".join(read.sources), "sweep": ", ".join(read.sweeps),
                f"{kind} tok/s/GPU": throughput.mean, "95 % low": throughput.low, "95 % high": throughput.high,
                "repeats": throughput.n, "$/GPU-hr": item.usd_per_gpu_hour,
                f"$/M {kind} tokens": figure.usd_per_million, "$/M, low": figure.low, "$/M, high": figure.high,
                "$/M output tokens": item.output.usd_per_million if item.output else None,
                "$/M input tokens": item.input.usd_per_million if item.input else None,
                "$/M total tokens": item.total.usd_per_million if item.total else None,
                "output tok/s per all-in MW": item.output_tokens_per_all_in_mw,
                "note": item.reason,
            }
        )  # fmt: skip
    return pd.DataFrame.from_records(records)


def every_configuration(costs: list[CostRead], kind: str) -> pd.DataFrame:
    records = []
    for item in costs:
        throughput, figure = item.read.throughput(kind), item.per_million(kind)  # type: ignore[arg-type]
        records.append(
            {
                "model": item.read.model, "workload": item.read.workload, "hardware": item.read.hardware,
                "configuration": item.read.configuration,
                "origin": ", ".join(item.read.origins), "sweep": ", ".join(item.read.sweeps),
                f"{kind} tok/s/GPU": throughput.mean if throughput else None,
                f"$/M {kind} tokens": figure.usd_per_million if figure else None, "note": item.reason,
            }
        )  # fmt: skip
    return pd.DataFrame.from_records(records)


@st.cache_data(max_entries=16, show_spinner=False)
def cost_curve(
    version: tuple[int, ...], rows: str, levels: list[float], tier: str | None, custom_usd: float | None, kind: str,
    _frame: pd.DataFrame,
) -> pd.DataFrame:  # fmt: skip
    """Each chip's cheapest $/M at every level, per model and workload (`rows` and `version` key the cache)."""
    rate = GpuHourRate(tier=tier, custom_usd=custom_usd)
    records = []
    for level in levels:
        costs = costs_at(_frame.itertuples(index=False), level, data.hardware_registry(), rate)
        best, _ = best_per(costs, key=page.chip_of, kind=kind)  # type: ignore[arg-type]
        for (model, workload, hardware), item in best.items():
            figure = item.per_million(kind)  # type: ignore[arg-type]
            if figure is not None:
                records.append({"tok/s/user": level, "hardware": hardware, "row": f"{model} · {workload}",
                                "configuration": item.read.configuration, "$/M": figure.usd_per_million})  # fmt: skip
    return pd.DataFrame.from_records(records)


st.title("TCO calculator")
st.caption(
    dollars(
        "What a million tokens costs on each chip when every user gets the same speed: pick the speed, a TCO "
        "tier (or your own $/GPU-hr) and, in the sidebar, the model and workload."
    )
)
frame = page.results_or_stop()

target = page.target_control()
rate = page.rate_control()
kind = str(controls.selectbox("Tokens", list(TOKEN_KINDS), "tokens", default="output",
                              help="output: generated tokens; input: prompt tokens; total: both. The whole "
                              "$/GPU-hr is charged to the kind chosen."))  # fmt: skip
frame = page.filtered_or_stop(frame)

costs = costs_at(frame.itertuples(index=False), target, data.hardware_registry(), rate)
# Bars compare chips for one model and workload: the cheapest configuration of each chip.
best, _ = best_per(costs, key=page.chip_of, kind=kind)  # type: ignore[arg-type]
table = best_table(best, kind)

st.subheader(dollars(f"$ per million {kind} tokens at {target:g} tok/s/user, {rate.label}"))
page.illustrative_prices(frame["hardware"], rate)
if table.empty:
    st.warning(f"No configuration was measured around {target:g} tok/s/user with a price: see the notes below.")
else:
    chart_tab, table_tab = st.tabs(["Chart", "Table"])
    with chart_tab:
        cost_column = f"$/M {kind} tokens"
        tooltip = ["configuration", "origin", "sweep", alt.Tooltip(f"{kind} tok/s/GPU", format=",.1f"),
                   alt.Tooltip(cost_column, format="$.4f"), alt.Tooltip("$/M, low", format="$.4f"),
                   alt.Tooltip("$/M, high", format="$.4f"), alt.Tooltip("$/GPU-hr", format="$.2f")]  # fmt: skip
        base = alt.Chart()
        bars = base.mark_bar().encode(
            x=alt.X(
                "label:N",
                title="hardware",
                sort=alt.EncodingSortField(cost_column, order="ascending"),
                axis=alt.Axis(labelAngle=0),
            ),
            y=alt.Y(f"{cost_column}:Q", title=f"$ per million {kind} tokens"),
            color=charts.chip_colour(table["hardware"]),
            tooltip=tooltip,
        )
        errors = base.mark_errorbar(ticks=True, color="black").encode(
            x=alt.X("label:N", sort=alt.EncodingSortField(cost_column, order="ascending")),
            y=alt.Y("$/M, low:Q", title=f"$ per million {kind} tokens"), y2="$/M, high:Q",
        )  # fmt: skip
        st.altair_chart(page.per_chip_bars([bars, errors], table), width="content")
        st.caption("Each bar: the cheapest configuration of that chip. Error bars: the cost at the ends of the 95 % "
                   "interval of the throughput over repeats (none for a single run).")  # fmt: skip
    with table_tab:
        shown = table.drop(columns=["label"])
        st.dataframe(shown, hide_index=True, width="stretch")
        controls.csv_download(shown, "tco")
page.dropped_warning(costs, best, "Not shown (dropped, never extrapolated or clamped)")

st.subheader(dollars(f"$ per million {kind} tokens over interactivity, {rate.label}"))
levels = page.curve_levels(frame)
curve = cost_curve(
    data.version(data.database_url()), hashlib.blake2b(frame.index.to_numpy().tobytes()).hexdigest(), levels,
    rate.tier, rate.custom_usd, kind, _frame=frame,
)  # fmt: skip
if curve.empty:
    st.info("No configuration has a cost at any speed in the measured range.")
else:
    # Log: costs span orders of magnitude across the range (a chip near its top speed costs many times more).
    y = alt.Y("$/M:Q", title=f"$ per million {kind} tokens (log scale)", scale=alt.Scale(type="log"))
    st.altair_chart(charts.chip_curves(curve, y, [alt.Tooltip("$/M:Q", format="$.4f")], target), width="stretch")
    st.caption(dollars(f"Each chip's cheapest configuration read at {len(levels)} speeds across the measured range "
                       "(never extrapolated: a line ends where its chip's measurements end); the dashed line is the "
                       "target above."))  # fmt: skip
with st.expander("Every configuration at this interactivity"):
    everything = every_configuration(costs, kind)
    st.dataframe(everything, hide_index=True, width="stretch")
    controls.csv_download(everything, "tco-configurations")

st.caption(
    dollars(
        f"**$/M {kind} tokens** = ($/GPU-hr) / ({kind} tok/s/GPU × 3600 / 10⁶). The throughput is read at "
        f"{target:g} tok/s/user (= 1000 / TPOT p50) along each repeat's Pareto frontier with a monotone cubic and "
        "averaged over repeats (95 % Student-t interval); the cost is derived from it, never interpolated itself. "
        "A configuration whose measured range does not reach the target is dropped. **Tokens per all-in MW** = "
        "tok/s/GPU × 1000 / all-in kW per GPU. TCO tiers and power figures: recipes/hardware.yaml. Imported and "
        "simulated results carry their origin in brackets."
    )
)
page.price_sources(frame["hardware"], rate)
page.methodology_link()
