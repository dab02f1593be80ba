"""Database connections and migrations. `INFERSWEEP_DATABASE_URL` picks the database; SQLite by default."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, event, inspect, text
from sqlalchemy.pool import NullPool
from sqlmodel import Session, create_engine

from db.finite import finite_json
from recipes.errors import ConfigurationError

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).with_name("migrations")


def default_database_url() -> str:
    configured = os.environ.get("INFERSWEEP_DATABASE_URL")
    if configured:
        return configured
    home = Path(os.environ.get("INFERSWEEP_HOME") or Path.home() / ".infersweep")
    home.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{home / 'infersweep.db'}"


def shown_database_url(url: str | None = None) -> str:
    """The database URL as it may be printed: its password masked (a terminal's output lands in logs and issues)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    url = url or default_database_url()
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:  # not a URL SQLAlchemy reads: whatever stands between "user:" and "@" is masked
        return re.sub(r"(//[^/@:]*:)[^@]*@", r"\1***@", url)


def sqlite_damage(engine: Engine) -> str | None:
    """SQLite's own check of every page (`PRAGMA quick_check`): its first finding, or None when the file holds (or
    the database is not SQLite). Migrating reads only the schema: a file with zeroed pages migrates "at head"."""
    if engine.dialect.name != "sqlite":
        return None
    with engine.connect() as connection:
        findings = [str(row[0]) for row in connection.exec_driver_sql("PRAGMA quick_check").fetchall()]
    damaged = [finding for finding in findings if finding != "ok"]
    return damaged[0] if damaged else None


def _sqlite_pragmas(dbapi_connection: object, _record: object) -> None:
    cursor = dbapi_connection.cursor()  # type: ignore[attr-defined]  # SQLAlchemy's hook passes the untyped DBAPI connection
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
    # JSON columns refuse NaN and infinity (db/finite.py also refuses them in every column at flush).
    engine = create_engine(url, pool_pre_ping=True, json_serializer=finite_json)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def alembic_config(engine: Engine) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    # configparser reads "%" as interpolation: a password percent-encoded in the URL (":" as %3A) must be escaped
    config.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%"))
    return config


# Any fixed number: the PostgreSQL advisory lock that serialises this project's migrations.
_MIGRATION_LOCK_KEY = 0x1_5EE9


@contextlib.contextmanager
def _sqlite_migration_lock(engine: Engine) -> Iterator[None]:
    """A file lock beside a SQLite database: two processes migrating at once would both read "no schema"
    before either writes (SQLite locks only on the first write)."""
    database = engine.url.database
    if not database or database == ":memory:":
        yield
        return
    with open(f"{database}.migrate-lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _sqlite_transactional_ddl(engine: Engine) -> Engine:
    """An engine on the same SQLite file whose transactions hold DDL too. Python's sqlite3 driver opens a
    transaction only before INSERT/UPDATE/DELETE, so CREATE, ALTER and DROP ran one by one in autocommit: a
    migration killed halfway left tables without the revision that made them, and every later upgrade failed
    ("table ... already exists"). Here the driver opens none and every transaction is an explicit BEGIN, so an
    interrupted migration leaves the schema as it was (SQLite discards an unfinished transaction on next open)."""
    migrating = create_engine(engine.url, poolclass=NullPool, json_serializer=finite_json)

    def driver_opens_no_transaction(dbapi_connection: object, _record: object) -> None:
        dbapi_connection.isolation_level = None  # type: ignore[attr-defined]  # SQLAlchemy's hook passes the untyped DBAPI connection

    event.listen(migrating, "connect", driver_opens_no_transaction)
    event.listen(migrating, "connect", _sqlite_pragmas)
    # IMMEDIATE: the write lock at once, not at the first write (a reader's snapshot cannot turn stale midway).
    event.listen(migrating, "begin", lambda connection: connection.exec_driver_sql("BEGIN IMMEDIATE"))
    return migrating


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to `revision` in one transaction (append-only migrations; safe to call on every start,
    and from several processes at once: the first migrates, the others wait for it and find the schema at head;
    interrupted at any statement, it leaves the schema where it was and the next call completes it)."""
    if revision == "head" and _at_head(engine):
        return  # every command's start: no lock taken, nobody waited for
    config = alembic_config(engine)
    sqlite = engine.dialect.name == "sqlite"
    lock = _sqlite_migration_lock(engine) if sqlite else contextlib.nullcontext()
    # An in-memory database is one connection's own: another engine would see another, empty database.
    on_file = sqlite and engine.url.database not in (None, "", ":memory:")
    migrating = _sqlite_transactional_ddl(engine) if on_file else engine
    try:
        _upgrade(migrating, config, revision, lock)
    finally:
        if migrating is not engine:
            migrating.dispose()


class NoResultsYet(ConfigurationError):
    """A reading command opened a database with no InferSweep tables: nothing was ever stored there. A command with
    something to say without results (`trace workflow` serves the corpus either way) catches it."""


def open_database(*, writes: bool, url: str | None = None) -> Engine:
    """The results database for one command, opened once here for every command: a command that writes brings the
    schema to head (`migrate`); one that only reads never changes it (a reading command used to migrate, which a
    read-only role cannot and a reader should not) and says what to do where the schema is missing or older than
    this code. A schema newer than this checkout is read as it is (its columns are a superset)."""
    engine = make_engine(url)
    if writes:
        migrate(engine)
        return engine
    heads, known = schema_revisions()
    with engine.connect() as connection:
        current = current_revisions(connection)
    if current == heads or (current and not current <= known):
        return engine
    engine.dispose()
    shown = shown_database_url(url)
    if not current:
        raise NoResultsYet(f"the results database {shown} holds no results yet (no InferSweep tables): run a "
                                 "sweep (`make demo`, `infersweep run RECIPE`) or import results first")  # fmt: skip
    raise ConfigurationError(f"the results database {shown} is at schema revision {', '.join(sorted(current))}, "
                             f"older than this code's {', '.join(sorted(heads))}: run `infersweep db upgrade` (a "
                             "reading command never changes the schema)")  # fmt: skip


def _at_head(engine: Engine) -> bool:
    """The database's schema is at the newest revision (read without a write lock)."""
    with engine.connect() as connection:
        return current_revisions(connection) == schema_revisions()[0]


# `revision = "0012"` as this project's files write it, or `revision: str = '0012'` as newer Alembic templates do.
_REVISION_LINE = re.compile(r"""^(down_revision|revision)(?:: [^=]+)? = (?:None|["']([^"']+)["'])\s*$""", re.MULTILINE)


@functools.cache
def schema_revisions() -> tuple[frozenset[str], frozenset[str]]:
    """This checkout's schema revisions as (heads, every revision), read from the migration files' `revision` and
    `down_revision` lines. Every command's start asks (is the database at head?), and Alembic's own script
    directory cost 0.2 s of imports before a reading command could read a row; it is loaded to migrate only (a test
    holds the two answers equal)."""
    revisions, revised = set(), set()
    for path in sorted((MIGRATIONS / "versions").glob("*.py")):
        lines = dict(_REVISION_LINE.findall(path.read_text(encoding="utf-8")))
        revisions.add(lines["revision"])
        if lines.get("down_revision"):
            revised.add(lines["down_revision"])
    return frozenset(revisions - revised), frozenset(revisions)


def current_revisions(connection: Connection) -> frozenset[str]:
    """The revisions the database's schema is at (Alembic's version table); empty where it has none."""
    if not inspect(connection).has_table("alembic_version"):
        return frozenset()
    return frozenset(str(row[0]) for row in connection.execute(text("SELECT version_num FROM alembic_version")))


def _upgrade(engine: Engine, config: Config, revision: str, lock: contextlib.AbstractContextManager[None]) -> None:
    from alembic import command

    with lock, engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            # Held until this transaction ends: a second process blocks here, then sees the first's tables.
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK_KEY})
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def open_session(engine: Engine) -> Session:
    return Session(engine, expire_on_commit=False)
