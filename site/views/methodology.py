"""InferSweep hub, Methodology: what every number means, which rules a point must pass, where prices come from.

Nothing here is written twice: the metric definitions and rules are the repository's own documents
(docs/METRICS.md, docs/METHODOLOGY.md, read at run time), the hub's formulas are the analysis library's
module documentation, and the TCO and token-price sources are the registries' own `source` and `as_of`
fields. Tables are parsed from those documents only to offer them as CSV.
"""

from __future__ import annotations

import re
from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

from analysis import (
    cache_tiers,
    compare,
    cost,
    economics,
    fast_tokens,
    interpolate,
    intervals,
    projection,
    regression,
    request_latency,
    trends,
)
from analysis.public_results import NOT_MEASUREMENTS, SHOWN_BY_DEFAULT
from hubkit import controls, data
from hubkit.charts import CHIP_COLOURS, PALETTE
from hubkit.page import table_with_csv
from recipes.validity import CHECKS, ORIGIN_CHECKS

REPO = Path(__file__).resolve().parents[2]
DOCS = {"Metric definitions": REPO / "docs" / "METRICS.md", "Methodology rules": REPO / "docs" / "METHODOLOGY.md"}
# The analysis modules whose documentation states a formula the hub applies (later ones are optional).
# Imported by name, so a module renamed or removed fails the page's import here, not silently at run time.
FORMULA_MODULES = (cost, interpolate, intervals, regression, trends, compare, economics, cache_tiers, request_latency,
                   fast_tokens)  # fmt: skip
ORIGINS = {
    "measured": "Measured by InferSweep's load generator against an engine on the named hardware.",
    "imported": "Measured by another tool (e.g. InferenceX) and imported with its source, which is shown with it.",
    "simulated": "Produced by the simulated engine (a model of an engine, not hardware): for plumbing and demos.",
    "dry-run": "A recipe's plumbing exercised on a stand-in engine on this machine: never published.",
    "projected": "Projected to a chip from another chip's measured curve by a roofline model (`infersweep project`); "
    "labelled 'projected from <chip>', never counted as a measurement. Its backtest error is in docs/BENCHMARKS.md.",
}
PALETTE_NAMES = ("blue", "orange", "bluish green", "vermillion", "reddish purple", "sky blue", "yellow", "grey")


def read_doc(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    return re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)  # generator markers, not for readers


def pipe_tables(markdown: str) -> list[pd.DataFrame]:
    """Every GitHub-style pipe table in `markdown`, header row as column names."""
    tables, block = [], []
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("|"):
            block.append([cell.strip() for cell in line.strip().strip("|").split("|")])
            continue
        if len(block) >= 2:
            header, body = block[0], [row for row in block[2:] if len(row) == len(block[0])]
            tables.append(pd.DataFrame(body, columns=header))
        block = []
    return tables


def public_text(markdown: str) -> str:
    """`markdown` as the public reads it: without its pipe tables (shown as tables already), without sections about
    the machines we develop on (a heading saying "seen here") and without paragraphs that report a measurement on
    "this machine" (docs/BENCHMARKS.md keeps those, with their commands)."""
    kept: list[str] = []
    skipping_level = 0
    for block in re.split(r"\n(?=#+ )", markdown):
        heading = re.match(r"(#+) (.*)", block)
        if heading:
            level = len(heading.group(1))
            if skipping_level and level > skipping_level:
                continue
            skipping_level = level if "seen here" in heading.group(2) else 0
            if skipping_level:
                continue
        paragraphs = [
            paragraph for paragraph in block.split("\n\n")
            if not paragraph.lstrip().startswith("|") and "on this machine" not in paragraph
            and "this 2-core machine" not in paragraph
        ]  # fmt: skip
        kept.append("\n\n".join(paragraphs))
    return "\n".join(kept)


def rule_table(markdown: str) -> pd.DataFrame:
    """The recipe rules (`#### \\`rule-id\\`` under a '### … rules' group) with their first paragraph."""
    rows, group = [], ""
    for block in re.split(r"^(?=#{3,4} )", markdown, flags=re.MULTILINE):
        heading, _, body = block.partition("\n")
        if heading.startswith("### "):
            group = heading[4:].strip()
        elif heading.startswith("#### `"):
            paragraph = body.strip().split("\n\n")[0]
            rows.append({"group": group, "rule": heading[5:].strip(" `"), "why": " ".join(paragraph.split())})
    return pd.DataFrame(rows, columns=["group", "rule", "why"])


st.title("Methodology")
st.caption("How every figure on this hub is defined and computed, which rules a result must pass to be valid, "
           "and where the costs and prices come from, with their dates.")  # fmt: skip
url = data.database_url()
if data.results(url).empty:
    st.info("No results in this hub's database yet: the definitions below apply to every result once measured. "
            "Start with `infersweep run recipes/local/tiny-llama-cpu.yaml` (or `make demo`).")  # fmt: skip

metrics_doc, rules_doc = (read_doc(path) for path in DOCS.values())
definitions, validity, formulas, costs, prices, origins, projections, colours = st.tabs(
    ["Metrics", "Validity and rules", "Hub formulas", "TCO sources", "Token prices", "Origins", "Projections",
     "Colours"]
)  # fmt: skip

with definitions:
    if metrics_doc is None:
        st.warning(f"docs/METRICS.md is not readable at `{DOCS['Metric definitions']}`.")
    else:
        for index, table in enumerate(pipe_tables(metrics_doc)):
            table_with_csv(table, f"metric-definitions-{index + 1}")
        # The tables are above, once; the text around them follows, without what we measured on our own machines.
        # Closed: open, it made the page's first tab an 8,000-px wall of text before any other tab was in view.
        with st.expander("docs/METRICS.md: the text around these tables (how each figure is measured, in prose)"):
            st.markdown(public_text(metrics_doc))

with validity:
    st.subheader("Validity verdict of a point")
    # The checks themselves (recipes/validity.py), with the origins that can apply each.
    rules = pd.DataFrame([
        {"check": check.id, "rule": check.text,
         "applied to": ", ".join(origin for origin, ids in ORIGIN_CHECKS.items() if check.id in ids)}
        for check in CHECKS.values()
    ])  # fmt: skip
    table_with_csv(rules, "validity-rules")
    st.caption("An invalid point is stored and shown with its reasons (pages hide it unless 'Only valid points' "
               "is switched off); the thresholds are set per recipe under `validity:`. A check an origin cannot "
               "apply is listed with the point as not checked.")  # fmt: skip
    if rules_doc is None:
        st.warning(f"docs/METHODOLOGY.md is not readable at `{DOCS['Methodology rules']}`.")
    else:
        st.subheader("Recipe rules, checked before anything runs")
        table_with_csv(rule_table(rules_doc), "recipe-rules")
        for index, table in enumerate(pipe_tables(rules_doc)):
            table_with_csv(table, f"methodology-table-{index + 1}")
        with st.expander("docs/METHODOLOGY.md in full"):
            st.markdown(rules_doc)

with formulas:
    st.caption("Cost, interpolation, intervals and regressions as the hub computes them: the documentation of "
               "each `analysis` module, the code every page calls.")  # fmt: skip
    for module in FORMULA_MODULES:
        name = module.__name__.rpartition(".")[2]
        if module.__doc__:
            first, _, rest = module.__doc__.strip().partition("\n")
            with st.expander(f"{first}  (`analysis/{name}.py`)", expanded=name == "cost"):
                st.markdown(rest.strip())

with costs:
    registry = data.hardware_registry()
    rows = []
    for key, hardware in registry.items():
        figures = [(f"TCO {tier}", figure) for tier, figure in hardware.tco_usd_per_gpu_hour.items()]
        if hardware.all_in_kw is not None:
            figures.append(("all-in power", hardware.all_in_kw))
        for what, figure in figures:
            rows.append(
                {
                    "hardware": key, "name": hardware.name, "unit counted": hardware.accelerator_unit, "figure": what,
                    "value": figure.value, "unit": figure.unit, "source": figure.source, "as of": figure.as_of,
                    "note": figure.note or "",
                }
            )  # fmt: skip
    tco = pd.DataFrame(rows)
    chosen = controls.multiselect("Hardware (TCO sources)", sorted(registry), "hardware", help="Rows of the TCO table.")
    tco = tco[tco["hardware"].isin(chosen)] if not tco.empty else tco
    table_with_csv(tco, "tco-sources")
    st.caption(
        "Cost per million tokens = ($/GPU/hr) / (tok/s/GPU × 3600 / 10⁶) at the chosen tier; tokens per all-in MW = "
        "tok/s/GPU × 1000 / all-in kW per GPU. 'GPU' is the registry's unit: a package for Rubin, a chip for TPU. "
        "Figures are from `recipes/hardware.yaml`; each names its source and the month it describes."
    )

with prices:
    price_rows = [
        {
            "model": price.model, "input $/M": price.input_usd_per_m,
            "cached input $/M": price.cached_input_usd_per_m, "output $/M": price.output_usd_per_m,
            "source": price.source, "listing": price.url or "", "provider": price.provider_rule or "",
            "as of": price.as_of, "note": price.note or "",
        }
        for price in data.price_registry().values()
    ]  # fmt: skip
    table_with_csv(pd.DataFrame(price_rows), "token-prices")
    st.caption(
        "Revenue ($/GPU/hr) = tok/s/GPU × 3600 / 10⁶ × blended price, the input price split by the measured cache-hit "
        "share into cached and uncached; profit = revenue × utilisation − TCO − licence fee × revenue × "
        "utilisation; margin = profit / (revenue × utilisation). Prices are from `recipes/prices.yaml`."
    )

with origins:
    origin_rows = [
        {
            "origin": origin,
            "meaning": meaning,
            "shown": "by default" if origin in SHOWN_BY_DEFAULT
            else "on request, labelled" if origin in NOT_MEASUREMENTS else "never",
        }
        for origin, meaning in ORIGINS.items()
    ]  # fmt: skip
    table_with_csv(pd.DataFrame(origin_rows), "origins")
    st.caption(
        "Retracted results (withdrawn with a reason, e.g. a driver bug) and results under embargo (until a launch "
        "date) are never shown, whatever their origin; they stay in the database."
    )

with projections:
    st.subheader("Projections to other chips, and how wrong they have been")
    st.markdown(projection.__doc__ or "")
    report = data.projection_report(url)
    backtest = report.backtest
    if backtest.empty:
        st.caption(
            "No two chips in this hub measured the same model, precision, engine, workload and parallelism at a "
            "shared interactivity level, so no projection could be checked against a measurement here."
        )
    else:

        def percent(value: float | None) -> str:
            return "-" if value is None else f"{value:.1f} %"

        st.markdown(
            f"Median absolute error **{percent(report.median_abs_error)}** over **{len(backtest)}** pairs (same "
            f"vendor: {percent(report.same_vendor)}, cross-vendor: {percent(report.cross_vendor)}); the "
            "unchanged-curve baseline (the source chip's own curve, as if the chips were equal) is off by "
            f"{percent(report.unchanged)}. By group below: single-server deployments apart from disaggregated ones "
            "(prefill and decode on separate GPUs, projected without a fit)."
        )
        if not report.by_group.empty:
            table_with_csv(report.by_group, "projection-backtest-groups")
        table_with_csv(backtest, "projection-backtest")
        st.caption("Each row projects the source chip's measured curve to the target chip and reads both frontiers "
                   "at one interactivity level (output tok/s/GPU); the target's measurements are only compared "
                   "with, never fitted. `infersweep project backtest` prints the same table. 'sparse': a "
                   "frontier read between points more than twice apart in interactivity or in throughput, where the "
                   "interpolation guesses; 'disaggregated': prefill and decode on separate GPUs, projected point "
                   "by point without a fit; 'image unknown': a curve names no engine image, so each run is a curve "
                   "of its own and runs of one day are compared, never counted as one image "
                   "(docs/METHODOLOGY.md).")  # fmt: skip
    overheads = report.overheads
    if not overheads.empty:
        st.markdown(
            "**Where it misses: the overhead.** The model keeps the part of a step that follows no hardware figure "
            "as measured on the source chip. Chips whose fitted overheads differ for one family are the pairs it "
            "gets wrong (docs/BENCHMARKS.md, 'Projection backtest', gives the public InferenceX files' figures: "
            "AMD's generations differ twofold under one SGLang release, and InferenceX launched them differently: "
            "compiled graphs, the aiter attention backend and an INT4 all-reduce on MI355X only. Given each "
            "target's own fitted overhead, a diagnostic that reads the target, those rows come within the target: "
            "the hardware scaling holds, and the per-step software cost is what a projection cannot know)."
        )
        table_with_csv(overheads, "projection-overheads")

with colours:
    swatches = pd.DataFrame(
        {"order": range(len(PALETTE)), "colour": list(PALETTE), "name": list(PALETTE_NAMES[: len(PALETTE)])}
    )
    st.altair_chart(
        alt.Chart(swatches)
        .mark_rect()
        .encode(
            x=alt.X("name:N", sort=list(swatches["name"]), title=None),
            color=alt.Color("colour:N", scale=None, legend=None),
            tooltip=["name", "colour"],
        )
        .properties(height=60),
        width="stretch",
    )
    table_with_csv(swatches[["order", "name", "colour"]], "palette")
    st.caption(
        "Series are coloured in order with the Okabe & Ito palette (2008, 'Color Universal Design'), which stays "
        "distinguishable with every common colour-vision deficiency, its black drawn grey so that it reads on the "
        "dark theme too; points also vary in shape, so charts read in greyscale too. Every chart has a table "
        "alternative."
    )
    st.subheader("Chips")
    chips = pd.DataFrame({"hardware": list(CHIP_COLOURS), "colour": list(CHIP_COLOURS.values())})
    st.altair_chart(
        alt.Chart(chips)
        .mark_rect()
        .encode(
            x=alt.X("hardware:N", sort=list(chips["hardware"]), title=None, axis=alt.Axis(labelAngle=0)),
            color=alt.Color("colour:N", scale=None, legend=None),
            tooltip=["hardware", "colour"],
        )
        .properties(height=60),
        width="stretch",
    )
    table_with_csv(chips, "chip-colours")
    st.caption(
        "A chip has one colour on every page, whatever else a chart holds, chosen from Okabe & Ito's and Paul Tol's "
        "colour-blind-safe sets so that no two chips look alike: at least 20 CIELAB units apart in normal vision and "
        "12 under simulated deuteranopia, protanopia and tritanopia, and light enough for the dark theme. The local "
        "CPU is grey."
    )
