"""InferSweep hub, Trends: each configuration's output tok/s/GPU at one interactivity, sweep after sweep.

Every sweep that measured a configuration is read at the target interactivity along that sweep's
frontiers (mean over repeats with a 95 % interval), in time order, and the latest sweep is judged
against the earlier ones (`analysis.trends.trends_at`: a regression is a latest value below
the history's 95 % prediction interval *and* at least the minimum drop below its mean). All sweeps are
used here, not only the latest. Presentation only: nothing here writes.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analysis.recency import run_id_of
from analysis.trends import Trend, trends_at
from hubkit import charts, controls, page

DEFAULT_MIN_DROP_PERCENT = 5.0  # the CLI's `infersweep regressions` default


ORDER_UNKNOWN = "order unknown"
TOO_SPREAD = "too spread to tell"  # the history's interval would hide a halving: no all-clear (analysis/regression.py)


def verdict_of(trend: Trend, target: float) -> str:
    if trend.verdict is not None:
        if trend.verdict.regressed:
            return "regressed"
        return "ok" if trend.verdict.conclusive else TOO_SPREAD
    if trend.order_unknown:
        return ORDER_UNKNOWN
    if trend.reads and trend.reads[-1].value is None:
        return f"no figure at {target:g}"
    return "not enough history"


def labels_of(frame: pd.DataFrame) -> dict[tuple[str, str], str]:
    """(fingerprint, workload) → legend entry: the configuration, its workload when several show, any non-measured
    origin."""
    several_workloads = frame["workload"].nunique() > 1
    firsts = frame.groupby(["fingerprint", "workload"])[["configuration", "origin"]].first()
    labels = {}
    for (fingerprint, workload), row in firsts.iterrows():
        name = f"{row['configuration']} · {workload}" if several_workloads else str(row["configuration"])
        labels[(str(fingerprint), str(workload))] = name if row["origin"] == "measured" else f"{name} [{row['origin']}]"
    return labels


st.title("Trends")
st.caption(
    "Each configuration's output tok/s per GPU at one interactivity, sweep after sweep (nightly runs, say), "
    "with regressions marked."
)
frame = page.results_or_stop(
    page.NO_RESULTS + " A trend needs the same recipe measured by two or more sweeps (e.g. `infersweep schedule`'s "
    "nightly runs)."
)

frame = controls.filters(frame)
frame = controls.origins(frame)
page.validity_counts(frame)
target = page.target_control("target", help="Every sweep is read along its frontier here, never extrapolated.")
min_drop = controls.number(
    "Smallest drop flagged (%)", "drop", default=DEFAULT_MIN_DROP_PERCENT, min_value=0.0, step=1.0,
    help="A latest value below the history's prediction interval is a regression only if it is at least this "
    "much below the history's mean.",
)  # fmt: skip
valid = frame[frame["valid"]]
if valid.empty:
    st.warning("No valid results match these filters.")
    st.stop()

trends = trends_at(list(valid.itertuples(index=False)), target, min_drop / 100)
labels = labels_of(valid)
firsts = valid.groupby(["fingerprint", "workload"])[["origin", "engine"]].first()
engines = {(str(fingerprint), str(workload)): str(row["engine"]) for (fingerprint, workload), row in firsts.iterrows()}

history_rows, verdict_rows = [], []
for trend in trends:
    verdict = verdict_of(trend, target)
    for position, read in enumerate(trend.reads):
        interval = read.read.interval
        history_rows.append({
            "configuration": labels[(trend.fingerprint, trend.workload)], "hardware": trend.hardware,
            "engine": engines[(trend.fingerprint, trend.workload)], "sweep": read.sweep, "order": position,
            # Text in the table (one type per column: Arrow refuses a column of dates and words, and the page
            # logged its traceback on every visit); the time itself in `at`, for the chart only.
            "finished": (f"{read.finished_at:%Y-%m-%d %H:%M} UTC" if read.dated
                         else "date unknown" if run_id_of(read.sweep) else ORDER_UNKNOWN),
            "at": read.finished_at if read.dated else None,
            "output tok/s/GPU": read.value, "95 % low": interval.low if interval else None,
            "95 % high": interval.high if interval else None, "repeats read": read.read.used,
            "repeats dropped": read.read.dropped,
            "regressed": verdict == "regressed" and position == len(trend.reads) - 1,
            "note": "; ".join(read.read.reasons),
        })  # fmt: skip
    baseline = trend.verdict.baseline if trend.verdict else None
    change = trend.verdict.relative_change if trend.verdict else None
    latest = trend.reads[-1]
    verdict_rows.append({
        "configuration": labels[(trend.fingerprint, trend.workload)], "hardware": trend.hardware,
        "workload": trend.workload, "origin": firsts.loc[(trend.fingerprint, trend.workload), "origin"],
        "sweeps": len(trend.reads), "latest": latest.value if trend.verdict or not trend.order_unknown else None,
        "history mean": baseline.mean if baseline else None,
        "prediction low": baseline.low if baseline else None, "prediction high": baseline.high if baseline else None,
        "change": f"{change:+.1%}" if change is not None else "", "verdict": verdict,
        "latest sweep": latest.sweep if trend.verdict or not trend.order_unknown else "–",
        "reason": trend.verdict.reason if trend.verdict else (
            "a run with neither a date nor a run id (a file keyed by its content) is of unknown order and left out; "
            "fewer than two others could be compared" if trend.order_unknown else "; ".join(latest.read.reasons)),
    })  # fmt: skip
# Each configuration's sweeps oldest first, in trends' order (analysis/recency.py).
history = pd.DataFrame(history_rows).sort_values(["configuration", "order"], kind="stable").drop(columns="order")
# Figures as numbers, one type per column (Arrow draws them; a missing one is NaN, not an object None).
for column in ("output tok/s/GPU", "95 % low", "95 % high"):
    history[column] = pd.to_numeric(history[column], errors="coerce")
# Regressions first, then by name.
verdicts = pd.DataFrame(verdict_rows)
for column in ("latest", "history mean", "prediction low", "prediction high"):
    verdicts[column] = pd.to_numeric(verdicts[column], errors="coerce")
verdicts = (
    verdicts.assign(rank=(verdicts["verdict"] != "regressed").astype(int))
    .sort_values(["rank", "configuration"], kind="stable")
    .drop(columns="rank")
)

regressed = verdicts[verdicts["verdict"] == "regressed"]
compared = int(verdicts["verdict"].isin(["regressed", "ok"]).sum())
spread = int((verdicts["verdict"] == TOO_SPREAD).sum())
if compared == 0:
    # Nothing could be compared (one sweep each, no figure at this speed, or a history too spread to clear anything):
    # not a green "all clear".
    st.info(f"No configuration could be compared at {target:g} tok/s/user: each needs at least two sweeps with a "
            "figure at that speed" + (f", and {spread} had sweeps too far apart to tell a drop from noise"
            if spread else "") + " (see the reasons in the table).")  # fmt: skip
elif regressed.empty:
    st.success(f"None of the {compared} configuration(s) compared regressed at {target:g} tok/s/user"
               + (f" ({spread} more too spread to tell)." if spread else "."))  # fmt: skip
else:
    st.error(f"{len(regressed)} configuration(s) regressed at {target:g} tok/s/user: "
             + "; ".join(regressed["configuration"]))  # fmt: skip

chart_tab, table_tab = st.tabs(["Chart", "Table"])
with chart_tab:
    readable = history[history["output tok/s/GPU"].notna()]
    # A sweep whose source stated no date has no place on a time axis: the table lists it, in run-id order, or
    # says 'order unknown' where its name holds no run id either (never a hash order called run order).
    undated = readable["at"].isna()
    unordered = int((readable["finished"] == ORDER_UNKNOWN).sum())
    if undated.any():
        st.caption(
            f"{int(undated.sum())} sweep(s) without a date are in the table only, ordered by run id"
            + (f"; {unordered} with no run id either, in no known order" if unordered else "")
            + "."
        )
    plotted = readable[~undated].assign(finished=lambda f: pd.to_datetime(f["at"], utc=True))
    if plotted.empty and undated.any():
        st.info("Every sweep that reaches this speed has 'date unknown' (its source states no date), so there is "
                "no time axis to draw: the Table tab lists them (by run id, where the run names one).")  # fmt: skip
    elif plotted.empty:
        st.info(f"No sweep's measured range reaches {target:g} tok/s/user: try another target.")
    else:
        tip = charts.tip
        tooltip = [
            tip("configuration"), tip("sweep"), tip("finished", number_format="%Y-%m-%d %H:%M"),
            tip("output tok/s/GPU", number_format=",.3~r"), tip("95 % low", number_format=",.3~r"),
            tip("95 % high", number_format=",.3~r"), tip("repeats read"), tip("regressed"),
        ]  # fmt: skip
        # Many configurations: colour by hardware, shape by engine; each configuration keeps its own line.
        many = charts.is_many(plotted["configuration"].nunique())
        if many:
            st.caption(charts.many_caption(plotted["configuration"].nunique()))
        chart = charts.scatter(
            plotted, x="finished", y="output tok/s/GPU", series="configuration", tooltip=tooltip,
            x_title="Sweep finished (UTC)", y_title=f"Output tok/s per GPU at {target:g} tok/s/user",
            error_low="95 % low", error_high="95 % high", connect=True,
            colour_by="hardware" if many else None, shape_by="engine" if many else None,
        )  # fmt: skip
        # Regressions: an open downward triangle around the point (shape and a label, not colour alone).
        chart["datasets"]["regressed"] = plotted[plotted["regressed"]]
        position = {"x": charts.field(plotted, "finished"), "y": charts.field(plotted, "output tok/s/GPU")}
        flagged = {"data": {"name": "regressed"}, "encoding": position}
        chart["layer"] += [
            {**flagged, "mark": {"type": "point", "shape": "triangle-down", "size": 400, "filled": False,
                                 "strokeWidth": 2, "color": charts.PALETTE[3]}},
            {**flagged, "mark": {"type": "text", "align": "right", "dx": -14, "color": charts.PALETTE[3],
                                 "text": "regressed"}},
        ]  # fmt: skip
        charts.draw(chart, height=420, many=many)
with table_tab:
    page.table(history.drop(columns="at"))
    controls.csv_download(history.drop(columns="at"), "trends-history")

st.subheader("Verdicts")
page.table(verdicts)
controls.csv_download(verdicts, "trends-verdicts")
st.caption(
    f"Each sweep's value is its frontier of (interactivity p50, output tok/s/GPU) read at {target:g} tok/s/user "
    "with a monotone cubic, per repeat, and averaged (95 % Student-t interval); sweeps whose measured range does "
    "not reach the target have no value and are left out of the verdict. The latest sweep **regressed** when it "
    "is below the earlier sweeps' 95 % prediction interval (mean ± t·s·√(1 + 1/n): where one new run of the same "
    f"process falls) and at least {min_drop:g} % below their mean. Imported and simulated results carry their "
    "origin in brackets. The same check runs in a terminal: `infersweep regressions --at-interactivity N`."
)
page.methodology_link()
