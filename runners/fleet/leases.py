"""Leases on inventory targets: one job at a time per SSH host or TPU VM, per Slurm slot.

Ray counts a pool's slots (one per target), but not *which* target a job took; a lease file per
target, locked with flock on the host that runs the runner tasks, picks a free one. The lock dies
with its process, so a killed worker never leaves a target leased.
"""

from __future__ import annotations

import contextlib
import fcntl
import time
from collections.abc import Iterator, Sequence
from typing import TypeVar

from recipes.errors import InfrastructureError
from runners.fleet.inventory import SlurmTarget, SshTarget, TpuVmTarget
from runners.host.paths import data_dir

T = TypeVar("T", bound=SshTarget | TpuVmTarget | SlurmTarget)


def _slots(target: SshTarget | TpuVmTarget | SlurmTarget) -> int:
    return target.concurrent_jobs if isinstance(target, SlurmTarget) else 1


@contextlib.contextmanager
def lease_target(targets: Sequence[T], avoid: Sequence[str] = (), wait_s: float = 60.0) -> Iterator[T]:
    """Hold a free target for the duration of the block, preferring those not in `avoid`."""
    if not targets:
        raise InfrastructureError("no inventory target to lease", retryable=False)
    ordered = [t for t in targets if t.name not in avoid] + [t for t in targets if t.name in avoid]
    directory = data_dir() / "leases"
    directory.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_s
    while True:
        for target in ordered:
            for slot in range(_slots(target)):
                handle = open(directory / f"{target.name}.{slot}.lock", "w")  # noqa: SIM115 - held while leased
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    handle.close()
                    continue
                try:
                    yield target
                finally:
                    fcntl.flock(handle, fcntl.LOCK_UN)
                    handle.close()
                return
        if time.monotonic() > deadline:
            names = ", ".join(t.name for t in targets)
            raise InfrastructureError(f"every target of this pool is busy after {wait_s:g} s: {names}")
        time.sleep(0.5)
