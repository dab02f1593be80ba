"""An import killed with SIGKILL mid-way, run again: every row stored exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import func
from sqlmodel import select

from benchmarks.history_scale import write_history
from db.models import PointResultRow
from db.session import make_engine, open_session
from tests.conftest import ROOT, run_cli


def _stored(url: str) -> tuple[int, int]:
    """(Point rows, distinct sweep · point key pairs) in the database at `url`."""
    with open_session(make_engine(url)) as session:
        rows = session.exec(select(func.count()).select_from(PointResultRow)).one()
        keys = session.exec(select(PointResultRow.sweep_id, PointResultRow.point_key).distinct()).all()
    return rows, len(keys)


def test_an_import_killed_mid_way_stores_every_row_once_when_run_again(tmp_path: Path) -> None:
    files = write_history(tmp_path / "history", 2100)  # 20 runs of the public sample's 105 measurements
    url = f"sqlite:///{tmp_path / 'history.db'}"
    env = {**os.environ, "INFERSWEEP_DATABASE_URL": url, "INFERSWEEP_ARTIFACTS": str(tmp_path / "artifacts")}
    importing = subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "import", "inferencex", *map(str, files)],
                                 cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 120
    while importing.poll() is None and time.monotonic() < deadline:  # killed once some batches are in
        if Path(url.removeprefix("sqlite:///")).exists() and _safe_count(url) >= 300:
            break
        time.sleep(0.05)
    assert importing.poll() is None, "the import ended before it could be killed: make the history longer"
    importing.send_signal(signal.SIGKILL)
    importing.wait(timeout=30)
    before, _ = _stored(url)
    assert 300 <= before < 2100 and before % 105 == 0, before  # whole runs only: each run's rows are one batch
    again = run_cli("import", "inferencex", *map(str, files), env=env)
    assert again.returncode == 0, again.stderr
    assert f"2100 row(s) read, {2100 - before} imported, {before} already present" in again.stdout, again.stdout
    assert _stored(url) == (2100, 2100)


def _safe_count(url: str) -> int:
    """Point rows so far; 0 while the import has not made its tables yet."""
    from sqlalchemy.exc import OperationalError

    try:
        return _stored(url)[0]
    except OperationalError:
        return 0
