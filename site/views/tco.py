"""InferSweep hub, TCO calculator: what a million tokens costs on each chip at a target speed per user.

For one model, precision and workload, each chip is read at the target interactivity (tok/s/user) along its
envelope, the best of all its configurations at that speed or faster (`analysis.economics.
chip_costs_at`: mean of repeats with a 95 % interval, never extrapolated), priced at a TCO tier or a custom
$/GPU-hr, with the throughput interval as error bars. Presentation only: nothing here writes.
"""

from __future__ import annotations

import hashlib

import altair as alt
import pandas as pd
import streamlit as st

from analysis.cost import cost_band
from analysis.economics import (
    TOKEN_KINDS,
    CostRead,
    GpuHourRate,
    chip_costs_at,
    chip_key,
    chip_ratios,
    costs_at,
)
from hubkit import charts, controls, data, page
from hubkit.page import dollars


def priced_chips(chips: list[CostRead], kind: str) -> dict[tuple[str, ...], CostRead]:
    """The chips with a $/M `kind` figure, by (model, precision, workload, chip)."""
    return {chip_key(item.read): item for item in chips if item.per_million(kind) is not None}  # type: ignore[arg-type]


def band_cost(item: CostRead, end: int) -> float | None:
    """$/M output tokens at one end of a projected read's band (end 0: the low cost, 1: the high)."""
    return page.sig(cost_band(item.usd_per_gpu_hour, item.read.band)[end])


def best_table(best: dict, kind: str) -> pd.DataFrame:
    """One row per chip: its envelope's read, three significant figures, the runs behind it."""
    sig = page.sig
    records = []
    for (model, precision, workload, hardware), item in sorted(best.items()):
        read, figure, throughput = item.read, item.per_million(kind), item.read.throughput(kind)  # type: ignore[arg-type]
        records.append(
            {
                "model": model, "workload": workload, "precision": precision, "hardware": hardware,
                "label": page.chip_label(read), "configuration": read.configuration,
                "origin": ", ".join(read.origins), "source": "; ".join(read.sources), "sweep": ", ".join(read.sweeps),
                "read at tok/s/user": sig(read.read_at),
                f"{kind} tok/s/GPU": sig(throughput.mean), "95 % low": sig(throughput.low),
                "95 % high": sig(throughput.high), "repeats": throughput.n, "runs": read.runs,
                "$/GPU-hr": item.usd_per_gpu_hour,
                f"$/M {kind} tokens": sig(figure.usd_per_million), "$/M, low": sig(figure.low),
                "$/M, high": sig(figure.high),
                "$/M output tokens": sig(item.output.usd_per_million) if item.output else None,
                "$/M input tokens": sig(item.input.usd_per_million) if item.input else None,
                "$/M total tokens": sig(item.total.usd_per_million) if item.total else None,
                "output tok/s per all-in MW": sig(item.output_tokens_per_all_in_mw),
                # A projected chip's band: the cost at the ends of the figure ranges (output tokens).
                "$/M output, band low": band_cost(item, 0), "$/M output, band high": band_cost(item, 1),
                "projection": page.projection_text(read, item.usd_per_gpu_hour),
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
                f"{kind} tok/s/GPU": page.sig(throughput.mean) if throughput else None,
                f"$/M {kind} tokens": page.sig(figure.usd_per_million) if figure else None, "note": item.reason,
            }
        )  # fmt: skip
    return pd.DataFrame.from_records(records)


@st.cache_data(max_entries=16, show_spinner=False)
def cost_curve(
    version: tuple[int, ...], rows: str, levels: list[float], tier: str | None, custom_usd: float | None, kind: str,
    _frame: pd.DataFrame,
) -> pd.DataFrame:  # fmt: skip
    """Each chip's $/M along its envelope at every level, per model, precision and workload (`rows` and `version` key
    the cache). The envelope never falls as the speed rises, so neither does a curve of cost."""
    rate = GpuHourRate(tier=tier, custom_usd=custom_usd)
    records = []
    for level in levels:
        chips = chip_costs_at(_frame.itertuples(index=False), level, data.hardware_registry(), rate)
        for (model, precision, workload, hardware), item in priced_chips(chips, kind).items():
            figure = item.per_million(kind)  # type: ignore[arg-type]
            row = page.row_label(model, precision, workload)
            records.append({"tok/s/user": level, "hardware": hardware, "row": row,
                            "configuration": item.read.configuration, "$/M": page.sig(figure.usd_per_million)})  # type: ignore[union-attr]  # fmt: skip
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

rows = data.rows_of(data.database_url(), frame)
costs = costs_at(rows, target, data.hardware_registry(), rate)
# Bars compare chips for one model, precision and workload: each chip along its envelope.
chips = chip_costs_at(rows, target, data.hardware_registry(), rate,
                      history=data.every_run_of(data.database_url(), frame))  # fmt: skip
best = priced_chips(chips, kind)
table = best_table(best, kind)

st.subheader(dollars(f"$ per million {kind} tokens at {target:g} tok/s/user, {rate.label}"))
page.illustrative_prices(frame["hardware"], rate)
if table.empty:
    st.warning(f"No configuration was measured around {target:g} tok/s/user with a price: see the notes below.")
else:
    chart_tab, table_tab = st.tabs(["Chart", "Table"])
    with chart_tab:
        cost_column = f"$/M {kind} tokens"
        tooltip = ["configuration", "origin", "sweep", alt.Tooltip(f"{kind} tok/s/GPU", format=",.3r"),
                   alt.Tooltip(cost_column, format="$.3r"), alt.Tooltip("$/M, low", format="$.3r"),
                   alt.Tooltip("$/M, high", format="$.3r"), alt.Tooltip("$/GPU-hr", format="$.3r"), "runs"]  # fmt: skip
        banded = kind == "output" and table["$/M output, band low"].notna().any()
        # One scale for every row: a bar's length is comparable down the page, not only within its row.
        domain = charts.bar_domain([*table[cost_column], *table["$/M, high"],
                                    *(table["$/M output, band high"] if banded else [])])  # fmt: skip
        written = table.assign(shown=[page.money(value) for value in table[cost_column]])

        def cost_bars(rows: pd.DataFrame) -> alt.LayerChart:
            return charts.chip_bars(
                rows, cost_column, f"$ per million {kind} tokens", "shown",
                list(rows.sort_values(cost_column)["label"]), domain, tooltip, low="$/M, low", high="$/M, high",
                band=("$/M output, band low", "$/M output, band high") if banded else None,
            )  # fmt: skip

        page.bars_per_row(written, cost_bars)
        st.caption("Each bar: the chip's envelope, the best of its configurations at this speed or faster. Error "
                   "bars: the cost at the ends of the 95 % interval of the throughput over repeats (none for a single "
                   "run); dashed grey: a projected chip's band, the cost at the ends of its figure ranges (the bar is "
                   "its central edge, or its low edge where no central figure exists).")  # fmt: skip
    with table_tab:
        shown = table.drop(columns=["label"])
        page.table(shown)
        controls.csv_download(shown, "tco")
page.dropped_warning(chips, best, "Not shown (dropped, never extrapolated or clamped)")

shown_chips = sorted(frame["hardware"].unique())
if len(shown_chips) >= 2:
    with st.expander("Chip over chip: output tok/s/GPU ratio at this speed and at peak"):
        # Bound to the link (`ratio`, `over`) like every control, so a ratio can be shared.
        over = str(controls.selectbox("Chip", shown_chips, "ratio", default=shown_chips[-1], sidebar=False))
        under = str(controls.selectbox("over chip", shown_chips, "over", default=shown_chips[0], sidebar=False))
        ratios = chip_ratios(frame.itertuples(index=False), over, under, target)
        records = [
            {"model": r.model, "precision": r.precision, "workload": r.workload, "at": r.at,
             f"{over} tok/s/GPU": page.sig(r.numerator.output.mean) if r.numerator.output else None,
             f"{under} tok/s/GPU": page.sig(r.denominator.output.mean) if r.denominator.output else None,
             "ratio": page.sig(r.over), "ratio band low": page.sig(r.band[0]) if r.band else None,
             "ratio band high": page.sig(r.band[1]) if r.band else None,
             "origins": ", ".join(sorted({*r.numerator.origins, *r.denominator.origins}))}
            for r in ratios
        ]  # fmt: skip
        if records:
            ratio_table = pd.DataFrame.from_records(records)
            page.table(ratio_table)
            controls.csv_download(ratio_table, "tco-ratio")
            st.caption(f"Each chip read along its envelope at {target:g} tok/s/user and at peak (its slowest point, "
                       "its most tokens per GPU). A projected chip's band gives the ratio's range, its worst case "
                       "each way; projections are models, not measurements (their backtest error is in each chip's "
                       "note).")  # fmt: skip
        else:
            st.info(f"{over} and {under} share no model, precision and workload in this view.")

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
    st.altair_chart(charts.chip_curves(curve, y, [alt.Tooltip("$/M:Q", format="$.3r")], target), width="stretch")
    st.caption(dollars(f"Each chip's envelope read at {len(levels)} speeds across the measured range (never "
                       "extrapolated: a line ends at its chip's fastest point); the dashed line is the target "
                       "above."))  # fmt: skip
with st.expander("Every configuration at this interactivity"):
    everything = every_configuration(costs, kind)
    page.table(everything)
    controls.csv_download(everything, "tco-configurations")

st.caption(
    dollars(
        f"**$/M {kind} tokens** = ($/GPU-hr) / ({kind} tok/s/GPU × 3600 / 10⁶). The throughput is read at "
        f"{target:g} tok/s/user (= 1000 / TPOT p50) along the chip's envelope (the Pareto frontier over all its "
        "configurations) with a monotone cubic and averaged over repeats (95 % Student-t interval); the cost is "
        "derived from it, never interpolated itself. Below the envelope's slowest point the chip serves the target "
        "with that point, faster than asked; above its fastest, it is dropped. **Tokens per all-in MW** = "
        "tok/s/GPU × 1000 / all-in kW per GPU. TCO tiers and power figures: recipes/hardware.yaml. Imported and "
        "simulated results carry their origin in brackets."
    )
)
page.price_sources(frame["hardware"], rate)
page.methodology_link()
