"""A real multi-node Ray cluster on this machine (`ray start --head` plus `ray start --address`):
jobs land only on their pool's nodes, a pool nobody offers fails fast, and a node killed mid-job
moves the job to the other node of its pool.

Topology: the head offers pool B (`b200`), two worker nodes offer pool A (`h100`). The node killed in
the last test is always a worker, never the head (the driver and the GCS live there). The cluster is
shared by the module and that test leaves one A node dead, so it stays last in the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest

from db import reads, recording
from db.models import JobRow
from db.session import make_engine, migrate, open_session
from runners.host.process import pick_free_port, running_engines
from tests.conftest import ROOT, processes_of_runs, run_cli

RAY = Path(sys.executable).parent / "ray"
POOL_A, POOL_B = "h100", "b200"
# The GCS declares a node dead after ~initial delay + threshold x period; the defaults take ~30 s.
HEALTH_CHECKS = {
    "RAY_health_check_initial_delay_ms": "1000",
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "3",
}
# Small object stores: the default is 30% of RAM per node, in /dev/shm.
NODE_ARGS = [
    "--block", "--num-cpus=1", "--object-store-memory=157286400", "--disable-usage-stats",
    # Every node of the machine needs its own ports: 0 lets each pick free ones.
    "--min-worker-port=0", "--max-worker-port=0", "--dashboard-agent-listen-port=0", "--dashboard-agent-grpc-port=0",
    "--metrics-export-port=0", "--runtime-env-agent-port=0",
]  # fmt: skip


@dataclass
class RayNode:
    name: str
    pool: str
    temp_dir: Path
    process: subprocess.Popen[bytes]
    node_id: str = ""

    def pids(self) -> list[int]:
        """Every live process of this node: `ray start` runs in its own session, and Ray's workers
        (their own process groups) stay in it. Engines start their own sessions, so they are not here."""
        session = self.process.pid
        pids = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[3]) == session and fields[0] != "Z":
                    pids.append(int(stat.parent.name))
        return pids

    def kill(self) -> None:
        """SIGKILL the node (raylet, agents, workers) at once, as a lost machine would go."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        for _ in range(50):
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)


@dataclass
class RayCluster:
    address: str
    env: dict[str, str]  # what a driver needs to join (the cluster's auth token)
    nodes: list[RayNode] = field(default_factory=list)

    def node_of(self, host: str | None) -> RayNode:
        """The node a job was placed on, from its `host` ("hostname (ray node <id12>)")."""
        assert host and "(ray node " in host, host
        prefix = host.rsplit("(ray node ", 1)[1].rstrip(")")
        matches = [node for node in self.nodes if node.node_id.startswith(prefix)]
        assert len(matches) == 1, f"{host}: not one node of this cluster ({[n.node_id for n in self.nodes]})"
        return matches[0]


_NODES_SNIPPET = """
import json, sys, time, ray
ray.init(address=sys.argv[1], configure_logging=False, log_to_driver=False)
deadline = time.monotonic() + float(sys.argv[3])
while True:
    alive = [n for n in ray.nodes() if n["Alive"]]
    if len(alive) >= int(sys.argv[2]) or time.monotonic() > deadline:
        break
    time.sleep(0.5)
print(json.dumps([{"id": n["NodeID"], "socket": n["RayletSocketName"], "resources": n["Resources"]} for n in alive]))
"""


def _start_node(name: str, pool: str, root: Path, env: dict[str, str], extra: list[str]) -> RayNode:
    """`ray start --block` in a session of its own: the node's processes are exactly that session's."""
    temp_dir = root / name
    with open(root / f"{name}.log", "wb") as log:
        process = subprocess.Popen(
            [str(RAY), "start", *extra, f"--resources={json.dumps({f'pool:{pool}': 1})}", f"--temp-dir={temp_dir}",
             *NODE_ARGS],
            env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    return RayNode(name, pool, temp_dir, process)


def _logs(root: Path) -> str:
    return "\n".join(f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}" for path in root.glob("*.log"))


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[RayCluster]:
    # A short root: Ray's unix socket paths (under --temp-dir) must stay below ~107 characters.
    root = Path(tempfile.mkdtemp(prefix="rayt-", dir="/tmp"))
    token = root / "token"
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)
    # Ray 2.60 authenticates with a token; a driver joining an explicit address only uses it when
    # RAY_AUTH_MODE=token is set. A token of its own keeps this cluster apart from ~/.ray.
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    env.update(auth)
    env.update(HEALTH_CHECKS)
    port = pick_free_port()
    address = f"127.0.0.1:{port}"
    head_args = [
        "--head", f"--port={port}", f"--ray-client-server-port={pick_free_port()}",
        f"--dashboard-port={pick_free_port()}", "--include-dashboard=false",
    ]  # fmt: skip
    cluster = RayCluster(address, auth)
    try:
        cluster.nodes.append(_start_node("head", POOL_B, root, env, head_args))
        # Workers retry until the head's GCS answers, so they can start at once.
        for name in ("a1", "a2"):
            cluster.nodes.append(_start_node(name, POOL_A, root, env, [f"--address={address}"]))
        listing = subprocess.run(
            [sys.executable, "-c", _NODES_SNIPPET, address, str(len(cluster.nodes)), "60"],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert listing.returncode == 0, listing.stderr[-3000:] + _logs(root)
        for info in json.loads(listing.stdout.strip().splitlines()[-1]):
            for node in cluster.nodes:
                if info["socket"].startswith(f"{node.temp_dir}/"):
                    assert info["resources"].get(f"pool:{node.pool}") == 1, info
                    node.node_id = info["id"]
        missing = [node.name for node in cluster.nodes if not node.node_id]
        assert not missing, f"nodes {missing} did not join the cluster\n{_logs(root)}"
        yield cluster
    finally:
        for node in cluster.nodes:
            node.kill()
        shutil.rmtree(root, ignore_errors=True)


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def _jobs(sweep: str) -> list[JobRow]:
    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        row = reads.sweep_by_name(session, sweep)
        return [] if row is None else reads.jobs_of_sweep(session, row.id)


def _points(sweep: str) -> tuple[dict[str, int], list[str]]:
    """(recorded Points per job, recorded Point keys) of the sweep."""
    engine = make_engine()
    with open_session(engine) as session:
        row = reads.sweep_by_name(session, sweep)
        assert row is not None
        return reads.points_per_job(session, row.id), sorted(recording.finished_point_keys(session, row.id))


def _measuring(process: subprocess.Popen[str], sweep: str, within_s: float) -> list[JobRow]:
    """The sweep's jobs once one of them is measuring (the test fails if none is within `within_s`). Not only the
    first: on a loaded machine a first attempt can miss a short placement deadline while Ray starts its worker, and
    its retry is the one that measures (CI, load 8 on 2 cores: PlacementTimeout at 5 s, attempt 2 measured)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline and process.poll() is None:
        jobs = _jobs(sweep)
        if any(job.status == "measuring" for job in jobs):
            return jobs
        time.sleep(0.2)
    pytest.fail(f"the job never started measuring: {process.communicate(timeout=30)}")


def test_jobs_land_only_on_the_nodes_of_their_pool(ray_cluster: RayCluster, write_recipe) -> None:
    sweep = _unique("rc-place")
    names = {_unique("rc-a1"): POOL_A, _unique("rc-a2"): POOL_A, _unique("rc-b"): POOL_B}
    paths = [
        str(write_recipe({"name": name, "hardware": pool, "workload": {"concurrency": [1]}}, name=f"{name}.yaml"))
        for name, pool in names.items()
    ]
    result = run_cli("run", *paths, "--sweep", sweep, "--ray-address", ray_cluster.address, env=ray_cluster.env)
    assert result.returncode == 0, result.stdout + result.stderr
    jobs = _jobs(sweep)
    assert sorted(job.status for job in jobs) == ["succeeded"] * 3
    placed: dict[str, set[str]] = {POOL_A: set(), POOL_B: set()}
    for job in jobs:
        (pool,) = [pool for name, pool in names.items() if job.id.startswith(f"{name}-")]
        node = ray_cluster.node_of(job.host)
        assert node.pool == pool, f"{job.id} (pool {pool}) ran on {node.name}, a node of pool {node.pool}"
        placed[pool].add(node.name)
    # Each A node offers one slot, so the two A jobs ran side by side, one on each.
    assert placed == {POOL_A: {"a1", "a2"}, POOL_B: {"head"}}


def test_a_pool_nobody_offers_fails_fast(ray_cluster: RayCluster, write_recipe) -> None:
    name = _unique("rc-nopool")
    started = time.monotonic()
    result = run_cli(
        "run", str(write_recipe({"name": name, "hardware": "mi355x"})), "--sweep", name,
        "--ray-address", ray_cluster.address, env=ray_cluster.env, timeout=60,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert result.returncode == 1, result.stdout + result.stderr
    assert "no node of the Ray cluster offers pool 'mi355x'" in result.stderr
    assert elapsed < 30, f"took {elapsed:.1f} s"
    assert [(job.status, job.error_kind) for job in _jobs(name)] == [("failed", "NoCapacity")]


def test_killing_a_node_mid_job_moves_the_job_to_the_other_node_of_its_pool(
    ray_cluster: RayCluster, write_recipe
) -> None:
    # Slow Points (32 tokens at 25 ms: ~0.8 s a request) so the job is surely measuring when its node dies.
    name = _unique("rc-kill")
    recipe = write_recipe(
        {
            "name": name,
            "hardware": POOL_A,
            "engine": {"simulated": {"itl_ms": 25}},
            "workload": {"concurrency": [1, 2, 4]},
        }
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "run", str(recipe), "--sweep", name,
         "--ray-address", ray_cluster.address, "--retry-backoff", "0.5"],
        cwd=ROOT, env={**os.environ, "COLUMNS": "200", **ray_cluster.env},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        jobs = _measuring(process, name, within_s=60)
        victim = ray_cluster.node_of(jobs[0].host)
        assert victim.pool == POOL_A and victim.name != "head"
        killed_at = datetime.now(UTC)
        victim.kill()
        # The engine runs in its own session: it outlives its node's Ray worker, an orphan to reap.
        assert processes_of_runs(jobs[0].id), "the engine of the killed attempt died with its node"
        stdout, stderr = process.communicate(timeout=90)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()

    assert process.returncode == 0, stdout + stderr
    first, second = _jobs(name)
    assert (first.attempt, first.status, first.retryable) == (1, "failed", True), first
    assert first.error_kind in {"NodeDiedError", "WorkerCrashedError"}, (first.error_kind, first.error_message)
    assert ray_cluster.node_of(first.host) is victim
    assert first.finished_at is not None
    noticed_s = (first.finished_at.replace(tzinfo=first.finished_at.tzinfo or UTC) - killed_at).total_seconds()
    assert noticed_s < 20, f"the node's death was noticed after {noticed_s:.1f} s (health checks shortened?)"
    assert (second.attempt, second.status) == (2, "succeeded")
    survivor = ray_cluster.node_of(second.host)
    assert survivor.pool == POOL_A and survivor is not victim
    per_job, keys = _points(name)
    assert len(keys) == 3 and sum(per_job.values()) == 3, (per_job, keys)
    assert set(per_job) <= {first.id, second.id} and per_job.get(second.id, 0) >= 1
    # Reaped: by the next launch on this host or at the end of the sweep (same INFERSWEEP_HOME pidfiles).
    assert processes_of_runs(f"{name}-") == []
    assert [entry for entry in running_engines() if str(entry["run_id"]).startswith(f"{name}-")] == []


def _descendants(root: int) -> dict[int, str]:
    """pid -> command line of every live process descending from `root` (its children's children included)."""
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            pid = int(stat.parent.name)
            parents[pid] = int(fields[1])
            commands[pid] = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    found = {}
    for pid in parents:
        ancestor = parents.get(pid)
        while ancestor and ancestor != root:
            ancestor = parents.get(ancestor)
        if ancestor == root:
            found[pid] = commands[pid]
    return found


def test_a_lost_local_node_fails_the_job_naming_its_pool_instead_of_queueing_forever(write_recipe) -> None:
    # The fault tour's case: the single local node's RuntimeEnvAgent killed mid-job. Ray takes the node down with it;
    # the job's retry then waited in the queue for a pool no live node offers, "queued" with no deadline (stopped by
    # hand after 4.5 min). Now it fails once the placement deadline passes, naming the pool.
    name = _unique("lost-node")
    recipe = write_recipe(
        {"name": name, "engine": {"simulated": {"itl_ms": 25}}, "workload": {"concurrency": [1, 2, 4]}}
    )
    process = subprocess.Popen(
        # Retries 3 and 6 s after a failure: by then Ray has marked the node dead, and no live node offers the pool.
        [sys.executable, "-m", "orchestrator.cli", "run", str(recipe), "--sweep", name, "--retry-backoff", "3",
         "--max-attempts", "3", "--placement-timeout", "5"],
        cwd=ROOT, env={**os.environ, "COLUMNS": "200"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        jobs = _measuring(process, name, within_s=90)
        # Only the agent of the Ray instance this test's own `infersweep run` started.
        agents = [pid for pid, command in _descendants(process.pid).items() if "RuntimeEnvAgent" in command]
        assert len(agents) == 1, _descendants(process.pid)
        killed_at = time.monotonic()
        os.kill(agents[0], signal.SIGKILL)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode != 0, stdout + stderr
    assert time.monotonic() - killed_at < 90
    assert "Traceback" not in stderr, stderr
    jobs = _jobs(name)
    assert jobs and all(job.status == "failed" and job.retryable for job in jobs), [
        (job.status, job.error_kind, job.error_message) for job in jobs
    ]
    last = jobs[-1]
    assert last.error_kind == "PlacementTimeout" and last.retryable, (last.error_kind, last.error_message)
    assert "pool 'cpu-local'" in (last.error_message or "") and "placement deadline 5 s" in (last.error_message or "")
    assert "PlacementTimeout" in stderr and "pool 'cpu-local'" in stderr, stderr
