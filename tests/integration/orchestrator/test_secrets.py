"""A credential never reaches the recipe store, the database, the logs or the hub: a recipe that writes one
into `engine.env` is refused, and `engine.env_from` passes it by name from the runner's environment."""

from __future__ import annotations

import secrets
import subprocess
import sys
from pathlib import Path

from db import reads
from db.session import make_engine, open_session
from tests.conftest import run_cli


def test_a_token_in_env_is_refused_without_echoing_it(write_recipe) -> None:
    token = "hf_" + secrets.token_hex(16)
    recipe = write_recipe({"engine": {"env": {"HF_TOKEN": token}}})
    result = run_cli("recipe", "validate", str(recipe))
    assert result.returncode == 2
    assert "engine.env_from: [HF_TOKEN]" in result.stderr and "engine.env" in result.stderr
    assert token not in result.stdout + result.stderr


def test_env_from_runs_and_its_value_is_nowhere_on_disk(write_recipe, isolated_home) -> None:
    value = "sk-" + secrets.token_hex(20)
    recipe = write_recipe({"name": "sim-env-from", "engine": {"env_from": ["INFERSWEEP_TEST_CREDENTIAL"]}})
    result = run_cli("run", str(recipe), "--sweep", "env-from", env={"INFERSWEEP_TEST_CREDENTIAL": value})
    assert result.returncode == 0, result.stdout + result.stderr
    with open_session(make_engine()) as session:
        assert len(reads.list_results(session, sweep="env-from")) == 2
    assert value not in result.stdout + result.stderr
    assert files_holding(isolated_home, value) == [], "the database, a log or an artifact holds the credential"


def files_holding(root: Path, value: str) -> list[str]:
    """Files under `root` whose bytes hold `value`, searched by another process: opening and closing the SQLite
    database's files here would drop the POSIX locks this process's own connections hold on them (SQLite's
    documented way to corrupt a database)."""
    search = (
        "import sys, pathlib\n"
        "root, needle = pathlib.Path(sys.argv[1]), sys.argv[2].encode()\n"
        "print('\\n'.join(str(p) for p in root.rglob('*') if p.is_file() and needle in p.read_bytes()))\n"
    )
    found = subprocess.run([sys.executable, "-c", search, str(root), value], capture_output=True, text=True, check=True)
    return [line for line in found.stdout.splitlines() if line]


def test_env_from_a_variable_that_is_not_set_fails_the_job_without_retrying(write_recipe) -> None:
    recipe = write_recipe({"name": "sim-env-missing", "engine": {"env_from": ["INFERSWEEP_TEST_NOT_SET"]}})
    result = run_cli("run", str(recipe), "--sweep", "env-missing", "--max-attempts", "3")
    assert result.returncode == 1
    assert "engine.env_from: INFERSWEEP_TEST_NOT_SET not set in the runner's environment" in result.stderr
    assert "not retryable" in result.stderr and "attempt 2" not in result.stderr


def test_no_command_prints_the_database_password_on_success_or_failure(
    write_recipe, empty_postgres_url: str, tmp_path: Path
) -> None:
    from sqlalchemy.engine import make_url

    password = "pw-" + secrets.token_hex(12)
    # The local server trusts loopback, so any password connects: success paths print the URL as error paths do.
    url = make_url(empty_postgres_url).set(password=password).render_as_string(hide_password=False)
    unreachable = make_url(url).set(port=1).render_as_string(hide_password=False)
    recipe = write_recipe()
    commands = [
        ({"INFERSWEEP_DATABASE_URL": url}, ("db", "upgrade")),
        ({"INFERSWEEP_DATABASE_URL": url}, ("run", str(recipe), "--sweep", "masked")),
        ({"INFERSWEEP_DATABASE_URL": url}, ("results",)),
        ({"INFERSWEEP_DATABASE_URL": url}, ("repair", "--dry-run")),
        ({"INFERSWEEP_DATABASE_URL": url}, ("export", str(tmp_path / "out.csv"))),
        ({"INFERSWEEP_DATABASE_URL": unreachable}, ("results",)),
        ({"INFERSWEEP_DATABASE_URL": unreachable}, ("db", "upgrade")),
        ({"INFERSWEEP_DATABASE_URL": url.replace("postgresql://", "postgresql://:x:")}, ("results",)),
    ]
    shown = []
    for environment, command in commands:
        result = run_cli(*command, env=environment)
        assert password not in result.stdout + result.stderr, command
        shown.append(result.stdout + result.stderr)
    assert "database at head: postgresql://postgres:***@127.0.0.1:5432/" in shown[0]
    assert shown[1].count("***") == 0 and "Traceback" not in "".join(shown)
    assert "***@127.0.0.1:1/" in shown[5]  # the failure names the database, masked
