"""The whole pipeline (CLI -> Ray -> local runner -> simulated engine -> SQL) and its failure paths."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlmodel import select

from db import reads, recording
from db.models import JobRow, PointResultRow
from db.session import make_engine, migrate, open_session
from runners.host.process import pick_free_port, running_engines
from tests.conftest import ROOT, processes_of_runs, run_cli


def results_of(sweep: str) -> list[reads.ResultView]:
    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        return reads.list_results(session, sweep=sweep)


def jobs_of(sweep: str) -> list[JobRow]:
    engine = make_engine()
    with open_session(engine) as session:
        sweep_row, _ = recording.get_or_create_sweep(session, sweep)
        return reads.jobs_of_sweep(session, sweep_row.id)


def test_sweep_records_simulated_points_and_resumes(write_recipe) -> None:
    # 5 ms apart, not the base recipe's 1 ms: a client starved of the CPU for a whole 31 ms decode read every token in
    # one read and measured TPOT 0.0 (CI, 2-core machine under three workers); 155 ms is longer than such a stall.
    recipe = write_recipe({"engine": {"simulated": {"itl_ms": 5.0}}})
    first = run_cli("run", str(recipe), "--sweep", "sim-resume")
    assert first.returncode == 0, first.stderr + first.stdout
    rows = results_of("sim-resume")
    assert [(row.concurrency, row.origin, row.valid) for row in rows] == [
        (1, "simulated", True),
        (4, "simulated", True),
    ]
    for row in rows:
        assert row.completed == 10 * row.concurrency and row.failed == 0
        # 32 output tokens at 5 ms apart: TPOT is about 5 ms (wide bounds: a loaded 2-core machine).
        assert 2.5 < row.tpot_p50_ms < 50
        assert row.ttft_p50_ms >= 10
    assert "sim-resume" in first.stdout

    again = run_cli("run", str(recipe), "--sweep", "sim-resume")
    assert again.returncode == 0, again.stderr
    assert "skipping 2 finished point(s)" in again.stdout
    assert "nothing left to measure" in again.stdout
    assert len(results_of("sim-resume")) == 2

    fresh = run_cli("run", str(recipe), "--sweep", "sim-resume-2")
    assert fresh.returncode == 0, fresh.stderr
    assert len(results_of("sim-resume-2")) == 2

    listing = run_cli("results", "--sweep", "sim-resume")
    assert listing.returncode == 0 and "sim-test" in listing.stdout and "simulated" in listing.stdout


def test_engine_that_never_becomes_healthy_is_recorded_as_failed(write_recipe) -> None:
    recipe = write_recipe({"engine": {"startup_timeout_s": 3, "simulated": {"fault": "never-healthy"}}})
    result = run_cli("run", str(recipe), "--sweep", "sim-unhealthy", "--max-attempts", "2")
    assert result.returncode == 1
    assert "not healthy after 3 s" in result.stderr
    assert "engine.startup_timeout_s" in result.stderr
    jobs = jobs_of("sim-unhealthy")
    # An unhealthy engine is an infrastructure fault: retried once, then recorded as failed.
    assert [(job.attempt, job.status, job.retryable) for job in jobs] == [(1, "failed", True), (2, "failed", True)]
    assert results_of("sim-unhealthy") == []
    assert running_engines() == []


def test_port_already_in_use_is_a_clear_failure(write_recipe) -> None:
    import socket

    port = pick_free_port()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        recipe = write_recipe({"engine": {"port": port}})
        result = run_cli("run", str(recipe), "--sweep", "sim-port", "--max-attempts", "1")
    assert result.returncode == 1
    assert f"port {port} is already in use" in result.stderr
    assert "engine.port" in result.stderr


def test_engine_crash_mid_sweep_keeps_finished_points_and_retries(write_recipe, tmp_path: Path) -> None:
    # 12 requests (2 warmup + 10) make the first point; the engine dies during the second, once.
    fault = {"fault": "exit-after-requests", "fault_after": 14, "fault_once_file": str(tmp_path / "crashed")}
    recipe = write_recipe({"engine": {"simulated": fault}})
    result = run_cli("run", str(recipe), "--sweep", "sim-crash", "--max-attempts", "2")
    assert result.returncode == 0, result.stderr
    rows = results_of("sim-crash")
    assert [row.concurrency for row in rows] == [1, 4]
    jobs = jobs_of("sim-crash")
    assert [(job.attempt, job.status) for job in jobs] == [(1, "failed"), (2, "succeeded")]
    assert "exited with code 3" in (jobs[0].error_message or "")
    # The retry ran only the point that had not finished.
    assert jobs[1].points_planned == 1


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_stopping_mid_sweep_leaves_no_engine_and_no_half_point(write_recipe, stop_signal: signal.Signals) -> None:
    sweep = f"sim-{stop_signal.name.lower()}"
    # 12 requests a level at ~0.33 s each: two levels (~8 s) are left when the first is recorded.
    recipe = write_recipe(
        {"engine": {"simulated": {"ttft_ms": 10, "itl_ms": 10}}, "workload": {"concurrency": [1, 2, 4]}}
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "run", str(recipe), "--sweep", sweep],
        cwd=ROOT, env={**os.environ, "COLUMNS": "200"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and not results_of(sweep):
        time.sleep(0.5)
    assert results_of(sweep), "the first point never finished"
    assert running_engines(), "the engine should be running while the sweep goes on"
    assert processes_of_runs("sim-test-"), "the engine process carries its run id"
    process.send_signal(stop_signal)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stdout + stderr
    assert "run the same command again to resume" in stdout
    assert running_engines() == []
    assert processes_of_runs("sim-test-") == []

    engine = make_engine()
    with open_session(engine) as session:
        sweep_row, _ = recording.get_or_create_sweep(session, sweep)
        points = session.exec(select(PointResultRow).where(PointResultRow.sweep_id == sweep_row.id)).all()
        statuses = {job.status for job in reads.jobs_of_sweep(session, sweep_row.id)}
    assert statuses == {"interrupted"}
    # Every stored point is complete (aggregates and verdict present), never half-written.
    assert points and all(row.completed > 0 and "validity" in row.metrics for row in points)
    kept = {(row.point_key, row.finished_at) for row in points}

    resumed = run_cli("run", str(recipe), "--sweep", sweep)
    assert resumed.returncode == 0, resumed.stderr
    assert f"skipping {len(kept)} finished point(s)" in resumed.stdout
    assert {row.concurrency for row in results_of(sweep)} == {1, 2, 4}
    with open_session(engine) as session:
        after = session.exec(select(PointResultRow).where(PointResultRow.sweep_id == sweep_row.id)).all()
    assert kept <= {(row.point_key, row.finished_at) for row in after}


def test_recipe_error_on_run_names_file_field_value(write_recipe) -> None:
    recipe = write_recipe({"hardware": "nope-9000"})
    result = run_cli("run", str(recipe))
    assert result.returncode == 2
    assert str(recipe) in result.stderr and "field 'hardware': got 'nope-9000'" in result.stderr


def test_validate_command(write_recipe, tmp_path: Path) -> None:
    good = write_recipe(name="good.yaml")
    bad = write_recipe({"methodology": {"prefix_caching": True}}, name="bad.yaml")
    result = run_cli("recipe", "validate", str(good), str(bad))
    assert result.returncode == 2
    assert "good.yaml: sim-test (2 points" in result.stdout
    assert "methodology.prefix_caching" in result.stderr


def test_a_load_level_with_its_own_settings_runs_on_its_own_engine_launch(write_recipe) -> None:
    # engine.per_concurrency, as InferenceX launches one server per concurrency: level 4 runs on an engine launched
    # with a batch cap of 3 (the simulated engine's --max-batch), level 1 on the recipe's own (cap 64). The two
    # launches are two jobs of one configuration: one fingerprint, one recipe row, both Points valid.
    from db.models import ProvenanceRow

    recipe = write_recipe({"engine": {"max_num_seqs": 64, "per_concurrency": {4: {"max_num_seqs": 3}}}})
    result = run_cli("run", str(recipe), "--sweep", "sim-per-level")
    assert result.returncode == 0, result.stderr + result.stdout
    rows = results_of("sim-per-level")
    assert [(row.concurrency, row.valid) for row in rows] == [(1, True), (4, True)]
    assert len({row.fingerprint for row in rows}) == 1
    jobs = jobs_of("sim-per-level")
    assert len(jobs) == 2 and len({job.recipe_id for job in jobs}) == 1
    engine = make_engine()
    with open_session(engine) as session:
        argvs = [session.get(ProvenanceRow, job.id).engine_argv for job in jobs]
    caps = sorted(argv[argv.index("--max-batch") + 1] for argv in argvs)
    assert caps == ["3", "64"]
