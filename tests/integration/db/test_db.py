"""The DB layer, migrated and exercised on SQLite and on the real PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, inspect, text
from sqlmodel import select

from db import queries
from db.lifecycle import JobState
from db.models import PointResultRow, SQLModel
from db.session import make_engine, migrate, open_session

pytestmark = pytest.mark.integration


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'test.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    engine = make_engine(url)
    if request.param == "postgresql":
        # Each test starts from an empty schema on the shared session database.
        with engine.begin() as connection:
            connection.exec_driver_sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    migrate(engine)
    return engine


def test_migrations_create_exactly_the_models(database: Engine) -> None:
    tables = set(inspect(database).get_table_names())
    assert {"hardware", "recipe", "sweep", "job", "point_result", "alembic_version"} <= tables
    with database.connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection), SQLModel.metadata)
    assert diff == [], f"models and migrations disagree: {diff}"
    migrate(database)  # idempotent


def _point(sweep_id: int, recipe_id: int, job_id: str, key: str, concurrency: int) -> PointResultRow:
    now = datetime.now(UTC)
    return PointResultRow(
        sweep_id=sweep_id, job_id=job_id, recipe_id=recipe_id, point_key=key, repeat_index=0,
        workload_kind="fixed-length", isl=128, osl=16, concurrency=concurrency, origin="simulated",
        valid=concurrency > 1, validity_reasons=[] if concurrency > 1 else ["too few requests"],
        completed=10, failed=0, duration_s=1.5, request_throughput=6.6, output_throughput=100.0,
        total_token_throughput=900.0, accelerators=1, output_throughput_per_gpu=100.0,
        total_token_throughput_per_gpu=900.0, ttft_p50_ms=12.5, tpot_p50_ms=1.1, interactivity_p50=909.0,
        metrics={"validity": {"valid": True}}, started_at=now, finished_at=now,
    )  # fmt: skip


def test_write_and_read_a_sweep(database: Engine) -> None:
    with open_session(database) as session:
        queries.upsert_hardware(session, [("cpu-local", "any", "Local CPU", "host", {"k": 1})])
        queries.upsert_hardware(session, [("cpu-local", "any", "Local CPU host", "host", {"k": 2})])
        sweep, existed = queries.get_or_create_sweep(session, "nightly")
        assert existed is False
        again, existed = queries.get_or_create_sweep(session, "nightly")
        assert existed is True and again.id == sweep.id
        recipe = queries.upsert_recipe(
            session, "abc123", "r1", "r1.yaml", "cpu-local", "simulated", {"schema_version": 1}
        )
        assert (
            queries.upsert_recipe(session, "abc123", "r1", "other.yaml", "cpu-local", "simulated", {}).id == recipe.id
        )
        queries.create_job(session, "job-1", sweep.id, recipe.id, 1, 2, "/tmp/logs")
        queries.update_job(session, "job-1", JobState.MEASURING, reason="k1")
        assert queries.record_point(session, _point(sweep.id, recipe.id, "job-1", "k1", 1)) is True
        assert queries.record_point(session, _point(sweep.id, recipe.id, "job-1", "k2", 4)) is True
        # The same Point twice in a sweep is refused, not duplicated (idempotent writes).
        assert queries.record_point(session, _point(sweep.id, recipe.id, "job-1", "k1", 1)) is False
        assert queries.finished_point_keys(session, sweep.id) == {"k1", "k2"}
        assert queries.mark_interrupted_jobs(session, sweep.id) == 1
        assert queries.jobs_of_sweep(session, sweep.id)[0].status == "interrupted"
        # Every change of state is kept, in order, with its reason.
        transitions = queries.transitions_of_sweep(session, sweep.id, subject="job")
        assert [(t.state, t.reason) for t in transitions] == [
            ("queued", "attempt 1, 2 point(s)"),
            ("measuring", "k1"),
            ("interrupted", "found unfinished when the sweep was started again"),
        ]

        views = queries.list_results(session, sweep="nightly")
        assert [(v.concurrency, v.valid, v.recipe, v.hardware) for v in views] == [
            (1, False, "r1", "cpu-local"),
            (4, True, "r1", "cpu-local"),
        ]
        assert views[0].validity_reasons == ["too few requests"]
        assert queries.list_results(session, sweep="other") == []

        row = session.exec(select(PointResultRow).where(PointResultRow.point_key == "k1")).one()
        row.retracted, row.retraction_reason = True, "engine misconfigured"
        session.add(row)
        session.commit()
        assert len(queries.list_results(session, sweep="nightly")) == 1
        assert len(queries.list_results(session, sweep="nightly", include_retracted=True)) == 2


def test_upgrade_from_the_first_revision_keeps_rows(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    for url in (f"sqlite:///{tmp_path / 'old.db'}", request.getfixturevalue("postgres_url")):
        engine = make_engine(url)
        if engine.dialect.name == "postgresql":
            with engine.begin() as connection:
                connection.exec_driver_sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        migrate(engine, "0001")
        now = datetime.now(UTC)
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO sweep (id, name, status, created_at, updated_at) VALUES (1, 'old', 'finished', :t, :t)"
                ),
                {"t": now},
            )
            connection.execute(
                text(
                    "INSERT INTO recipe (id, fingerprint, name, path, schema_version, hardware_key, engine_kind, snapshot,"
                    " created_at) VALUES (1, 'fp', 'r', 'r.yaml', 1, 'cpu-local', 'vllm', :snapshot, :t)"
                ),
                {"snapshot": "{}", "t": now},
            )
            connection.execute(
                text(
                    "INSERT INTO job (id, sweep_id, recipe_id, attempt, status, points_planned, log_dir, created_at)"
                    " VALUES ('j1', 1, 1, 1, 'succeeded', 1, '', :t)"
                ),
                {"t": now},
            )
        old_row = _point(1, 1, "j1", "k-old", 2)
        # The columns revision 0001 created (read from the database, not from input); values are bound.
        columns = {column["name"] for column in inspect(engine).get_columns("point_result")} - {"id"}
        values = {name: getattr(old_row, name) for name in columns}
        values["validity_reasons"] = "[]"
        values["metrics"] = "{}"
        names = sorted(values)
        statement = text(
            "INSERT INTO point_result (" + ", ".join(names) + ") VALUES (" + ", ".join(":" + n for n in names) + ")"
        )
        with engine.begin() as connection:
            connection.execute(statement, values)
        migrate(engine)
        with open_session(engine) as session:
            views = queries.list_results(session, sweep="old")
            assert [(v.concurrency, v.recipe) for v in views] == [(2, "r")]
            assert session.exec(select(PointResultRow)).one().source is None
        assert "artifact" in inspect(engine).get_table_names()
        engine.dispose()
