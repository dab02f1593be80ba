"""InferSweep hub, Run detail: everything behind one published point, so a reader can check or reproduce it.

Selected by the query parameters `sweep` and `point` (its point key), which the sidebar selectboxes keep
in the URL. Only public points open: retracted, embargoed and dry-run points read as missing (the query
itself refuses them, whatever the link says). Presentation only: the numbers were computed when the point
was measured; per-request latencies are derived by `analysis.request_latency`.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st
import yaml

from analysis.public_results import NOT_MEASUREMENTS
from analysis.request_latency import request_latencies
from db import reads
from db.artifacts import local_copy
from db.local_paths import without_local_paths
from db.models import ArtifactRow, PointVerificationRow
from db.session import open_session
from hubkit import controls, data, page
from hubkit.charts import PALETTE
from hubkit.page import table_with_csv
from recipes.rules import image_tag_version
from recipes.validity import requests_known, rules_applied, rules_not_applied

LOG_TAIL_LINES = 200
# Artifact kinds with their own section; any other kind attached to a job (e.g. the dry run's
# `target-engine-command`) is shown as a stored engine command.
RECORDS, ENGINE_LOG = "records", "engine-log"
LATENCIES = (("ttft_ms", "TTFT (ms)"), ("tpot_ms", "TPOT (ms)"), ("e2el_ms", "E2EL (ms)"))
STATS = (("ttft_ms", "TTFT (ms)"), ("tpot_ms", "TPOT (ms)"), ("itl_ms", "ITL (ms)"), ("e2el_ms", "E2EL (ms)"),
         ("client_queue_ms", "client queue (ms)"), ("interactivity", "interactivity (tok/s/user)"))  # fmt: skip


def local_file(artifact: ArtifactRow | None, fallback: str | None = None) -> Path | None:
    """A readable copy of the artifact on this machine holding the bytes its row names (db.artifacts), or
    `fallback`: the staging path of a row recorded before artifacts were staged under their hash."""
    if artifact is not None:
        return local_copy(artifact)
    return Path(fallback) if fallback and Path(fallback).is_file() else None


def where(artifact: ArtifactRow) -> str:
    """Where the artifact is, in words a public page may show: an object store's address, or the store's key; never a
    path of the machine that stored it (a `file:///...` of the importing host once reached the public page)."""
    if artifact.uri and not artifact.uri.startswith("file:"):
        return f"`{artifact.uri}`"
    if artifact.uri:
        return f"the artifact store, key `{artifact.key}`"
    return f"not in the artifact store yet (upload {artifact.status})"


DOWNLOAD_LIMIT_BYTES = 50 * 2**20  # a larger file is named, not offered through the page


def offer(artifact: ArtifactRow, readable: Path | None) -> None:
    """A download of the artifact's bytes through the hub, where this machine holds them (checked against its hash)."""
    if readable is not None and artifact.size_bytes <= DOWNLOAD_LIMIT_BYTES:
        st.download_button(
            f"Download {artifact.kind} ({artifact.size_bytes:,} bytes)", readable.read_bytes(),
            file_name=Path(artifact.key).name, key=f"download-{artifact.key}", on_click="ignore",
        )  # fmt: skip


def verification_note(origin: str, found: PointVerificationRow | None) -> None:
    """Whether anyone can check this Point: verified (a signed bundle's records gave every figure again), signed but
    not recomputed, unsigned, or an imported or projected figure there are no records of (orchestrator/bundles.py)."""
    state = reads.verifiability(origin, found.state if found is not None else None)
    if state == "cannot be verified":
        st.info(f"{origin.capitalize()} (cannot be verified): no per-request records of this figure exist here to "
                "compute it again; a signed bundle holding it checks its bytes by hash only.")  # fmt: skip
        return
    if found is None:  # "unsigned"
        st.info("Unsigned: no signed result bundle holds this Point. `infersweep bundle make SWEEP` signs one; "
                "`infersweep verify BUNDLE` recomputes every figure from its raw records, offline.")  # fmt: skip
        return
    signer = f"**{found.signer}** (key `{found.key_id}`)"
    when = f"{found.at:%Y-%m-%d %H:%M} UTC"
    if state == "verified":
        st.success(f"Verified: in a bundle signed by {signer}, every figure computed again from its raw per-request "
                   f"records by `infersweep verify` was the same ({when}).")  # fmt: skip
    elif found.state == "hash-only":
        st.info(f"Signed, not recomputed: a bundle signed by {signer} verified, but held no raw records of this Point, "
                f"so its figures were checked by hash only ({when}).")  # fmt: skip
    else:
        st.info(f"Signed, not recomputed: signed by {signer} ({when}); `infersweep verify` on the bundle computes "
                "every figure again from its raw records.")  # fmt: skip
    st.caption(f"The bundle's signed envelope: SHA-256 `{found.envelope_sha256}`.")


def command_line(argv: list[str]) -> str:
    """Shell-quoted, with placeholders such as {port} left bare, as `infersweep run --dry-run-local` prints them."""
    return re.sub(r"'(\{[a-z_]+\})'", r"\1", shlex.join(argv))


def key_values(pairs: list[tuple[str, Any]]) -> pd.DataFrame:
    """(field, value) rows as text, a path of the storing machine reduced to its file's name."""
    return pd.DataFrame(
        [
            {"field": name, "value": "—" if value is None else str(without_local_paths(str(value)))}
            for name, value in pairs
        ]
    )


st.title("Run detail")
frame = page.results_or_stop(
    "No results yet, so there is no run to show. Measure one with "
    "`infersweep run recipes/local/tiny-llama-cpu.yaml` (or `make demo`), then open a point here, from the "
    "Pareto explorer, or with a link `run?sweep=NAME&point=POINT_KEY`."
)

public = set(zip(frame["sweep"], frame["point_key"], strict=True))
linked_sweep, linked_point = st.query_params.get("sweep"), st.query_params.get("point")
if (linked_sweep is not None and linked_sweep not in set(frame["sweep"])) or (
    linked_point is not None and linked_sweep is not None and (linked_sweep, linked_point) not in public
):
    # Same words for every reason: an embargo keeps even a result's existence back.
    st.warning(
        f"There is no public result {controls.as_text(linked_point or '(any point)')} in sweep "
        f"{controls.as_text(linked_sweep)}: it does not exist, "
        "was retracted, is under embargo, or was a dry run. Pick a published result in the sidebar."
    )

sweeps = list(frame.sort_values("finished_at", ascending=False)["sweep"].drop_duplicates())
sweep = controls.selectbox("Sweep", sweeps, "sweep", help="Newest first.")
in_sweep = frame[frame["sweep"] == sweep].sort_values(["configuration", "concurrency", "repeat_index"])
point_key = controls.selectbox(
    "Point", list(in_sweep["point_key"]), "point", help="Point key: workload, concurrency, repeat and a hash."
)
with open_session(data.engine(data.database_url())) as session:
    detail = reads.public_point_detail(session, str(sweep), str(point_key))
if detail is None:  # published when the cached frame was read, retracted or embargoed since
    st.warning(f"Point `{point_key}` of sweep `{sweep}` is no longer public.")
    st.stop()

point, recipe, job = detail.point, detail.recipe, detail.job
metrics: dict[str, Any] = point.metrics or {}
row = in_sweep[in_sweep["point_key"] == point.point_key].iloc[0]
st.subheader(
    f"{row['configuration']} · {row['workload']} · concurrency {point.concurrency} · repeat {point.repeat_index}"
)
if point.origin == "imported":
    st.info(f"Imported result, measured by another tool: {without_local_paths(point.source or 'source not recorded')}.")
elif point.origin in NOT_MEASUREMENTS:
    st.warning(f"Origin `{point.origin}`: {NOT_MEASUREMENTS[point.origin]}.")
if point.origin == "projected":
    st.markdown(f"**{without_local_paths(point.source or 'projected')}**")
    with st.expander("The projection: model, ratios, fitted coefficients and the source points", expanded=False):
        st.json((recipe.snapshot or {}).get("projection", {}))
    found = data.projection_group(recipe.snapshot or {}, bool(row["disaggregated"]))
    if found is not None:
        group, medians = found
        if medians is None:
            st.markdown(f"**How wrong projections like this have been** ({group}): no pair of chips in this hub "
                        "to backtest; docs/BENCHMARKS.md gives the public InferenceX corpora's figures.")  # fmt: skip
        else:
            st.markdown(
                f"**How wrong projections like this have been** ({group}, the backtest on this hub's measured "
                f"and imported results): median absolute error **{medians['median abs. error %']:.1f} %** over "
                f"{medians['rows']} rows of chips measured both ways"
                + ("; every one read between frontier points far apart (sparse)." if medians["rows not sparse"] == 0
                   else f"; {medians['without sparse readings %']:.1f} % over the {medians['rows not sparse']} "
                        "not sparse.")
            )  # fmt: skip
    page.methodology_link("How wrong projections have been: Methodology, Projections (the backtest)")
else:
    st.caption(f"Origin `{point.origin}`.")
headline = pd.DataFrame(
    [
        {
            "output tok/s/GPU": page.sig(point.output_throughput_per_gpu),
            "total tok/s/GPU": page.sig(point.total_token_throughput_per_gpu),
            "interactivity p50 (tok/s/user)": page.sig(point.interactivity_p50),
            "interactivity p90 (tok/s/user)": page.sig(point.interactivity_p90),
            "TTFT p50 (ms)": page.sig(point.ttft_p50_ms),
            "TPOT p50 (ms)": page.sig(point.tpot_p50_ms),
            "E2EL p50 (ms)": page.sig(point.e2el_p50_ms),
            "requests completed": point.completed,
            "requests failed": point.failed,
            "accelerators": point.accelerators,
            "window (s)": page.sig(point.duration_s),
        }
    ]
)
# Three significant figures, as every figure of the hub (the stored values, unrounded, are in the result artifact and
# the point's JSON below). A figure the point does not have (an imported row carries no p90, say) reads as a dash
# (`page.table`), and is an empty cell in the CSV: numbers stay numbers.
table_with_csv(headline, f"point-{point.point_key}")
st.caption(
    "Per GPU = throughput / accelerators the engine uses (TP × PP × DP); interactivity = 1000 / TPOT at the same "
    "percentile, so p90 is the slow tail."
)
page.methodology_link("Definitions on the Methodology page")

# --- validity and accuracy ------------------------------------------------------------------------
st.header("Validity verdict")
if point.origin == "projected":
    st.info("Not judged: the validity rules judge measurements, and a projection is none. Its source points were "
            "judged when they were measured or imported.")  # fmt: skip
elif point.valid and not requests_known(point.completed, point.failed):
    applied = "; ".join(rule.text for rule in rules_applied(point.completed, point.failed))
    missing = "\n".join(f"- {rule.text}" for rule in rules_not_applied(point.completed, point.failed))
    st.info(f"Not checked: the source states figures but no request counts or measured window, so the rules that "
            f"judge a measurement could not be applied. Applied: {applied}. Not applied:\n\n{missing}")  # fmt: skip
elif point.valid:
    st.success("Valid: every validity rule held for this point.")
else:
    st.error("Invalid. Rules that failed:\n\n" + "\n".join(f"- {reason}" for reason in point.validity_reasons))
st.caption(
    "Rules: at least max(10, 2 × concurrency) measured requests, error rate ≤ 10 %, output-token disagreement "
    "≤ 10 %, a passed accuracy gate, and for replays a minimum window and schedule lag p99 within bounds."
)

st.header("Verification")
verification_note(point.origin, detail.verification)

st.subheader("Accuracy gate")
accuracy = metrics.get("accuracy")
if not accuracy:
    st.info("No accuracy gate result is stored for this point (imported results and older runs have none).")
elif not accuracy.get("ran"):
    st.info(f"The accuracy gate did not run: {accuracy.get('skipped_reason') or 'no reason recorded'}.")
else:
    verdict = "passed" if accuracy.get("passed") else "failed"
    share = accuracy.get("accuracy")
    st.markdown(
        f"**{verdict}**: {accuracy.get('correct')}/{accuracy.get('total')} correct"
        + (f" ({share:.0%})" if share is not None else "")
        + f", minimum {accuracy.get('min_accuracy'):g}; {accuracy.get('errors', 0)} requests failed; "
        f"questions `{accuracy.get('prompts')}` (version {accuracy.get('prompts_version') or '?'})."
    )
    answers = pd.DataFrame(accuracy.get("answers") or [])
    if not answers.empty:
        with st.expander("Every question and its answer"):
            table_with_csv(answers, f"accuracy-{point.point_key}")

# --- recipe and command ---------------------------------------------------------------------------
st.header("Recipe")
# Imported and projected configurations come from no recipe file: their path is empty.
recipe_file = f" from `{without_local_paths(recipe.path)}`" if recipe.path else ""
st.caption(f"`{recipe.name}`{recipe_file}, fingerprint `{recipe.fingerprint}`: the normalised recipe "
           "stored when the sweep ran (fields left at their defaults are omitted).")  # fmt: skip
st.code(yaml.safe_dump(recipe.snapshot, sort_keys=False, allow_unicode=True), language="yaml")

st.subheader("Engine command and environment")
stored = detail.provenance
build = detail.engine_build
engine_settings = recipe.snapshot.get("engine") or {}
if build is not None:
    image = (
        f", image `{build.image}`" + (f" ({build.image_digest})" if build.image_digest else "") if build.image else ""
    )
    tagged = image_tag_version(build.image) if build.image else None
    version = build.version or (f"{tagged} (read from the image tag)" if tagged else "(version not stated)")
    st.markdown(f"Engine build: `{build.name}` {version}{image}.")
if stored is not None and stored.engine_argv:
    st.code(str(without_local_paths(command_line(stored.engine_argv))), language="bash")  # this host's folders: no
    names = ", ".join(f"`{name}`" for name in stored.env_names or []) or "none"
    st.caption(
        "The command line the runner started the engine with, as it reported it once the engine was up (a container: "
        "the command inside the image). Environment variables the launch set, by name only (values are never stored, "
        f"they may be secrets): {names}."
    )
commands = [artifact for artifact in detail.artifacts if artifact.kind not in (RECORDS, ENGINE_LOG)]
for artifact in commands:
    readable = local_file(artifact)
    st.markdown(f"Stored with the job as `{artifact.kind}`: {where(artifact)}")
    if readable is not None:
        # Shown with the host's folders left out; the file offered below is the stored bytes, as its SHA-256 says.
        st.code(str(without_local_paths(readable.read_text(encoding="utf-8", errors="replace"))), language="bash")
    offer(artifact, readable)
if not commands and (stored is None or not stored.engine_argv):
    st.info(
        "No engine command line or environment was stored for this job (imported results, and jobs recorded before "
        "the orchestrator kept provenance, have none). The recipe's `engine` settings below determine it; "
        "`infersweep run RECIPE --dry-run-local` prints the exact command lines."
    )
st.code(yaml.safe_dump({"engine": engine_settings}, sort_keys=False, allow_unicode=True), language="yaml")

# --- provenance -----------------------------------------------------------------------------------
st.header("Provenance")
host_report = metrics.get("host") or {}
preflight = (stored.preflight if stored is not None else None) or host_report.get("preflight") or {}
telemetry = host_report.get("telemetry") or {}
commit = None
if stored is not None and stored.git_commit:
    commit = stored.git_commit + (" (uncommitted changes)" if stored.git_dirty else "")
provenance = key_values(
    [
        ("sweep", detail.sweep.name),
        ("job", point.job_id),
        ("attempt", job.attempt if job else None),
        ("host", (stored.host if stored is not None else None) or (job.host if job else None)),
        ("origin", point.origin),
        ("source", point.source),
        ("engine", f"{recipe.engine_kind} {engine_settings.get('version') or ''}".strip()),
        ("recipe file", stored.recipe_path if stored is not None else recipe.path),
        ("project commit", commit),
        ("accelerator driver", stored.accelerator_driver if stored is not None else None),
        ("accelerator runtime", stored.accelerator_runtime if stored is not None else None),
        ("started", point.started_at if point.date_known else "date unknown (the source states none)"),
        ("finished", point.finished_at if point.date_known else f"date unknown (imported {point.finished_at:%F})"),
        ("pre-flight: free disk (GB)", preflight.get("free_disk_gb")),
        ("pre-flight: accelerators idle", preflight.get("accelerators_idle")),
        ("pre-flight: foreign processes", "; ".join(preflight.get("accelerator_processes") or []) or None),
        ("pre-flight: leftover engines reaped", preflight.get("leftover_engines")),
        ("pre-flight: checks not run", "; ".join(preflight.get("notes") or []) or None),
        ("telemetry source", telemetry.get("source")),
        ("telemetry samples", telemetry.get("samples")),
        ("power mean / max (W)", f"{telemetry['power_w_mean']} / {telemetry.get('power_w_max')}"
         if telemetry.get("power_w_mean") is not None else None),
        ("utilisation mean (%)", telemetry.get("utilization_pct_mean")),
        ("memory used max (GB)", telemetry.get("memory_used_gb_max")),
        ("telemetry unavailable", "; ".join(telemetry.get("unavailable") or []) or None),
    ]
)  # fmt: skip
table_with_csv(provenance, f"provenance-{point.point_key}")
if not host_report:
    st.caption("No host report is stored for this point (pre-flight checks and power/utilisation telemetry are "
               "recorded by the runners since result schema 1; imported results have none).")  # fmt: skip

# --- latency distributions ------------------------------------------------------------------------
st.header("Latency distributions")
stats = pd.DataFrame(
    [{"metric": label, **{k: (metrics.get(field) or {}).get(k) for k in ("n", "mean", "p50", "p90", "p99", "std")}}
     for field, label in STATS if metrics.get(field)]
)  # fmt: skip
if not stats.empty:
    st.caption("Aggregates stored with the point (numpy linear-interpolation percentiles, population std).")
    table_with_csv(stats, f"latency-stats-{point.point_key}")
records_artifact = next((artifact for artifact in detail.artifacts if artifact.kind == RECORDS), None)
records_file = local_file(records_artifact, point.records_path)
if records_file is not None:
    latencies = None
    try:
        rows = pd.read_parquet(records_file).to_dict("records")
        latencies = pd.DataFrame([vars(latency) for latency in request_latencies(rows)])
    except (OSError, ValueError) as error:  # pydantic's ValidationError is a ValueError: not a records file
        # The error's type only: its message names the file's path on this machine.
        st.warning(f"The request records of this point could not be read ({type(error).__name__}).")
    if latencies is not None:
        st.caption(
            f"{len(latencies)} measured requests that succeeded, from the point's request records"
            + (f" ({where(records_artifact)})" if records_artifact is not None else "")
            + ". TTFT = first token chunk − "
            "sent; TPOT = (last − first token chunk) / (output tokens − 1); E2EL = end − sent."
        )
        chart_tab, table_tab = st.tabs(["Chart", "Table"])
        with chart_tab:
            for (column, title), tint in zip(LATENCIES, PALETTE, strict=False):
                values = latencies[[column]].dropna()
                if values.empty:
                    continue
                st.altair_chart(
                    alt.Chart(values)
                    .mark_bar(color=tint)
                    .encode(x=alt.X(column, bin=alt.Bin(maxbins=40), title=title), y=alt.Y("count()", title="requests"))
                    .properties(height=200),
                    width="stretch",
                )
        with table_tab:
            table_with_csv(latencies, f"requests-{point.point_key}")
elif records_artifact is not None:
    st.info(
        f"The per-request records are not readable from this machine; they are stored at {where(records_artifact)}."
    )
elif point.records_path:
    st.info("The per-request records of this point are not readable from this machine.")
else:
    st.info("No per-request records were stored for this point (imported results carry only aggregates).")

# --- logs -----------------------------------------------------------------------------------------
st.header("Logs")
logs = [artifact for artifact in detail.artifacts if artifact.kind == ENGINE_LOG]
if not logs:
    st.info("No engine log was stored for this job.")
for artifact in logs:
    # A multi-process engine (Dynamo) has a log per process: engine.log, engine-<role>-<index>.log.
    name = Path(artifact.local_path).name if artifact.local_path else "engine.log"
    st.markdown(
        f"Engine log `{name}` ({artifact.size_bytes:,} bytes, sha256 `{artifact.sha256[:16]}…`): {where(artifact)}"
    )
    readable = local_file(artifact)
    offer(artifact, readable)
    if readable is not None:
        with st.expander(f"Last {LOG_TAIL_LINES} lines"):
            lines = readable.read_text(encoding="utf-8", errors="replace").splitlines()
            st.code("\n".join(lines[-LOG_TAIL_LINES:]), language="log")

# --- lifecycle ------------------------------------------------------------------------------------
st.header("Lifecycle")
timeline = pd.DataFrame(
    [
        {"subject": t.subject, "state": t.state, "at": t.at, "reason": without_local_paths(t.reason)}
        for t in detail.transitions
    ]
)
if timeline.empty:
    st.info("No lifecycle transitions are stored for this job.")
else:
    page.lifecycle(timeline, f"lifecycle-{point.point_key}")
    st.caption("Each change of state of the job (queued, placed, preparing, launching, warming, measuring, "
               "collecting, and its end) and of this point, as the orchestrator recorded it.")  # fmt: skip
