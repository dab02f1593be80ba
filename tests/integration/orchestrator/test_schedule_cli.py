"""`infersweep schedule FILE --run-now NAME` end to end: a real sweep on the simulated engine, named by the schedule."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from db import reads
from db.session import make_engine, migrate, open_session
from runners.host.paths import data_dir
from tests.conftest import ROOT, run_cli


def run_schedule(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("schedule", *args)


def test_run_now_runs_the_schedule_as_a_new_named_sweep(tmp_path: Path) -> None:
    shutil.copy(ROOT / "recipes" / "examples" / "tiny-llama-simulated.yaml", tmp_path / "sim.yaml")
    schedule_file = tmp_path / "team-nightly.yaml"
    schedule_file.write_text(
        "schedules:\n  - name: nightly\n    cron: '0 2 * * *'\n    max_attempts: 1\n    recipes: [sim.yaml]\n"
    )

    result = run_schedule(str(schedule_file), "--run-now", "nightly")

    assert result.returncode == 0, result.stdout + result.stderr
    match = re.search(r"sweep (nightly-\d{8}T\d{4}Z) finished", result.stderr)
    assert match, result.stderr
    sweep = match.group(1)
    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        assert sweep in {row.name for row in reads.list_sweeps(session)}
        rows = reads.list_results(session, sweep=sweep)
    assert [(row.recipe, row.concurrency, row.origin, row.valid) for row in rows] == [
        ("tiny-llama-simulated", concurrency, "simulated", True) for concurrency in (1, 2, 4, 8)
    ]
    state = json.loads((data_dir() / "schedules" / "team-nightly.json").read_text())
    assert [(run["sweep"], run["trigger"], run["exit_code"]) for run in state["runs"]] == [(sweep, "manual", 0)]
