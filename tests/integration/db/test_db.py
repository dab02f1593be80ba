"""The DB layer, migrated and exercised on SQLite and on the real PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, inspect, text
from sqlmodel import select

from db import reads, recording
from db.lifecycle import JobState
from db.models import EngineRow, JobRow, PointResultRow, ProvenanceRow, SQLModel
from db.session import alembic_config, make_engine, migrate, open_session
from tests.integration.db.conftest import empty_postgres


def test_migrations_create_exactly_the_models(database: Engine) -> None:
    tables = set(inspect(database).get_table_names())
    assert {
        "hardware", "model", "engine", "recipe", "sweep", "job", "transition", "point_result", "artifact",
        "provenance", "server_metric_delta", "alembic_version",
    } <= tables  # fmt: skip
    # The hub's queries have their indexes.
    indexes = {table: {i["name"] for i in inspect(database).get_indexes(table)} for table in tables}
    assert {
        "ix_point_result_origin_retracted", "ix_point_result_recipe_id_finished_at",
        "ix_point_result_sweep_id_recipe_id", "ix_point_result_embargo_until",
    } <= indexes["point_result"]  # fmt: skip
    assert "ix_transition_sweep_id_subject_at" in indexes["transition"]
    assert {"ix_job_sweep_id_created_at", "ix_job_engine_id"} <= indexes["job"]
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
        recording.upsert_hardware(session, [("cpu-local", "any", "Local CPU", "host", {"k": 1})])
        recording.upsert_hardware(session, [("cpu-local", "any", "Local CPU host", "host", {"k": 2})])
        sweep, existed = recording.get_or_create_sweep(session, "nightly")
        assert existed is False
        again, existed = recording.get_or_create_sweep(session, "nightly")
        assert existed is True and again.id == sweep.id
        recipe = recording.upsert_recipe(
            session, "abc123", "r1", "r1.yaml", "cpu-local", "simulated", {"schema_version": 1}
        )
        assert (
            recording.upsert_recipe(session, "abc123", "r1", "other.yaml", "cpu-local", "simulated", {}).id == recipe.id
        )
        recording.create_job(session, "job-1", sweep.id, recipe.id, 1, 2, "/tmp/logs")
        recording.update_job(session, "job-1", JobState.MEASURING, reason="k1")
        assert recording.record_point(session, _point(sweep.id, recipe.id, "job-1", "k1", 1)) is True
        assert recording.record_point(session, _point(sweep.id, recipe.id, "job-1", "k2", 4)) is True
        # The same Point twice in a sweep is refused, not duplicated (idempotent writes).
        assert recording.record_point(session, _point(sweep.id, recipe.id, "job-1", "k1", 1)) is False
        assert recording.finished_point_keys(session, sweep.id) == {"k1", "k2"}
        assert recording.mark_interrupted_jobs(session, sweep.id) == 1
        assert reads.jobs_of_sweep(session, sweep.id)[0].status == "interrupted"
        # Every change of state is kept, in order, with its reason.
        transitions = reads.transitions_of_sweep(session, sweep.id, subject="job")
        assert [(t.state, t.reason) for t in transitions] == [
            ("queued", "attempt 1, 2 point(s)"),
            ("measuring", "k1"),
            ("interrupted", "found unfinished when the sweep was started again"),
        ]

        views = reads.list_results(session, sweep="nightly")
        assert [(v.concurrency, v.valid, v.recipe, v.hardware) for v in views] == [
            (1, False, "r1", "cpu-local"),
            (4, True, "r1", "cpu-local"),
        ]
        assert views[0].validity_reasons == ["too few requests"]
        assert reads.list_results(session, sweep="other") == []

        row = session.exec(select(PointResultRow).where(PointResultRow.point_key == "k1")).one()
        row.retracted, row.retraction_reason = True, "engine misconfigured"
        session.add(row)
        session.commit()
        assert len(reads.list_results(session, sweep="nightly")) == 1
        assert len(reads.list_results(session, sweep="nightly", include_retracted=True)) == 2


def test_upgrade_from_the_first_revision_keeps_rows(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    for url in (f"sqlite:///{tmp_path / 'old.db'}", request.getfixturevalue("postgres_url")):
        engine = make_engine(url)
        if engine.dialect.name == "postgresql":
            empty_postgres(engine)
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
        migrate(engine, "0005")
        with engine.begin() as connection:  # a transition row refers to the job too (revision 0005 on)
            connection.execute(
                text("INSERT INTO transition (sweep_id, job_id, subject, state, reason, at)"
                     " VALUES (1, 'j1', 'job', 'succeeded', '', :t)"),
                {"t": now},
            )  # fmt: skip
        migrate(engine)
        with open_session(engine) as session:
            views = reads.list_results(session, sweep="old")
            assert [(v.concurrency, v.recipe) for v in views] == [(2, "r")]
            assert session.exec(select(PointResultRow)).one().source is None
            old_job = session.exec(select(JobRow)).one()
            assert (old_job.id, old_job.engine_id) == ("j1", None)  # jobs from before 0006 have no engine
            assert len(reads.transitions_of_sweep(session, 1)) == 1
            # The new tables take rows that refer to the old ones.
            old_job.engine_id = recording.get_or_create_engine(session, "vllm", "0.11.0", "", None)
            session.add(old_job)
            session.commit()
            recording.add_provenance(session, "j1", "r.yaml", env_names=["HF_HUB_OFFLINE"])
            assert session.get(ProvenanceRow, "j1").env_names == ["HF_HUB_OFFLINE"]
        assert {"artifact", "engine", "provenance", "server_metric_delta"} <= set(inspect(engine).get_table_names())
        # Revision 0006 also goes down and up again with rows in place (jobs referred to by other tables).
        config = alembic_config(engine)
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0005")
        assert "engine" not in inspect(engine).get_table_names()
        assert "engine_id" not in {column["name"] for column in inspect(engine).get_columns("job")}
        migrate(engine)
        with open_session(engine) as session:
            assert [(v.concurrency, v.recipe) for v in reads.list_results(session, sweep="old")] == [(2, "r")]
            assert session.exec(select(JobRow)).one().engine_id is None
            assert session.exec(select(EngineRow)).all() == []
        with engine.connect() as connection:
            assert compare_metadata(MigrationContext.configure(connection), SQLModel.metadata) == []
        engine.dispose()
