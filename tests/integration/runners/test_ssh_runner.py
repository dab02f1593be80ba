"""The ssh runner against a real sshd on loopback: measure, refuse a changed host key, survive a dropped link."""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from pathlib import Path

import pytest

from orchestrator.plan import expand_points
from recipes.loader import parse_recipe
from runners.fleet.inventory import SshTarget
from runners.job import JobEvent, JobSpec
from runners.ssh.runner import SshRunner
from runners.ssh.transport import SshSession
from tests.conftest import SIMULATED_RECIPE, deep_update, processes_of_runs
from tests.integration.runners.conftest import Sshd

pytestmark = [pytest.mark.timeout(60)]


def make_job(tmp_path: Path, targets: list, changes: dict | None = None, runner: str = "ssh") -> JobSpec:
    data = deep_update(SIMULATED_RECIPE, {"runner": {"kind": runner}, "workload": {"concurrency": [1]}})
    loaded = parse_recipe(deep_update(data, changes or {}), str(tmp_path / "recipe.yaml"))
    job_id = f"ssh-test-{uuid.uuid4().hex[:10]}"
    return JobSpec(
        job_id=job_id, sweep="ssh-test", recipe=loaded.recipe, points=expand_points(loaded)[:1],
        log_dir=str(tmp_path / "logs" / job_id), targets=targets,
    )  # fmt: skip


def ssh_target(sshd: Sshd, tmp_path: Path, name: str = "loopback", **access: object) -> SshTarget:
    return SshTarget(
        kind="ssh", name=name, hardware="cpu-local", ssh=sshd.access(**access),
        install=sshd.install(tmp_path / "remote-workdir"),
    )  # fmt: skip


def agents_of(workdir: Path) -> list[int]:
    """Live remote agents started with this INFERSWEEP_HOME (the runner passes it through env(1))."""
    marker = f"INFERSWEEP_HOME={workdir}".encode()
    pids = []
    for process in Path("/proc").glob("[0-9]*"):
        try:
            is_agent = b"runners.agent" in (process / "cmdline").read_bytes().split(b"\0")
            if is_agent and marker in (process / "environ").read_bytes().split(b"\0"):
                pids.append(int(process.name))
        except OSError:
            continue  # ended while we looked
    return pids


def wait_gone(job_id: str, workdir: Path, within_s: float) -> list[int]:
    """Engines of the job and agents of the workdir still alive after `within_s` seconds."""
    deadline = time.monotonic() + within_s
    while (left := processes_of_runs(job_id) + agents_of(workdir)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def test_ssh_runner_measures_a_point(sshd: Sshd, tmp_path: Path) -> None:
    target = ssh_target(sshd, tmp_path)
    job = make_job(tmp_path, [target])
    events = list(SshRunner().run_job(job))
    kinds = [event.kind for event in events]
    failures = [event.message for event in events if event.kind == "job_failed"]
    assert not failures, failures
    assert kinds[0] == "job_placed"
    assert events[0].message == f"loopback (root@127.0.0.1:{sshd.port}, hardware cpu-local)"
    assert kinds.count("job_placed") == 1  # the agent's own placement is logged, not forwarded
    assert {"engine_ready", "point_started", "point_finished"} <= set(kinds)
    assert kinds[-1] == "job_finished"
    outcome = next(event.outcome for event in events if event.kind == "point_finished")
    assert outcome is not None and outcome.point_key == job.points[0].point_key
    assert outcome.origin == "simulated"
    assert outcome.metrics.validity.valid, outcome.metrics.validity.reasons
    assert outcome.metrics.completed == 10
    assert len(outcome.records) == 12
    # The simulated engine logs nothing; the file is fetched all the same (content: test_session_commands).
    remote_log = tmp_path / "remote-workdir" / "logs" / job.job_id / "engine.log"
    assert (Path(job.log_dir) / "engine.log").read_bytes() == remote_log.read_bytes()
    assert "[event] job_placed agent on" in (Path(job.log_dir) / "agent.log").read_text()
    assert wait_gone(job.job_id, tmp_path / "remote-workdir", 5) == []


def test_changed_host_key_is_refused(sshd: Sshd, tmp_path: Path) -> None:
    wrong = tmp_path / "known_hosts"
    # Another ed25519 key (the user's) stands in for the host's: what a reinstalled or spoofed host shows.
    user_key = sshd.key_path.with_suffix(".pub").read_text().split()
    wrong.write_text(f"[127.0.0.1]:{sshd.port} {user_key[0]} {user_key[1]}\n")
    job = make_job(tmp_path, [ssh_target(sshd, tmp_path, known_hosts=str(wrong))])
    events = list(SshRunner().run_job(job))
    assert [event.kind for event in events] == ["job_placed", "job_failed"]
    error = events[-1].error
    assert error is not None and error.kind == "ConfigurationError" and error.retryable is False
    assert f"SSH host key of 127.0.0.1:{sshd.port} does not match known_hosts file {wrong}: " in error.message
    assert "the server offered ssh-ed25519 'SHA256:" in error.message
    assert f"(ssh-keygen -R '[127.0.0.1]:{sshd.port}' -f {wrong})" in error.message


def test_unknown_host_refused_key_and_closed_port(sshd: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    with pytest.raises(Exception) as unknown:
        SshSession(sshd.access(known_hosts=str(empty))).open()
    assert unknown.type.__name__ == "ConfigurationError"
    assert str(unknown.value) == (
        f"SSH host 127.0.0.1:{sshd.port} ([127.0.0.1]:{sshd.port}) is not in known_hosts file {empty}; verify its "
        f"host key out of band, then add it: ssh-keyscan -p {sshd.port} 127.0.0.1 >> {empty}"
    )
    monkeypatch.setenv("OTHER_KEY", str(sshd.directory / "hostkey"))  # a valid key that is not authorized
    with pytest.raises(Exception) as refused:
        SshSession(sshd.access(identity_file_env="OTHER_KEY")).open()
    assert refused.type.__name__ == "ConfigurationError"
    assert str(refused.value) == (
        f"SSH authentication as 'root' on 127.0.0.1:{sshd.port} failed with key file {sshd.directory / 'hostkey'} "
        "(from $OTHER_KEY): Authentication failed."
    )
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    job = make_job(tmp_path, [ssh_target(sshd, tmp_path, port=closed)])
    failed = list(SshRunner().run_job(job))[-1]
    assert failed.error is not None and failed.error.retryable is True
    assert failed.error.kind == "InfrastructureError"
    assert failed.message.startswith(f"cannot connect to SSH at loopback (root@127.0.0.1:{closed}): ")


def test_session_commands(sshd: Sshd, tmp_path: Path) -> None:
    with SshSession(sshd.access(), name="loopback") as session:
        result = session.run(
            ["sh", "-c", 'printf "%s|%s" "$1" "$GREETING"', "x", "it's a; $(test)"], env={"GREETING": "hi"}
        )
        assert (result.returncode, result.stdout) == (0, "it's a; $(test)|hi")
        assert session.run(["cat"], input_text="piped").stdout == "piped"
        assert session.run(["false"]).returncode == 1
        remote = tmp_path / "remote" / "dir" / "file.txt"
        session.write_text(str(remote), "hello\nworld\n")
        assert remote.read_text() == "hello\nworld\n"
        assert session.read_text(str(remote), offset=6) == "world\n"
        assert session.read_text(str(tmp_path / "missing")) == ""
        assert session.fetch(str(remote), tmp_path / "local" / "copy.txt")
        assert (tmp_path / "local" / "copy.txt").read_text() == "hello\nworld\n"
        assert not session.fetch(str(tmp_path / "missing"), tmp_path / "local" / "missing.txt")
        assert not (tmp_path / "local" / "missing.txt").exists()


def test_dropped_connection_fails_retryably_and_stops_the_engine(sshd: Sshd, tmp_path: Path) -> None:
    slow = {"engine": {"simulated": {"itl_ms": 20.0}}, "workload": {"sequences": [{"isl": 256, "osl": 256}]}}
    job = make_job(tmp_path, [ssh_target(sshd, tmp_path)], slow)
    before = set(sshd.session_pids())
    events: list[JobEvent] = []
    killed: list[int] = []

    def kill_sessions() -> None:
        for pid in set(sshd.session_pids()) - before:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    for event in SshRunner().run_job(job):
        events.append(event)
        if event.kind == "point_started":
            threading.Timer(1.0, kill_sessions).start()
    kinds = [event.kind for event in events]
    assert killed, "no sshd session process was found to kill"
    assert "point_finished" not in kinds
    assert kinds[-1] == "job_failed", kinds
    error = events[-1].error
    assert error is not None and error.kind == "InfrastructureError" and error.retryable is True
    # Which side notices first is timing: the channel closing without an exit status, or the connection found
    # closed while waiting for output. Either way the message says what was running.
    assert events[-1].message in {
        f"SSH connection to loopback (root@127.0.0.1:{sshd.port}) dropped while running "
        f"'{sshd.install(tmp_path).python} -m runners.agent ...' ({detail})"
        for detail in ("the channel closed without an exit status", "the connection closed")
    }, events[-1].message
    assert (Path(job.log_dir) / "engine.log").is_file(), "the engine log is fetched over a new connection"
    assert wait_gone(job.job_id, tmp_path / "remote-workdir", 20) == [], (
        "the agent did not stop its engine after the connection dropped"
    )


def test_cancel_closes_the_channel_and_the_agent_stops_its_engine(sshd: Sshd, tmp_path: Path) -> None:
    """Ray cancels a task by raising KeyboardInterrupt in it: the runner must let it through, and the
    closed channel must make the remote agent stop its engine."""
    slow = {"engine": {"simulated": {"itl_ms": 20.0}}, "workload": {"sequences": [{"isl": 256, "osl": 256}]}}
    job = make_job(tmp_path, [ssh_target(sshd, tmp_path)], slow)
    seen: list[str] = []
    main = threading.main_thread().ident
    assert main is not None
    with pytest.raises(KeyboardInterrupt):
        for event in SshRunner().run_job(job):
            seen.append(event.kind)
            if event.kind == "point_started":
                assert processes_of_runs(job.job_id), "the engine should be running while a Point runs"
                # Interrupt while the runner waits for the agent's next line, as Ray's cancel does.
                threading.Timer(1.0, signal.pthread_kill, (main, signal.SIGINT)).start()
    assert "point_started" in seen and "point_finished" not in seen
    assert wait_gone(job.job_id, tmp_path / "remote-workdir", 20) == [], "the agent did not stop its engine"


def test_a_wrong_install_python_is_a_configuration_error(sshd: Sshd, tmp_path: Path) -> None:
    target = ssh_target(sshd, tmp_path)
    target = target.model_copy(update={"install": target.install.model_copy(update={"python": "/nonexistent/python"})})
    events = list(SshRunner().run_job(make_job(tmp_path, [target])))
    assert [event.kind for event in events] == ["job_placed", "job_failed"]
    error = events[-1].error
    assert error is not None and error.kind == "ConfigurationError" and error.retryable is False
    assert error.message.startswith(
        "install.python of loopback: got '/nonexistent/python'; it could not start the agent "
        "(`-m runners.agent`, exit status 127); stderr tail:\n"
    )
    assert "No such file or directory" in error.message
