"""InferSweep hub, Capacity: how many live agents each configuration serves at each SLO tier (recipes/slo_tiers.yaml).

The same read as `infersweep capacity` (analysis/capacity.py): the largest measured load level (live
replay sessions, or requests in flight of a fixed-length sweep) that, with every level below it, keeps the tier's
TTFT p90 and median tok/s/user; the crossing to the next level interpolated (labelled); never extrapolated. Per
accelerator, per all-in MW and per TCO dollar-hour. Each level also shows its goodput: the share of its requests that
met the tier on their own, where its Points stored it. Presentation only.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from analysis.capacity import LoadLevel, capacities, split_readable
from hubkit import charts, controls, data, page
from recipes.slo import SloTier


def goodput_percent(level: LoadLevel, tier: SloTier) -> float | None:
    share = level.goodput(tier)
    return None if share is None else page.sig(100 * share)


st.title("Capacity")
st.markdown(
    "**What is this?** The most live agents each configuration serves while it keeps an SLO tier: its TTFT p90 "
    "at most the tier's and its median speed per user at least the tier's, at that load and every load below. Read "
    "from the measured load levels only (live sessions of a replay, requests in flight of a fixed-length sweep): "
    "between two levels the crossing is interpolated and labelled, above the largest nothing is said. Goodput: the "
    "share of a level's requests that met the tier on their own."
)
frame = page.filtered_or_stop(page.results_or_stop())
rate = page.rate_control(custom=False)
tiers = data.slo_tiers()
names = controls.multiselect("SLO tiers", list(tiers), "slo", help="recipes/slo_tiers.yaml: each tier's thresholds "
                             "and their source are listed below.")  # fmt: skip
if not names:
    st.warning("Pick at least one SLO tier.")
    st.stop()
chosen = [tiers[name] for name in names]

readable, left_out = split_readable(list(frame.itertuples(index=False)))
if left_out:
    st.caption(f"{left_out:,} configuration(s) left out: their results state no TTFT p90 (imported rows publish "
               "other percentiles), which every tier reads.")  # fmt: skip
if not readable:
    st.info("No configuration here states a TTFT p90: nothing to read capacity from. Sweeps measured by InferSweep "
            "(replays and fixed-length sweeps over concurrency) do.")  # fmt: skip
    st.stop()

read = capacities(readable, chosen, data.hardware_registry(), str(rate.tier))
table = pd.DataFrame(
    [
        {
            # The answers first (AA-AgentPerf's per accelerator and per MW among them), then what they rest on.
            "configuration": item.configuration, "tier": item.tier, "agents": item.agents,
            "agents per accelerator": page.sig(item.per_accelerator), "per all-in MW": page.sig(item.per_all_in_mw),
            "per $/hr": page.sig(item.per_usd_hour), "read": item.basis, "hardware": item.hardware,
            "sweep": item.sweep, "why": item.explanation,
        }
        for item in read
    ]
)  # fmt: skip

st.subheader(f"Agents served per accelerator, {rate.label}")
shown = table.assign(label=lambda t: t["configuration"] + " · " + t["sweep"])
bars = (
    alt.Chart(shown)
    .mark_bar()
    .encode(
        x=alt.X("agents per accelerator:Q", title="live agents per accelerator"),
        y=alt.Y("tier:N", title=None, sort=names, axis=alt.Axis(labelOverlap=False)),
        color=charts.chip_colour(shown["hardware"]),
        tooltip=[
            "configuration", "sweep", "tier", "agents", "read",
            alt.Tooltip("agents per accelerator", format=".3r"), "why",
        ],
    )
    .properties(width=170, height=alt.Step(18))
    # One panel per configuration, its name above it and its tiers down the side: as many tiers as the file holds
    # stay within a phone's width (tiers side by side ran past the right edge once there were six).
    # The name whole, a line per part: cut short it would hide what tells two configurations apart.
    .facet(row=alt.Row("label:N", title=None, header=alt.Header(
        labelOrient="top", labelAnchor="start", labelAngle=0, labelFontSize=12, labelLimit=0,
        labelExpr="split(datum.value, ' · ')")))
    .configure_legend(orient="bottom")
)  # fmt: skip
st.altair_chart(bars, width="stretch")
st.caption(
    "'at least': the largest level measured serves at the tier, so more may; 'interpolated': between the last level "
    "that serves and the first that misses; 'below the smallest measured': already the smallest misses."
)
page.table_with_csv(table, "capacity")

st.subheader("The load levels it rests on")
levels = pd.DataFrame(
    [
        {
            "configuration": item.configuration, "sweep": item.sweep,
            "concurrency": level.concurrency, "repeats": level.repeats,
            "TTFT p90 ms": page.sig(level.ttft_p90_ms), "tok/s/user p50": page.sig(level.interactivity_p50),
            **{
                column: value
                for tier in chosen
                for column, value in ((f"{tier.name}: serves", level.serves(tier)),
                                      (f"{tier.name}: goodput %", goodput_percent(level, tier)))
            },
        }
        for item in {(item.fingerprint, item.sweep): item for item in read}.values()
        for level in item.levels
    ]
)  # fmt: skip
page.table_with_csv(levels, "capacity-levels")
st.caption("Goodput % is empty where the level's Points did not store it for these thresholds (measured before "
           "InferSweep stored it, or under another tier file).")  # fmt: skip
with st.expander("The SLO tiers"):
    page.table(pd.DataFrame([{"tier": t.name, "TTFT p90 ≤ ms": t.ttft_p90_ms, "tok/s/user ≥": t.interactivity_p50,
                              "source": t.source, "note": t.note or ""} for t in tiers.values()]))  # fmt: skip
page.methodology_link()
