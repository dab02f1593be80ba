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


def test_db_upgrade_does_not_call_a_file_with_zeroed_pages_at_head(tmp_path: Path) -> None:
    database = tmp_path / "results.db"
    url = {"INFERSWEEP_DATABASE_URL": f"sqlite:///{database}"}
    rows = Path(__file__).parents[2] / "data" / "inferencex" / "run_20316427102" / "agg_bmk.json"
    assert run_cli("import", "inferencex", str(rows), env=url).returncode == 0
    with open(database, "r+b") as handle:  # pages 4-6 zeroed: the schema (page 1) still reads
        handle.seek(4096 * 3)
        handle.write(bytes(4096 * 3))
    upgrade = one_error_line(run_cli("db", "upgrade", env=url))
    results = one_error_line(run_cli("results", env=url))
    for line in (upgrade, results):
        assert f"sqlite:///{database}" in line and "the file is corrupt" in line, line


def test_a_folder_at_the_database_path_is_called_a_folder(tmp_path: Path) -> None:
    line = one_error_line(run_cli("results", env={"INFERSWEEP_DATABASE_URL": f"sqlite:///{tmp_path}"}))
    assert f"{tmp_path} is a folder, not a database file" in line and "does not exist" not in line
    missing = tmp_path / "no-such-folder" / "results.db"
    line = one_error_line(run_cli("results", env={"INFERSWEEP_DATABASE_URL": f"sqlite:///{missing}"}))
    assert f"its folder {missing.parent} does not exist" in line


def test_a_sqlite_database_locked_by_another_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'results.db'}"
    assert run_cli("db", "upgrade", env={"INFERSWEEP_DATABASE_URL": url}).returncode == 0  # created, at head
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
    assert run_cli("db", "upgrade", env=env).returncode == 0  # created and migrated, then the disk fills
    stats = os.statvfs(small_disk)
    (small_disk / "filler").write_bytes(b"x" * (stats.f_bavail * stats.f_frsize - 64 * 1024))
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(SIMULATED_RECIPE, sort_keys=False))
    result = run_cli("run", str(recipe), "--sweep", "full-disk", env=env, timeout=120)
    line = one_error_line(result)
    assert "the disk holding the results database is full" in line, line
    assert "connection lost" not in result.stderr


def test_a_full_disk_under_staging_stages_on_the_spare_and_the_bytes_stay_pending(
    small_disk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 46: an artifact that could not be staged (disk full) stopped the sweep and its bytes were not kept. With a
    spare staging folder on another disk it is staged there and stays pending until it is stored; without one, the
    error says so."""
    from db import recording
    from db.session import make_engine, migrate, open_session
    from orchestrator.artifacts import LocalArtifactStore
    from orchestrator.recorder import Recorder
    from orchestrator.uploads import publish_pending
    from recipes.errors import InfrastructureError

    class StoreDown:
        def put(self, local_path: Path, key: str, overwrite: bool = False) -> str:
            raise InfrastructureError("the store is down")

    monkeypatch.setenv("INFERSWEEP_HOME", str(small_disk / "home"))
    engine = make_engine(f"sqlite:///{tmp_path / 'results.db'}")  # the database on another disk
    migrate(engine)
    (small_disk / "home" / "staging").mkdir(parents=True)
    stats = os.statvfs(small_disk)
    (small_disk / "filler").write_bytes(b"x" * (stats.f_bavail * stats.f_frsize - 16 * 1024))
    log = tmp_path / "engine-0.log"
    log.write_bytes(os.urandom(256 * 1024))  # more than the little left on the full disk
    recorder = Recorder(engine, "full-staging", store=StoreDown())  # type: ignore[arg-type]
    with pytest.raises(InfrastructureError, match=r"the disk is full: .* INFERSWEEP_STAGING_SPARE"):
        recorder.store_file(log, "engine-log")

    spare = tmp_path / "spare"
    monkeypatch.setenv("INFERSWEEP_STAGING_SPARE", str(spare))
    artifact = recorder.store_file(log, "engine-log")
    recorder.close()
    assert artifact is not None and artifact.status == "pending"
    staged = Path(artifact.local_path)
    assert staged.is_relative_to(spare) and staged.read_bytes() == log.read_bytes()
    assert [path for path in (small_disk / "home" / "staging").rglob("*") if path.is_file()] == []  # no half file

    assert publish_pending(engine, LocalArtifactStore(tmp_path / "store")) == (1, 0)
    assert (tmp_path / "store" / artifact.key).read_bytes() == log.read_bytes()
    assert not staged.exists()  # the spare's copy is removed once stored, as staging's is
    with open_session(engine) as session:
        assert recording.pending_artifacts(session) == []
