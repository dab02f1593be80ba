"""A sweep survives its database: connections terminated by the real PostgreSQL server mid-sweep cost no
Point, and a database that stays away stops the sweep cleanly, keeping what finished, to resume later."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psycopg
from psycopg import sql

from tests.conftest import POSTGRES_ADMIN_URL, ROOT, run_cli

SLOW_POINTS = {"engine": {"simulated": {"ttft_ms": 10, "itl_ms": 15}}, "workload": {"concurrency": [1, 2, 4, 8]}}


def database_of(url: str) -> str:
    return url.rsplit("/", 1)[1]


def recorded(url: str, sweep: str) -> list[str]:
    with psycopg.connect(url, connect_timeout=3) as connection:
        rows = connection.execute(
            "SELECT point_key FROM point_result JOIN sweep ON sweep.id = point_result.sweep_id WHERE sweep.name = %s",
            (sweep,),
        ).fetchall()
    return [row[0] for row in rows]


def terminate_connections(url: str) -> int:
    """pg_terminate_backend on every connection to the database but this one: what a restart or fail-over does."""
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (database_of(url),),
        ).fetchall()
    return len(rows)


def allow_connections(url: str, allowed: bool) -> None:
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(
            sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS {}").format(
                sql.Identifier(database_of(url)), sql.SQL("true" if allowed else "false")
            )
        )


def start_sweep(recipe, sweep: str, url: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "run", str(recipe), "--sweep", sweep, *extra],
        cwd=ROOT, env={**os.environ, "COLUMNS": "200", "INFERSWEEP_DATABASE_URL": url},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def wait_for_points(url: str, sweep: str, count: int, process: subprocess.Popen[str], within_s: float = 240) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if len(recorded(url, sweep)) >= count:
                return
        except (psycopg.OperationalError, psycopg.errors.UndefinedTable):
            pass  # the schema is not there yet
        time.sleep(0.2)
    raise AssertionError(f"{count} point(s) never recorded (exit code {process.poll()})")


def test_terminated_connections_mid_sweep_lose_no_point(write_recipe, empty_postgres_url: str) -> None:
    recipe = write_recipe({"name": "pg-drop", **SLOW_POINTS})
    process = start_sweep(recipe, "pg-drop", empty_postgres_url)
    try:
        wait_for_points(empty_postgres_url, "pg-drop", 1, process)
        assert terminate_connections(empty_postgres_url) >= 1  # between writes
        wait_for_points(empty_postgres_url, "pg-drop", 2, process)
        # Then again and again for a few seconds: some of these land while a transaction is open.
        burst_until = time.monotonic() + 4
        while time.monotonic() < burst_until and process.poll() is None:
            terminate_connections(empty_postgres_url)
            time.sleep(0.15)
        stdout, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stdout + stderr
    points = recorded(empty_postgres_url, "pg-drop")
    assert sorted(points) == sorted(set(points)) and len(points) == 4, points
    assert "4 point(s) measured now" in stdout


def test_a_database_that_stays_away_stops_the_sweep_and_the_rerun_resumes(
    write_recipe, empty_postgres_url: str
) -> None:
    recipe = write_recipe({"name": "pg-down", **SLOW_POINTS})
    process = start_sweep(recipe, "pg-down", empty_postgres_url, "--database-outage", "3")
    try:
        wait_for_points(empty_postgres_url, "pg-down", 1, process)
        allow_connections(empty_postgres_url, False)
        terminate_connections(empty_postgres_url)
        stdout, stderr = process.communicate(timeout=300)
    finally:
        allow_connections(empty_postgres_url, True)
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1, stdout + stderr
    assert "the results database has been unreachable for" in stderr and "run the same command again" in stderr
    assert "Traceback" not in stderr
    kept = recorded(empty_postgres_url, "pg-down")
    assert 1 <= len(kept) < 4
    rerun = run_cli("run", str(recipe), "--sweep", "pg-down", env={"INFERSWEEP_DATABASE_URL": empty_postgres_url})
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert f"{len(kept)} already done" in rerun.stdout
    assert sorted(recorded(empty_postgres_url, "pg-down")) == sorted(set(recorded(empty_postgres_url, "pg-down")))
    assert len(recorded(empty_postgres_url, "pg-down")) == 4
