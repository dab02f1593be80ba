"""A migration killed at any statement leaves a database the next `migrate` completes (db/session.py).

Before, Python's sqlite3 driver ran CREATE/ALTER/DROP outside any transaction: a kill -9 at 134 of 140 statements
of a fresh upgrade left tables without their revision, and every later upgrade failed ("table ... already
exists"). Here the upgrade is killed (SIGKILL, no clean-up of any kind) at every statement in turn, of a fresh
upgrade and of an upgrade from revision 0005; each time the next `migrate` must bring the database to the same
schema as an uninterrupted one. The upgrade runs in a forked child, so each kill costs milliseconds, not an
interpreter start."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, event, inspect

from db.models import SQLModel
from db.session import make_engine, migrate


def statements_of_upgrade(url: str) -> int:
    """How many statements an uninterrupted upgrade of `url` runs (the database is left at head)."""
    count = 0

    def counted(*_arguments: object) -> None:
        nonlocal count
        count += 1

    event.listen(Engine, "before_cursor_execute", counted)
    try:
        migrate(make_engine(url))
    finally:
        event.remove(Engine, "before_cursor_execute", counted)
    return count


def upgrade_killed_at(url: str, statement: int) -> int:
    """Run the upgrade in a child that SIGKILLs itself just before its `statement`-th statement; its wait status."""
    child = os.fork()
    if child == 0:  # pragma: no cover - the child never returns
        seen = 0

        def kill_at(*_arguments: object) -> None:
            nonlocal seen
            seen += 1
            if seen == statement:
                os.kill(os.getpid(), signal.SIGKILL)

        try:
            event.listen(Engine, "before_cursor_execute", kill_at)
            migrate(make_engine(url))
        finally:
            os._exit(0)
    return os.waitpid(child, 0)[1]


def schema_of(url: str) -> tuple[list[str], list[object]]:
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            version = connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalars().all()
            return sorted(inspect(connection).get_table_names()) + list(version), compare_metadata(
                MigrationContext.configure(connection), SQLModel.metadata
            )
    finally:
        engine.dispose()


@pytest.mark.parametrize("start", [None, "0005"], ids=["fresh", "from-0005"])
def test_an_upgrade_killed_at_any_statement_is_completed_by_the_next(tmp_path: Path, start: str | None) -> None:
    def database(name: str) -> str:
        url = f"sqlite:///{tmp_path / name}.db"
        if start is not None:
            migrate(make_engine(url), start)
        return url

    reference = database("reference")
    statements = statements_of_upgrade(reference)
    expected, differences = schema_of(reference)
    assert differences == [] and statements > 20
    stuck = []
    for statement in range(1, statements + 1):
        url = database(f"killed-{statement}")
        status = upgrade_killed_at(url, statement)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (statement, status)
        try:
            migrate(make_engine(url))
        except Exception as error:  # what the next upgrade says is the finding
            stuck.append((statement, str(error).splitlines()[0]))
            continue
        tables, left = schema_of(url)
        if (tables, left) != (expected, []):
            stuck.append((statement, f"schema differs: {left}"))
    assert stuck == [], f"{len(stuck)} of {statements} interruptions left the database stuck: {stuck[:3]}"
