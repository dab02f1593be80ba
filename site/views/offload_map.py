"""InferSweep hub, DRAM offload map: where a host-DRAM tier for the KV cache lowers $/M tokens (model-based).

For one deployment and agent corpus, the capacity planner's hit rate with HBM only and with the DRAM tier at each
concurrency, and what the prefill it saves is worth at each operating point (analysis/offload.py
states the model): the stored valid point of the chip nearest each speed (measured, imported or projected,
labelled), or rates given here. Measured replays of the chip with and without offload are listed beside the
prediction.
"""

from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

from analysis.corpora import (
    WEIGHT_PRECISIONS,
    Trace,
    corpus_file_name,
    corpus_names,
    kv_capacity,
    load_corpus,
)
from analysis.fast_tokens import nearest_point, operating_points
from analysis.offload import (
    DEFAULT_THRESHOLD,
    HitRates,
    ServingRates,
    offload_map,
    planned_hits,
    rates_at,
)
from hubkit import controls, data, page
from hubkit.charts import PALETTE
from recipes.hardware import TCO_TIERS, offload_budget_gib

CONCURRENCIES = [4, 8, 16, 32, 64, 128, 256]
LEVELS = [20.0, 30.0, 50.0, 70.0, 100.0]
BLOCK_SIZE = 64
MAX_GPUS = 1024  # an engine of more accelerators than any rack-scale system (NVL576) has


@st.cache_resource(show_spinner="Reading or generating the corpus...")
def corpus(name: str) -> Trace:
    """A shipped trace, or a synthetic profile's corpus generated in memory, once per hub process."""
    return load_corpus(name)


@st.cache_data(show_spinner="Running the capacity planner...")
def hits_of(name: str, concurrencies: tuple[int, ...], hbm_blocks: int, dram_blocks: int) -> list[HitRates]:
    return planned_hits(corpus(name), concurrencies, BLOCK_SIZE, hbm_blocks, dram_blocks,
                        requests_per_lane=20)  # fmt: skip


st.title("DRAM offload map")
st.info(
    "**Model-based, not measured.** Where does a host-DRAM tier for the KV cache pay? For a deployment and an agent "
    "corpus, the capacity planner predicts the prefix-cache hit rate with HBM only and with the DRAM tier at each "
    "concurrency; the prefill it saves is priced at each operating point: one request's accelerator time = "
    "uncached prompt tokens ÷ prefill rate + output tokens ÷ decode rate. The tier's own cost is not charged, so "
    "the saving is an upper bound."
)
hardware, models = data.hardware_registry(), data.model_registry()
traces = corpus_names()
trace_name = controls.selectbox("Agent corpus", traces, "trace",
                                help="A shipped Claude Code session, or a synthetic corpus: 'agentx' has AgentX's "
                                "sizes (~20k shared prefix, contexts past 100k tokens, 32 sessions).")  # fmt: skip
chip = controls.selectbox("Hardware", [key for key in hardware if key != "cpu-local"], "chip", default="b200")
model_key = controls.selectbox("Model", sorted(models), "llm", default="deepseek-r1")
precision = controls.selectbox("Precision", list(WEIGHT_PRECISIONS), "weights", default="fp8")
gpus = int(controls.number("Accelerators per engine", "gpus", default=8, min_value=1, step=1, max_value=MAX_GPUS))
budget = offload_budget_gib(hardware[str(chip)], gpus)
dram_gib = controls.number(
    "Host DRAM for the KV cache (GiB)",
    "dram",
    default=round(budget) if budget is not None else 1024.0,
    min_value=0.0,
    step=128.0,
    help="Default: InferenceX's rule on the registry's host DRAM, min(DRAM, 3 TB) × 0.8 × GPUs ÷ GPUs per node; "
    "1024 GiB where the registry has no figure.",
)
utilisation = controls.number("Share of HBM the engine may use", "util", default=0.9, min_value=0.05, step=0.05,
                              max_value=1.0)  # fmt: skip
chosen_concurrency = controls.multiselect("Concurrency (live sessions)", [str(c) for c in CONCURRENCIES],
                                          "concurrency", default=["16", "64", "256"])  # fmt: skip
threshold = controls.number("Worth it from a saving of (%)", "threshold", default=DEFAULT_THRESHOLD * 100,
                            min_value=0.0, step=5.0) / 100  # fmt: skip
tier = controls.selectbox("TCO tier", list(TCO_TIERS), "tier", default="owning_hyperscaler")
from_results = controls.toggle("Rates from the chip's stored points", "stored", default=True,
                               help="Per speed, the stored valid point nearest it: decode = its output tokens/s per "
                               "GPU, prefill = ISL ÷ TTFT p50 per GPU (queueing included: an upper bound on "
                               "prefill's cost).")  # fmt: skip
levels_chosen = controls.multiselect("Tokens/s/user", [f"{level:g}" for level in LEVELS], "levels",
                                     default=["20", "50", "100"])  # fmt: skip

price_figure = hardware[str(chip)].tco_usd_per_gpu_hour.get(tier)  # type: ignore[call-overload]
price = price_figure.value if price_figure is not None else None
levels: list[ServingRates] = []
frame = data.results(data.database_url())
if from_results:
    points = operating_points(frame.itertuples(index=False)) if not frame.empty else []
    chosen = [nearest_point(points, str(chip), str(model_key), float(level)) for level in levels_chosen]
    if not chosen or None in chosen:
        st.warning(f"No stored valid fixed-length point of {model_key} on {chip}: switch off 'Rates from the chip's "
                   "stored points' and give rates.")  # fmt: skip
        st.stop()
    levels = [rates_at(point, price) for point in chosen if point is not None]
else:
    decode = controls.number("Decode rate (output tokens/s per GPU)", "decode", default=1000.0, min_value=0.001)
    prefill = controls.number("Prefill rate (prompt tokens/s per GPU)", "prefill", default=10000.0, min_value=0.001)
    levels = [ServingRates(interactivity=50.0, decode_per_gpu=decode, prefill_per_gpu=prefill, usd_per_gpu_hour=price)]

try:
    capacity = kv_capacity(models[str(model_key)], hardware[str(chip)], gpus, str(precision), BLOCK_SIZE,
                           memory_utilization=min(utilisation, 1.0), dram_gib=dram_gib)  # fmt: skip
except ValueError as error:
    st.warning(f"This deployment cannot be planned: {error}")
    st.stop()
if capacity.hbm_blocks == 0:
    st.warning(f"The weights ({capacity.weights_gb:,.0f} GB) leave no HBM for the KV cache on {gpus}× {chip}: "
               "add accelerators or choose a lighter precision.")  # fmt: skip
    st.stop()
concurrencies = tuple(sorted(int(c) for c in chosen_concurrency))
hits = hits_of(str(trace_name), concurrencies, capacity.hbm_blocks, capacity.dram_blocks)
cells = offload_map(hits, levels, threshold)
st.caption(f"{gpus}× {chip}, {model_key} {precision}: {capacity.hbm_blocks:,} blocks of {BLOCK_SIZE} tokens in HBM "
           f"(after {capacity.weights_gb:,.0f} GB of weights) and {capacity.dram_blocks:,} in {dram_gib:g} GiB of "
           "DRAM.")  # fmt: skip

table = pd.DataFrame([{
    "concurrency": cell.concurrency, "tok/s/user": round(cell.rates.interactivity, 1),
    "HBM-only hit %": round(100 * cell.hits.hbm_only, 1), "with DRAM hit %": round(100 * cell.hits.with_dram, 1),
    "prompt tokens saved": round(cell.prefill_tokens_saved), "saving %": round(100 * cell.saving, 1),
    "throughput per GPU gain %": round(100 * cell.throughput_gain, 1),
    "offload pays": cell.pays,
    "$/M output, HBM only": cell.usd_per_million_output(with_dram=False),
    "$/M output, with DRAM": cell.usd_per_million_output(with_dram=True), "operating point": cell.rates.label,
} for cell in cells])  # fmt: skip
table = table.round({"$/M output, HBM only": 3, "$/M output, with DRAM": 3})
paying = table[table["offload pays"]]
st.markdown(
    f"Offload lowers $/M output tokens by at least {threshold:.0%} in **{len(paying)} of {len(table)}** cells"
    + (f": from concurrency {paying['concurrency'].min()} at these speeds." if len(paying) else ".")
)
table["label"] = table["saving %"].map(lambda saving: f"{saving:.1f} %") + table["offload pays"].map(
    lambda pays: " · pays" if pays else ""
)
heat = alt.Chart(table).mark_rect().encode(
    x=alt.X("tok/s/user:O", title="Operating point (tok/s/user)"),
    y=alt.Y("concurrency:O", title="Concurrency (live sessions)", sort="descending"),
    # From 0 (no saving: white) to at least three times the threshold, so a map of zeros is not a sea of blue.
    color=alt.Color("saving %:Q", title="saving %", scale=alt.Scale(
        range=["#f7f7f7", PALETTE[0]], domain=[0, max(30.0, 300 * threshold, float(table["saving %"].max()))])),
    tooltip=["concurrency", "tok/s/user", "HBM-only hit %", "with DRAM hit %", "saving %", "operating point"],
)  # fmt: skip
# The cells' colours are the same in both themes, so their text is too: dark on the pale cells, white on the
# saturated ones (theme-coloured text was black on blue in the dark theme); 13 px, legible on a phone.
strong = max(30.0, 300 * threshold, float(table["saving %"].max())) / 2
text = (
    alt.Chart(table)
    .mark_text(fontWeight="bold", fontSize=13)
    .encode(
        x="tok/s/user:O", y=alt.Y("concurrency:O", sort="descending"), text="label:N",
        color=alt.condition(f"datum['saving %'] > {strong}", alt.value("white"), alt.value("#222222")),
    )
)  # fmt: skip
# At least 260 px: the y axis' title ("Concurrency (live sessions)", about 170 px) was clipped on a map of two rows.
height = max(260, 60 * len(concurrencies) + 60)
st.altair_chart(alt.layer(heat, text).properties(height=height), width="stretch")
page.table(table.drop(columns="label"))
controls.csv_download(table.drop(columns="label"), "offload-map.csv")

st.subheader("Hit rates: the planner's prediction, and measured replays of this corpus on this chip")
predicted = pd.DataFrame([{"concurrency": row.concurrency, "hit %": 100 * rate, "series": series}
                          for row in hits for series, rate in (("predicted, HBM only", row.hbm_only),
                                                               ("predicted, with DRAM", row.with_dram))])  # fmt: skip
measured = frame if frame.empty else frame[(frame["hardware"] == chip) & (frame["workload_kind"] == "agentic-replay")]
if not measured.empty:
    same_corpus = measured["replay_trace"].map(lambda trace: Path(str(trace)).name == corpus_file_name(str(trace_name)))
    measured = measured[same_corpus & measured["realized_hit_rate"].notna()]
points = pd.DataFrame({
    "concurrency": measured["concurrency"] if not measured.empty else [],
    "hit %": 100 * measured["realized_hit_rate"] if not measured.empty else [],
    "series": measured["kv_offload"].map(lambda offload: "measured, HBM only" if offload == "none"
                                         else f"measured, {offload}") if not measured.empty else [],
})  # fmt: skip
series_names = (
    list(predicted["series"].unique()) + sorted(points["series"].unique())
    if not points.empty
    else list(predicted["series"].unique())
)
series_colour = alt.Color("series:N", title=None, legend=alt.Legend(orient="bottom", labelLimit=0, columns=2),
                          scale=alt.Scale(domain=series_names, range=list(PALETTE[: len(series_names)])))  # fmt: skip
lines = alt.Chart(predicted).mark_line(point=True).encode(
    x=alt.X("concurrency:Q", scale=alt.Scale(type="log", base=2), title="Concurrency (live sessions)"),
    y=alt.Y("hit %:Q", scale=alt.Scale(domain=[0, 100]), title="Prompt served from cache (%)"),
    color=series_colour, strokeDash=alt.StrokeDash("series:N", legend=None),
    tooltip=["series", "concurrency", alt.Tooltip("hit %", format=".1f")],
)  # fmt: skip
layers = [lines]
if not points.empty:
    layers.append(alt.Chart(points).mark_point(size=220, filled=True, shape="diamond").encode(
        x="concurrency:Q", y="hit %:Q", color=series_colour,
        tooltip=["series", "concurrency", alt.Tooltip("hit %", format=".1f")],
    ))  # fmt: skip
st.altair_chart(alt.layer(*layers).properties(height=380), width="stretch")
if measured.empty:
    st.caption(f"No agentic replay of {trace_name} on {chip} is stored: run an agentic recipe on this corpus with "
               "and without `kv_offload` (the simulated engine's DRAM tier here) to overlay measured hit "
               "rates.")  # fmt: skip
else:
    shown = measured[["configuration", "origin", "concurrency", "kv_offload", "realized_hit_rate",
                      "planner_hbm_hit_rate", "planner_dram_hit_rate"]]  # fmt: skip
    page.table(shown.sort_values(["kv_offload", "concurrency"]))
