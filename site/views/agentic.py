"""InferSweep hub, Agentic cache: where an agentic replay's prompt tokens came from, against the trace's ceiling.

Per concurrency (live session trees), the share of prompt tokens served from HBM (the engine's own prefix
cache), loaded back from the DRAM/CPU offload tier, or recomputed, from the engine's counters over the
Point; the trace's theoretical hit rate is the ceiling of the first two together. Offload on and off arms
of one model and hardware sit side by side (one panel per configuration). The shares come from
`analysis.cache_tiers`; repeats of a Point are averaged.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from analysis.cache_tiers import prompt_tier_shares
from analysis.public_results import NOT_MEASUREMENTS
from hubkit import charts, controls, data, page
from hubkit.charts import PALETTE

TIERS = ("HBM", "DRAM/CPU offload", "recomputed")
NO_PREDICTION = "no prediction stored for this point"
# One panel per configuration, its long label on several lines (one part each) so panels side by side stay legible.
PANEL_WIDTH = 240
PANEL = alt.Column(
    "label:N", title=None, header=alt.Header(labelExpr="split(datum.value, ' · ')", labelFontSize=12, labelLimit=0)
)
RATE_MEASURES = {
    "theoretical": "theoretical ceiling (trace)",
    "agentx_theoretical_hit_rate": "theoretical, AgentX harness's definition (blocks)",
    "counter_hit": "realised (engine counters)",
    "realized_hit_rate": "realised (usage cached_tokens)",
    "planner_hit": "capacity planner prediction",
}


def percent(value: float | None) -> float | None:
    return None if value is None or pd.isna(value) else round(100.0 * float(value), 1)


def shares_of(row: pd.Series) -> dict[str, float | None]:
    shares = prompt_tier_shares(
        row["server_prompt_tokens_local_cache_hit"],
        row["server_prompt_tokens_external"],
        row["server_prompt_tokens_local_compute"],
    )
    if shares is None:
        return {"hbm": None, "offload": None, "recomputed": None, "counter_hit": None}
    return {"hbm": shares.hbm, "offload": shares.offload, "recomputed": shares.recomputed, "counter_hit": shares.hit}


def planner_hit(row: pd.Series) -> float | None:
    hbm, dram = row["planner_hbm_hit_rate"], row["planner_dram_hit_rate"]
    if pd.isna(hbm) and pd.isna(dram):
        return None
    return (0.0 if pd.isna(hbm) else float(hbm)) + (0.0 if pd.isna(dram) else float(dram))


def agentx_label(differences: str | None) -> str:
    """'yes', or 'no: <how the replay departs from AgentX's settings>' (recipes.schema.agentx_differences)."""
    if differences is None or pd.isna(differences):
        return "–"
    return "yes" if not differences else f"no: {differences}"


def prediction_text(total: float | None, hbm: float | None, dram: float | None) -> str:
    if total is None or pd.isna(total):
        return NO_PREDICTION
    return f"{percent(total)} % (HBM {percent(hbm) or 0} %, DRAM {percent(dram) or 0} %)"


BREAKDOWN_MEASURES = {"realized_hit_rate": "realised (usage cached_tokens)", "theoretical_hit_rate": "theoretical"}


def breakdown_frame(rows: pd.DataFrame, kind: str) -> pd.DataFrame:
    """One line per (configuration, range): the Points' `kind` figures ('per_turn' or 'per_context'), their
    requests summed and their rates weighted by requests over the repeats shown."""
    keys = tuple(sorted(zip(rows["sweep"].astype(str), rows["point_key"].astype(str), strict=True)))
    found = data.replay_breakdowns(data.database_url(), keys)
    named = zip(rows["label"], rows["sweep"].astype(str), rows["point_key"].astype(str), strict=True)
    lines = [
        {**{name: value for name, value in bucket.items() if name != "label"}, "label": label,
         "label_range": bucket["label"]}
        for label, sweep, key in named
        for bucket in found.get((sweep, key), {}).get(kind, [])
    ]  # fmt: skip
    if not lines:
        return pd.DataFrame()
    frame = pd.DataFrame(lines)
    for name in ("realized_hit_rate", "theoretical_hit_rate", "ttft_p50_ms"):
        frame[name] = pd.to_numeric(frame[name], errors="coerce") * frame["requests"]
    summed = frame.groupby(["label", "label_range", "low"], as_index=False).sum(numeric_only=True)
    for name in ("realized_hit_rate", "theoretical_hit_rate", "ttft_p50_ms"):
        summed[name] = summed[name] / summed["requests"]
    return summed.sort_values(["label", "low"])


def breakdown_tab() -> None:
    """Hit rate and TTFT by turn and by prompt length at one concurrency, each against its trace's ceiling."""
    levels = sorted(points["concurrency"].unique())
    level = st.selectbox("Concurrency (live session trees)", levels, index=len(levels) - 1, key="turns_level")
    labels = points[["configuration", "sweep", "label"]].drop_duplicates()
    rows = per_repeat[per_repeat["concurrency"] == level].merge(labels, on=["configuration", "sweep"])
    for kind, title in (("per_turn", "turn in the session"), ("per_context", "prompt length")):
        frame = breakdown_frame(rows, kind)
        if frame.empty:
            st.info(
                f"No {title} figures stored for these Points (imported replays, whose tool reports none, and "
                "replays recorded before they were)."
            )
            continue
        long = frame.melt(id_vars=["label", "label_range", "low", "requests", "ttft_p50_ms"],
                          value_vars=list(BREAKDOWN_MEASURES), var_name="measure", value_name="rate")  # fmt: skip
        long["measure"] = long["measure"].map(BREAKDOWN_MEASURES)
        long["rate"] = long["rate"] * 100
        order = list(dict.fromkeys(frame.sort_values("low")["label_range"]))
        x = alt.X("label_range:N", title=title, sort=order, axis=alt.Axis(labelAngle=-30, labelOverlap=False))
        rate = (
            alt.Chart(long).mark_line(point=True)
            .encode(x=x, y=alt.Y("rate:Q", title="hit rate %", scale=alt.Scale(domain=[0, 100])),
                    color=alt.Color("measure:N", title=None, scale=alt.Scale(range=list(PALETTE)),
                                    legend=alt.Legend(labelLimit=0, orient="bottom")),
                    strokeDash=alt.StrokeDash("measure:N", title=None),
                    tooltip=["label", "label_range", "measure", alt.Tooltip("rate:Q", format=".1f"), "requests"])
            .properties(width=PANEL_WIDTH, height=200).facet(column=PANEL)
        )  # fmt: skip
        ttft = (
            alt.Chart(frame).mark_bar(color=PALETTE[0])
            .encode(x=x, y=alt.Y("ttft_p50_ms:Q", title="TTFT p50 (ms)"),
                    tooltip=["label", "label_range", alt.Tooltip("ttft_p50_ms:Q", format=",.0f"), "requests"])
            .properties(width=PANEL_WIDTH, height=140).facet(column=PANEL)
        )  # fmt: skip
        st.markdown(f"**By {title}** at concurrency {level}")
        st.altair_chart(rate)
        st.altair_chart(ttft)
    st.caption(
        "The measured requests that succeeded, grouped by their turn in their session (0, 1, 2-3, 4-7, ...) and by "
        "the prompt length they sent; realised = Σ cached_tokens / Σ prompt tokens of the group, theoretical = the "
        "trace's hits for the very same requests (runners/loadgen/breakdown.py). Repeats are weighted by requests."
    )


st.title("Agentic cache")
agentic = page.results_or_stop(
    "No agentic results yet. Replay a coding-agent trace against an engine with "
    "`infersweep run recipes/local/agentic-tiny-llama-cpu.yaml` (or `infersweep replay` against any endpoint); "
    "its cache hits by tier appear here.",
    workload_kind="agentic-replay",
)

agentic = controls.origins(agentic)
agentic = controls.filters(agentic, ("model", "hardware", "engine", "precision"))
agentic = controls.only_valid(agentic)
agentic = controls.latest_only(agentic)
page.validity_counts(agentic)
if agentic.empty:
    st.info("No agentic result matches the filters in the sidebar: widen them (or switch more origins on).")
    st.stop()

per_repeat = pd.concat(
    [
        agentic.reset_index(drop=True),
        pd.DataFrame([shares_of(row) for _, row in agentic.iterrows()]),
        pd.DataFrame({"planner_hit": [planner_hit(row) for _, row in agentic.iterrows()]}),
    ],
    axis=1,
).rename(columns={"theoretical_hit_rate": "theoretical"})
keys = ["configuration", "kv_offload", "hardware", "model", "origin", "sweep", "concurrency",
        "replay_agentx_differences"]  # fmt: skip
# Tier traffic: GB each way over the Point, the rate the host link moved it at, and the traffic over the Point.
per_repeat["to_dram_gb"] = per_repeat["server_kv_offload_bytes_to_host"] / 1e9
per_repeat["from_dram_gb"] = per_repeat["server_kv_offload_bytes_to_device"] / 1e9
per_repeat["link_gbps"] = per_repeat["server_kv_offload_bytes_to_device"] / (
    per_repeat["server_kv_offload_seconds_to_device"] * 1e9
)
per_repeat["traffic_gbps"] = (per_repeat["to_dram_gb"] + per_repeat["from_dram_gb"]) / per_repeat["duration_s"]
rates = ["hbm", "offload", "recomputed", "counter_hit", "realized_hit_rate", "theoretical",
         "agentx_theoretical_hit_rate", "planner_hit",
         "planner_hbm_hit_rate", "planner_dram_hit_rate", "e2e_interactivity_p90", "to_dram_gb", "from_dram_gb",
         "link_gbps", "traffic_gbps"]  # fmt: skip
per_repeat[rates] = per_repeat[rates].apply(pd.to_numeric, errors="coerce").replace([np.inf, -np.inf], np.nan)
points = (
    per_repeat.groupby(keys, dropna=False)
    .agg(repeats=("repeat_index", "count"), **{name: (name, "mean") for name in rates})
    .reset_index()
    .sort_values(["configuration", "concurrency"])
)
# A panel per configuration; its origin when not a measurement, its sweep when history is shown too.
several_sweeps = points.groupby("configuration")["sweep"].transform("nunique") > 1
points["label"] = [
    configuration + (f" ({origin})" if origin != "measured" else "") + (f" · {sweep}" if several else "")
    for configuration, origin, sweep, several in zip(
        points["configuration"], points["origin"], points["sweep"], several_sweeps, strict=True
    )
]

table = pd.DataFrame(
    {
        "configuration": points["label"],
        "KV offload": points["kv_offload"],
        "concurrency": points["concurrency"],
        "repeats": points["repeats"],
        "HBM %": points["hbm"].map(percent),
        "DRAM/CPU offload %": points["offload"].map(percent),
        "recomputed %": points["recomputed"].map(percent),
        "realised, counters %": points["counter_hit"].map(percent),
        "realised, usage %": points["realized_hit_rate"].map(percent),
        "theoretical ceiling %": points["theoretical"].map(percent),
        "theoretical, AgentX harness's definition %": points["agentx_theoretical_hit_rate"].map(percent),
        "headroom (points)": (points["theoretical"] - points["counter_hit"]).map(percent),
        "planner prediction": [
            prediction_text(*values)
            for values in zip(points["planner_hit"], points["planner_hbm_hit_rate"], points["planner_dram_hit_rate"],
                              strict=True)
        ],
        "to DRAM (GB)": points["to_dram_gb"].round(3),
        "from DRAM (GB)": points["from_dram_gb"].round(3),
        "host link, from DRAM (GB/s)": points["link_gbps"].round(1),
        "tier traffic over the Point (GB/s)": points["traffic_gbps"].round(3),
        "E2E interactivity p90 (tok/s/user)": points["e2e_interactivity_p90"],
        "comparable with AgentX": [agentx_label(text) for text in points["replay_agentx_differences"]],
        "sweep": points["sweep"],
    }
)  # fmt: skip

long = points.melt(
    id_vars=["label", "concurrency", "theoretical", "planner_hit"],
    value_vars=["hbm", "offload", "recomputed"],
    var_name="tier",
    value_name="share",
)
long["tier"] = long["tier"].map(dict(zip(("hbm", "offload", "recomputed"), TIERS, strict=True)))
long["tier order"] = long["tier"].map({tier: index for index, tier in enumerate(TIERS)})
long[["share", "theoretical", "planner_hit"]] = long[["share", "theoretical", "planner_hit"]] * 100
# Upright: an ordinal axis turns its labels on their side, which made a lone "2" read as a dash.
x = alt.X("concurrency:O", title="concurrency (live session trees)", axis=alt.Axis(labelAngle=0))
bars = (
    alt.Chart()
    .mark_bar()
    .encode(
        x=x,
        y=alt.Y("share:Q", title="% of prompt tokens", stack="zero", scale=alt.Scale(domain=[0, 100])),
        color=alt.Color("tier:N", title="served from", sort=list(TIERS), scale=alt.Scale(range=list(PALETTE))),
        order=alt.Order("tier order:Q"),
        tooltip=["label", "concurrency", "tier", alt.Tooltip("share:Q", format=".1f")],
    )
)
ceiling = (
    alt.Chart()
    .mark_tick(color=charts.INK, thickness=3)
    .encode(x=x, y="theoretical:Q", tooltip=[alt.Tooltip("theoretical:Q", title="theoretical ceiling %", format=".1f")])
)
prediction = (
    alt.Chart()
    .mark_point(shape="diamond", size=120, color=charts.INK, filled=False)
    .encode(x=x, y="planner_hit:Q", tooltip=[alt.Tooltip("planner_hit:Q", title="planner prediction %", format=".1f")])
)
chart = alt.layer(bars, ceiling, prediction, data=long).properties(width=PANEL_WIDTH).facet(column=PANEL)

rate_long = points.melt(
    id_vars=["label", "concurrency"], value_vars=list(RATE_MEASURES), var_name="measure", value_name="rate"
).dropna(subset=["rate"])
rate_long["measure"] = rate_long["measure"].map(RATE_MEASURES)
rate_long["rate"] = rate_long["rate"] * 100
rate_chart = (
    alt.Chart(rate_long)
    .mark_line(point=True)
    .encode(
        x=x,
        y=alt.Y("rate:Q", title="hit rate %", scale=alt.Scale(domain=[0, 100])),
        # The measures' names are sentences: the legend shows them whole (its default limit cut them at 160 px).
        color=alt.Color("measure:N", title=None, scale=alt.Scale(range=list(PALETTE)), legend=alt.Legend(labelLimit=0)),
        strokeDash=alt.StrokeDash("measure:N", title=None, legend=alt.Legend(labelLimit=0)),
        tooltip=["label", "concurrency", "measure", alt.Tooltip("rate:Q", format=".1f")],
    )
    .properties(width=PANEL_WIDTH)
    .facet(column=PANEL)
)

shown = sorted(set(points["origin"]) & set(NOT_MEASUREMENTS))
if shown:
    st.warning(
        f"Includes {', '.join(shown)} results, labelled in each panel's title: not measurements of real hardware."
    )
if "imported" in set(points["origin"]):
    st.caption("Imported results (labelled in each panel's title) were measured elsewhere, by the tool that wrote "
               "them.")  # fmt: skip
departing = sorted({text for text in points["replay_agentx_differences"].dropna() if text})
if departing:
    st.info(
        "Not comparable with InferenceX's AgentX results: "
        + " | ".join(departing)
        + ". AgentX measures a 3,600 s window after 10 one-token warm-up turns per lane, on the recorded clock and "
        "lengths, through chat completions counted by the server (docs/METRICS.md); the Table tab's column "
        "'comparable with AgentX' says which configuration departs how."
    )
tiers_tab, rates_tab, turns_tab, table_tab = st.tabs(["Tiers", "Hit rates", "By turn and context", "Table"])
with tiers_tab:
    st.altair_chart(chart)
    st.caption(
        "Bars: share of the Point's prompt tokens by the source of their KV cache, from the engine's counters "
        "(`prompt_tokens_by_source`: local_cache_hit = HBM, external_kv_transfer = DRAM/CPU offload, "
        "local_compute = recomputed), each over their sum. Black tick: the trace's theoretical hit rate (longest "
        "leading run of already-seen blocks, token weighted, at the engine's block size), the ceiling of HBM + "
        "DRAM. Hollow diamond: the capacity planner's prediction, where one is stored."
    )
    # A panel without bars is a result without the engine's counters (an imported AgentX harness run reports none).
    no_counters = sorted(set(points["label"]) - set(long.dropna(subset=["share"])["label"]))
    if no_counters:
        st.caption(f"No bars for {', '.join(no_counters)}: these results carry no engine counters by KV source "
                   "(an imported harness run reports none; its hit rates are on the Hit rates tab).")  # fmt: skip
with rates_tab:
    st.altair_chart(rate_chart)
    st.caption(
        "Realised (counters) = HBM + DRAM shares above; realised (usage) = Σ `cached_tokens` / Σ prompt tokens of "
        "the measured requests. Counter deltas include the Point's warmup requests; usage counts only measured ones. "
        "Two theoretical rates, each named: the trace's ceiling (ours: token weighted, at the engine's block size) and "
        "the AgentX harness's 'Theoretical Prefix Cache Hit' (the measured requests' blocks before their first "
        "unseen one over their blocks, at the trace's block size; for an imported harness run, computed here over "
        "the requests it measured where its per-request records came with it, else its own figure)."
    )
with turns_tab:
    breakdown_tab()
with table_tab:
    page.table(table)
    controls.csv_download(table, "agentic-cache")
if points["planner_hit"].isna().all():
    st.caption(f"Capacity planner: {NO_PREDICTION} (none of the shown points carries one).")
page.methodology_link("Definitions on the Methodology page")
