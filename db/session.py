"""Database connections and migrations. `INFERSWEEP_DATABASE_URL` picks the database; SQLite by default."""

from __future__ import annotations

import os
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, event
from sqlmodel import Session, create_engine

MIGRATIONS = Path(__file__).with_name("migrations")


def default_database_url() -> str:
    configured = os.environ.get("INFERSWEEP_DATABASE_URL")
    if configured:
        return configured
    home = Path(os.environ.get("INFERSWEEP_HOME") or Path.home() / ".infersweep")
    home.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{home / 'infersweep.db'}"


def _sqlite_pragmas(dbapi_connection: object, _record: object) -> None:
    cursor = dbapi_connection.cursor()  # type: ignore[attr-defined]
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")  # readers (the hub) never block the single writer
    # In WAL mode, NORMAL keeps every committed transaction through a crash or kill of the process
    # (what a sweep must survive) and skips an fsync per commit; only an OS crash or power cut can
    # lose the last commits. It makes state writes ~50x cheaper (benchmarks/dispatch_overhead.py).
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


def make_engine(url: str | None = None) -> Engine:
    url = url or default_database_url()
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    # A connection that died in the pool (a database restart, a fail-over) is noticed on checkout, not mid-write.
    engine = create_engine(url, pool_pre_ping=True)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    return config


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to `revision` (append-only migrations; safe to call on every start)."""
    config = alembic_config(engine)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def open_session(engine: Engine) -> Session:
    return Session(engine, expire_on_commit=False)
