"""Blocks the hub's pages share: the empty-database stop, the speed and price controls, per-chip bars, links.

Each block is written once here so every page says the same words and binds the same query parameters
(a link made on the TCO calculator opens the Profit estimator at the same target and rate). Presentation
only: nothing here computes a figure (that is `analysis`) or writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

import altair as alt
import pandas as pd
import streamlit as st

from analysis.cost import cost_band
from analysis.economics import DEFAULT_TIER, ConfigurationRead, GpuHourRate, chip_key
from hubkit import controls, data
from hubkit.charts import PALETTE
from recipes.hardware import TCO_TIERS
from recipes.validity import STATES

METHODOLOGY = "views/methodology.py"
NO_RESULTS = (
    "No results yet. Run `make demo` (or `infersweep run RECIPE`) to measure some, or open the hub on a "
    "database or snapshot that has results (`infersweep site --database URL`)."
)
CUSTOM_RATE = "custom $/GPU-hr"  # one option (and query parameters `tier`, `usd`) on every priced page
DEFAULT_TARGET = 50.0  # tok/s/user: the middle of the Overview's interactivity tiers


class ChipRead(Protocol):
    """A cost or profit read of one configuration (`CostRead`, `ProfitRead`): what the per-chip blocks use."""

    @property
    def read(self) -> ConfigurationRead: ...

    @property
    def reason(self) -> str: ...


def dollars(text: str) -> str:
    """Markdown text with literal dollar signs (Streamlit reads a pair of `$` as LaTeX maths)."""
    return text.replace("$", "\\$")


SIGNIFICANT = 3  # figures a published number carries: one run of one configuration does not support more


def sig(value: float | None, digits: int = SIGNIFICANT) -> float | None:
    """`value` rounded to `digits` significant figures (a number stays a number: tables and CSVs hold numbers)."""
    if value is None or value != value or value in (float("inf"), float("-inf")):
        return None
    return float(f"{value:.{digits}g}")


def money(value: float) -> str:
    """'$0.490', '$12.3', '$1,230', '−$4.56' (a loss): dollars to three significant figures."""
    rounded = sig(value)
    if rounded is None:
        return "–"
    sign, rounded = ("−" if rounded < 0 else ""), abs(rounded)
    if rounded >= 100:
        return f"{sign}${rounded:,.0f}"
    decimals = max(SIGNIFICANT - 1 - int(f"{rounded:e}".split("e")[1]), 0) if rounded else 2
    return f"{sign}${rounded:,.{decimals}f}"


def runs_text(read: ConfigurationRead, usd_per_gpu_hour: float | None) -> str:
    """'3 runs $0.45–0.62' (the spread of $/M output across the runs of the configurations the read rests on that read
    a figure at its speed), or '1 run' where one run is all there is (a single-run figure, marked as such).

    A figure that rests on configurations measured in different runs joins them, and no single run gave it: 'joins 2
    runs · alone: 1 run $6.51' says so, with what the runs read alone ('no run alone reaches this speed' if none)."""
    alone = _spread_text(read, usd_per_gpu_hour)
    if len(read.sweeps) <= 1:
        return alone
    return f"joins {len(read.sweeps)} runs · " + (f"alone: {alone}" if read.runs else "no run alone reaches this speed")


def _spread_text(read: ConfigurationRead, usd_per_gpu_hour: float | None) -> str:
    low, high = cost_band(usd_per_gpu_hour, read.run_spread)
    if low is None or high is None:
        return "1 run" if read.runs <= 1 else f"{read.runs} runs"
    if read.runs == 1:  # the figure itself where the read rests on one run; what that run read where it joins runs
        return "1 run" if len(read.sweeps) <= 1 else f"1 run {money(low)}"
    return f"{read.runs} runs {money(low)}–{money(high)[1:]}"


def projection_text(read: ConfigurationRead, usd_per_gpu_hour: float | None) -> str:
    """'band $0.35–2.05 · backtest median error 10.4 % (same-vendor, NVIDIA)' for a projected read: the cost at the
    ends of its band, and how wrong projections of its backtest group have been on this hub's results; '' for a
    read that is no projection."""
    if not read.projected_from:
        return ""
    parts = []
    low, high = cost_band(usd_per_gpu_hour, read.band)
    if low is not None and high is not None:
        parts.append(f"band {money(low)}–{money(high)[1:]}")
    for source in read.projected_from:
        found = data.backtest_group(source, read.hardware, read.disaggregated)
        if found is None:
            continue
        group, medians = found
        error = None if medians is None else medians["median abs. error %"]
        parts.append(f"backtest median error {error:.3g} % ({group})" if error is not None and error == error
                     else f"no backtest ({group}: no pair measured both ways here)")  # fmt: skip
    if read.below_source:
        parts.append(f"below {read.below_source} here (its runs' median curve was projected: see the note)")
    return " · ".join(parts)


def results_or_stop(message: str = NO_RESULTS, workload_kind: str | None = None) -> pd.DataFrame:
    """The public results (only those of `workload_kind` when given); the page stops with `message` when none."""
    frame = data.results(data.database_url())
    if workload_kind is not None and not frame.empty:
        frame = frame[frame["workload_kind"] == workload_kind]
    if frame.empty:
        st.info(message)
        st.stop()
    return frame


def filtered_or_stop(frame: pd.DataFrame, missing_choice: str | None = None) -> pd.DataFrame:
    """The rows the sidebar keeps (origins, as of a date, latest sweep, filters).

    The page stops with a warning when no row is left, or with `missing_choice` when the viewer has left
    empty a choice the page needs (e.g. no interactivity tier picked).
    """
    frame = controls.origins(frame)
    frame = controls.as_of(frame)
    frame = controls.latest_only(frame)
    frame = controls.filters(frame)
    if frame.empty or missing_choice:
        st.warning(missing_choice or "No results match these filters.")
        st.stop()
    validity_counts(frame)
    order_note(frame)
    return frame


def order_note(frame: pd.DataFrame) -> None:
    """Say where a configuration's runs are of unknown order (neither a date nor a run id): every one of them is
    read as 'latest', none picked by its name."""
    if "order_unknown" not in frame or not frame["order_unknown"].any():
        return
    count = frame.loc[frame["order_unknown"], "fingerprint"].nunique()
    st.caption(f"Run order unknown for {count} configuration(s): their result files name neither a date nor a run "
               "id (imported by content hash; `infersweep import inferencex --run-id` names them), so every such run "
               "is read, none picked as the latest.")  # fmt: skip


def validity_counts(frame: pd.DataFrame) -> None:
    """'1,240 valid · 382 not checked · 3 invalid points': the verdicts of what the page reads, counted apart. A
    point is 'not checked' when it counts no requests (an imported aggregate row, a projection): the rules that
    judge a measurement had nothing to read (recipes/validity.py)."""
    if frame.empty or "validity" not in frame:
        return
    counts = frame["validity"].value_counts()
    parts = [f"{int(counts.get(state, 0)):,} {state}" for state in STATES if counts.get(state, 0)]
    st.sidebar.caption(" · ".join(parts) + " point repeats in this view. Not checked: no request counts to judge "
                       "(imported aggregate rows, projections).")  # fmt: skip


def target_control(param: str = "at", help: str = "Speed per user = 1000 / TPOT p50 (ms).") -> float:
    """The target interactivity (tok/s/user) the page reads every configuration at."""
    return controls.number("Target interactivity (tok/s/user)", param, default=DEFAULT_TARGET, min_value=1.0,
                           step=5.0, help=help)  # fmt: skip


def rate_control(custom: bool = True) -> GpuHourRate:
    """A TCO tier of the hardware registry, or (when `custom`) one custom $/GPU-hr for every chip."""
    tiers = [*TCO_TIERS, CUSTOM_RATE] if custom else list(TCO_TIERS)
    tier = controls.selectbox("TCO tier", tiers, "tier", default=DEFAULT_TIER,
                              help="Total cost of ownership per GPU-hour from recipes/hardware.yaml.")  # fmt: skip
    if tier == CUSTOM_RATE:
        custom = controls.number("Custom $/GPU-hr", "usd", default=2.0, min_value=0.01, step=0.1)
        controls.assume_rate(None, custom)
        return GpuHourRate(tier=None, custom_usd=custom)
    controls.assume_rate(str(tier))
    return GpuHourRate(str(tier))


def row_label(model: str, precision: str, workload: str) -> str:
    """'deepseek-r1 fp4 · 8k/1k': the heading of one comparable row of chips (one precision, never mixed)."""
    return f"{model} {precision}".strip() + f" · {workload}"


def chip_label(read: ConfigurationRead) -> str:
    """The chip, with any origin other than a measurement in brackets: 'mi355x [imported]'."""
    others = [origin for origin in read.origins if origin != "measured"]
    return f"{read.hardware} [{', '.join(others)}]" if others else read.hardware


def bars_per_row(table: pd.DataFrame, chart_of: Callable[[pd.DataFrame], alt.LayerChart]) -> None:
    """`chart_of` each model, precision and workload's rows of `table` (chips of two precisions are never bars under
    one heading), under the row's name as a heading: text that wraps on a phone, where a facet's title was rotated
    and cut."""
    labels = [row_label(*key) for key in zip(table["model"], table["precision"], table["workload"], strict=True)]
    for label, rows in table.assign(row=labels).groupby("row", sort=False):
        st.markdown(f"**{label}**")
        st.altair_chart(chart_of(rows), width="stretch")


def dropped_warning(reads: Iterable[ChipRead], shown: Mapping[tuple[str, ...], object], lead: str) -> None:
    """Name every chip without a figure, with why (its envelope's reason), after `lead`."""
    reads = list(reads)
    dropped = sorted({chip_key(item.read) for item in reads} - set(shown))
    if not dropped:
        return
    reasons: dict[tuple[str, ...], set[str]] = {}
    for item in reads:
        reasons.setdefault(chip_key(item.read), set()).add(item.reason)
    chips = "; ".join(f"**{key[3]}** ({row_label(*key[:3])})" for key in dropped)
    st.warning(f"{lead}: {chips}.")
    with st.expander("Why each was dropped"):
        st.markdown(
            "\n".join(f"- **{key[3]}** ({row_label(*key[:3])}): " + " / ".join(sorted(reasons[key])) for key in dropped)
        )


# A missing figure in a table is a dash: Streamlit would write a grey "None" in the cell, which reads as a value.
MISSING_TEXT = "—"


def table(frame: pd.DataFrame, column_config: Mapping[str, Any] | None = None) -> None:
    """Every table of the hub: the page's width, no index column, a dash where a figure is missing."""
    st.dataframe(frame, hide_index=True, width="stretch", column_config=column_config, placeholder=MISSING_TEXT)


def table_with_csv(frame: pd.DataFrame, name: str) -> None:
    table(frame)
    controls.csv_download(frame, name)


def time_format(times: pd.Series) -> str:
    """A tick format that reads at the span shown: a job's lifecycle often spans a few seconds, where the default
    labels every tick ".500"; a week of sweeps needs the date."""
    stamps = pd.to_datetime(times, utc=True)
    span = (stamps.max() - stamps.min()).total_seconds() if len(stamps) else 0.0
    if span < 10:
        return "%H:%M:%S.%L"
    if span < 86400:
        return "%H:%M:%S"
    return "%b %d %H:%M"


def lifecycle(timeline: pd.DataFrame, name: str) -> None:
    """Transitions (columns: a lane such as the job or subject first, then state, at, reason) as a chart and a table.

    One legend lists every state the chart holds, in the order they first happened (states recorded in the same
    instant draw on top of each other, so the legend is where each of them is named)."""
    lane = str(timeline.columns[0])
    states = list(dict.fromkeys(timeline.sort_values("at", kind="stable")["state"].astype(str)))
    colours = list(PALETTE) * (len(states) // len(PALETTE) + 1)
    chart_tab, table_tab = st.tabs(["Chart", "Table"])
    with chart_tab:
        st.altair_chart(
            alt.Chart(timeline)
            .mark_point(filled=True, size=80)
            .encode(
                x=alt.X("at:T", title="time (UTC)", axis=alt.Axis(format=time_format(timeline["at"]))),
                y=alt.Y(f"{lane}:N", title=None, axis=alt.Axis(labelLimit=0)),  # a job id whole, never cut
                color=alt.Color("state:N", scale=alt.Scale(domain=states, range=colours[: len(states)])),
                shape=alt.Shape("state:N", scale=alt.Scale(domain=states)),
                tooltip=[lane, "state", "at", "reason"],
            ),
            width="stretch",
        )  # fmt: skip
    with table_tab:
        table_with_csv(timeline, name)


def methodology_link(label: str = "Methodology: every metric's definition and formula") -> None:
    st.page_link(METHODOLOGY, label=label, icon=":material/menu_book:")


def illustrative_prices(hardware: Iterable[str], rate: GpuHourRate) -> None:
    """A caption naming every shown chip whose $/GPU-hr at the rate's tier is illustrative, not published."""
    if rate.tier is None:
        return
    registry = data.hardware_registry()
    named = sorted(
        f"{chip} (${figure.value:g}/hr: {figure.source})"
        for chip in set(hardware)
        if chip in registry
        and (figure := registry[chip].tco_usd_per_gpu_hour.get(rate.tier)) is not None  # type: ignore[call-overload]
        and "illustrative" in f"{figure.note} {figure.source}"
    )  # fmt: skip
    if named:
        st.caption(dollars("Illustrative TCO, not a published figure: " + "; ".join(named) + ". Never compare its "
                           "cost with an accelerator's."))  # fmt: skip


def price_sources(hardware: Iterable[str], rate: GpuHourRate) -> None:
    """Each shown chip's $/GPU-hr at the rate's tier with its source and date (a custom rate is the reader's own)."""
    if rate.tier is None:
        return
    registry = data.hardware_registry()
    rows = []
    for chip in sorted(set(hardware)):
        figure = registry[chip].tco_usd_per_gpu_hour.get(rate.tier) if chip in registry else None  # type: ignore[call-overload]
        rows.append(
            {"hardware": chip, "$/GPU-hr": None if figure is None else figure.value,
             "source": "no figure for this tier" if figure is None else figure.source,
             "as of": "–" if figure is None else figure.as_of, "note": "" if figure is None else figure.note or ""}
        )  # fmt: skip
    with st.expander(dollars(f"Where each $/GPU-hr comes from ({rate.label})")):
        dollar_format = st.column_config.NumberColumn(format="$%.2f")
        table(pd.DataFrame.from_records(rows), column_config={"$/GPU-hr": dollar_format})


CURVE_LEVELS = 16


def curve_levels(frame: pd.DataFrame) -> list[float]:
    """`CURVE_LEVELS` speeds evenly across the valid points' measured interactivity, to one decimal."""
    speeds = frame.loc[frame["valid"].astype(bool), "interactivity_p50"].dropna().astype(float)
    if speeds.empty:
        return []
    low, high = float(speeds.min()), float(speeds.max())
    return sorted({round(low + (high - low) * step / (CURVE_LEVELS - 1), 1) for step in range(CURVE_LEVELS)})
