"""Where results come from, through the orchestrator's recorder on SQLite and PostgreSQL: the model
registry, the engine a job ran, one provenance row per job attempt, a Point's server-metric deltas
(written with the Point), and environment variable values never stored."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import select

from db import reads
from db.lifecycle import JobState
from db.models import EngineRow, JobRow, ModelRow, PointResultRow, ProvenanceRow, ServerMetricDeltaRow, SQLModel
from db.session import make_engine, open_session
from orchestrator.artifacts import LocalArtifactStore
from orchestrator.recorder import Recorder
from recipes.loader import parse_recipe
from recipes.model_registry import kv_bytes_per_token, load_model_registry
from recipes.schema import ValidityThresholds
from runners.host.server_metrics import VLLM_COUNTER_SERIES
from runners.job import JobEvent, LaunchedEngine, PointOutcome, PointRequest
from runners.loadgen.metrics import compute_point_metrics
from runners.loadgen.records import FixedLengthPoint, HostReport, PointMetrics, Preflight, RequestRecord, ServerCounters
from tests.conftest import ROOT, run_cli

DIGEST = "sha256:" + "ab" * 32
SECRET = "hf_secret_value_never_stored"
RECIPE = {
    "name": "vllm-provenance",
    "hardware": "h100",
    "model": {"name": "tiny-llama", "source": {"kind": "generated", "preset": "tiny-llama"}},
    "engine": {
        "kind": "vllm",
        "version": "0.11.0",
        "environment": {"kind": "container", "image": f"vllm/vllm-openai@{DIGEST}"},
        "max_model_len": 4096,
        "env": {"VLLM_LOGGING_LEVEL": "recipe-env-value"},
    },
    "precision": "bf16",
    "runner": {"kind": "ssh"},
    "workload": {"kind": "fixed-length", "sequences": [{"isl": 128, "osl": 8}], "concurrency": [1]},
}


def _records(count: int = 12) -> list[RequestRecord]:
    """`count` sequential requests of 100 prompt and 8 output tokens, 10 ms apart."""
    records = []
    for index in range(count):
        start = index * 0.1
        chunks = [start + 0.02 + 0.01 * k for k in range(8)]
        records.append(
            RequestRecord(
                index=index, warmup=False, prompt_tokens_sent=100, max_tokens=8, scheduled=start, sent=start,
                first_byte=chunks[0], chunk_times=chunks, chunk_tokens=[1] * 8, end=chunks[-1] + 0.001,
                prompt_tokens=100, completion_tokens=8, http_status=200,
            )
        )  # fmt: skip
    return records


def _metrics(records: list[RequestRecord]) -> PointMetrics:
    metrics = compute_point_metrics(records, concurrency=1, accelerators=1, thresholds=ValidityThresholds())
    metrics.server = ServerCounters(
        prompt_tokens=1200.0, generation_tokens=96.0, prefix_cache_queries=1200.0, prefix_cache_hits=0.0,
        prompt_tokens_local_compute=1200.0,
    )  # fmt: skip
    preflight = Preflight(
        checked_at=1.7e9, free_disk_gb=42.5, accelerators_idle=True, leftover_engines=0,
        notes=["accelerator idleness checked with nvidia-smi"], accelerator_driver="580.65.06",
    )  # fmt: skip
    metrics.host = HostReport(preflight=preflight)
    return metrics


LAUNCHED_ARGV = ["/opt/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--port", "41234", "--model",
                 "/models/tiny"]  # fmt: skip


def _series(metric: str, labels: dict[str, str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    return metric, tuple(sorted(labels.items()))


def _point(key: str) -> PointRequest:
    workload = FixedLengthPoint(
        isl=128, osl=8, range_ratio=0.8, concurrency=1, num_prompts=10, num_warmup=2, seed=0, request_timeout_s=60
    )
    return PointRequest(point_key=key, repeat_index=0, workload=workload)


def test_a_recorded_job_keeps_its_engine_provenance_and_server_metrics(
    database: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", SECRET)  # a secret in the orchestrator's own environment
    loaded = parse_recipe(RECIPE, str(tmp_path / "vllm-provenance.yaml"))
    recorder = Recorder(database, "provenance", store=LocalArtifactStore(tmp_path / "store"))
    recorder.sync_hardware()
    recorder.register_recipe(loaded)
    with recorder.batch():  # as the sweep driver creates jobs
        recorder.job_created("job-a1", loaded, 1, 1, str(tmp_path / "logs"))
    recorder.job_status("job-a1", JobState.PLACED, host="gpu-7 (ray node 0123456789ab)")
    # What the runner reports it started (the argv as launched, the names of the variables it set).
    started = LaunchedEngine(
        argv=LAUNCHED_ARGV, env_names=["HF_HUB_OFFLINE", "VLLM_NO_USAGE_STATS"],
        image=f"vllm/vllm-openai@{DIGEST}", image_digest="sha256:" + "1" * 64,
    )  # fmt: skip
    ready = JobEvent(kind="engine_ready", job_id="job-a1", message="healthy", launched=started)
    recorder.job_status("job-a1", JobState.WARMING, ready)
    records = _records()
    metrics = _metrics(records)
    now = datetime.now(UTC)
    outcome = PointOutcome(
        point_key="p1", origin="measured", metrics=metrics, records=records, started_at=now, finished_at=now
    )
    assert recorder.point_finished("job-a1", loaded, _point("p1"), outcome) is True
    assert recorder.point_finished("job-a1", loaded, _point("p1"), outcome) is False  # once only
    # A second attempt of the job: a provenance row of its own, nothing reported for it yet.
    recorder.job_created("job-a2", loaded, 2, 1, str(tmp_path / "logs"))
    # An imported result: the engine its recipe states, but no command line (nothing was launched here).
    assert recorder.point_imported(loaded, _point("p-imported"), metrics, "vllm bench serve: r.json", now)
    recorder.close()

    with open_session(database) as session:
        # The model registry, like the hardware registry, is in the database.
        registry = load_model_registry()
        models = {row.key: row for row in session.exec(select(ModelRow)).all()}
        assert set(models) == set(registry)
        r1 = models["deepseek-r1"]
        assert r1.hf_id == registry["deepseek-r1"].hf_id and r1.architecture == "moe"
        assert r1.kv_bytes_per_token == kv_bytes_per_token(registry["deepseek-r1"])
        assert r1.attention.startswith("MLA") and r1.spec["layers"]["value"] == registry["deepseek-r1"].layers.value

        # One engine row, pinned by digest, and every job of the recipe links to it.
        (engine,) = session.exec(select(EngineRow)).all()
        assert (engine.name, engine.version, engine.image, engine.image_digest) == (
            "vllm", "0.11.0", f"vllm/vllm-openai@{DIGEST}", DIGEST,
        )  # fmt: skip
        jobs = session.exec(select(JobRow)).all()
        assert len(jobs) == 3 and {job.engine_id for job in jobs} == {engine.id}

        # One provenance row per job attempt.
        provenance = {row.job_id: row for row in session.exec(select(ProvenanceRow)).all()}
        assert set(provenance) == {job.id for job in jobs}
        first = provenance["job-a1"]
        assert first.host == "gpu-7 (ray node 0123456789ab)"
        assert first.preflight == metrics.host.preflight.model_dump(mode="json")
        assert first.recipe_path == str(tmp_path / "vllm-provenance.yaml")
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
        assert first.git_commit == (head.stdout.strip() if head.returncode == 0 else None)
        assert first.engine_argv == LAUNCHED_ARGV and first.env_names == ["HF_HUB_OFFLINE", "VLLM_NO_USAGE_STATS"]
        assert (first.engine_image, first.engine_image_digest) == (started.image, started.image_digest)
        # The driver version comes with the pre-flight checks; no runner reports a runtime version yet.
        assert (first.accelerator_driver, first.accelerator_runtime) == ("580.65.06", None)
        second = provenance["job-a2"]
        assert (second.host, second.preflight, second.engine_argv) == (None, None, None)  # not started yet
        (imported,) = [row for job_id, row in provenance.items() if job_id.startswith("import-")]
        assert (imported.engine_argv, imported.env_names, imported.host) == (None, None, None)

        # The Point's server counters, one row each, with the Point (and not twice).
        deltas = session.exec(select(ServerMetricDeltaRow)).all()
        measured = [row for row in deltas if row.point_result_id == deltas[0].point_result_id]
        assert len(measured) == len(deltas) // 2  # the imported Point carries the same counters
        assert {(*_series(row.metric, row.labels), row.delta) for row in measured} == {
            ("vllm:prompt_tokens_total", (), 1200.0),
            ("vllm:generation_tokens_total", (), 96.0),
            ("vllm:prefix_cache_queries_total", (), 1200.0),
            ("vllm:prefix_cache_hits_total", (), 0.0),
            ("vllm:prompt_tokens_by_source_total", (("source", "local_compute"),), 1200.0),
        }
        assert len(measured) == 5
        assert all(row.before is None and row.after is None for row in deltas)  # ServerCounters has deltas only

        # Environment variable values are never stored: not the orchestrator's, and the provenance keeps
        # only the names of the launch's (the recipe's own values stay in the recipe snapshot, its content).
        everything = " ".join(
            str(row)
            for table in SQLModel.metadata.sorted_tables
            for row in session.connection().execute(table.select())
        )
        assert SECRET not in everything
        assert all("recipe-env-value" not in str(row.model_dump()) for row in provenance.values())


def test_every_server_counter_has_its_vllm_series() -> None:
    """A counter added to ServerCounters must say which of vLLM's Prometheus series it is (else it is stored by field
    name); other engines' tables name the series they have."""
    assert set(VLLM_COUNTER_SERIES) == set(ServerCounters.model_fields) - {"series"}


def test_a_simulated_sweep_records_provenance_and_server_metrics(write_recipe) -> None:
    """The real pipeline (CLI -> Ray -> local runner -> simulated engine -> recorder), on the default SQLite."""
    result = run_cli("run", str(write_recipe()), "--sweep", "provenance-sim", env={"HF_TOKEN": SECRET})
    assert result.returncode == 0, result.stderr + result.stdout
    engine = make_engine()
    with open_session(engine) as session:
        sweep = reads.sweep_by_name(session, "provenance-sim")
        assert sweep is not None
        (job,) = reads.jobs_of_sweep(session, sweep.id)
        engine_row = session.get(EngineRow, job.engine_id)
        assert engine_row is not None and (engine_row.name, engine_row.image_digest) == ("simulated", None)
        provenance = session.get(ProvenanceRow, job.id)
        assert provenance is not None and provenance.host == job.host and "ray node" in provenance.host
        # What the local runner started: the simulated server on the port the job picked, with no variables set.
        argv = provenance.engine_argv
        assert argv is not None and "runners.engines.simulated_server" in argv
        assert argv[argv.index("--port") + 1].isdigit() and "{port}" not in argv
        assert provenance.env_names == [] and provenance.engine_image is None
        points = session.exec(select(PointResultRow).where(PointResultRow.sweep_id == sweep.id)).all()
        assert len(points) == 2
        assert provenance.preflight == points[0].metrics["host"]["preflight"]
        for point in points:
            rows = session.exec(
                select(ServerMetricDeltaRow).where(ServerMetricDeltaRow.point_result_id == point.id)
            ).all()
            # Every counter the Point's ServerCounters reports (the simulated engine exposes some of vLLM's).
            reported = {field: value for field, value in point.metrics["server"].items()
                        if value is not None and field != "series"}  # fmt: skip
            assert point.metrics["server"]["series"] == "vllm"
            expected = {(*_series(*VLLM_COUNTER_SERIES[field]), value) for field, value in reported.items()}
            assert {(*_series(row.metric, row.labels), row.delta) for row in rows} == expected
            generated = [row.delta for row in rows if row.metric == "vllm:generation_tokens_total"]
            assert generated and generated[0] > 0
        everything = " ".join(
            str(row)
            for table in SQLModel.metadata.sorted_tables
            for row in session.connection().execute(table.select())
        )
        assert SECRET not in everything
    engine.dispose()


def test_a_point_whose_commit_landed_before_the_connection_went_counts_once(
    database: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection is lost right after the Point's COMMIT reached the server: the write is done again, finds
    the row there from this very job, and reports it recorded (once) with its artifacts uploaded."""
    from sqlalchemy.exc import OperationalError

    from db import recording
    from orchestrator import recorder as recorder_module

    loaded = parse_recipe(RECIPE, str(tmp_path / "vllm-provenance.yaml"))
    recorder = Recorder(database, "landed", store=LocalArtifactStore(tmp_path / "store"))
    recorder.register_recipe(loaded)
    recorder.job_created("job-l1", loaded, 1, 1, str(tmp_path / "logs"))
    real = recording.record_point_with_artifacts
    calls: list[int] = []

    def commit_lands_then_connection_drops(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        landed = real(*args, **kwargs)
        if len(calls) == 1:
            raise OperationalError("COMMIT", {}, Exception("server closed the connection unexpectedly"))
        return landed

    monkeypatch.setattr(recorder_module.recording, "record_point_with_artifacts", commit_lands_then_connection_drops)
    monkeypatch.setattr(recorder_module, "_FIRST_RECONNECT_DELAY_S", 0.01)
    records = _records()
    now = datetime.now(UTC)
    outcome = PointOutcome(
        point_key="p1", origin="measured", metrics=_metrics(records), records=records, started_at=now, finished_at=now
    )
    assert recorder.point_finished("job-l1", loaded, _point("p1"), outcome) is True
    assert len(calls) == 2
    with open_session(database) as session:
        rows = session.exec(select(PointResultRow).where(PointResultRow.point_key == "p1")).all()
        assert len([row for row in rows if row.job_id == "job-l1"]) == 1
        assert {a.status for a in recording.artifacts_of_point(session, recorder.sweep_id, "p1")} == {"stored"}
    # Done again outside a recovery, the same write is a duplicate, as before.
    monkeypatch.setattr(recorder_module.recording, "record_point_with_artifacts", real)
    assert recorder.point_finished("job-l1", loaded, _point("p1"), outcome) is False
    recorder.close()
