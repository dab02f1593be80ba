"""Faults of the machine, met by a command, end in one worded error line, never a traceback
(orchestrator/cli/faults.py): a SQLite database locked by another process, a file that is not a database, a
PostgreSQL role out of connections, a disk full under the database. Before: tracebacks of 191, ~100 and 409 lines,
and a full disk reported as "database connection lost" for 2 minutes, then a traceback."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import yaml
from psycopg import sql

from tests.conftest import SIMULATED_RECIPE, run_cli


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "╭" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error (")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_a_sqlite_file_that_is_not_a_database(tmp_path: Path) -> None:
    database = tmp_path / "results.db"
    database.write_bytes(b"these are not the bytes of a SQLite database\n" * 200)
    line = one_error_line(run_cli("results", env={"INFERSWEEP_DATABASE_URL": f"sqlite:///{database}"}))
    assert f"sqlite:///{database}: file is not a database" in line and "not retryable" in line


def test_a_sqlite_database_locked_by_another_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'results.db'}"
    assert run_cli("results", env={"INFERSWEEP_DATABASE_URL": url}).returncode == 0  # created, at head
    holder = sqlite3.connect(tmp_path / "results.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # what an open `sqlite3` shell in a transaction, or a migration, holds
    try:
        recipe = tmp_path / "recipe.yaml"
        recipe.write_text(yaml.safe_dump(SIMULATED_RECIPE, sort_keys=False))
        result = run_cli("run", str(recipe), "--sweep", "locked", env={"INFERSWEEP_DATABASE_URL": url}, timeout=120)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    line = one_error_line(result)
    assert (
        "database is locked: another process holds its write lock" in line
        and "(InfrastructureError, retryable)" in line
    )


@pytest.fixture
def limited_role(postgres_url: str) -> Iterator[str]:
    """A PostgreSQL role allowed one connection, and that connection held: the role is out of connections."""
    role = sql.Identifier(f"hog_{uuid.uuid4().hex[:8]}")
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN CONNECTION LIMIT 1").format(role))
        url = postgres_url.replace("postgres@", f"{role.as_string(admin).strip(chr(34))}@", 1)
        assert url != postgres_url
        held = psycopg.connect(url)
        try:
            yield url
        finally:
            held.close()
            admin.execute(sql.SQL("DROP ROLE {}").format(role))


def test_a_postgresql_role_out_of_connections(limited_role: str) -> None:
    line = one_error_line(run_cli("results", env={"INFERSWEEP_DATABASE_URL": limited_role}))
    assert "too many connections" in line and "(InfrastructureError, retryable)" in line


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 3 MB tmpfs (mounting needs root: CI has it)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], capture_output=True,
                          text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        message = f"cannot mount a tmpfs here: {done.stderr.strip()}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_full_disk_under_the_database_stops_at_once_naming_it(small_disk: Path, tmp_path: Path) -> None:
    env = {"INFERSWEEP_DATABASE_URL": f"sqlite:///{small_disk / 'results.db'}"}
    assert run_cli("results", env=env).returncode == 0  # created and migrated, then the disk fills
    stats = os.statvfs(small_disk)
    (small_disk / "filler").write_bytes(b"x" * (stats.f_bavail * stats.f_frsize - 64 * 1024))
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(SIMULATED_RECIPE, sort_keys=False))
    result = run_cli("run", str(recipe), "--sweep", "full-disk", env=env, timeout=120)
    line = one_error_line(result)
    assert "the disk holding the results database is full" in line, line
    assert "connection lost" not in result.stderr
