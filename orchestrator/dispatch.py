"""Ray dispatch: each Job runs as a Ray generator task on a node of its hardware pool.

The remote side is thin (it calls the runner and forwards its events); the driver polls every job's
event stream with one `ray.wait` and hands the events to the single DB writer. Ray is imported
only here, so the hub and the analysis library never need it.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import ray
from ray.exceptions import (
    LocalRayletDiedError,
    NodeDiedError,
    ObjectLostError,
    OwnerDiedError,
    RayError,
    RayTaskError,
    TaskCancelledError,
    WorkerCrashedError,
)

from recipes.hardware import pool_resource_name
from runners.job import ErrorInfo, JobEvent, JobSpec
from runners.registry import runner_for

# Faults of the machinery, not of the benchmark: a new attempt may succeed. Any other error of Ray's own (not a task's)
# is one too: the driver's raylet dying with the node's RuntimeEnvAgent raised LocalRayletDiedError out of the sweep.
_RETRYABLE_RAY_ERRORS = (WorkerCrashedError, NodeDiedError, ObjectLostError, OwnerDiedError, LocalRayletDiedError)


# Ray's built-in node label carrying the node id: lets a retry avoid the node an attempt failed on.
NODE_ID_LABEL = "ray.io/node-id"


@ray.remote(max_retries=0, num_cpus=0)
def _run_job_remote(job_json: str) -> Iterator[str]:
    """Runs on a node of the job's pool. Idempotent per run id; events travel as JSON."""
    job = JobSpec.model_validate_json(job_json)
    node_id = ray.get_runtime_context().get_node_id()
    placed = JobEvent(
        kind="job_placed",
        job_id=job.job_id,
        node_id=node_id,
        message=f"{socket.gethostname()} (ray node {node_id[:12]})",
    )
    yield placed.model_dump_json()
    for event in runner_for(job.recipe.runner.kind).run_job(job):
        yield event.model_dump_json()


@dataclass
class Delivery:
    """One item from a job's stream: an event, or the end of the stream (event None)."""

    job_id: str
    event: JobEvent | None


@dataclass
class _CapacityCache:
    """Pool capacities read from the cluster at most once a second (a GCS round trip each time)."""

    read_at: float = -1.0
    capacity: dict[str, float] = field(default_factory=dict)


class Dispatcher:
    def __init__(
        self, address: str | None = None, local_pool: str = "cpu-local", extra_slots: dict[str, int] | None = None
    ) -> None:
        self.address = address or os.environ.get("RAY_ADDRESS")
        self.local_pool = local_pool
        # Pools this driver's node serves through inventory targets (SSH hosts, Slurm clusters).
        self.extra_slots = extra_slots or {}
        self._running: dict[str, ray.ObjectRefGenerator] = {}
        self._job_of: dict[int, str] = {}  # id() of a job's stream -> its job id
        self._started_here = False
        self._capacity = _CapacityCache()

    def start(self) -> None:
        if ray.is_initialized():
            return
        if self.address:
            _use_token_auth_when_available()
            ray.init(address=self.address, configure_logging=False, log_to_driver=False)
        else:
            # A one-node cluster for this machine: its pool slot lets one job run at a time here, plus
            # one slot per inventory target, whose jobs run here and reach their machines remotely.
            resources = {pool_resource_name(self.local_pool): 1.0}
            for hardware, slots in self.extra_slots.items():
                name = pool_resource_name(hardware)
                resources[name] = resources.get(name, 0.0) + slots
            ray.init(
                # "local": a new instance even where `ray start` left a cluster running on this machine (Ray
                # would otherwise join the latest one it finds, and refuse our resources there).
                address="local",
                resources=resources,
                include_dashboard=False,
                configure_logging=False,
                log_to_driver=False,
            )
            self._started_here = True

    def pool_capacity(self, hardware: str) -> float:
        """Jobs the live cluster can run at once on this hardware pool."""
        now = time.monotonic()
        if now - self._capacity.read_at > 1.0:
            self._capacity = _CapacityCache(now, dict(ray.cluster_resources()))
        return float(self._capacity.capacity.get(pool_resource_name(hardware), 0.0))

    def _nodes_offering(self, hardware: str) -> set[str]:
        name = pool_resource_name(hardware)
        return {node["NodeID"] for node in ray.nodes() if node.get("Alive") and node["Resources"].get(name, 0) > 0}

    def submit(self, job: JobSpec, avoid_nodes: list[str] | None = None) -> None:
        """Start the job on its pool; on a retry, off the nodes an earlier attempt failed on when others exist."""
        options: dict[str, object] = {"resources": {pool_resource_name(job.recipe.hardware): 1}}
        if avoid_nodes and self._nodes_offering(job.recipe.hardware) - set(avoid_nodes):
            options["label_selector"] = {NODE_ID_LABEL: f"!in({','.join(avoid_nodes)})"}
        generator = _run_job_remote.options(**options).remote(job.model_dump_json())
        self._running[job.job_id] = generator
        self._job_of[id(generator)] = job.job_id

    def poll(self, timeout_s: float) -> list[Delivery]:
        """Events that have arrived from running jobs, waiting up to `timeout_s` for the first one.

        One `ray.wait` over every job's stream, in the caller's thread: no thread per job, so the driver
        scales to thousands of jobs and nothing competes with it for the interpreter."""
        if not self._running:
            time.sleep(timeout_s)
            return []
        streams = list(self._running.values())
        ready, _ = ray.wait(streams, num_returns=1, timeout=timeout_s, fetch_local=False)
        if ready and len(streams) > 1:
            ready, _ = ray.wait(streams, num_returns=len(streams), timeout=0, fetch_local=False)
        deliveries: list[Delivery] = []
        for generator in ready:
            deliveries.extend(self._take(generator))
        return deliveries

    def _take(self, generator: ray.ObjectRefGenerator) -> list[Delivery]:
        """The next event of a ready stream, or its end (with the failure that ended it, if any)."""
        job_id = self._job_of[id(generator)]
        try:
            reference = next(generator)
            return [Delivery(job_id, JobEvent.model_validate_json(ray.get(reference)))]
        except StopIteration:
            ended: list[Delivery] = []
        except RayError as error:  # cancelled, the runner's own exception, or the machinery's fault
            ended = [Delivery(job_id, _failure_event(job_id, error))]
        self._running.pop(job_id, None)
        self._job_of.pop(id(generator), None)
        return [*ended, Delivery(job_id, None)]

    def cancel(self, job_id: str) -> None:
        """Ask a running job to stop; its stream then ends with a cancelled failure."""
        generator = self._running.get(job_id)
        if generator is not None:
            ray.cancel(generator)

    def forget(self, job_id: str) -> None:
        """Cancel a job and stop watching its stream: for a task no live node will ever run, whose stream may
        never end."""
        generator = self._running.pop(job_id, None)
        if generator is not None:
            self._job_of.pop(id(generator), None)
            ray.cancel(generator)

    def cancel_all(self, wait_s: float = 60.0) -> list[Delivery]:
        """Cancel running jobs (their runners stop the engines in `finally`); wait for the streams to end.

        Returns what arrived meanwhile, for the caller to record (a Point may finish as it is cancelled)."""
        for generator in list(self._running.values()):
            ray.cancel(generator)
        deadline = time.monotonic() + wait_s
        arrived: list[Delivery] = []
        while self._running and time.monotonic() < deadline:
            arrived.extend(self.poll(0.2))
        return arrived

    def shutdown(self) -> None:
        if self._started_here and ray.is_initialized():
            ray.shutdown()


def _use_token_auth_when_available() -> None:
    """Ray 2.60 clusters started with `ray start --head` require token auth, but a driver given an explicit
    address only uses it when told to: do so when a token is at hand and the user chose nothing."""
    if "RAY_AUTH_MODE" in os.environ:
        return
    token_file = Path(os.environ.get("RAY_AUTH_TOKEN_PATH", Path.home() / ".ray" / "auth_token"))
    if os.environ.get("RAY_AUTH_TOKEN") or token_file.is_file():
        os.environ["RAY_AUTH_MODE"] = "token"


def _failure_event(job_id: str, error: Exception) -> JobEvent:
    if isinstance(error, TaskCancelledError) or (
        isinstance(error, RayTaskError) and isinstance(error.cause, TaskCancelledError)
    ):
        info = ErrorInfo(kind="Cancelled", message="job cancelled", retryable=False)
    elif isinstance(error, _RETRYABLE_RAY_ERRORS) or (
        isinstance(error, RayError) and not isinstance(error, RayTaskError)
    ):
        info = ErrorInfo(kind=type(error).__name__, message=str(error)[:2000], retryable=True)
    else:
        # An exception escaped the runner: a bug, not a flaky host. Record it; do not retry.
        info = ErrorInfo(kind=type(error).__name__, message=str(error)[-4000:], retryable=False)
    return JobEvent(kind="job_failed", job_id=job_id, message=info.message, error=info)
