"""A migrated database per test: SQLite in a temp dir, and the real PostgreSQL (an emptied schema)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine

from db.session import make_engine, migrate


def empty_postgres(engine: Engine) -> None:
    """Drop everything in the shared session database's public schema."""
    with engine.begin() as connection:
        connection.exec_driver_sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public")


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'test.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    engine = make_engine(url)
    if request.param == "postgresql":
        empty_postgres(engine)  # each test starts from an empty schema
    migrate(engine)
    return engine
