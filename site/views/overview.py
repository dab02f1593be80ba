"""InferSweep hub, Overview (the default page): which chip serves each model cheapest at a given speed per user.

A scorecard of models × hardware at fixed interactivity tiers (30 / 50 / 100 tok/s/user): for each
model, precision and workload, each chip's cost per million output tokens at the chosen TCO tier, read along
the chip's envelope (the best of all its configurations at that speed or faster), and its change against a
reference chip, only where the reference measured the same model, precision and workload at that speed. The
figures come from `analysis.economics.scorecard` (`envelope.py`: never extrapolated; mean of
repeats with a 95 % interval; runs and their spread). Presentation only: nothing here writes.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from analysis.economics import (
    INTERACTIVITY_TIERS,
    ScorecardCell,
    cheapest_and_ties,
    default_reference,
    scorecard,
)
from hubkit import charts, controls, data, page
from hubkit.page import dollars

MISSING = "–"
NOT_MEASURED = f"{MISSING} (not measured)"


def data_tiers(frame: pd.DataFrame) -> list[float]:
    """Tiers inside the measured range when none of the fixed ones is (the local demo measures 260–645 tok/s/user):
    a quarter, half and three quarters of the way across it, to two significant figures."""
    speeds = frame.loc[frame["valid"].astype(bool), "interactivity_p50"].dropna().astype(float)
    if speeds.empty:
        return []
    low, high = float(speeds.min()), float(speeds.max())
    if any(low <= tier <= high for tier in INTERACTIVITY_TIERS):
        return []
    return sorted({float(f"{low + (high - low) * share:.2g}") for share in (0.25, 0.5, 0.75)})


def tier_label(value: float) -> str:
    return f"{value:g}"


def origin_label(origins: tuple[str, ...]) -> str:
    """'' for measurements; '[imported]', '[simulated]'... otherwise, so non-measurements are never unlabelled."""
    others = [origin for origin in origins if origin != "measured"]
    return f"[{', '.join(others)}]" if others else ""


def cell_text(cell: ScorecardCell, reference: str | None) -> str:
    """'$0.490 −46.4% · 2 runs $0.47–0.52' for one scorecard cell (three significant figures, the runs behind it
    and their spread, 'at 54 tok/s/user' where the chip serves the tier faster than asked); '–' with the reason
    when the chip has no figure at that speed."""
    if cell.best is None or cell.best.output is None:
        label = origin_label(cell.origins)
        text = f"{MISSING} ({cell.empty_because})"
        return f"{text} {label}" if label else text
    read = cell.best.read
    parts = [page.money(cell.best.output.usd_per_million)]
    if cell.hardware == reference and cell.vs_reference is not None:
        parts.append("(reference)")
    elif cell.vs_reference is not None:
        parts.append(f"{cell.vs_reference:+.1%}")
    parts.append(f"· {page.runs_text(read, cell.best.usd_per_gpu_hour)}")
    if read.served_faster:
        parts.append(f"· at {read.read_at:.3g} tok/s/user")
    projected = page.projection_text(read, cell.best.usd_per_gpu_hour)
    if projected:
        parts.append(f"· {projected}")
    label = origin_label(read.origins)
    return " ".join([*parts, label] if label else parts)


def cheapest_of(row: list[ScorecardCell]) -> str:
    """'gb200-nvl72 $0.490' for the cheapest priced cell of a scorecard row (its origin when not measured here); 'tie:
    gb200-nvl72 $0.0860, b200 $0.0865' where another chip's cost lies within the cheapest's spread over its runs and
    repeats (`cheapest_and_ties`); '–' with the reason when no chip has a cost there (the chips' own cells say which
    reason is whose)."""
    ranked = cheapest_and_ties(row)
    if not ranked:
        reasons = sorted({cell.empty_because for cell in row if cell.empty_because})
        return f"{MISSING} (no chip: {'; '.join(reasons)})" if reasons else NOT_MEASURED
    named = ", ".join(f"{cell.hardware} {page.money(cell.best.output.usd_per_million)}"  # type: ignore[union-attr]
                      for cell in ranked)  # fmt: skip
    text = f"tie: {named}" if len(ranked) > 1 else named
    label = origin_label(tuple(sorted({o for cell in ranked for o in cell.best.read.origins})))  # type: ignore[union-attr]
    return f"{text} {label}" if label else text


def card_markdown(tiers: dict[float, list[ScorecardCell]], reference: str | None, chips: list[str]) -> str:
    """One card of the scorecard (a model, precision and workload): per tier, the cheapest chip, then each chip's
    cell (`cell_text`), and the page's other `chips` ("not measured") in one line. Text that wraps: the answer reads
    at 390 px, where the table's chip columns were cut past the first."""
    lines = []
    for tier, row in sorted(tiers.items()):
        lines.append(f"**{tier:g} tok/s/user** · cheapest: **{page.dollars(cheapest_of(row))}**")
        lines += [f"- {cell.hardware}: {page.dollars(cell_text(cell, reference))}"
                  for cell in sorted(row, key=lambda cell: cell.hardware)]  # fmt: skip
        absent = sorted(set(chips) - {cell.hardware for cell in row})
        if absent:
            lines.append(f"- not measured: {', '.join(absent)}")
        lines.append("")
    return "\n".join(lines)


def figures(cells: list[ScorecardCell]) -> pd.DataFrame:
    """One row per cell with every figure behind it (the long table, the chart and the CSV): numbers only, to three
    significant figures."""
    sig = page.sig
    records = []
    for cell in cells:
        best = cell.best
        read = best.read if best is not None else None
        throughput = read.output if read is not None else None
        cost = best.output if best is not None else None
        spread = read.run_spread if read is not None else None
        records.append(
            {
                "model": cell.model, "precision": cell.precision, "workload": cell.workload,
                "tok/s/user": cell.interactivity, "hardware": cell.hardware,
                "configuration": read.configuration if read else None,
                "origin": ", ".join(read.origins if read else cell.origins),
                "sweep": ", ".join(read.sweeps) if read else None,
                "read at tok/s/user": sig(read.read_at) if read and read.read_at is not None else None,
                "output tok/s/GPU": sig(throughput.mean) if throughput else None,
                "95 % low": sig(throughput.low) if throughput else None,
                "95 % high": sig(throughput.high) if throughput else None,
                "repeats": throughput.n if throughput else None,
                "runs": read.runs if read else None,
                "runs' lowest tok/s/GPU": sig(spread[0]) if spread else None,
                "runs' highest tok/s/GPU": sig(spread[1]) if spread else None,
                "$/GPU-hr": best.usd_per_gpu_hour if best else None,
                "$/M output tokens": sig(cost.usd_per_million) if cost else None,
                "band low tok/s/GPU": sig(read.band[0]) if read and read.band else None,
                "band high tok/s/GPU": sig(read.band[1]) if read and read.band else None,
                "projection": page.projection_text(read, best.usd_per_gpu_hour) if read and best else "",
                "$/M output, low": sig(cost.low) if cost else None,
                "$/M output, high": sig(cost.high) if cost else None,
                "$/M input tokens": sig(best.input.usd_per_million) if best and best.input else None,
                "$/M total tokens": sig(best.total.usd_per_million) if best and best.total else None,
                "vs reference": sig(cell.vs_reference),
                "reference": cell.reference,
                "configurations in the envelope": cell.configurations,
                "note": cell.reason or (best.reason if best else ""),
            }
        )  # fmt: skip
    return pd.DataFrame.from_records(records)


def bar_chart(rows: pd.DataFrame) -> alt.LayerChart:
    """$/M output tokens per chip for one model, precision and workload: a block of bars per interactivity tier on one
    scale (the tiers are compared too), the cost at each bar's end, 95 % error bars."""
    tooltip = ["configuration", "origin", "sweep", alt.Tooltip("output tok/s/GPU", format=",.3r"),
               alt.Tooltip("$/M output tokens", format="$.3r"), alt.Tooltip("vs reference", format="+.1%")]  # fmt: skip
    # Bars in a tier's block are told apart by colour and by the chip named beside the cost (no legend to look up).
    costs = zip(rows["hardware"], rows["$/M output tokens"], strict=True)
    shown = rows.assign(shown=[f"{chip} {page.money(value)}" for chip, value in costs])
    order = list(shown.sort_values("$/M output tokens")["label"].drop_duplicates())
    domain = charts.bar_domain([*shown["$/M output tokens"], *shown["$/M output, high"]], room=0.9)
    return charts.chip_bars(shown, "$/M output tokens", "$ per million output tokens", "shown", order, domain,
                            tooltip, low="$/M output, low", high="$/M output, high", group="tier")  # fmt: skip


def chart_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The priced cells of `table` (`figures`), each labelled with its chip (and origin) and its tier."""
    shown = table[table["$/M output tokens"].notna()]
    return shown.assign(
        label=shown["hardware"] + [f" [{o}]" if o != "measured" else "" for o in shown["origin"]],
        tier=[f"{tier:g} tok/s/user" for tier in shown["tok/s/user"]],
    ).sort_values("tok/s/user")


st.title("Overview")
st.markdown(
    "**What is this?** For each model, the cheapest measured way to serve it on each chip at a fixed speed "
    "per user (tok/s/user): cost per million output tokens at a TCO tier, and the change against a reference "
    "chip. Dig into every point in the Pareto explorer; every formula is on the Methodology page."
)
links = st.columns(2)
links[0].page_link("views/pareto.py", label="Pareto explorer", icon=":material/scatter_plot:")
links[1].page_link(page.METHODOLOGY, label="Methodology", icon=":material/menu_book:")

frame = page.results_or_stop()

rate = page.rate_control(custom=False)  # a scorecard compares chips at their own TCO, never one custom figure
following = data_tiers(frame)
tiers = [tier_label(v) for v in sorted({*INTERACTIVITY_TIERS, *following})]
speeds = controls.multiselect("Interactivity tiers (tok/s/user)", tiers, "tiers",
                              default=[tier_label(v) for v in following or INTERACTIVITY_TIERS],
                              help="Speed per user = 1000 / TPOT p50 (ms).")  # fmt: skip
if following:
    fixed, shown = (", ".join(map(tier_label, values)) for values in (INTERACTIVITY_TIERS, following))
    st.caption(f"None of the fixed tiers ({fixed} tok/s/user) lies within the measured range, so tiers from the data "
               f"are shown: {shown}.")  # fmt: skip
frame = page.filtered_or_stop(frame, missing_choice=None if speeds else "Pick at least one interactivity tier.")
rows = data.rows_of(data.database_url(), frame)
history = data.every_run_of(data.database_url(), frame)
hardware = sorted(frame["hardware"].unique())
reference = controls.selectbox("Reference chip", hardware, "reference", default=default_reference(rows),
                               help="Changes are against this chip's cheapest configuration for the same "
                               "model, precision and workload at the same speed.")  # fmt: skip

cells = scorecard(rows, data.hardware_registry(), rate, sorted(float(v) for v in speeds), reference, history,
                  data.chip_reads(data.database_url()))  # fmt: skip
table = figures(cells)

st.subheader(f"Cost per million output tokens, {rate.label}, vs {reference}")
grid = pd.DataFrame(
    [
        {"model": c.model, "precision": c.precision, "workload": c.workload, "tok/s/user": c.interactivity,
         "hardware": c.hardware, "cell": cell_text(c, reference)}
        for c in cells
    ]
)  # fmt: skip
grid = grid.pivot_table(
    index=["model", "precision", "workload", "tok/s/user"], columns="hardware", values="cell", aggfunc="first"
)
grid = grid.fillna(NOT_MEASURED).reset_index().rename_axis(columns=None)
# The answer first: per row, the chip with the lowest $/M output tokens and that cost.
by_row: dict[tuple[object, ...], list[ScorecardCell]] = {}
for c in cells:
    by_row.setdefault((c.model, c.precision, c.workload, c.interactivity), []).append(c)
grid.insert(4, "cheapest", [
    cheapest_of(by_row.get(key, []))
    for key in zip(grid["model"], grid["precision"], grid["workload"], grid["tok/s/user"], strict=True)
])  # fmt: skip
page.illustrative_prices(frame["hardware"], rate)
# Only the open tab is drawn (`.open`, a rerun on switching): a chart drawn in a hidden tab held the first screen's
# scorecard back by about a second (docs/BENCHMARKS.md, "Hub render"). The open tab is in the link (`tab`).
scorecard_tab, chart_tab, table_tab = st.tabs(["Scorecard", "Chart", "All figures"], key="tab", bind="query-params",
                                              on_change="rerun")  # fmt: skip
with scorecard_tab:
    cards: dict[tuple[str, str, str], dict[float, list[ScorecardCell]]] = {}
    for c in cells:
        cards.setdefault((c.model, c.precision, c.workload), {}).setdefault(c.interactivity, []).append(c)
    # Two cards a line on a wide screen; Streamlit stacks columns on a phone's width, one card a line.
    for start in range(0, len(cards), 2):
        for column, (key, tiers_of_card) in zip(st.columns(2), list(cards.items())[start : start + 2], strict=False):
            with column.container(border=True):
                st.markdown(f"**{page.row_label(*key)}**")
                st.markdown(card_markdown(tiers_of_card, reference, hardware))
    with st.expander("The scorecard as one table (a column per chip; scrolls sideways past a few chips)"):
        # The row's identity and its answer stay pinned on the left while the chips scroll.
        page.table(grid, column_config={name: st.column_config.Column(pinned=True) for name in grid.columns[:5]})
    controls.csv_download(table, "scorecard")  # the figures as numbers, not the cells' text
    st.caption(
        "**workload**: the sequence lengths, with '· mtp' where the configurations decode with speculative decoding "
        "(multi-token prediction, several tokens a step): a row of its own, never folded into the row without it, "
        "whose figures are all without speculative decoding. "
        "**cheapest**: the chip with the lowest cost in the row; 'tie:' and every chip whose cost lies within the "
        "cheapest's spread over its runs and repeats, which the measurements cannot tell apart. "
        f"Each chip's cell: the chip's envelope (the best of "
        f"all its configurations at that speed or faster) read at the tier, its change against {reference}, the "
        "runs that measured the configurations it rests on and their spread ('1 run': a single run, no spread "
        "known; 'joins 2 runs' where those configurations were measured in different runs, so no single run gave "
        "the figure, with what the runs read alone), and 'at N tok/s/user' where the chip's slowest measured point is "
        "faster than the tier. "
        f"{MISSING} says why there is no figure: no TCO figure for the chip at this tier, outside the measured "
        "range (no configuration measured around that speed; nothing is extrapolated), or not measured. "
        "Imported and simulated results carry their origin in brackets."
    )
if chart_tab.open:
    with chart_tab:
        if table["$/M output tokens"].notna().any():
            page.bars_per_row(chart_rows(table), bar_chart)
            st.caption("Error bars: the cost at the ends of the 95 % interval of the throughput over repeats.")
        else:
            st.info("No configuration has a cost at these tiers: see the notes in All figures.")
if table_tab.open:
    with table_tab:
        page.table(
            table,
            column_config={"vs reference": st.column_config.NumberColumn(format="percent")},
        )  # fmt: skip
        controls.csv_download(table, "scorecard-figures")

st.caption(
    dollars(
        "**$/M output tokens** = ($/GPU-hr) / (output tok/s/GPU × 3600 / 10⁶), at the TCO tier of each chip. "
        "**Output tok/s/GPU** is read at the target speed along the chip's envelope: the Pareto frontier "
        "(throughput per GPU against tok/s/user = 1000 / TPOT p50) over every configuration of the chip, with a "
        "monotone cubic, averaged over repeats (95 % Student-t interval); where one configuration's own curve passes "
        "higher at the target than the cubic through the envelope's points of two configurations, that curve is read "
        "(the envelope of the configurations' curves, not only of their points; the cell names the configuration "
        "it rests on). Below the envelope's slowest point the "
        "chip serves the speed with that point (faster than asked); above its fastest, nothing: never extrapolated. "
        "Costs are derived from the interpolated throughput, never interpolated themselves. **vs reference** = "
        "cost / reference cost − 1, only for the same model, precision and workload. Only valid points of the "
        "latest sweep of each configuration count, unless the sidebar says otherwise."
    )
)
page.methodology_link()
