"""InferSweep hub, Fast tokens: what faster token generation buys a coding agent's whole session.

From a real session trace's own records (runners/traces/workflow.py): the session's wall time split into model
time and tool/user time, as recorded and with AgentX's per-tree idle cap. Then the same session served at each
chip's frontier operating points from the results (analysis/fast_tokens.py): its wall time there,
and the share K-times faster decode saves of it. Measured, imported and (when switched on) simulated points are
labelled by origin.
"""

from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

from analysis.corpora import Trace, load_corpus, shipped_trace_names
from analysis.fast_tokens import (
    IDLE_CAP_S,
    chip_session_times,
    nearest_per_chip,
    operating_points,
    recorded_decode_saving,
    recorded_split,
    replay_estimate,
    takeaway,
)
from hubkit import controls, data, page
from hubkit.charts import chip_colour, colour
from recipes.agentx import AGENTX_SYSTEM_IDLE_CAP_S
from recipes.errors import InferSweepError


@st.cache_resource(show_spinner=False)
def shipped_trace(name: str) -> Trace:
    """A shipped trace, parsed once per hub process (a Trace never changes)."""
    return load_corpus(name)


@st.cache_data(show_spinner=False)
def session_split(name: str, cap: float) -> pd.DataFrame:
    return pd.DataFrame(recorded_split(shipped_trace(name), cap))


st.title("Fast tokens")
st.markdown(
    "Faster token generation only matters as far as it shortens an agent's whole workflow, tools and user included. "
    "This page takes a real coding-agent session, splits its wall time into **model time** (a request in flight) "
    "and **tool/user time** (tools running, the user reading), and shows what the same session takes on each chip "
    "and what faster decode would save of it."
)
chosen = controls.selectbox("Session trace", shipped_trace_names(), "trace")
speedup = controls.number("Decode speedup K (what-if)", "k", default=2.0, min_value=1.0, step=0.5,
                          help="How many times faster decode is in the what-if; prefill is unchanged.")  # fmt: skip
cap = IDLE_CAP_S
try:
    trace = shipped_trace(str(chosen))
    split = session_split(str(chosen), cap)
except InferSweepError as error:
    st.warning(f"The trace {chosen} cannot be split into model and tool time: {error}")
    st.stop()

st.subheader("From the session's own records")
recorded = split[split["view"] == "as recorded"]
capped = split[split["view"] != "as recorded"]
share = recorded["model_s"].sum() / recorded["wall_s"].sum()
capped_share = capped["model_s"].sum() / capped["wall_s"].sum()
columns = st.columns(4)
columns[0].metric("Wall time", f"{recorded['wall_s'].sum():,.1f} s")
columns[1].metric("Model time", f"{recorded['model_s'].sum():,.1f} s")
columns[2].metric("Tool and user time", f"{recorded['tool_s'].sum():,.1f} s")
columns[3].metric("Model-time share", f"{share:.1%}", help=f"{capped_share:.1%} with AgentX's {cap:g} s idle cap.")
bars = split.melt(id_vars=["view", "session"], value_vars=["model_s", "tool_s"], var_name="part", value_name="seconds")
bars["part"] = bars["part"].map({"model_s": "model time", "tool_s": "tool and user time"})
st.altair_chart(
    alt.Chart(bars).mark_bar().encode(
        y=alt.Y("view:N", title=None), x=alt.X("sum(seconds):Q", title="seconds of the session"),
        color=colour("part:N", "part"), tooltip=["view", "part", alt.Tooltip("sum(seconds):Q", format=",.1f")],
    ).properties(height=120),
    width="stretch",
)  # fmt: skip
saved = recorded_decode_saving(trace, speedup)
st.markdown(
    f"As recorded, {speedup:g}× faster decode would save **{saved:.1%}** of this "
    f"session's time (model-time share {share:.1%}). The recorded time to first token is "
    "kept where the trace has one; without it the whole response time counts as decode."
)

st.subheader("Measured by replay")
everything = data.results(data.database_url())
replays = (
    everything[(everything["workload_kind"] == "agentic-replay") & everything["replay_session_time_p50_s"].notna()]
    if not everything.empty else everything
)  # fmt: skip
replays = (
    replays[replays["replay_trace"].map(lambda name: Path(str(name)).name == chosen)] if not replays.empty else replays
)
if replays.empty:
    st.caption(
        f"No stored replay of {chosen} has completed a session tree yet: replay it against an engine "
        "(`infersweep run recipes/local/agentic-tiny-llama-cpu.yaml` replays the trace with subagents) and its "
        "measured session times appear here beside the model's."
    )
else:
    measured_rows = []
    for replay in replays.itertuples():
        # One live session: the whole system is that tree, so AgentX's 10 s system idle cap applies; more: 300 s.
        idle = AGENTX_SYSTEM_IDLE_CAP_S if replay.concurrency == 1 else cap
        estimate = replay_estimate(
            trace, replay.ttft_p50_ms, replay.tpot_p50_ms, replay.replay_time_scale, replay.replay_length_scale,
            None if pd.isna(replay.replay_max_output_tokens) else int(replay.replay_max_output_tokens), idle,
        )  # fmt: skip
        modelled = sum(tree.wall_s for tree in estimate) / len(estimate)
        measured_rows.append({
            "hardware": replay.hardware, "engine": replay.engine, "origin": replay.origin,
            "concurrency": replay.concurrency, "time scale": replay.replay_time_scale,
            "length scale": replay.replay_length_scale, "sessions completed": replay.replay_sessions_completed,
            "measured session s (p50)": replay.replay_session_time_p50_s, "model's session s": modelled,
            "model / measured": modelled / replay.replay_session_time_p50_s,
        })  # fmt: skip
    page.table(
        pd.DataFrame(measured_rows),
        column_config={
            "measured session s (p50)": st.column_config.NumberColumn(format="%.2f"),
            "model's session s": st.column_config.NumberColumn(format="%.2f"),
            "model / measured": st.column_config.NumberColumn(format="%.2f"),
        },
    )  # fmt: skip
    st.caption(
        "Measured: the median wall time of the session trees a replay completed inside its window (think times "
        "multiplied by its time scale, lengths by its length scale). The model's: the same trace on the timeline "
        "above, each request taking the replay's median TTFT plus its scaled output tokens at the median TPOT."
    )

st.subheader("Served at each chip's operating points")
results = page.results_or_stop(
    "No results to serve this session at yet: run a sweep or import results (`infersweep import inferencex`).",
    workload_kind="fixed-length",
)
results = controls.origins(results)
results = controls.latest_only(results)
page.validity_counts(results)
models = sorted(results["model"].dropna().unique())
model = controls.selectbox("Model", models, "model")
results = results[results["model"] == model]
precision = controls.selectbox("Precision", sorted(results["precision"].dropna().unique()), "precision")
results = results[results["precision"] == precision]
workload = controls.selectbox("Workload (ISL/OSL)", sorted(results["workload"].dropna().unique()), "workload")
results = results[results["workload"] == workload]
target = page.target_control(help="The sentence below reads each chip at its frontier point nearest this speed.")
points = operating_points(results.itertuples())
if not points:
    st.info("None of these results has a valid TTFT and interactivity to serve the session at: pick another model "
            "or workload.")  # fmt: skip
    st.stop()
rows = chip_session_times([trace], points, [speedup], idle_cap_s=cap)
table = pd.DataFrame([{
    "hardware": row.point.hardware, "engine": row.point.engine, "origin": row.point.origin,
    "concurrency": row.point.concurrency, "tok/s/user": row.point.interactivity,
    "prefill tok/s": row.point.prefill_tokens_per_s, "session wall s": row.wall_s, "model share": row.model_share,
    f"saved at {speedup:g}× decode": row.savings[speedup],
} for row in rows])  # fmt: skip
for row in nearest_per_chip(rows, target):
    st.markdown(f"- {takeaway(row, speedup)}")
session_curves = alt.Chart(table).encode(
    x=alt.X("tok/s/user:Q", title="interactivity (tokens/s/user)", scale=alt.Scale(zero=True)),
    y=alt.Y("session wall s:Q", title="session wall time (s)", scale=alt.Scale(zero=True)),
    color=chip_colour(table["hardware"]),
    tooltip=["hardware", "engine", "origin", "concurrency", alt.Tooltip("tok/s/user:Q", format=".0f"),
             alt.Tooltip("session wall s:Q", format=",.1f"), alt.Tooltip("model share:Q", format=".1%")],
)  # fmt: skip
# Lines and their points as two layers: a line drawn with points gets point symbols in its legend, so the engine
# legend showed identical black dots instead of its dashes.
st.altair_chart(
    alt.layer(
        session_curves.mark_line().encode(strokeDash=alt.StrokeDash("engine:N", title="engine")),
        session_curves.mark_point(filled=True, size=40),
    ).properties(height=420),
    width="stretch",
)
page.table(
    table,
    column_config={
        "tok/s/user": st.column_config.NumberColumn(format="%.1f"),
        "prefill tok/s": st.column_config.NumberColumn(format="%.0f"),
        "session wall s": st.column_config.NumberColumn(format="%.1f"),
        "model share": st.column_config.NumberColumn(format="percent"),
        f"saved at {speedup:g}× decode": st.column_config.NumberColumn(format="percent"),
    },
)  # fmt: skip
controls.csv_download(table, "fast-tokens")
st.caption(
    f"Units: seconds of one session; tok/s/user is the point's median interactivity (1000 / TPOT p50). Assumptions: "
    f"think, tool and subagent spawn times as the trace recorded them, idle stretches capped at {cap:g} s as "
    "AgentX's replay does per trajectory tree; time to first token = the prompt's uncached tokens (the trace's "
    "own prefix reuse, an unbounded cache) ÷ the point's prefill rate (its input length ÷ its median TTFT, "
    "queueing included); decode = output tokens ÷ median tok/s/user. A point measured on random prompts of one "
    "length stands for every request of the session. Trace: Claude Code sessions shipped in traces/ (their LICENSE)."
)
page.methodology_link()
