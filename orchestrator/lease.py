"""One driver per sweep: a lease row in the results database, taken before anything starts.

Two `infersweep run` of one sweep would start two engines on the same accelerators (skewed measurements,
double-booked GPUs) and drop one driver's results. So the driver takes the sweep's lease first: a second one
refuses at once, naming the holder and since when, or waits for it with `--wait`. The holder renews the lease
as it runs and removes it when it ends. A lease whose holder is gone is taken over, with a message: at once
when the holder ran on this host and its process is provably gone (a `kill -9`), otherwise once the lease
has expired (a holder on another host that stopped renewing).

A row rather than a PostgreSQL advisory lock: an advisory lock belongs to a connection, and a sweep keeps
running through a lost connection (orchestrator/recorder.py); the same row works on SQLite.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from db import recording
from db.models import SweepLeaseRow
from db.session import open_session
from recipes.errors import InferSweepError, InfrastructureError
from runners.host.process import process_identity

LEASE_TTL_S = 300.0  # a holder that stopped renewing for this long is taken over from another host
RENEW_EVERY_S = 15.0
WAIT_POLL_S = 2.0


class SweepBusyError(InferSweepError):
    """Another driver runs this sweep (not retried: run it again once that one ends, or use --wait)."""


def _holder_gone(lease: SweepLeaseRow, now: datetime) -> str | None:
    """Why the lease's holder no longer runs, or None when it may still (or cannot be proved gone)."""
    if lease.expires_at.replace(tzinfo=lease.expires_at.tzinfo or UTC) < now:
        return f"its lease expired at {lease.expires_at:%Y-%m-%d %H:%M:%S} UTC without renewal"
    if lease.holder_host != socket.gethostname():
        return None  # another host: only the expiry can tell
    identity = process_identity(lease.holder_pid)
    if identity is None:
        return f"process {lease.holder_pid} on this host has exited"
    if lease.holder_identity is not None and identity != lease.holder_identity:
        return f"process {lease.holder_pid} on this host is now another process"
    return None


def _describe(lease: SweepLeaseRow) -> str:
    return f"host {lease.holder_host!r}, pid {lease.holder_pid}, since {lease.acquired_at:%Y-%m-%d %H:%M:%S} UTC"


class SweepLease:
    """The lease of one sweep held by this process: `acquire`, then `raise_if_lost` as the sweep runs, `release`.

    `acquire` also starts a heartbeat thread that renews the lease every `renew_every_s`, whatever the driver's
    loop is doing: a driver blocked for minutes (an artifact store that accepts connections and never answers
    held it 4.5 min per Point) kept a live sweep from renewing, and a driver on another host took it over.
    `raise_if_lost` (called by the loop) raises once the heartbeat found the lease taken."""

    def __init__(
        self, engine: Engine, sweep: str, ttl_s: float = LEASE_TTL_S, renew_every_s: float = RENEW_EVERY_S
    ) -> None:
        self.engine = engine
        self.sweep = sweep
        self.ttl_s = ttl_s
        self.renew_every_s = renew_every_s
        self.token = uuid.uuid4().hex
        self._lost: InfrastructureError | None = None
        self._stopped = threading.Event()
        self._heartbeat: threading.Thread | None = None

    def _row(self, now: datetime) -> SweepLeaseRow:
        return SweepLeaseRow(
            sweep=self.sweep, token=self.token, holder_host=socket.gethostname(), holder_pid=os.getpid(),
            holder_identity=process_identity(os.getpid()), acquired_at=now, heartbeat_at=now,
            expires_at=now + timedelta(seconds=self.ttl_s),
        )  # fmt: skip

    def _try_acquire(self, log: Callable[[str], None]) -> SweepLeaseRow | None:
        """Take the lease when free or its holder is gone; otherwise the holder's lease."""
        now = datetime.now(UTC)
        with open_session(self.engine) as session:
            if recording.try_insert_lease(session, self._row(now)):
                return None
            held = recording.lease_of(session, self.sweep)
            if held is None:  # released between the insert and the read: try again
                return self._try_acquire(log)
            gone = _holder_gone(held, now)
            if gone is None:
                return held
            if recording.replace_lease(session, held.token, self._row(now)):
                log(f"took over sweep {self.sweep!r} from its earlier driver ({_describe(held)}): {gone}")
                return None
            return recording.lease_of(session, self.sweep) or held

    def acquire(self, wait: bool = False, log: Callable[[str], None] = print) -> None:
        """Hold the sweep, or raise SweepBusyError naming its holder (with `wait`, poll until it is free)."""
        announced = False
        while True:
            held = self._try_acquire(log)
            if held is None:
                self._heartbeat = threading.Thread(target=self._beat, name=f"lease-{self.sweep}", daemon=True)
                self._heartbeat.start()
                return
            if not wait:
                raise SweepBusyError(
                    f"sweep {self.sweep!r} is being run by another driver ({_describe(held)}); run it again once "
                    "that one has ended, or add --wait to start when it does"
                )
            if not announced:
                log(f"waiting for sweep {self.sweep!r}: another driver runs it ({_describe(held)})")
                announced = True
            time.sleep(WAIT_POLL_S)

    def _beat(self) -> None:
        """Renew every `renew_every_s` until released. A database fault is left to the recorder (which stops the
        sweep if the database stays away); a lease somebody else now holds is kept for `raise_if_lost`."""
        while not self._stopped.wait(self.renew_every_s):
            now = datetime.now(UTC)
            try:
                with open_session(self.engine) as session:
                    still_ours = recording.renew_lease(
                        session, self.sweep, self.token, now, now + timedelta(seconds=self.ttl_s)
                    )
            except SQLAlchemyError:
                continue
            if not still_ours:
                self._lost = InfrastructureError(
                    f"sweep {self.sweep!r} was taken over by another driver after this one stopped renewing its "
                    "lease; this driver stops (finished points are kept)",
                    retryable=False,
                )
                return

    def raise_if_lost(self) -> None:
        """Stop this driver (raise) once the heartbeat found its lease held by another."""
        if self._lost is not None:
            raise self._lost

    def release(self) -> None:
        self._stopped.set()
        if self._heartbeat is not None and self._heartbeat is not threading.current_thread():
            self._heartbeat.join(timeout=30)
        with contextlib.suppress(SQLAlchemyError), open_session(self.engine) as session:  # else it expires
            recording.release_lease(session, self.sweep, self.token)
