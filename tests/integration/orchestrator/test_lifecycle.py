"""Job lifecycle through the real pipeline (CLI -> Ray -> local runner -> simulated engine -> SQL):
persisted transitions, `status`, `cancel`, Point and job deadlines, retry backoff."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from sqlmodel import select

from db import reads
from db.models import PointResultRow, ProvenanceRow
from db.session import make_engine, migrate, open_session
from runners.host.process import process_identity, running_engines
from tests.conftest import ROOT, processes_of_runs, run_cli


def sweep_state(name: str) -> tuple[str, list[tuple[int, str, str | None]], dict[str, list[str]]]:
    """(sweep state, [(attempt, job state, error kind)], {job id: [job states in order]})."""
    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        sweep = reads.sweep_by_name(session, name)
        assert sweep is not None, f"no sweep {name}"
        jobs = reads.jobs_of_sweep(session, sweep.id)
        history: dict[str, list[str]] = {}
        for transition in reads.transitions_of_sweep(session, sweep.id, subject="job"):
            history.setdefault(transition.job_id or "", []).append(transition.state)
        return sweep.status, [(job.attempt, job.status, job.error_kind) for job in jobs], history


def point_history(name: str) -> list[tuple[str, str]]:
    engine = make_engine()
    with open_session(engine) as session:
        sweep = reads.sweep_by_name(session, name)
        assert sweep is not None
        return [(t.point_key or "", t.state) for t in reads.transitions_of_sweep(session, sweep.id, "point")]


def test_every_transition_is_persisted_in_order_and_status_shows_it(write_recipe) -> None:
    result = run_cli("run", str(write_recipe()), "--sweep", "life-ok")
    assert result.returncode == 0, result.stderr + result.stdout
    state, jobs, history = sweep_state("life-ok")
    assert state == "finished"
    assert [(attempt, status) for attempt, status, _ in jobs] == [(1, "succeeded")]
    (states,) = history.values()
    assert states == [
        "queued", "placed", "preparing", "launching", "warming", "measuring", "measuring", "collecting", "succeeded",
    ]  # fmt: skip
    points = point_history("life-ok")
    assert [state for _, state in points] == ["measuring", "recorded", "measuring", "recorded"]
    # Each result carries the host's pre-flight checks and what it could sample during the Point.
    engine = make_engine()
    with open_session(engine) as session:
        sweep = reads.sweep_by_name(session, "life-ok")
        rows = session.exec(select(PointResultRow).where(PointResultRow.sweep_id == sweep.id)).all()
    for row in rows:
        host = row.metrics["host"]
        assert host["preflight"]["free_disk_gb"] > 0 and host["preflight"]["leftover_engines"] == 0
        assert host["telemetry"]["source"] in {"/proc/stat", "nvidia-smi"}

    shown = run_cli("status", "life-ok")
    assert shown.returncode == 0, shown.stderr
    assert "succeeded" in shown.stdout and "2/2" in shown.stdout and "ray node" in shown.stdout
    listing = run_cli("status")
    assert "life-ok" in listing.stdout and "finished" in listing.stdout
    missing = run_cli("status", "no-such-sweep")
    assert missing.returncode == 2 and "no sweep named 'no-such-sweep'" in missing.stderr


def test_cancel_stops_a_running_sweep_and_keeps_finished_points(write_recipe) -> None:
    # Slow Points (32 tokens at 25 ms: ~0.8 s a request) so the sweep is surely running when cancelled.
    recipe = write_recipe(
        {"name": "life-cancel", "engine": {"simulated": {"itl_ms": 25}}, "workload": {"concurrency": [1, 2, 4]}}
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "run", str(recipe), "--sweep", "life-cancel"],
        cwd=ROOT, env={**os.environ, "COLUMNS": "200"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if any(state == "recorded" for _, state in _safe_point_history("life-cancel")):
                break
            time.sleep(0.5)
        else:
            pytest.fail("no point was recorded before the deadline")
        cancelled = run_cli("cancel", "life-cancel")
        assert cancelled.returncode == 0 and "Cancel requested" in cancelled.stdout
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1, stdout + stderr
    assert "cancelled; finished points are kept" in stdout
    state, jobs, _ = sweep_state("life-cancel")
    assert state == "cancelled"
    assert [status for _, status, _ in jobs] == ["cancelled"]
    assert running_engines() == [] and processes_of_runs("life-cancel-") == []
    assert any(state == "recorded" for _, state in point_history("life-cancel"))
    again = run_cli("cancel", "life-cancel")
    assert "not running (state cancelled); nothing to cancel" in again.stdout


def _safe_point_history(name: str) -> list[tuple[str, str]]:
    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        sweep = reads.sweep_by_name(session, name)
        if sweep is None:
            return []
        return [(t.point_key or "", t.state) for t in reads.transitions_of_sweep(session, sweep.id, "point")]


def test_point_past_its_deadline_fails_the_job_and_is_retried_after_backoff(write_recipe) -> None:
    # One request needs 32 tokens x 200 ms = 6.4 s; the Point may take 2 s.
    recipe = write_recipe(
        {
            "name": "life-point-timeout",
            "engine": {"simulated": {"itl_ms": 200}},
            "workload": {"concurrency": [1]},
            "runner": {"point_timeout_s": 2},
        }
    )
    started = time.monotonic()
    result = run_cli("run", str(recipe), "--sweep", "life-point-timeout", "--max-attempts", "2", "--retry-backoff", "3")
    elapsed = time.monotonic() - started
    assert result.returncode == 1, result.stdout + result.stderr
    assert "runner.point_timeout_s: a Point ran longer than 2 s" in result.stderr
    state, jobs, _ = sweep_state("life-point-timeout")
    assert state == "failed"
    assert jobs == [(1, "failed", "PointTimeout"), (2, "failed", "PointTimeout")]
    assert elapsed > 3 + 2 * 2, "the retry waited for its backoff"
    assert running_engines() == [] and processes_of_runs("life-point-timeout-") == []


def test_job_past_its_deadline_is_stopped_and_not_retried(write_recipe) -> None:
    recipe = write_recipe(
        {
            "name": "life-job-timeout",
            "engine": {"startup_timeout_s": 120, "simulated": {"fault": "never-healthy"}},
            "runner": {"job_timeout_s": 3},
        }
    )
    result = run_cli("run", str(recipe), "--sweep", "life-job-timeout", "--max-attempts", "3")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "runner.job_timeout_s: the job ran longer than 3 s" in result.stderr
    _, jobs, history = sweep_state("life-job-timeout")
    assert jobs == [(1, "failed", "JobTimeout")]
    (states,) = history.values()
    assert states[-2:] == ["launching", "failed"]
    assert running_engines() == [] and processes_of_runs("life-job-timeout-") == []


def test_a_runner_limitation_is_refused_before_anything_is_reserved(write_recipe) -> None:
    # Dynamo's processes start as one process group of a venv or the host: a container image is refused.
    image = {"kind": "container", "image": "nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.5.0"}
    engine = {"kind": "dynamo", "environment": image, "simulated": None, "dynamo": {"backend": "mocker"}}
    result = run_cli("run", str(write_recipe({"engine": engine})), "--sweep", "life-limit")
    assert result.returncode == 1
    assert "runner kind 'local' cannot run it" in result.stderr
    assert "Dynamo's processes start as one process group" in result.stderr
    _, jobs, history = sweep_state("life-limit")
    assert jobs == [(1, "failed", "RunnerLimitation")]
    assert list(history.values()) == [["queued", "failed"]]


def test_ssh_recipe_without_inventory_target_fails_fast(write_recipe) -> None:
    result = run_cli("run", str(write_recipe({"runner": {"kind": "ssh"}})), "--sweep", "life-no-target")
    assert result.returncode == 1
    assert "the inventory has no ssh target for that hardware" in result.stderr


def test_orchestrator_killed_mid_sweep_resumes_without_duplicates(write_recipe) -> None:
    # 12 requests a level at ~0.33 s each: two levels (~8 s) are left when the first is recorded, ten times the time
    # the kill takes to follow it.
    recipe = write_recipe(
        {"name": "life-kill", "engine": {"simulated": {"itl_ms": 10}}, "workload": {"concurrency": [1, 2, 4]}}
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "run", str(recipe), "--sweep", "life-kill"],
        cwd=ROOT, env={**os.environ, "COLUMNS": "200"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not any(s == "recorded" for _, s in _safe_point_history("life-kill")):
            time.sleep(0.3)
        process.kill()  # SIGKILL: no handler runs, nothing is cleaned up by the orchestrator itself
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    recorded_before = {key for key, state in point_history("life-kill") if state == "recorded"}
    assert recorded_before, "no point was recorded before the kill"

    resumed = run_cli("run", str(recipe), "--sweep", "life-kill")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"skipping {len(recorded_before)} finished point(s)" in resumed.stdout
    assert "left unfinished; marked interrupted" in resumed.stdout
    recorded = [key for key, state in point_history("life-kill") if state == "recorded"]
    assert len(recorded) == 3 and len(set(recorded)) == 3, "every Point recorded exactly once"
    state, jobs, _ = sweep_state("life-kill")
    assert state == "finished"
    assert [status for _, status, _ in jobs] == ["interrupted", "succeeded"]
    deadline = time.monotonic() + 20
    while processes_of_runs("life-kill-") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_of_runs("life-kill-") == []


def test_an_orphaned_engine_of_a_dead_run_is_reaped_before_the_next_job(write_recipe, isolated_home) -> None:
    # A run whose owner died without cleaning up: its engine still serves, its pidfile names a dead owner.
    orphan = subprocess.Popen(
        [sys.executable, "-m", "runners.engines.simulated_server", "--port", "0", "--model", "sim"],
        env={**os.environ, "INFERSWEEP_RUN_ID": "life-orphan-dead"}, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    dead_owner = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_owner.wait()
    pidfile = isolated_home / "engines-running" / "life-orphan-dead.json"
    pidfile.parent.mkdir(parents=True, exist_ok=True)
    pidfile.write_text(json.dumps({"run_id": "life-orphan-dead", "pgid": orphan.pid, "owner_pid": dead_owner.pid,
                                   "port": 0, "leader_identity": process_identity(orphan.pid)}))  # fmt: skip
    try:
        assert processes_of_runs("life-orphan-") == [orphan.pid]
        result = run_cli("run", str(write_recipe({"name": "life-after-orphan"})), "--sweep", "life-orphan")
        assert result.returncode == 0, result.stdout + result.stderr
        orphan.wait(timeout=10)
        assert processes_of_runs("life-orphan-") == []
        assert not pidfile.exists()
    finally:
        if orphan.poll() is None:
            orphan.kill()


def test_an_unrelated_process_under_a_stale_pidfile_survives_the_next_run(write_recipe, isolated_home) -> None:
    # A pidfile of a run killed long ago names a number that now belongs to somebody else's session leader.
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
    dead_owner = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_owner.wait()
    pidfile = isolated_home / "engines-running" / "life-stale-pid.json"
    pidfile.parent.mkdir(parents=True, exist_ok=True)
    boot, ticks = (process_identity(stranger.pid) or "").rsplit(":", 1)
    pidfile.write_text(json.dumps({"run_id": "life-stale-pid", "pgid": stranger.pid, "owner_pid": dead_owner.pid,
                                   "port": 0, "leader_identity": f"{boot}:{int(ticks) - 100}"}))  # fmt: skip
    try:
        result = run_cli("run", str(write_recipe({"name": "life-after-stale"})), "--sweep", "life-stale")
        assert result.returncode == 0, result.stdout + result.stderr
        assert stranger.poll() is None, "infersweep run killed a process it did not start"
        assert not pidfile.exists()
        with open_session(make_engine()) as session:
            (job,) = reads.jobs_of_sweep(session, reads.sweep_by_name(session, "life-stale").id)
            preflight = session.exec(select(ProvenanceRow).where(ProvenanceRow.job_id == job.id)).one().preflight
        (note,) = [line for line in preflight["notes"] if "life-stale-pid" in line]
        assert f"not reaping process group {stranger.pid}" in note and "now another process" in note
    finally:
        stranger.kill()
        stranger.wait()


def test_a_sweep_over_its_gpu_hour_budget_does_not_start(write_recipe) -> None:
    recipe = write_recipe({"name": "life-budget", "repeats": 3})
    result = run_cli("run", str(recipe), "--sweep", "life-budget", "--gpu-hour-budget", "0.001")
    assert result.returncode == 1
    assert "--gpu-hour-budget: got 0.001; the 1 job(s) left are estimated at" in result.stderr
    state, jobs, _ = sweep_state("life-budget")
    assert state == "failed" and jobs == []
    # The same sweep within its budget runs.
    assert run_cli("run", str(recipe), "--sweep", "life-budget", "--gpu-hour-budget", "1").returncode == 0
