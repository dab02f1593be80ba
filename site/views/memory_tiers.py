"""InferSweep hub, Memory tiers: whether an Engram table can live in host DRAM or on SSD, per chip (model-based).

The what-if (analysis/engram.py states the model) takes the table, where the model first reads it and
an operating point: the one given here, or each chip's stored valid point nearest the chosen speed (labelled by
origin: measured, imported or projected). Link figures come from recipes/hardware.yaml, each with its source.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from analysis.engram import EngramTable, OperatingPoint, what_if
from analysis.fast_tokens import nearest_point, operating_points
from hubkit import charts, controls, data, page
from hubkit.charts import PALETTE

PAPER = "https://arxiv.org/abs/2601.07372"
VERDICT_COLOURS = {"hidden": PALETTE[2], "not hidden": PALETTE[3], "unknown": "#999999"}

st.title("Memory tiers: Engram table placement")
st.info(
    "**Model-based, not measured.** Engram-style models ([Cheng et al., *Conditional Memory via Scalable Lookup*, "
    f"arXiv 2601.07372]({PAPER}), DeepSeek-AI, January 2026) keep n-gram embeddings in a table indexed by token "
    "ids, so a step's rows are known before it starts and can be fetched from host DRAM or SSD while the layers "
    "before the first Engram layer compute. This page asks, per chip and tier, whether one decode step's fetch "
    "arrives in that time, and how much HBM moving the table frees for KV cache. Each layer's time is the decode "
    "step split evenly over the layers (an assumption); prefill is not modelled."
)
hardware = data.hardware_registry()
models = data.model_registry()
chips = [key for key, entry in hardware.items() if entry.host_link is not None]
model_key = controls.selectbox("Model", sorted(models), "llm", default="deepseek-r1" if "deepseek-r1" in models
                               else None)  # fmt: skip
shown_chips = controls.multiselect("Hardware", chips, "chips", default=chips)
table_gb = controls.number("Table per accelerator (GB)", "table", default=100.0, min_value=0.001, step=10.0)
lookups = int(controls.number("Lookups per token", "lookups", default=16, min_value=1, step=1))
row_bytes = int(controls.number("Bytes per embedding row", "row", default=2560, min_value=1, step=256))
model = models[str(model_key)]
layers = int(model.layers.value)
first_layer = int(controls.number(f"First Engram layer (0-based, of {layers})", "layer", default=1, min_value=0,
                                  step=1))  # fmt: skip
speed = controls.number("Operating point: tok/s/user", "at", default=50.0, min_value=0.1, step=5.0)
batch = int(controls.number("Operating point: sequences per decode step", "batch", default=64, min_value=1, step=8))
context = int(controls.number("Tokens per sequence (for the KV the freed HBM holds)", "context", default=9216,
                              min_value=1, step=1024))  # fmt: skip
from_results = controls.toggle(
    "Use each chip's stored point nearest this speed", "stored",
    help="The valid fixed-length point of this model nearest the speed, per chip (its concurrency is the batch).",
)  # fmt: skip
if first_layer >= layers:
    st.warning(f"The first Engram layer must be below the model's {layers} layers (0-based index).")
    st.stop()

points: dict[str, OperatingPoint] = {chip: OperatingPoint(interactivity=speed, batch=batch) for chip in shown_chips}
if from_results:
    frame = data.results(data.database_url())
    stored = operating_points(frame.itertuples(index=False)) if not frame.empty else []
    for chip in shown_chips:
        nearest = nearest_point(stored, chip, str(model_key), speed)
        if nearest is None:
            points.pop(chip)
        else:
            points[chip] = OperatingPoint(interactivity=nearest.interactivity, batch=nearest.concurrency,
                                          label=nearest.label)  # fmt: skip
    missing = sorted(set(shown_chips) - set(points))
    if missing:
        st.caption(f"No stored point of {model_key} on {', '.join(missing)}: left out.")

table = EngramTable(table_gb=table_gb, lookups_per_token=lookups, bytes_per_embedding=row_bytes,
                    first_layer=first_layer)  # fmt: skip
rows = []
for chip, point in points.items():
    for verdict in what_if(table, point, hardware[chip], model, context):
        word = {True: "hidden", False: "not hidden", None: "unknown"}[verdict.hidden]
        rows.append({
            "hardware": chip, "tier": verdict.tier, "verdict": word,
            "operating point": f"{point.interactivity:.4g} tok/s/user, batch {point.batch} ({point.label})",
            "fetch µs": verdict.fetch_us,
            "budget µs": verdict.budget_us, "slack µs": verdict.slack_us, "link GB/s": verdict.bandwidth_gbps,
            "latency µs": verdict.latency_us, "HBM freed GB": verdict.hbm_freed_gb,
            f"more sequences of {context} tokens": verdict.extra_sequences,
            "sources": "; ".join(dict.fromkeys(verdict.sources)),
        })  # fmt: skip
if not rows:
    st.warning("No chip to show: choose hardware, or switch off the stored points.")
    st.stop()
result = pd.DataFrame(rows)
result = result.round({"fetch µs": 1, "budget µs": 1, "slack µs": 1, "HBM freed GB": 1,
                       f"more sequences of {context} tokens": 0})  # fmt: skip
off_hbm = result[result["tier"] != "hbm"]
hidden = off_hbm[off_hbm["verdict"] == "hidden"]
st.markdown(
    f"**{len(hidden)} of {len(off_hbm)}** off-HBM placements hide their fetch: "
    + (", ".join(f"{row.hardware} {row.tier}" for row in hidden.itertuples()) or "none")
    + f". Moving the table off HBM frees {table_gb:g} GB per accelerator, room for about "
    f"{off_hbm[f'more sequences of {context} tokens'].max():,.0f} more sequences of {context:,} tokens."
)
drawn = off_hbm.assign(place=off_hbm["hardware"] + " · " + off_hbm["tier"], shown=off_hbm["fetch µs"].fillna(0))
colour = alt.Color("verdict:N", scale=alt.Scale(domain=list(VERDICT_COLOURS), range=list(VERDICT_COLOURS.values())))
tooltip = ["hardware", "tier", "verdict", alt.Tooltip("fetch µs", format=",.1f"),
           alt.Tooltip("budget µs", format=",.1f"), "operating point"]  # fmt: skip
bars = alt.Chart(drawn).mark_bar().encode(
    x=alt.X("shown:Q", title="One decode step's fetch (µs); the tick is the time the earlier layers take"),
    y=alt.Y("place:N", title=None, sort=None, axis=alt.Axis(labelLimit=320)), color=colour, tooltip=tooltip,
)  # fmt: skip
ticks = (
    alt.Chart(drawn)
    .mark_tick(color=charts.INK, thickness=2, size=18)
    .encode(x="budget µs:Q", y=alt.Y("place:N", sort=None), tooltip=tooltip)
)
words = (
    alt.Chart(drawn).mark_text(align="left", dx=4).encode(x="shown:Q", y=alt.Y("place:N", sort=None), text="verdict:N")
)
st.altair_chart(alt.layer(bars, ticks, words).properties(height=max(160, 28 * len(drawn))), width="stretch")
page.table(result)
controls.csv_download(result, "engram-what-if.csv")
