"""InferSweep hub, Compare: two or more configurations side by side.

Their curves on one chart (output tok/s/GPU against interactivity, mean ± 95 % interval over repeats),
a table at one target interactivity (each configuration's per-repeat frontiers read there by
`analysis.compare.compare_at_interactivity`, never extrapolated, with the cost per million
output tokens derived from the read throughput), and the key latencies per concurrency. Each
configuration is shown by its latest sweep. Presentation only: nothing here writes.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analysis import axes
from analysis.compare import compare_at_interactivity
from analysis.economics import DEFAULT_TIER
from analysis.envelope import run_spread
from analysis.intervals import mean_interval
from analysis.public_results import run_path
from hubkit import charts, controls, data, page

LATENCIES = (("ttft_p50_ms", "TTFT p50 (ms)"), ("ttft_p99_ms", "TTFT p99 (ms)"), ("tpot_p50_ms", "TPOT p50 (ms)"),
             ("e2el_p50_ms", "E2E latency p50 (ms)"))  # fmt: skip


def labelled(frame: pd.DataFrame) -> pd.DataFrame:
    """`choice`: the configuration label, with its workload when the same label was measured on several."""
    workloads = frame.groupby("configuration")["workload"].transform("nunique")
    choice = frame["configuration"].where(workloads == 1, frame["configuration"] + " · " + frame["workload"])
    return frame.assign(choice=choice)


def ordered_choices(frame: pd.DataFrame) -> list[str]:
    """Choices grouped by workload, the most measured workload first, so the first two are comparable."""
    popularity = frame.groupby("workload")["choice"].nunique().sort_values(ascending=False, kind="stable")
    rank = {workload: index for index, workload in enumerate(popularity.index)}
    pairs = frame[["choice", "workload"]].drop_duplicates("choice")
    return [
        choice for _, choice in sorted((rank[w], c) for c, w in zip(pairs["choice"], pairs["workload"], strict=True))
    ]


def per_concurrency(frame: pd.DataFrame, usd: dict[str, float | None]) -> pd.DataFrame:
    """One row per configuration and concurrency: means over repeats, throughput's 95 % interval, cost."""
    rows = []
    for (choice, concurrency), group in frame.groupby(["choice", "concurrency"], sort=True):
        samples = list(group["output_throughput_per_gpu"])
        interval = mean_interval(samples)
        hourly = usd.get(str(group["hardware"].iloc[0]))
        cost, cost_low, cost_high = axes.y_interval(axes.COST, interval, usd_per_gpu_hour=hourly)
        first = group.sort_values("repeat_index").iloc[0]
        rows.append({
            "configuration": choice, "origin": first["origin"], "sweep": first["sweep"], "concurrency": concurrency,
            "repeats": len(samples), "interactivity p50 (tok/s/user)": page.sig(group["interactivity_p50"].mean()),
            "output tok/s/GPU": page.sig(interval.mean), "95 % low": page.sig(interval.low),
            "95 % high": page.sig(interval.high), "$/M output tokens": page.sig(cost),
            "$/M 95 % low": page.sig(cost_low), "$/M 95 % high": page.sig(cost_high),
            **{label: page.sig(group[column].mean()) for column, label in LATENCIES},
            "run": run_path(str(first["sweep"]), str(first["point_key"])),
        })  # fmt: skip
    return pd.DataFrame(rows)


st.title("Compare")
st.caption("Two or more configurations side by side: their curves, their figures at one interactivity, and "
           "their latencies per concurrency.")  # fmt: skip
frame = page.results_or_stop()

frame = controls.filters(frame)
frame = controls.origins(frame)
page.validity_counts(frame[frame["latest"]])
# A comparison reads each configuration's latest sweep, valid points only: pooling sweeps would mix
# nights, and an invalid point is not a measurement (Trends shows the history). Every run stays at hand for the
# spread between runs of each configuration.
every_run = frame[frame["valid"]]
frame = labelled(frame[frame["latest"] & frame["valid"]])
choices = ordered_choices(frame) if not frame.empty else []
chosen = controls.multiselect("Configurations", choices, "config", default=choices[:2],
                              help="Two or more; the link keeps the choice.")  # fmt: skip
target = page.target_control("target", help="Each configuration is read along its frontier here, never beyond it.")
rate = page.rate_control()
custom_usd = rate.custom_usd
if len(choices) < 2:
    st.info(
        "Compare needs two or more configurations and only "
        + ("one matches" if choices else "none match")
        + " these filters. Widen them in the sidebar, or see a single configuration on the Pareto explorer."
    )
    st.stop()
if len(chosen) < 2:
    st.info("Pick two or more configurations in the sidebar to compare them.")
    st.stop()

selected = frame[frame["choice"].isin(chosen)]
registry = data.hardware_registry()
usd = {hardware: rate.usd_per_gpu_hour(hardware, registry)[0] for hardware in selected["hardware"].unique()}
rate_label = f"custom ${custom_usd:g}/GPU-hr" if custom_usd is not None else f"the {rate.tier} TCO tier"
series = selected["choice"].where(
    selected["origin"] == "measured", selected["choice"] + " [" + selected["origin"] + "]"
)
labels = dict(zip(selected["choice"], series, strict=True))
hardware_of = dict(zip(selected["choice"], selected["hardware"], strict=True))
engine_of = dict(zip(selected["choice"], selected["engine"], strict=True))
levels = per_concurrency(selected, usd)

st.subheader("Curves")
chart_tab, table_tab = st.tabs(["Chart", "Table"])
with chart_tab:
    plotted = levels.assign(series=levels["configuration"].map(labels))
    many = charts.is_many(plotted["series"].nunique())
    if many:
        plotted = plotted.assign(hardware=plotted["configuration"].map(hardware_of),
                                 engine=plotted["configuration"].map(engine_of))  # fmt: skip
        st.caption(charts.many_caption(plotted["series"].nunique()))
    tip = charts.tip
    tooltip = [tip("series", "configuration"), tip("concurrency"), tip("repeats"),
               tip("interactivity p50 (tok/s/user)", number_format=",.3~r"),
               tip("output tok/s/GPU", number_format=",.3~r"), tip("95 % low", number_format=",.3~r"),
               tip("95 % high", number_format=",.3~r"), tip("run", "run detail (click)")]  # fmt: skip
    chart = charts.scatter(
        plotted, x="interactivity p50 (tok/s/user)", y="output tok/s/GPU", series="series", tooltip=tooltip,
        x_title="Interactivity p50 (tok/s/user)", y_title="Output tok/s per GPU", error_low="95 % low",
        error_high="95 % high", connect=True,
        colour_by="hardware" if many else None, shape_by="engine" if many else None, href="run",
    )  # fmt: skip
    target_rule = {"type": "rule", "strokeDash": [4, 4], "color": charts.INK}
    chart["layer"].append({"data": {"values": [{}]}, "mark": target_rule,  # one rule, not one a row of the points
                           "encoding": {"x": {"datum": target, "type": "quantitative"}}})  # fmt: skip
    charts.draw(chart, height=420, many=many)
    st.caption(f"Dashed line: the target interactivity, {target:g} tok/s/user. Click a point for its run detail.")
with table_tab:
    curve_table = levels.assign(configuration=levels["configuration"].map(labels))
    page.table(curve_table, column_config={"run": st.column_config.LinkColumn("run", display_text="open run detail")})
    controls.csv_download(curve_table, "compare-curves")

st.subheader(f"At {target:g} tok/s/user")
# With a custom rate, the reads' own TCO notes (at the default tier) are dropped below.
reads = compare_at_interactivity(list(selected.itertuples(index=False)), target, registry, rate.tier or DEFAULT_TIER)
history = list(every_run[every_run["fingerprint"].isin(selected["fingerprint"].unique())].itertuples(index=False))
choice_of = dict(zip(selected["fingerprint"], selected["choice"], strict=False))
workload_of = dict(zip(selected["fingerprint"], selected["workload"], strict=False))
at_target = []
for read in sorted(reads, key=lambda item: chosen.index(choice_of[item.fingerprint])):
    hourly = usd.get(read.hardware)
    cost = (
        axes.y_interval(axes.COST, read.throughput, usd_per_gpu_hour=hourly)
        if read.throughput is not None
        else (None, None, None)
    )
    note = read.note if custom_usd is None else "; ".join(part for part in read.note.split("; ") if "TCO" not in part)
    runs = [row for row in history if row.fingerprint == read.fingerprint and row.workload == workload_of[
        read.fingerprint]]  # fmt: skip
    spread = run_spread(runs, runs[:1], target)
    at_target.append({
        "configuration": labels[choice_of[read.fingerprint]], "workload": workload_of[read.fingerprint],
        "hardware": read.hardware, "engine": read.engine, "origins": ", ".join(read.origins),
        "output tok/s/GPU": page.sig(read.throughput.mean) if read.throughput else None,
        "95 % low": page.sig(read.throughput.low) if read.throughput else None,
        "95 % high": page.sig(read.throughput.high) if read.throughput else None,
        "repeats read": read.throughput.n if read.throughput else 0, "repeats dropped": read.dropped_repeats,
        "runs": spread.runs, "runs' lowest tok/s/GPU": page.sig(spread.low), "runs' highest tok/s/GPU": page.sig(
            spread.high),
        "$/GPU-hr": hourly, "$/M output tokens": page.sig(cost[0]), "$/M 95 % low": page.sig(cost[1]),
        "$/M 95 % high": page.sig(cost[2]), "note": note,
    })  # fmt: skip
target_table = pd.DataFrame(at_target)
first = target_table["output tok/s/GPU"].iloc[0]
target_table["vs first"] = [
    f"{value / first - 1:+.1%}" if value is not None and pd.notna(value) and first and pd.notna(first) else ""
    for value in target_table["output tok/s/GPU"]
]
page.table(target_table)
controls.csv_download(target_table, "compare-at-target")
st.caption(
    page.dollars(
        f"Each repeat's Pareto frontier of (interactivity p50, output tok/s/GPU) is read at {target:g} tok/s/user "
        "with a monotone cubic (PCHIP) and the reads give the mean and 95 % interval (Student-t); a configuration "
        "whose measured range does not reach the target is left without a figure, never extrapolated. "
        f"$/M output tokens = ($/GPU-hr) ÷ (output tok/s/GPU × 3600 ÷ 10⁶) at {rate_label}, from the read "
        "throughput (and from each bound of its interval). 'vs first' is the throughput relative to the first "
        "configuration chosen. **runs**: the runs that measured the configuration, with the lowest and highest "
        "throughput they read at the target (one run: no spread known). Figures to three significant figures. "
        "Imported and simulated results carry their origin in brackets."
    )
)
page.methodology_link()
