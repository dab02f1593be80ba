"""The store can never hold NaN or infinity (db/finite.py), our own measurements with impossible figures are
refused with the field and value (orchestrator/recorder.py), and `infersweep repair` takes out rows stored before
(orchestrator/repair.py): on SQLite and the real PostgreSQL.

Before: an own measurement's `tpot_ms.p50 = inf` was stored valid; on SQLite one NaN in a row's metrics JSON made
`infersweep results`, `export` and every hub page fail ("malformed JSON"), and `retract` did not help."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import select

from db.finite import NonFiniteValue
from db.lifecycle import JobState
from db.models import PointResultRow, TransitionRow
from db.session import open_session
from orchestrator.artifacts import LocalArtifactStore
from orchestrator.recorder import Recorder
from orchestrator.repair import repair_stored_figures
from recipes.loader import parse_recipe
from runners.job import PointOutcome
from tests.conftest import run_cli
from tests.integration.db.test_provenance import RECIPE, _metrics, _point, _records


def recorded_sweep(database: Engine, tmp_path: Path, points: dict[str, dict[str, float]]) -> Recorder:
    """A sweep whose job finished one Point per entry of `points` (metric field -> value, changed from a real
    computation over request records)."""
    loaded = parse_recipe(RECIPE, str(tmp_path / "vllm-provenance.yaml"))
    recorder = Recorder(database, "finite", store=LocalArtifactStore(tmp_path / "store"))
    recorder.sync_hardware()
    recorder.register_recipe(loaded)
    recorder.job_created("job-1", loaded, 1, len(points), str(tmp_path / "logs"))
    recorder.job_status("job-1", JobState.MEASURING)
    now = datetime.now(UTC)
    for key, changes in points.items():
        records = _records()
        metrics = _metrics(records)
        for field, value in changes.items():
            owner, _, part = field.rpartition(".")
            setattr(getattr(metrics, owner) if owner else metrics, part, value)
        outcome = PointOutcome(point_key=key, origin="measured", metrics=metrics, records=records, started_at=now,
                               finished_at=now)  # fmt: skip
        recorder.point_finished("job-1", loaded, _point(key), outcome)
    return recorder


def test_a_measurement_with_impossible_figures_is_refused_naming_them(database: Engine, tmp_path: Path) -> None:
    recorder = recorded_sweep(
        database, tmp_path,
        {"good": {}, "inf-tpot": {"tpot_ms.p50": float("inf")}, "too-fast": {"output_throughput_per_gpu": 1e30}},
    )  # fmt: skip
    recorder.close()
    with open_session(database) as session:
        stored = {row.point_key for row in session.exec(select(PointResultRow)).all()}
        refused = {row.point_key: row.reason for row in session.exec(select(TransitionRow)).all()
                   if row.state == "refused"}  # fmt: skip
    assert stored == {"good"}
    assert set(refused) == {"inf-tpot", "too-fast"}
    assert "field 'tpot_ms.p50': got inf; expected a finite number" in refused["inf-tpot"]
    assert "field 'output_throughput_per_gpu': got 1e+30; expected between 0" in refused["too-fast"]


@pytest.mark.parametrize("where", ["column", "json"])
def test_the_store_refuses_a_non_finite_number_from_any_writer(database: Engine, tmp_path: Path, where: str) -> None:
    recorder = recorded_sweep(database, tmp_path, {"good": {}})
    recorder.close()
    with open_session(database) as session:
        (row,) = session.exec(select(PointResultRow)).all()
        if where == "column":
            row.request_throughput = float("nan")
            expected = "point_result.request_throughput=nan"
        else:
            row.metrics = {**row.metrics, "duration_s": float("-inf")}
            expected = "point_result.metrics.duration_s=-inf"
        session.add(row)
        with pytest.raises(NonFiniteValue, match=expected.replace(".", r"\.")):
            session.commit()
        session.rollback()
        assert session.exec(select(PointResultRow)).one().request_throughput > 0  # unchanged


def plant_legacy_rows(path: Path) -> None:
    """What a database written before the guard may hold: NaN inside the metrics JSON, infinity in a column."""
    connection = sqlite3.connect(path)
    (text,) = connection.execute("SELECT metrics FROM point_result WHERE point_key = 'nan-json'").fetchone()
    document = json.loads(text)
    document["ttft_ms"]["p99"] = float("nan")
    connection.execute("UPDATE point_result SET metrics = ? WHERE point_key = 'nan-json'", (json.dumps(document),))
    connection.execute("UPDATE point_result SET output_throughput = 1e999 WHERE point_key = 'inf-column'")
    connection.commit()
    connection.close()


def test_repair_takes_out_rows_stored_before_the_guard(tmp_path: Path) -> None:
    database_path = tmp_path / "legacy.db"
    environment = {"INFERSWEEP_DATABASE_URL": f"sqlite:///{database_path}", "INFERSWEEP_HOME": str(tmp_path / "home")}
    from db.session import make_engine, migrate

    engine = make_engine(environment["INFERSWEEP_DATABASE_URL"])
    migrate(engine)
    recorded_sweep(engine, tmp_path, {"good": {}, "nan-json": {}, "inf-column": {}}).close()
    engine.dispose()
    plant_legacy_rows(database_path)
    export = tmp_path / "out.csv"
    broken = run_cli("export", str(export), env=environment)
    assert broken.returncode != 0 and "malformed JSON" in broken.stdout + broken.stderr  # what readers met

    listed = run_cli("repair", "--dry-run", env=environment)
    assert listed.returncode == 0, listed.stderr
    assert "field 'metrics.ttft_ms.p99': got nan; expected a finite number" in listed.stdout
    assert "field 'output_throughput': got inf" in listed.stdout
    assert "2 result(s) would be retracted and cleaned" in listed.stdout
    repaired = run_cli("repair", env=environment)
    assert "2 result(s) retracted and cleaned" in repaired.stdout, repaired.stdout + repaired.stderr

    assert run_cli("export", str(export), env=environment).returncode == 0
    assert run_cli("results", env=environment).returncode == 0
    engine = make_engine(environment["INFERSWEEP_DATABASE_URL"])
    with open_session(engine) as session:
        rows = {row.point_key: row for row in session.exec(select(PointResultRow)).all()}
        assert not rows["good"].retracted and rows["good"].valid
        for key in ("nan-json", "inf-column"):
            assert rows[key].retracted and not rows[key].valid and "infersweep repair" in rows[key].retraction_reason
        assert rows["nan-json"].metrics["ttft_ms"]["p99"] is None and rows["inf-column"].output_throughput == 0.0
        assert repair_stored_figures(session) == []  # nothing left; a second run changes nothing
    engine.dispose()
