"""InferSweep hub, Pareto explorer: every configuration's trade-off between speed per user and economy.

One point per configuration, sweep and concurrency: the mean over its repeats, with a 95 % interval as
error bars (`analysis.axes.repeat_intervals`, i.e. `intervals.mean_interval` for every point
at once). The y metric is output tok/s per GPU or a figure derived from it (cost per million output
tokens at a TCO tier or a custom $/GPU-hr, tokens per $, tok/s per all-in MW: `analysis.axes`);
the frontier of each configuration is taken in the direction that is better for that pair of axes
(`analysis.pareto.frontier_mask`). Each point links to its Run detail page.
Presentation only: nothing here writes.
"""

from __future__ import annotations

import hashlib
from datetime import date
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from analysis import axes, envelope
from analysis.comparability import split_by_basis
from analysis.pareto import frontier_mask
from analysis.public_results import run_path
from analysis.thinning import thin_mask
from hubkit import charts, controls, data, page
from recipes.hardware import TCO_TIER_LABELS
from recipes.validity import INVALID, NOT_CHECKED, VALID

PRICED = (axes.COST, axes.TOKENS_PER_DOLLAR)
# The measured column behind each x metric (E2E-normalised interactivity is chosen per row below).
X_COLUMNS = {axes.INTERACTIVITY: "interactivity_p50", axes.E2E_LATENCY: "e2el_p50_ms", axes.TTFT: "ttft_p50_ms",
             axes.TTFT_P90: "ttft_p90_ms"}  # fmt: skip
# Above this many points the chart draws a thinned set (`analysis.thinning`); a browser takes seconds to draw
# tens of thousands of marks (docs/BENCHMARKS.md, "Hub render"). The table lists at most TABLE_ROWS; the CSV all.
CHART_POINTS = 2_500
TABLE_ROWS = 1_000
# What identifies one plotted point: a configuration measured at one concurrency in one sweep.
POINT = ["series", "configuration", "recipe", "fingerprint", "workload", "sweep", "origin", "concurrency"]


def run_links(points: pd.DataFrame) -> list[str]:
    return [run_path(sweep, key) for sweep, key in zip(points["sweep"], points["point_key"], strict=True)]


def point_table(points: pd.DataFrame, x_label: str, y_label: str) -> pd.DataFrame:
    """The table (and CSV) of the plotted points, one row per point."""
    return pd.DataFrame(
        {
            "configuration": points["series"], "workload": points["workload"], "origin": points["origin"],
            "source": points["source"], "sweep": points["sweep"], "concurrency": points["concurrency"],
            "repeats": points["repeats"], x_label: points["x"].map(page.sig), y_label: points["y"].map(page.sig),
            "95 % low": points["y_low"].map(page.sig), "95 % high": points["y_high"].map(page.sig),
            "on frontier": points["frontier"], "on chip envelope": points["envelope"],
            "tp/ep": points["parallelism"], "offload": points["offload"], "hardware": points["hardware"],
            "engine": points["serving_engine"], "model": points["model"], "precision": points["precision"],
            "$/GPU-hr": points["usd"], "all-in kW/GPU": points["kw"], "validity": points["validity"],
            "validity reasons": points["reasons"],
            # Only where the source states one: an undated import's finish would be the time it was imported.
            "finished": points["finished"].where(points["dated"]),
            "date": points["finished"].astype(str).str[:10].where(points["dated"], "date unknown"),
            "run": run_links(points),
            # Energy per token = measured accelerator power per GPU / output tok/s per GPU (where power was sampled).
            "J per output token": (points["power"] / points["output"]).map(page.sig),
        }
    )  # fmt: skip


def series_names(frame: pd.DataFrame, several_workloads: bool) -> pd.Series:
    """Each row's series: the configuration, its workload when several are shown, and any non-measured origin."""
    names = frame["configuration"] + " · " + frame["workload"] if several_workloads else frame["configuration"]
    return names.where(frame["origin"] == "measured", names + " [" + frame["origin"] + "]")


def _linked_date(param: str, fallback: date) -> date:
    try:
        return date.fromisoformat(st.query_params.get(param, ""))
    except ValueError:
        return fallback


def date_range(frame: pd.DataFrame) -> pd.DataFrame:
    """Keep points finished within the chosen dates (bound to `from` and `to`; no filter while they span all)."""
    days = pd.to_datetime(frame["finished_at"], utc=True).dt.date
    dated_days = days[frame["date_known"]]
    if dated_days.empty:
        return frame
    first, last = dated_days.min(), dated_days.max()
    key = "param-dates"
    if key not in st.session_state:
        st.session_state[key] = (_linked_date("from", first), _linked_date("to", last))
    chosen = st.sidebar.date_input("Finished between", key=key, help="Dates the points finished (UTC).")
    if not isinstance(chosen, tuple) or len(chosen) != 2:
        return frame  # the viewer has picked only the start of a new range so far
    start, end = chosen
    for param, value, bound in (("from", start, first), ("to", end, last)):
        if value == bound or (param == "from" and value < first) or (param == "to" and value > last):
            st.query_params.pop(param, None)  # a link without dates keeps showing new results
        else:
            st.query_params[param] = value.isoformat()
    # A result whose source stated no date ('date unknown') has no day to filter by: it stays.
    return frame[((days >= start) & (days <= end)) | ~frame["date_known"]]


ALL = "all"
# Picked at the top, one value each by default: a chart compares chips on one model, precision and workload.
COMPARED = (("model", "Model"), ("precision", "Precision"), ("workload", "Workload"))


def most_measured(frame: pd.DataFrame, column: str) -> str | None:
    """The value of `column` with the most configurations (ties: the first by name); None when there is none."""
    counts = frame.groupby(column, sort=True)["fingerprint"].nunique()
    return str(counts.sort_values(ascending=False, kind="stable").index[0]) if len(counts) else None


def one_comparison(frame: pd.DataFrame, x_metric: str) -> pd.DataFrame:
    """Model, precision and workload picked at the top of the page, one value each (or 'all'), each from what the
    choice before it left. The default is the value with the most configurations among rows that have a figure
    for the x axis, so the first chart compares chips on one workload, as InferenceX does; a link keeps its
    choice (the default depends on the data, so it is written to the link)."""
    # The choices are made on these few columns and the whole (wide) frame is cut once at the end: cutting it at each
    # choice was a third of the page's run on the public corpus.
    choices = frame[[name for name, _ in COMPARED] + ["fingerprint"]]
    placeable = x_values(frame, x_metric)[0].notna().to_numpy()
    kept = np.ones(len(frame), dtype=bool)
    for column, (name, label) in zip(st.columns(len(COMPARED)), COMPARED, strict=True):
        values = sorted(str(value) for value in choices.loc[kept, name].dropna().unique())
        default = most_measured(choices[kept & placeable], name) or (values[0] if values else None)
        with column:
            chosen = controls.selectbox(label, [*values, ALL], name, first=default, sidebar=False,
                                        help=f"One {label.lower()} at a time, or all of them.")  # fmt: skip
        if chosen != ALL:
            kept &= (choices[name].astype(str) == chosen).to_numpy()
    return controls.rows_kept(frame, kept)


def rate_choice(metric: str) -> tuple[str | None, float | None]:
    """For a priced y metric, the TCO tier (or None with a custom $/GPU-hr); (None, None) otherwise."""
    if metric not in PRICED:
        return None, None
    rate = page.rate_control()
    return rate.tier, rate.custom_usd


def rates(frame: pd.DataFrame, metric: str, tier: str | None, custom: float | None) -> tuple[pd.Series, pd.Series, str]:
    """Per row the $/GPU-hr (priced metrics) and all-in kW per GPU (per MW), and a caption naming the rate."""
    registry = data.hardware_registry()
    usd = pd.Series(float("nan"), index=frame.index)
    kw = pd.Series(float("nan"), index=frame.index)
    note = ""
    if custom is not None:
        usd[:] = custom
        note = f"at a custom ${custom:g}/GPU-hr for every hardware"
    elif tier is not None:
        usd = frame["hardware"].map({key: spec.tco(tier) for key, spec in registry.items()}).astype(float)
        note = f"at the {TCO_TIER_LABELS.get(tier, tier)} TCO tier of each hardware (recipes/hardware.yaml)"
    if metric == axes.TOKENS_PER_MW:
        all_in = {key: spec.all_in_kw.value if spec.all_in_kw else None for key, spec in registry.items()}
        kw = frame["hardware"].map(all_in).astype(float)
        note = "with each hardware's all-in kW per GPU (recipes/hardware.yaml)"
    return usd, kw, note


def x_values(frame: pd.DataFrame, metric: str) -> tuple[pd.Series, int]:
    """The x figure of each row (NaN where it has none) and how many rows fell back to TPOT's p90."""
    if metric != axes.E2E_INTERACTIVITY:
        return frame[X_COLUMNS[metric]].astype(float), 0
    # An agentic replay figure: the replay's E2E-normalised p90 when it was recorded, else its
    # interactivity p90; fixed-length points have no such figure (NaN: they are left out).
    agentic = frame["workload"] == "agentic"
    recorded = frame["e2e_interactivity_p90"].astype(float)
    fallback = agentic & recorded.isna() & frame["interactivity_p90"].notna()
    return recorded.fillna(frame["interactivity_p90"].astype(float)).where(agentic), int(fallback.sum())


def summarise(frame: pd.DataFrame, figure: str = axes.OUTPUT_FIGURE) -> pd.DataFrame:
    """One row per point: the mean of `figure` (output tok/s/GPU, or the one a y metric reads: `axes.Y_FIGURES`) with
    its 95 % interval over repeats as `throughput`, output tok/s/GPU's mean as `output`, x mean, descriptive columns.

    Built from whole columns (no Python loop per point), so 50,000 points stay quick to draw.
    """
    frame = frame.assign(unchecked=frame["validity"] == NOT_CHECKED)
    grouped = frame.groupby(POINT, sort=True, dropna=False)
    points = grouped.agg(
        x=("x", "mean"), repeats=("repeat_index", "size"), point_key=("point_key", "first"),
        hardware=("hardware", "first"),
        serving_engine=("engine", "first"),  # not `engine=`: that is an argument of agg itself
        model=("model", "first"), precision=("precision", "first"), parallelism=("parallelism", "first"),
        offload=("kv_offload", "first"), source=("source", "first"), usd=("usd", "first"), kw=("kw", "first"),
        valid=("valid", "all"), unchecked=("unchecked", "any"), finished=("finished_at", "max"),
        power=("power_w_per_gpu", "mean"),
        image=("engine_image", "first"), dated=("date_known", "all"),
    ).reset_index()  # fmt: skip
    # Group numbers follow the same sorted order as the rows of `points`.
    group = grouped.ngroup().to_numpy()
    mean, low, high, _ = axes.repeat_intervals(group, frame[figure].to_numpy(dtype=float))
    output = mean if figure == axes.OUTPUT_FIGURE else axes.repeat_intervals(
        group, frame[axes.OUTPUT_FIGURE].to_numpy(dtype=float))[0]  # fmt: skip
    checked = np.where(points["unchecked"].to_numpy(dtype=bool), NOT_CHECKED, VALID)
    validity = np.where(points["valid"].to_numpy(dtype=bool), checked, INVALID)
    points = points.assign(throughput=mean, throughput_low=low, throughput_high=high, output=output, reasons="",
                           validity=validity)  # fmt: skip
    # Only invalid repeats carry reasons: join those few rather than every point's empty list.
    has_reasons = frame["validity_reasons"].str.len().fillna(0).to_numpy() > 0
    if has_reasons.any():
        joined = (
            frame.loc[has_reasons, "validity_reasons"]
            .groupby(group[has_reasons])
            .agg(lambda lists: "; ".join(sorted({reason for reasons in lists for reason in reasons})))
        )
        points.loc[joined.index, "reasons"] = joined.to_numpy()
    return points


def derive_y(points: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The y metric at each point's mean throughput and at each bound of its interval."""
    rates = {"usd_per_gpu_hour": points["usd"].to_numpy(dtype=float), "all_in_kw": points["kw"].to_numpy(dtype=float)}
    low, high = axes.y_bounds(metric, points["throughput_low"], points["throughput_high"], **rates)
    return points.assign(y=axes.y_values(metric, points["throughput"], **rates), y_low=low, y_high=high)


def read_envelopes(points: pd.DataFrame, y_metric: str) -> pd.DataFrame:
    """Each chip's envelope as the Overview reads it (`envelope.envelope_curve`: where a configuration's own curve
    passes above the line between envelope points, that curve), over its valid and not-checked points, in the y
    metric: a tier's figure on the Overview lies on this line."""
    curves = []
    readable = points[points["validity"] != INVALID]
    for hardware, members in readable.groupby("hardware", sort=True):
        rows = [SimpleNamespace(interactivity_p50=x, output_throughput_per_gpu=y, fingerprint=f, sweep=s)
                for x, y, f, s in zip(members["x"], members["output"], members["fingerprint"], members["sweep"],
                                      strict=True)]  # fmt: skip
        curve = envelope.envelope_curve(rows)
        if not curve:
            continue
        speeds, outputs = zip(*curve, strict=True)
        rates = {"usd_per_gpu_hour": float(members["usd"].iloc[0]), "all_in_kw": float(members["kw"].iloc[0])}
        curves.append(pd.DataFrame({"x": speeds, "y": axes.y_values(y_metric, list(outputs), **rates),
                                    "hardware": hardware}))  # fmt: skip
    if not curves:
        return pd.DataFrame(columns=["x", "y", "hardware"])
    drawn = pd.concat(curves, ignore_index=True)
    return drawn[np.isfinite(drawn["y"].to_numpy(dtype=float))]


@st.cache_data(max_entries=32, show_spinner=False)
def plotted(
    url: str, version: tuple[int, ...], rows: str, x_metric: str, y_metric: str, tier: str | None,
    custom_usd: float | None, frontier_only: bool, envelope_only: bool, _frame: pd.DataFrame,
) -> dict[str, Any]:  # fmt: skip
    """The points of one view: every point (`points`, reading order), the ones the chart draws (`drawn`, thinned
    above CHART_POINTS, only the columns it encodes) and the notes the page shows about them.

    `_frame` is the results the controls kept (not hashed: `rows` digests its row labels, which with the data
    `version` say which rows they are), so the arguments before it key the cache.
    """
    x_axis, y_axis = axes.X_AXES[x_metric], axes.Y_AXES[y_metric]
    usd, kw, rate_note = rates(_frame, y_metric, tier, custom_usd)
    x, tpot_fallbacks = x_values(_frame, x_metric)
    frame = _frame.assign(x=x, usd=usd, kw=kw)
    frame["series"] = series_names(frame, several_workloads=frame["workload"].nunique() > 1)
    # Replay Points of two trace versions (or salted beside unsalted) are never one curve: each basis its own.
    frame["series"], basis_notes = split_by_basis(frame["series"].tolist(), list(frame.itertuples(index=False)))
    unplaced = int(frame["x"].isna().sum())
    frame = frame[frame["x"].notna()]
    view: dict[str, Any] = {"rate_note": rate_note, "tpot_fallbacks": tpot_fallbacks, "unplaced": unplaced,
                            "unpriced": [], "placed": not frame.empty, "points": frame, "drawn": frame,
                            "basis_notes": basis_notes,
                            "envelopes": pd.DataFrame(columns=["x", "y", "hardware"])}  # fmt: skip
    if frame.empty:
        return view
    points = derive_y(summarise(frame, axes.Y_FIGURES.get(y_metric, axes.OUTPUT_FIGURE)), y_metric)
    view["unpriced"] = sorted(points.loc[points["y"].isna(), "hardware"].unique())
    # Latest first, so that when a configuration measured the very same point in several sweeps, the frontier
    # keeps the newest of the equal points; then shown in a stable reading order.
    points = points[points["y"].notna()].sort_values("finished", ascending=False, kind="stable")
    points = points.reset_index(drop=True)
    points["frontier"] = frontier_mask(
        points["series"].tolist(), points["x"].tolist(), points["y"].tolist(), (x_axis.maximise, y_axis.maximise)
    )
    # Each chip's envelope: the frontier over all its configurations (what a chip can do at each speed, whichever
    # configuration does it), drawn under the configurations' own lines.
    chip_frontier = frontier_mask(
        points["hardware"].tolist(), points["x"].tolist(), points["y"].tolist(), (x_axis.maximise, y_axis.maximise)
    )
    points["envelope"] = chip_frontier
    view["envelopes"] = points.loc[chip_frontier, ["x", "y", "hardware"]].sort_values(["hardware", "x"])
    if x_metric == axes.INTERACTIVITY and y_metric not in axes.Y_FIGURES:
        view["envelopes"] = read_envelopes(points, y_metric)
    # A point on its chip's envelope is on its configuration's frontier too (no point of the chip beats it), so the
    # envelope's points are the narrower choice.
    if envelope_only:
        points = points[points["envelope"]]
    elif frontier_only:
        points = points[points["frontier"]]
    points = points.sort_values(["series", "finished", "concurrency"], kind="stable").reset_index(drop=True)
    drawn = points
    if len(points) > CHART_POINTS:
        drawn = points[thin_mask(points["series"].tolist(), points["x"], points["frontier"], CHART_POINTS)]
    view["points"], view["drawn_frontier"] = points, int(drawn["frontier"].sum())
    view["drawn"] = pd.DataFrame(
        {
            "x": drawn["x"], "y": drawn["y"], "y_low": drawn["y_low"], "y_high": drawn["y_high"],
            "series": drawn["series"], "hardware": drawn["hardware"], "engine": drawn["serving_engine"],
            "concurrency": drawn["concurrency"], "sweep": drawn["sweep"], "repeats": drawn["repeats"],
            "origin": drawn["origin"],  # projected points are drawn hollow, their lines dashed
            "frontier": drawn["frontier"],  # each configuration's line runs through its frontier points
            # Provenance in the hover: when it finished, the image it ran and where it came from.
            "date": drawn["finished"].astype(str).str[:10].where(drawn["dated"], "date unknown"),
            "image": drawn["image"].fillna("–"),
            # As text: a point measured once has no interval, and a hover would write "null" for its bounds.
            "interval": [
                "one run: no interval" if pd.isna(low) or pd.isna(high) else f"{page.sig(low):,g} – {page.sig(high):,g}"
                for low, high in zip(drawn["y_low"], drawn["y_high"], strict=True)
            ],
            "source": drawn["source"].fillna("measured here"),
            "validity": drawn["validity"],  # valid, invalid, or not checked (an imported aggregate row)
            "run": run_links(drawn),
        }
    )  # fmt: skip
    return view


st.title("Pareto explorer")
st.caption(
    "Each point is one configuration at one concurrency: throughput or economy (y) against speed per user (x). "
    "Up and to the right is better unless an axis says otherwise (cost, latencies: lower is better)."
)
url = data.database_url()
frame = page.results_or_stop()

y_labels = {axis.label: key for key, axis in axes.Y_AXES.items()}
x_labels = {axis.label: key for key, axis in axes.X_AXES.items()}
y_metric = y_labels[str(controls.selectbox("y axis", list(y_labels), "y", default=next(iter(y_labels))))]
tier, custom_usd = rate_choice(y_metric)
x_metric = x_labels[str(controls.selectbox("x axis", list(x_labels), "x", default=next(iter(x_labels))))]
y_axis, x_axis = axes.Y_AXES[y_metric], axes.X_AXES[x_metric]

frame = one_comparison(frame, x_metric)
frame = controls.filters(frame, columns=("hardware", "engine"))
if not frame.empty:
    frame = date_range(frame)
frame = controls.origins(frame)
frame = controls.as_of(frame)
frame = controls.latest_only(frame)
page.validity_counts(frame)
frame = controls.only_valid(frame)
frontier_only = controls.toggle("Frontier only", "frontier", help="Hide the points another point of the same "
                                "configuration beats on both axes (its frontier line is always drawn).")  # fmt: skip
envelope_only = controls.toggle("Chip envelope only", "envelope-only", help="Keep only the points on their chip's "
                                "envelope: those no configuration of the same chip beats on both axes (the best the "
                                "chip serves at each speed, and which configuration serves it).")  # fmt: skip
# Log by default: every y axis is a throughput or a cost, whose chips differ by factors (one fast chip on a linear axis
# flattens the rest).
log_y = controls.toggle("Log scale (y)", "logy", default=True, help="A log y axis, so one fast chip does not flatten "
                        "the rest; points at or below 0 cannot be drawn on it.")  # fmt: skip
envelopes_shown = controls.toggle("Chip envelopes", "envelopes", default=True, help="A wide pale line per chip: "
                                  "the frontier over all its configurations, the best it serves at each "
                                  "speed.")  # fmt: skip
if frame.empty:
    st.warning("No results match these filters.")
    st.stop()

# Everything below depends only on which rows the controls kept and on the axes and rate chosen, so it is
# worked out once per view and data version: the next viewer of the same link gets it from the cache.
view = plotted(
    url, data.version(url), hashlib.blake2b(frame.index.to_numpy().tobytes()).hexdigest(), x_metric, y_metric,
    tier, custom_usd, frontier_only, envelope_only, _frame=frame,
)  # fmt: skip
rate_note, tpot_fallbacks = view["rate_note"], view["tpot_fallbacks"]
if not view["placed"]:
    st.warning(f"None of these results has a figure for the x axis ({x_axis.label}).")
    if x_metric == axes.E2E_INTERACTIVITY:
        st.info("E2E-normalised interactivity is an agentic-replay figure: pick the agentic workload.")
    st.stop()
points, drawn = view["points"], view["drawn"]
if points.empty:
    st.warning(page.dollars(f"No point has a figure for {y_axis.label} {rate_note}."))
    st.stop()

# The chart or, as its alternative, the table of the same points (one at a time: a browser drawing both takes
# half a second longer, docs/BENCHMARKS.md "Hub render"); the CSV is there in both views.
as_table = controls.radio("Show", ["Chart", "Table"], "view", default="Chart") == "Table"
if not as_table:
    # Past eight series the palette repeats and a legend entry each is noise: colour by hardware, shape by
    # engine, and the configuration in the tooltip.
    many = charts.is_many(points["series"].nunique())
    # Only what the chart encodes is sent to the browser (`plotted`): the configuration label names tp/ep,
    # offload and origin.
    tip = charts.tip
    tooltip = [
        tip("series", "configuration"), tip("concurrency"), tip("sweep"), tip("origin"), tip("date", "finished"),
        tip("image", "engine image"), tip("source"), tip("repeats"), tip("validity"),
        tip("x", x_axis.label, ",.3~r"), tip("y", y_axis.label, ",.3~r"), tip("interval", "95 % interval"),
        tip("run", "run detail (click)"),
    ]  # fmt: skip
    if log_y and (drawn["y"] <= 0).any():
        st.caption(f"{int((drawn['y'] <= 0).sum())} points at or below 0 are left out of the log scale.")
        drawn = drawn[drawn["y"] > 0]
    # Linear: from 0, without padding (padding would push 0 below the axis).
    y_scale = {"type": "log", "padding": 12} if log_y else {"zero": True, "nice": True}
    chart = charts.scatter(
        drawn, x="x", y="y", series="series", tooltip=tooltip, x_title=x_axis.label, y_title=y_axis.label,
        error_low="y_low", error_high="y_high", connect=True, y_scale=y_scale, colour_by="hardware",
        shape_by="engine" if many else None, href="run",  # a chip's colour, every page
    )  # fmt: skip
    envelopes = view["envelopes"]
    if envelopes_shown and not envelopes.empty:
        envelopes = envelopes[envelopes["y"] > 0] if log_y else envelopes
        chart["datasets"]["envelopes"] = envelopes
        # The chips' legend takes this first layer's look: whole circles, not pale wide strokes.
        chip = {"field": "hardware", "type": "nominal"}
        chart["layer"].insert(0, {
            "data": {"name": "envelopes"},
            "mark": {"type": "line", "strokeWidth": 7, "opacity": 0.25, "strokeCap": "round",
                     "interpolate": charts.CURVE},
            "encoding": {"x": {"field": "x", "type": "quantitative"},
                         "y": {"field": "y", "type": "quantitative", "scale": y_scale}, "detail": chip,
                         "order": {"field": "x", "type": "quantitative"},
                         "color": {**chip, "title": "hardware", "scale": charts.colour_scale(drawn["hardware"]),
                                   "legend": {"symbolOpacity": 1, "symbolType": "circle"}}},
        })  # fmt: skip
    # Configuration labels are long: a legend under the chart shows them whole (one entry each when few).
    charts.draw(chart, height=620, many=many)
    st.caption("Click a point to open its run detail. Error bars: mean ± 95 % interval over repeats."
               + (" Wide pale lines: each chip's envelope, the frontier over all its configurations shown."
                  if envelopes_shown else ""))  # fmt: skip
    if many:
        st.caption(charts.many_caption(points["series"].nunique()))
    if len(drawn) < len(points):
        frontier_points = int(points["frontier"].sum())
        kept = (
            "every frontier point, and an even spread along x of each configuration's other points"
            if view["drawn_frontier"] == frontier_points
            else f"the frontiers alone hold {frontier_points:,} points, so each configuration's frontier is "
            "spread evenly along x"
        )
        st.caption(
            f"Drawn: {len(drawn):,} of {len(points):,} points, so that the chart stays quick to draw: {kept}. "
            "The table and its CSV have every point."
        )

# The rate columns only when the y metric used them; energy only where some host sampled power.
dropped = [
    column
    for column, drop in {
        "$/GPU-hr": y_metric not in PRICED, "all-in kW/GPU": y_metric != axes.TOKENS_PER_MW,
        "J per output token": points["power"].isna().all(),
    }.items()
    if drop
]  # fmt: skip
if as_table:
    listed = points
    if len(points) > TABLE_ROWS:
        listed = points.sort_values("frontier", ascending=False, kind="stable").head(TABLE_ROWS)
        st.caption(f"The first {TABLE_ROWS:,} of {len(points):,} points, frontier points first; the CSV has all.")
    page.table(
        point_table(listed, x_axis.label, y_axis.label).drop(columns=dropped),
        column_config={"run": st.column_config.LinkColumn("run", display_text="open run detail")},
    )  # fmt: skip
# Built only when someone downloads it: at 50,000 points the CSV takes longer than the page.
controls.csv_download(lambda: point_table(points, x_axis.label, y_axis.label).drop(columns=dropped), "pareto")

st.caption(
    page.dollars(
        f"**y: {y_axis.label}** = {y_axis.definition}"
        + (f", {rate_note}" if rate_note else "")
        + f". **x: {x_axis.label}** = {x_axis.definition}. "
    )
    + "Points with repeats show their mean and its 95 % interval (Student-t for fewer than 50 repeats, BCa "
    "bootstrap beyond); derived metrics are taken at the mean throughput and at each bound of its interval. "
    "The frontier of a configuration keeps the points no other point of it beats on both axes. Imported and "
    "simulated results carry their origin in brackets."
)
for note in view["basis_notes"]:
    st.warning(f"Not one curve: {note}.")
if view["unpriced"]:
    st.caption(page.dollars(f"Left out, no {y_axis.label.lower()} figure for: {', '.join(view['unpriced'])}."))
if tpot_fallbacks:
    st.caption(
        f"{tpot_fallbacks} agentic repeat(s) recorded no E2E-normalised interactivity: their x is the TPOT-based "
        "interactivity p90 (1000 ÷ TPOT p90) instead."
    )
if view["unplaced"]:
    st.caption(f"Left out, no {x_axis.label} figure: {view['unplaced']} measured repeat(s) (e.g. fixed-length points).")
page.methodology_link()
