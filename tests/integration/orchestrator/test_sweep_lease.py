"""One driver per sweep: two real `infersweep run` of one sweep, on SQLite and on PostgreSQL (a fresh database,
so their migrations race too): exactly one measures, the other refuses naming the holder, or waits."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest

from db import recording
from db.models import SweepLeaseRow
from db.session import make_engine, migrate, open_session
from orchestrator.lease import SweepBusyError, SweepLease
from recipes.errors import InfrastructureError
from tests.conftest import ROOT

SLOW = {"engine": {"simulated": {"ttft_ms": 10, "itl_ms": 20}}, "workload": {"concurrency": [1, 2]}}


def start(recipe, sweep: str, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "run", str(recipe), "--sweep", sweep, *extra],
        cwd=ROOT, env={**os.environ, "COLUMNS": "200", **(env or {})},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def finish(process: subprocess.Popen[str], timeout: float = 300) -> tuple[int, str]:
    stdout, stderr = process.communicate(timeout=timeout)
    return process.returncode, stdout + stderr


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_two_drivers_of_one_sweep_exactly_one_measures(write_recipe, empty_postgres_url: str, database: str) -> None:
    env = {"INFERSWEEP_DATABASE_URL": empty_postgres_url} if database == "postgresql" else {}
    sweep = f"lease-both-{database}"
    recipe = write_recipe({"name": sweep, **SLOW})
    first, second = start(recipe, sweep, env=env), start(recipe, sweep, env=env)
    outcomes = {first.pid: finish(first), second.pid: finish(second)}
    winners = [pid for pid, (code, _) in outcomes.items() if code == 0]
    assert len(winners) == 1, outcomes
    (loser,) = set(outcomes) - set(winners)
    code, output = outcomes[loser]
    assert code == 1 and "Traceback" not in output, output
    assert f"is being run by another driver (host {socket.gethostname()!r}, pid {winners[0]}" in output
    assert "2 point(s) measured now" in outcomes[winners[0]][1]
    with open_session(make_engine(env.get("INFERSWEEP_DATABASE_URL"))) as session:
        assert recording.lease_of(session, sweep) is None  # released at the end


def test_wait_starts_when_the_other_driver_ends(write_recipe) -> None:
    recipe = write_recipe({"name": "lease-wait", **SLOW})
    first = start(recipe, "lease-wait")
    time.sleep(3)  # the first holds the sweep by now
    second = start(recipe, "lease-wait", "--wait")
    (first_code, first_output), (second_code, second_output) = finish(first), finish(second)
    assert first_code == 0 and "2 point(s) measured now" in first_output, first_output
    assert second_code == 0, second_output
    assert (
        "waiting for sweep 'lease-wait'" in second_output and "0 point(s) measured now, 2 already done" in second_output
    )


def test_a_lease_whose_holder_is_gone_is_taken_over(write_recipe) -> None:
    engine = make_engine()
    migrate(engine)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    now = datetime.now(UTC)
    with open_session(engine) as session:  # a driver killed with -9 on this host left its lease
        assert recording.try_insert_lease(session, SweepLeaseRow(
            sweep="lease-orphan", token="old", holder_host=socket.gethostname(), holder_pid=dead.pid,
            holder_identity=None, acquired_at=now, heartbeat_at=now, expires_at=now + timedelta(hours=1),
        ))  # fmt: skip
    code, output = finish(start(write_recipe({"name": "lease-orphan"}), "lease-orphan"))
    assert code == 0, output
    assert "took over sweep 'lease-orphan' from its earlier driver" in output and "has exited" in output


def test_a_holder_on_another_host_is_waited_for_until_its_lease_expires() -> None:
    engine = make_engine()
    migrate(engine)
    now = datetime.now(UTC)
    with open_session(engine) as session:
        assert recording.try_insert_lease(session, SweepLeaseRow(
            sweep="lease-remote", token="remote", holder_host="another-host", holder_pid=1, acquired_at=now,
            heartbeat_at=now, expires_at=now + timedelta(seconds=2),
        ))  # fmt: skip
    with pytest.raises(SweepBusyError, match="host 'another-host', pid 1"):
        SweepLease(engine, "lease-remote").acquire()
    time.sleep(2.5)
    lines: list[str] = []
    lease = SweepLease(engine, "lease-remote")
    lease.acquire(log=lines.append)
    assert "expired" in lines[0]
    lease.release()


def test_a_driver_blocked_past_its_lease_keeps_it_and_learns_when_it_is_lost() -> None:
    """The heartbeat renews while the driver's loop is stuck (an upload that never answers held it minutes): a
    driver that expires leases of others after 1.5 s still finds this one held after 4 s of blocking."""
    engine = make_engine()
    migrate(engine)
    holder = SweepLease(engine, "lease-blocked", ttl_s=1.5, renew_every_s=0.3)
    holder.acquire()
    try:
        time.sleep(4)  # the driver's loop does nothing
        with pytest.raises(SweepBusyError, match=f"pid {os.getpid()}"):
            SweepLease(engine, "lease-blocked").acquire()
        holder.raise_if_lost()  # still ours
        # Taken from under it (as a driver elsewhere would once it expired): the heartbeat notices, the loop stops.
        with open_session(engine) as session:
            held = recording.lease_of(session, "lease-blocked")
            assert held is not None and recording.replace_lease(session, held.token, held.model_copy(
                update={"token": "usurper", "holder_host": "another-host"}))  # fmt: skip
        time.sleep(1)
        with pytest.raises(InfrastructureError, match="taken over by another driver"):
            holder.raise_if_lost()
    finally:
        holder.release()
