"""InferSweep hub, Runs page: where every sweep and job is in its lifecycle, and why.

Presentation only: reads sweeps, jobs and their transitions through `db.reads`. A sweep with results
under a running embargo is not listed (its existence is part of what the embargo keeps back). The chosen
sweep is the query parameter `sweep`, so a link opens the same sweep.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from db import reads
from db.session import open_session
from hubkit import controls, data, page
from hubkit.page import table_with_csv

NO_SWEEPS = "No sweeps yet. `infersweep run RECIPE` starts one; `infersweep status` shows it in a terminal."


def _first_line(text: str | None) -> str | None:
    lines = (text or "").splitlines()
    return lines[0][:120] if lines else None


st.title("Runs")
url = data.database_url()
if not data.has_schema(url):
    st.info(NO_SWEEPS)
    st.stop()
with open_session(data.engine(url)) as session:
    hidden = reads.embargoed_sweep_ids(session)
    sweeps = [sweep for sweep in reads.list_sweeps(session) if sweep.id not in hidden]
    if not sweeps:
        st.info(NO_SWEEPS)
        st.stop()
    # When its results were measured, by their own dates: a sweep's row is created when it is recorded here, which
    # for an import is the import's time, not the run's (an InferenceX run of 2025 read "created" today).
    public = data.results(url)
    measured: dict[str, str] = {}
    origins: dict[str, str] = {}
    if not public.empty:
        for name, rows in public.groupby("sweep"):
            dated = rows.loc[rows["date_known"].astype(bool), "finished_at"]
            measured[str(name)] = f"{dated.max():%Y-%m-%d %H:%M} UTC" if len(dated) else "date unknown"
            origins[str(name)] = ", ".join(sorted(rows["origin"].unique()))
    overview = pd.DataFrame(
        [
            {"sweep": s.name, "origin": origins.get(s.name, "–"), "state": s.status,
             "results finished": measured.get(s.name, "no public result"), "recorded here": s.created_at,
             "updated": s.updated_at}
            for s in sweeps
        ]
    )  # fmt: skip
    table_with_csv(overview, "sweeps")
    chosen = controls.selectbox("Sweep", [sweep.name for sweep in reversed(sweeps)], "sweep", help="Newest first.")
    sweep = next(s for s in sweeps if s.name == chosen)
    jobs = reads.jobs_of_sweep(session, sweep.id)
    recorded = reads.points_per_job(session, sweep.id)
    transitions = reads.transitions_of_sweep(session, sweep.id, subject="job")

st.subheader(f"Jobs of {chosen} ({sweep.status})")
job_table = pd.DataFrame(
    [
        {
            "job": job.id, "attempt": job.attempt, "state": job.status, "host": job.host,
            "points": f"{recorded.get(job.id, 0)}/{job.points_planned}", "error": job.error_kind,
            "retryable": job.retryable, "message": _first_line(job.error_message),
        }
        for job in jobs
    ],
    columns=["job", "attempt", "state", "host", "points", "error", "retryable", "message"],
).astype(object).fillna("–")  # fmt: skip
table_with_csv(job_table, f"jobs-{chosen}")
results = data.results(url)
if not results.empty and chosen in set(results["sweep"]):
    # Short: a page link does not wrap, and the sweep's name (in the heading above) cut it at 390 px.
    st.page_link("views/run_detail.py", label="Its points in Run detail", icon=":material/description:",
                 query_params={"sweep": chosen})  # fmt: skip

if transitions:
    st.subheader("Lifecycle")
    timeline = pd.DataFrame([{"job": t.job_id, "state": t.state, "at": t.at, "reason": t.reason} for t in transitions])
    page.lifecycle(timeline, f"lifecycle-{chosen}")
    st.caption("Each dot is a change of state (queued, placed, preparing, launching, warming, measuring, collecting, "
               "and the end state), as the orchestrator recorded it.")  # fmt: skip
