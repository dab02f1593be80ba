"""The reaper of dead runs' engines kills only what it can prove it started (runners/host/process.py).

PIDs are reused: a stale pidfile can name a number that now belongs to somebody else's process (after a
reboot, or just time). Each case runs a real process in its own session, as an engine is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runners.host.process import pid_dir, process_identity, reap_orphaned_engines, stop_engines_owned_by

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


@pytest.fixture(autouse=True)
def own_pidfiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFERSWEEP_HOME", str(tmp_path / "home"))  # no other test's pidfiles


def engine_like(run_id: str | None) -> subprocess.Popen[bytes]:
    """A process leading its own session and group: an engine of `run_id` (it carries INFERSWEEP_RUN_ID, as
    every engine the project starts does), or with None somebody else's `setsid sleep 900`."""
    env = {key: value for key, value in os.environ.items() if key != "INFERSWEEP_RUN_ID"}
    if run_id is not None:
        env["INFERSWEEP_RUN_ID"] = run_id
    return subprocess.Popen(SLEEPER, start_new_session=True, env=env)


@pytest.fixture
def session_leader(request: pytest.FixtureRequest) -> Iterator[subprocess.Popen[bytes]]:
    """`engine_like` of the run id the test names with `@pytest.mark.run_id(...)` (none: a stranger's process)."""
    marker = request.node.get_closest_marker("run_id")
    process = engine_like(marker.args[0] if marker else None)
    yield process
    if process.poll() is None:
        process.kill()
    process.wait()


def dead_pid() -> int:
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    return finished.pid


def write_pidfile(run_id: str, pgid: int, owner_pid: int, **identities: str | None) -> Path:
    path = pid_dir() / f"{run_id}.json"
    path.write_text(json.dumps({"run_id": run_id, "pgid": pgid, "owner_pid": owner_pid, "port": 0, **identities}))
    return path


def another_start_time(identity: str) -> str:
    boot, ticks = identity.rsplit(":", 1)
    return f"{boot}:{int(ticks) + 1}"


def gone(process: subprocess.Popen[bytes], within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return True
        time.sleep(0.05)
    return False


def test_a_process_that_took_a_dead_engines_number_is_left_alone(session_leader: subprocess.Popen[bytes]) -> None:
    identity = process_identity(session_leader.pid)
    assert identity is not None
    pidfile = write_pidfile("reused-pid", session_leader.pid, dead_pid(), leader_identity=another_start_time(identity))
    lines: list[str] = []
    assert reap_orphaned_engines(log=lines.append) == []
    time.sleep(0.5)
    assert session_leader.poll() is None, "a process this project did not start was killed"
    assert not pidfile.exists()
    assert "now another process" in lines[0]


@pytest.mark.parametrize(
    ("identity", "reason"),
    [(None, "records no process identity"), ("00000000-0000-0000-0000-000000000000:1", "before this machine last")],
)
def test_a_pidfile_that_proves_nothing_kills_nothing(
    session_leader: subprocess.Popen[bytes], identity: str | None, reason: str
) -> None:
    write_pidfile("unproven", session_leader.pid, dead_pid(), leader_identity=identity)
    lines: list[str] = []
    assert reap_orphaned_engines(log=lines.append) == []
    time.sleep(0.5)
    assert session_leader.poll() is None
    assert reason in lines[0]


@pytest.mark.run_id("orphan")
def test_an_orphan_whose_identity_matches_is_reaped(session_leader: subprocess.Popen[bytes]) -> None:
    pidfile = write_pidfile(
        "orphan", session_leader.pid, dead_pid(), leader_identity=process_identity(session_leader.pid)
    )
    assert reap_orphaned_engines(log=lambda _line: None) == ["orphan"]
    assert gone(session_leader)
    assert not pidfile.exists()


@pytest.mark.run_id("owner-reused")
def test_an_owner_whose_number_was_reused_counts_as_dead(session_leader: subprocess.Popen[bytes]) -> None:
    # The pidfile's owner number is alive (this test), but as another process than the one recorded.
    mine = process_identity(os.getpid())
    assert mine is not None
    write_pidfile(
        "owner-reused", session_leader.pid, os.getpid(),
        leader_identity=process_identity(session_leader.pid), owner_identity=another_start_time(mine),
    )  # fmt: skip
    assert reap_orphaned_engines(log=lambda _line: None) == ["owner-reused"]
    assert gone(session_leader)


@pytest.mark.run_id("owned")
def test_a_live_owner_keeps_its_engine(session_leader: subprocess.Popen[bytes]) -> None:
    write_pidfile(
        "owned", session_leader.pid, os.getpid(),
        leader_identity=process_identity(session_leader.pid), owner_identity=process_identity(os.getpid()),
    )  # fmt: skip
    assert reap_orphaned_engines(log=lambda _line: None) == []
    assert session_leader.poll() is None


def test_the_last_resort_stop_stops_every_engine_its_process_owns() -> None:
    engines = [engine_like(f"mine-{index}") for index in range(2)]
    stranger = engine_like(None)
    try:
        for index, engine in enumerate(engines):
            write_pidfile(f"mine-{index}", engine.pid, os.getpid(), leader_identity=process_identity(engine.pid))
        stranger_identity = process_identity(stranger.pid)
        assert stranger_identity is not None
        write_pidfile("mine-reused", stranger.pid, os.getpid(), leader_identity=another_start_time(stranger_identity))
        assert sorted(stop_engines_owned_by(os.getpid())) == ["mine-0", "mine-1", "mine-reused"]
        assert all(gone(engine) for engine in engines)
        assert stranger.poll() is None, "the last-resort stop killed a process it did not start"
        assert list(pid_dir().glob("*.json")) == []
    finally:
        for process in (*engines, stranger):
            if process.poll() is None:
                process.kill()
            process.wait()


def test_a_group_that_does_not_carry_the_run_id_is_left_alone(session_leader: subprocess.Popen[bytes]) -> None:
    # Same number and start time as recorded, yet not started for this run: its environment says so.
    write_pidfile("not-this-run", session_leader.pid, dead_pid(), leader_identity=process_identity(session_leader.pid))
    lines: list[str] = []
    assert reap_orphaned_engines(log=lines.append) == []
    time.sleep(0.5)
    assert session_leader.poll() is None
    assert "does not carry INFERSWEEP_RUN_ID=not-this-run" in lines[0]
