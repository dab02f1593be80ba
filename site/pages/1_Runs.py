"""InferSweep hub, Runs page: where every sweep and job is in its lifecycle, and why.

Presentation only: reads sweeps, jobs and their transitions through `db.queries`. A sweep with results
under a running embargo is not listed (its existence is part of what the embargo keeps back).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from db import queries
from db.session import default_database_url, make_engine, migrate, open_session


@st.cache_resource
def _engine(url: str):  # a SQLAlchemy Engine, cached per server process and URL
    engine = make_engine(url)
    migrate(engine)
    return engine


def _first_line(text: str | None) -> str | None:
    lines = (text or "").splitlines()
    return lines[0][:120] if lines else None


st.set_page_config(page_title="InferSweep runs", layout="wide")
st.title("Runs")
with open_session(_engine(default_database_url())) as session:
    hidden = queries.embargoed_sweep_ids(session)
    sweeps = [sweep for sweep in queries.list_sweeps(session) if sweep.id not in hidden]
    if not sweeps:
        st.info("No sweeps yet. `infersweep run RECIPE` starts one; `infersweep status` shows it in a terminal.")
        st.stop()
    st.dataframe(
        pd.DataFrame(
            [{"sweep": s.name, "state": s.status, "created": s.created_at, "updated": s.updated_at} for s in sweeps]
        ),
        hide_index=True,
    )
    chosen = st.selectbox("Sweep", [sweep.name for sweep in reversed(sweeps)])
    sweep = next(s for s in sweeps if s.name == chosen)
    jobs = queries.jobs_of_sweep(session, sweep.id)
    recorded = queries.points_per_job(session, sweep.id)
    transitions = queries.transitions_of_sweep(session, sweep.id, subject="job")

st.subheader(f"Jobs of {chosen} ({sweep.status})")
st.dataframe(
    pd.DataFrame(
        [
            {
                "job": job.id, "attempt": job.attempt, "state": job.status, "host": job.host,
                "points": f"{recorded.get(job.id, 0)}/{job.points_planned}", "error": job.error_kind,
                "retryable": job.retryable, "message": _first_line(job.error_message),
            }
            for job in jobs
        ]
    ),
    hide_index=True,
)  # fmt: skip

if transitions:
    st.subheader("Lifecycle")
    timeline = pd.DataFrame([{"job": t.job_id, "state": t.state, "at": t.at, "reason": t.reason} for t in transitions])
    st.scatter_chart(timeline, x="at", y="job", color="state")
    st.caption("Each dot is a change of state (queued, placed, preparing, launching, warming, measuring, collecting, "
               "and the end state), as the orchestrator recorded it.")  # fmt: skip
    st.dataframe(timeline, hide_index=True)
