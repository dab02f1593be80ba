"""Commands that only read the results database never change its schema (`db.session.open_database`): on a
database with no tables or an older schema they say what to do, and leave it as it was; commands that write bring
it to head. A reading command used to migrate, which a read-only role cannot do and a reader should not."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory

from db.session import alembic_config, make_engine, migrate
from tests.conftest import run_cli
from tests.integration.orchestrator.test_environment_faults import one_error_line

READERS = (
    ["results"],
    ["compare", "--at-interactivity", "50"],
    ["export", "{out}"],
    ["regressions", "--at-interactivity", "50"],
)


def _readers(tmp_path: Path) -> list[list[str]]:
    return [[part.format(out=tmp_path / "out.csv") for part in command] for command in READERS]


def _tables(database: Path) -> set[str]:
    with sqlite3.connect(database) as connection:
        return {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _revision(database: Path) -> str:
    with sqlite3.connect(database) as connection:
        (revision,) = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    return str(revision)


def _at_the_revision_before_head(tmp_path: Path) -> tuple[Path, str, str, str]:
    """A SQLite database migrated to the revision before head: (its file, its URL, that revision, head)."""
    database = tmp_path / "results.db"
    url = f"sqlite:///{database}"
    engine = make_engine(url)
    script = ScriptDirectory.from_config(alembic_config(engine))
    (head,) = script.get_heads()
    older = script.get_revision(head).down_revision
    assert isinstance(older, str)
    migrate(engine, older)
    engine.dispose()
    return database, url, older, head


def test_a_reading_command_on_an_empty_database_says_so_and_creates_nothing(tmp_path: Path) -> None:
    database = tmp_path / "results.db"
    env = {"INFERSWEEP_DATABASE_URL": f"sqlite:///{database}"}
    for command in _readers(tmp_path):
        line = one_error_line(run_cli(*command, env=env))
        assert "holds no results yet" in line and "infersweep run RECIPE" in line, (command, line)
    assert not database.exists() or _tables(database) == set()
    assert not (tmp_path / "out.csv").exists()


def test_a_reading_command_leaves_an_older_schema_as_it_is_and_says_to_upgrade(tmp_path: Path) -> None:
    database, url, older, head = _at_the_revision_before_head(tmp_path)
    for command in _readers(tmp_path):
        line = one_error_line(run_cli(*command, env={"INFERSWEEP_DATABASE_URL": url}))
        assert f"schema revision {older}" in line and "infersweep db upgrade" in line, (command, line)
        assert _revision(database) == older, command
    assert run_cli("db", "upgrade", env={"INFERSWEEP_DATABASE_URL": url}).returncode == 0  # a writer: to head
    assert _revision(database) == head
    assert run_cli("results", env={"INFERSWEEP_DATABASE_URL": url}).returncode == 0


def test_the_hub_refuses_an_older_schema_by_revision_and_reads_a_newer_one(tmp_path: Path) -> None:
    from orchestrator.cli.site import given_database
    from recipes.errors import ConfigurationError

    database, url, older, head = _at_the_revision_before_head(tmp_path)
    with pytest.raises(ConfigurationError, match=f"at schema revision {older}, the hub needs {head}"):
        given_database(url)
    with sqlite3.connect(database) as connection:  # as a newer checkout would have left it
        connection.execute("UPDATE alembic_version SET version_num = 'from-newer-code'")
    assert given_database(url).url.startswith("sqlite:///file:")
