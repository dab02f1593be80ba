"""InferSweep hub, first page: the stored results, with origin and validity shown on every row.

Presentation only: reads through `db.queries`; never writes. Simulated and dry-run results are hidden
unless asked for, and always labelled.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from db import queries
from db.session import default_database_url, make_engine, migrate, open_session
from orchestrator.analysis.compare import compare_at_interactivity
from recipes.hardware import load_hardware_registry

SHOWN_BY_DEFAULT = ("measured", "imported")


@st.cache_resource
def _engine(url: str):  # a SQLAlchemy Engine, cached per server process and URL
    engine = make_engine(url)
    migrate(engine)
    return engine


def load_results() -> pd.DataFrame:
    with open_session(_engine(default_database_url())) as session:
        rows = queries.list_results(session, public=True)
    return pd.DataFrame([row.__dict__ for row in rows])


st.set_page_config(page_title="InferSweep results", layout="wide")
st.title("InferSweep results")
results = load_results()
if results.empty:
    st.info("No results yet. Run `make demo` (or `infersweep run RECIPE`) to measure some.")
    st.stop()

sweeps = sorted(results["sweep"].unique())
chosen_sweeps = st.multiselect("Sweeps", sweeps, default=sweeps)
origins = sorted(results["origin"].unique())
chosen_origins = st.multiselect(
    "Origins (simulated results are never measurements)",
    origins,
    default=[o for o in origins if o in SHOWN_BY_DEFAULT] or origins,
)
only_valid = st.checkbox("Only valid points", value=True)

view = results[results["sweep"].isin(chosen_sweeps) & results["origin"].isin(chosen_origins)]
if only_valid:
    view = view[view["valid"]]
if view.empty:
    st.warning("No results match these filters.")
    st.stop()

fixed = view[view["workload_kind"] == "fixed-length"]
agentic = view[view["workload_kind"] == "agentic-replay"]

st.subheader("Agentic replay: prefix-cache hits, realized vs theoretical")
if agentic.empty:
    st.info("No agentic results yet. Run an `agentic-replay` recipe, e.g. recipes/local/agentic-tiny-llama-cpu.yaml.")
else:
    hits = agentic.assign(point=agentic["recipe"] + " · c=" + agentic["concurrency"].astype(str))
    st.bar_chart(hits.set_index("point")[["theoretical_hit_rate", "realized_hit_rate"]], stack=False)
    st.caption(
        "Theoretical: the trace's own prefix reuse at the engine's block size. Realized: cached / prompt tokens "
        "reported by the engine for the measured requests (docs/METRICS.md)."
    )

st.subheader("Throughput per GPU against interactivity")
base = fixed if not fixed.empty else view
chart = base.assign(series=base["recipe"] + " · " + base["origin"])
st.scatter_chart(chart, x="interactivity_p50", y="output_throughput_per_gpu", color="series")
st.caption("x: tokens/s/user = 1000 / TPOT p50; y: output tokens/s per accelerator (see docs/METRICS.md).")

st.subheader("At a target interactivity")
target = st.number_input("tokens/s/user", min_value=1.0, value=50.0, step=10.0)
table = compare_at_interactivity(list(view.itertuples(index=False)), target, load_hardware_registry())
st.dataframe(
    pd.DataFrame(
        [
            {
                "recipe": row.recipe, "hardware": row.hardware, "engine": row.engine,
                "output tok/s/GPU": row.throughput.mean if row.throughput else None,
                "95 % low": row.throughput.low if row.throughput else None,
                "95 % high": row.throughput.high if row.throughput else None,
                "$/M output tokens": row.usd_per_million_output, "note": row.note,
            }
            for row in table
        ]
    ),
    hide_index=True,
)  # fmt: skip
st.caption("Read along each configuration's Pareto frontier with monotone interpolation; never extrapolated.")

st.subheader("Points")
columns = [
    "sweep", "recipe", "hardware", "engine", "origin", "isl", "osl", "concurrency", "repeat_index", "valid",
    "completed", "failed", "output_throughput_per_gpu", "ttft_p50_ms", "tpot_p50_ms", "interactivity_p50",
]  # fmt: skip
st.dataframe(view[columns], hide_index=True, use_container_width=True)
invalid = view[~view["valid"]]
for _, row in invalid.iterrows():
    st.write(f"Invalid: {row['recipe']} c={row['concurrency']}: {'; '.join(row['validity_reasons'])}")
