"""Shared fixtures: an isolated data directory per session, SQLite and PostgreSQL databases, recipe files."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

# A shell that starts the suite in the background (`make test &` in a script) leaves SIGINT ignored, and
# every process the tests start would inherit that, so the Ctrl-C tests would test the shell, not the code.
# Restore Python's own handler (a handled signal is reset to its default across exec, an ignored one is not).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT = Path(__file__).resolve().parents[1]
# Public traces shipped with the project, with their licences (traces/README.md): no test depends on files
# outside the clone.
TRACES = ROOT / "traces"
POSTGRES_ADMIN_URL = os.environ.get("INFERSWEEP_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")

# --- Tiers (tests/README.md) ----------------------------------------------------------------------------------
UNIT_ROOT = ROOT / "tests" / "unit"
# A test using one of these is a system test whatever its folder: they start machine-wide services.
SYSTEM_FIXTURES = frozenset({"sshd", "docker_daemon", "docker_host", "slurm_cluster", "slurm_two_nodes"})
# System tests share machine-wide services (one Slurm, the real vLLM launches, one Docker daemon): under pytest-xdist
# they run in one worker, one after another, while the other workers take the rest. The Docker daemon's tests (the
# container runner, the hub image's build) share only the daemon, which one of them starts where none answers: they
# are a group of their own, so that a Docker build and the vLLM launches run side by side in two workers (the one
# serial group was the suite's critical path). An sshd is per test session, on a free port: both groups may start one.
SYSTEM_GROUP = "system"
DOCKER_FIXTURES = frozenset({"docker_daemon", "docker_host"})
DOCKER_GROUP = "system-docker"


def tier_of(item: pytest.Item) -> str:
    if item.path.is_relative_to(UNIT_ROOT):
        return "unit"
    uses = set(getattr(item, "fixturenames", ()))
    if item.get_closest_marker("system") or item.get_closest_marker("vllm") or uses & SYSTEM_FIXTURES:
        return "system"
    return "integration"


def pytest_itemcollected(item: pytest.Item) -> None:
    """Each test gets exactly one tier marker (`-m unit`, `-m "not system"`) and, for pytest-xdist's `loadgroup`, a
    group: system tests in two (`SYSTEM_GROUP`, `DOCKER_GROUP`); an integration module's tests one per module, so that its module-scoped
    fixtures (a moto server, a Ray cluster, a seeded database) start once, in one worker. Here, as each test is
    collected: pytest-xdist reads the groups in its own `pytest_collection_modifyitems`, which runs before ours."""
    tier = tier_of(item)
    item.add_marker(tier)
    if tier == "system":
        uses_docker = bool(set(getattr(item, "fixturenames", ())) & DOCKER_FIXTURES)
        item.add_marker(pytest.mark.xdist_group(DOCKER_GROUP if uses_docker else SYSTEM_GROUP))
    elif tier == "integration":
        item.add_marker(pytest.mark.xdist_group(item.path.relative_to(ROOT).as_posix()))


# Where the suite's time goes, per worker: with INFERSWEEP_TEST_TIMINGS=FILE each test phase appends a line
# "worker<TAB>seconds<TAB>phase<TAB>test id" (pytest's --durations lists the slowest, not which worker carried them:
# the critical path is the busiest worker, `python -m tests.timings FILE` sums them).
TIMINGS = os.environ.get("INFERSWEEP_TEST_TIMINGS")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # Under pytest-xdist the controller receives each worker's reports again (with `node` set): only workers write.
    if TIMINGS and not hasattr(report, "node"):
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(TIMINGS, "a") as timings:
            timings.write(f"{worker}\t{report.duration:.3f}\t{report.when}\t{report.nodeid}\n")


@pytest.fixture(scope="session", autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Results, logs and pidfiles of the test session live in a temp dir; engine venvs stay cached."""
    home = tmp_path_factory.mktemp("infersweep-home")
    _SESSION_TEMP[:] = [tmp_path_factory.getbasetemp()]
    previous = os.environ.get("INFERSWEEP_HOME")
    os.environ["INFERSWEEP_HOME"] = str(home)
    os.environ.pop("INFERSWEEP_DATABASE_URL", None)
    yield home
    if previous is None:
        os.environ.pop("INFERSWEEP_HOME", None)
    else:
        os.environ["INFERSWEEP_HOME"] = previous


def _postgres_reachable(url: str) -> bool:
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=3):
            return True
    except psycopg.OperationalError:
        return False


def _start_postgres() -> None:
    """Start the machine's PostgreSQL cluster if it is installed but stopped."""
    versions = sorted(Path("/etc/postgresql").glob("*")) if Path("/etc/postgresql").exists() else []
    if not versions or shutil.which("pg_ctlcluster") is None:
        return
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", versions[-1].name, "main", "start"],
        check=False, capture_output=True,
    )  # fmt: skip
    for _ in range(30):
        if _postgres_reachable(POSTGRES_ADMIN_URL):
            return
        time.sleep(0.5)


@contextlib.contextmanager
def _fresh_postgres_database() -> Iterator[str]:
    """A new, empty PostgreSQL database, dropped on exit."""
    import psycopg
    from psycopg import sql

    if not _postgres_reachable(POSTGRES_ADMIN_URL):
        _start_postgres()
    if not _postgres_reachable(POSTGRES_ADMIN_URL):
        pytest.fail(f"PostgreSQL is not reachable at {POSTGRES_ADMIN_URL} and could not be started")
    name = f"infersweep_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    base = POSTGRES_ADMIN_URL.rsplit("/", 1)[0]
    yield f"{base}/{name}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL database for this test session (tests share it), dropped at the end."""
    with _fresh_postgres_database() as url:
        yield url


@pytest.fixture
def empty_postgres_url() -> Iterator[str]:
    """A PostgreSQL database of this test's own, empty whatever other tests wrote before it."""
    with _fresh_postgres_database() as url:
        yield url


SIMULATED_RECIPE: dict[str, object] = {
    "name": "sim-test",
    "hardware": "cpu-local",
    "model": {"name": "tiny-llama", "source": {"kind": "generated", "preset": "tiny-llama"}},
    "engine": {
        "kind": "simulated",
        "environment": {"kind": "project"},
        "max_model_len": 4096,
        "startup_timeout_s": 30,
        "simulated": {"ttft_ms": 10, "itl_ms": 1.0},
    },
    "precision": "bf16",
    "runner": {"kind": "local"},
    "workload": {
        "kind": "fixed-length",
        "sequences": [{"isl": 256, "osl": 32}],
        "concurrency": [1, 4],
    },
}


def deep_update(base: dict[str, object], changes: dict[str, object]) -> dict[str, object]:
    merged = dict(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_update(merged[key], value)  # type: ignore[arg-type]
        else:
            merged[key] = value
    return merged


@pytest.fixture
def write_recipe(tmp_path: Path):
    """Write a recipe (the simulated base recipe with changes applied) and return its path."""

    def write(changes: dict[str, object] | None = None, name: str = "recipe.yaml", base: dict | None = None) -> Path:
        data = deep_update(base or SIMULATED_RECIPE, changes or {})
        path = tmp_path / name
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    return write


def processes_of_runs(job_prefix: str) -> list[int]:
    """Pids of live processes started for jobs whose run id starts with `job_prefix` (engines carry it), by this
    test session: an engine whose INFERSWEEP_HOME lies outside the session's temp tree is another pytest-xdist
    worker's (they run sweeps of the same recipe names at the same time)."""
    marker = f"INFERSWEEP_RUN_ID={job_prefix}".encode()
    pids = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            entries = environ.read_bytes().split(b"\0")
            if any(entry.startswith(marker) for entry in entries) and _of_this_session(entries):
                pids.append(int(environ.parent.name))
        except OSError:
            continue  # the process ended while we looked, or is not ours to read
    return pids


_SESSION_TEMP: list[Path] = []  # this session's pytest temp root, once the session starts


def _of_this_session(environ: list[bytes]) -> bool:
    homes = [entry.partition(b"=")[2] for entry in environ if entry.startswith(b"INFERSWEEP_HOME=")]
    if not homes or not _SESSION_TEMP:
        return True
    return Path(os.fsdecode(homes[0])).is_relative_to(_SESSION_TEMP[0])


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run `infersweep ...` as a user would, in a subprocess with the session's environment."""
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args],
        cwd=ROOT, env={**os.environ, "COLUMNS": "200", **(env or {})},
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def records_of(records_path: str):  # -> pandas.DataFrame
    """A Point's request records, read through its artifact (the stored file, or the staged copy while pending),
    its bytes checked against the artifact's SHA-256 as the hub checks them."""
    import pandas as pd

    from db import reads
    from db.artifacts import local_copy
    from db.session import make_engine, open_session

    with open_session(make_engine()) as session:
        artifact = reads.artifact_by_key(session, records_path)
    assert artifact is not None, f"no artifact {records_path}"
    path = local_copy(artifact)
    assert path is not None, f"no local copy of {records_path} holds its bytes"
    return pd.read_parquet(path)
