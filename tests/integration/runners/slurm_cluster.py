"""A real single-node Slurm (Debian `slurm-wlm` + `munge`) started by the tests that need it.

Import `slurm_cluster` into a test module to use it (this is a plain module, not a conftest): the
fixture is session-scoped, installs the packages when they are missing (skips when that is impossible,
fails under CI=true), starts a private munged (own key and socket, see `_start_munged`), writes a
slurm.conf into a temporary directory, starts slurmctld and slurmd on free ports, and stops everything it started afterwards.
Every Slurm command must be run with `cluster.env` (SLURM_CONF).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.integration.services import one_install_at_a_time

READY_TIMEOUT_S = 60.0


@dataclass
class SlurmCluster:
    directory: Path
    conf: Path
    node: str
    daemons: list[subprocess.Popen[bytes]] = field(default_factory=list)  # slurmctld, slurmd
    munged: subprocess.Popen[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def run(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(argv), env={**os.environ, **self.env}, capture_output=True, text=True, timeout=timeout, check=False
        )

    def queued(self) -> dict[str, str]:
        """Job id -> job name of every job squeue still lists (pending, running, completing)."""
        listing = self.run("squeue", "-h", "-o", "%i %j").stdout
        return dict(line.split(" ", 1) for line in listing.splitlines() if line.strip())

    def wait_gone(self, slurm_id: str, timeout_s: float = 15.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if slurm_id not in self.queued():
                return True
            time.sleep(0.25)
        return False


def _ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def _unavailable(reason: str) -> None:
    if _ci():
        pytest.fail(f"Slurm is required under CI=true: {reason}")
    pytest.skip(reason)


def _ensure_installed() -> None:
    if shutil.which("slurmctld") and shutil.which("munged"):
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        _unavailable("slurm-wlm and munge are not installed, and apt-get (as root) is not available to install them")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with one_install_at_a_time():  # the Docker group's worker may be installing at the same time
        for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "slurm-wlm", "munge"]):
            try:
                done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
            except subprocess.TimeoutExpired:
                _unavailable(f"{' '.join(argv)} did not finish within 600 s")
            if done.returncode != 0:
                _unavailable(f"{' '.join(argv)} failed:\n{(done.stdout + done.stderr)[-2000:]}")
    if not (shutil.which("slurmctld") and shutil.which("munged")):
        _unavailable("apt-get installed slurm-wlm and munge, but slurmctld/munged are still not on PATH")


def _start_munged(directory: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """A private munged (own key, socket, pid and log files): nothing shared with another test session
    or with a system munged, so nobody else's teardown can stop it under us. Slurm reaches it through
    `AuthInfo=socket=...` in slurm.conf."""
    munge_dir = directory / "munge"
    munge_dir.mkdir(mode=0o700)
    key = munge_dir / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    socket_path = munge_dir / "munge.socket"
    argv = [
        "munged", "--foreground", "--force", f"--socket={socket_path}", f"--key-file={key}",
        f"--pid-file={munge_dir / 'munged.pid'}", f"--log-file={munge_dir / 'munged.log'}",
        f"--seed-file={munge_dir / 'munged.seed'}", "--num-threads=4",
    ]  # fmt: skip
    with open(munge_dir / "munged.stdout", "wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    for _ in range(100):
        if process.poll() is not None:
            break
        probe = subprocess.run(["munge", "-n", "-S", str(socket_path)], capture_output=True, timeout=5, check=False)
        if probe.returncode == 0:
            return process, socket_path
        time.sleep(0.1)
    process.kill()
    process.wait(timeout=10)
    log = (munge_dir / "munged.log").read_text(errors="replace") if (munge_dir / "munged.log").exists() else ""
    _unavailable(f"munged did not start ({' '.join(argv)}):\n{log[-2000:]}")
    raise AssertionError("unreachable")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _write_conf(directory: Path, host: str, munge_socket: Path, nodes: list[str]) -> Path:
    """slurm.conf for `nodes` on this machine. One node is the machine itself (SlurmdPort); several are one
    slurmd each (`slurmd -N NAME`, Debian builds Slurm with multiple-slurmd support), each on a port of its own,
    with its own spool, pid and log files (`%n` is the node's name). Each node gets one of the two CPUs."""
    conf = directory / "slurm.conf"
    several = len(nodes) > 1
    lines = [
        "ClusterName=infersweep-test",
        f"SlurmctldHost={host}",
        f"SlurmctldPort={_free_port()}",
        *([] if several else [f"SlurmdPort={_free_port()}"]),
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        f"AuthInfo=socket={munge_socket}",
        f"StateSaveLocation={directory / 'state'}",
        f"SlurmdSpoolDir={directory / 'spool'}" + ("-%n" if several else ""),
        f"SlurmctldPidFile={directory / 'slurmctld.pid'}",
        f"SlurmdPidFile={directory / 'slurmd'}" + ("-%n" if several else "") + ".pid",
        f"SlurmctldLogFile={directory / 'slurmctld.log'}",
        f"SlurmdLogFile={directory / 'slurmd'}" + ("-%n" if several else "") + ".log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "ReturnToService=2",
        "MpiDefault=none",
        "KillWait=5",  # scancel: SIGTERM, then SIGKILL 5 s later (the default 30 s slows the tests)
        "SlurmdTimeout=30",
        "InactiveLimit=0",
        "JobAcctGatherType=jobacct_gather/none",
    ]
    if several:
        lines += [
            f"NodeName={node} NodeHostname={host} NodeAddr=127.0.0.1 Port={_free_port()} CPUs=1 RealMemory=8000 "
            "State=UNKNOWN"
            for node in nodes
        ]
    else:
        lines.append(f"NodeName={host} CPUs=2 RealMemory=20000 State=UNKNOWN")
    lines.append(f"PartitionName=debug Nodes={','.join(nodes)} Default=YES MaxTime=INFINITE State=UP")
    (directory / "state").mkdir()
    for spool in [f"spool-{node}" for node in nodes] if several else ["spool"]:
        (directory / spool).mkdir()
    conf.write_text("\n".join(lines) + "\n")
    return conf


def _wait_idle(cluster: SlurmCluster) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    state = ""
    while time.monotonic() < deadline:
        for daemon in cluster.daemons:
            if daemon.poll() is not None:
                raise RuntimeError(f"{daemon.args[0]} exited with {daemon.returncode}; see {cluster.directory}")
        state = cluster.run("sinfo", "-h", "-o", "%t").stdout.strip()
        if state == "idle":
            return
        time.sleep(0.5)
    raise RuntimeError(f"the Slurm node is not idle after {READY_TIMEOUT_S:g} s (sinfo: {state!r})")


def _processes_with_env(entry: str) -> list[int]:
    marker = entry.encode()
    pids = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        with contextlib.suppress(OSError):
            if marker in environ.read_bytes().split(b"\0") and int(environ.parent.name) != os.getpid():
                pids.append(int(environ.parent.name))
    return pids


def _stop(cluster: SlurmCluster) -> None:
    with contextlib.suppress(subprocess.TimeoutExpired, OSError):
        cluster.run("scancel", "--user=root")
        cluster.run("scontrol", "shutdown")
    for daemon in cluster.daemons:
        try:
            daemon.wait(timeout=20)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait(timeout=10)
    # slurmstepd (and a job's processes) outlive slurmd by design; everything started under this
    # cluster carries its SLURM_CONF, which no other process on the machine has.
    for pid in _processes_with_env(f"SLURM_CONF={cluster.conf}"):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if cluster.munged is not None:
        cluster.munged.terminate()
        try:
            cluster.munged.wait(timeout=10)
        except subprocess.TimeoutExpired:
            cluster.munged.kill()
            cluster.munged.wait(timeout=10)


def _cluster(directory: Path, nodes: list[str] | None = None) -> Iterator[SlurmCluster]:
    """A running cluster of `nodes` (default: this machine as its one node), stopped afterwards."""
    _ensure_installed()
    munged, munge_socket = _start_munged(directory)
    host = socket.gethostname()
    names = nodes or [host]
    conf = _write_conf(directory, host, munge_socket, names)
    cluster = SlurmCluster(directory=directory, conf=conf, node=names[0], munged=munged)
    env = {**os.environ, **cluster.env}
    daemons = [["slurmctld", "-D"]] + (
        [["slurmd", "-D", "-N", name] for name in names] if nodes else [["slurmd", "-D"]]
    )
    try:
        for argv in daemons:
            with open(directory / f"{'-'.join([argv[0], *argv[3:]])}.stdout", "wb") as out:  # slurmd-node-a
                cluster.daemons.append(
                    subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
                )
            if argv[0] == "slurmctld":
                time.sleep(0.5)  # slurmd registers with the controller: give it a head start
        _wait_idle(cluster)
    except BaseException:
        _stop(cluster)
        raise
    try:
        yield cluster
    finally:
        _stop(cluster)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """This machine as a one-node cluster."""
    yield from _cluster(tmp_path_factory.mktemp("slurm"))


@pytest.fixture(scope="session")
def slurm_two_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """Two nodes, `node-a` and `node-b`, both slurmds on this machine (one CPU each): multi-node allocations."""
    yield from _cluster(tmp_path_factory.mktemp("slurm-two"), ["node-a", "node-b"])
