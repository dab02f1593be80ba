"""Engine server processes: launch in their own process group, wait for health, always stop the group.

An engine lives in its own session so a terminal's Ctrl-C does not half-kill it; that makes stopping
it our job. Each launch writes a pidfile keyed by run id; before a new launch, the host reaps engines
whose owning process died (a killed Ray worker never runs its `finally`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recipes.errors import ConfigurationError, InfrastructureError
from runners.host.paths import data_dir

LOG_TAIL_LINES = 30


def pid_dir() -> Path:
    path = data_dir() / "engines-running"
    path.mkdir(parents=True, exist_ok=True)
    return path


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def pick_free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


# What an engine inherits from the runner's environment: where programs, libraries, home and temporary files are;
# which certificate authorities to trust; locale and time zone; which devices and job the scheduler gave it; how
# to reach the container runtime. Nothing else: the runner's environment holds the results database's URL and
# cloud credentials, which no engine needs and /proc/<pid>/environ shows to anyone who can read it. An engine that
# needs more (a model hub token, a proxy, which may carry a password) names it in `engine.env_from`.
INHERITED_NAMES = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM",
        "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE",
        "INFERSWEEP_HOME", "INFERSWEEP_CACHE",
        "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
        "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "TPU_VISIBLE_CHIPS",
        "DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY", "CONTAINER_HOST",
    }
)  # fmt: skip
INHERITED_PREFIXES = ("LC_", "XDG_", "SLURM_")
# A Slurm REST token is a credential, though its name starts like the scheduler's job variables. SLURM_EXPORT_ENV is
# the batch job's `--export` list: an engine step started with srun would export only those names and lose the
# launch's own variables (a Dynamo worker its discovery store); without it srun passes the engine's whole (already
# allow-listed) environment.
NEVER_INHERITED = frozenset({"SLURM_JWT", "SLURM_EXPORT_ENV"})


def inherited(name: str) -> bool:
    """Whether an engine inherits the runner's variable `name` (see INHERITED_NAMES)."""
    return name not in NEVER_INHERITED and (name in INHERITED_NAMES or name.startswith(INHERITED_PREFIXES))


def engine_environment(launch_env: dict[str, str], run_id: str) -> dict[str, str]:
    """The whole environment an engine process starts with: the inherited host variables, the launch's own
    (the adapter's variables and `engine.env_from`'s values), and the run id that marks the process as this run's."""
    host = {name: value for name, value in os.environ.items() if inherited(name)}
    return {**host, **launch_env, "INFERSWEEP_RUN_ID": run_id}


def passed_environment(names: list[str]) -> dict[str, str]:
    """The values of `names` (a recipe's `engine.env_from`) from this process's environment, for the engine's
    launch only: they are never written anywhere. A name that is not set is an error naming it and the host."""
    missing = [name for name in names if name not in os.environ]
    if missing:
        raise ConfigurationError(
            f"engine.env_from: {', '.join(missing)} not set in the runner's environment on host "
            f"{socket.gethostname()!r}; set it where the runner (or the remote agent) runs"
        )
    return {name: os.environ[name] for name in names}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _stat_fields(stat: Path) -> list[str] | None:
    """The fields of a /proc/<pid>/stat after the command name (which is in parentheses and may hold spaces):
    [0] state, [1] ppid, [2] pgrp, ..., [19] starttime. None when the process is gone (or there is no /proc)."""
    try:
        text = stat.read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def _group_processes(pgid: int) -> list[tuple[int, str]]:
    """(pid, state) of every process, zombies included, whose process group is `pgid`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        fields = _stat_fields(stat)
        if fields is not None and int(fields[2]) == pgid:
            found.append((int(stat.parent.name), fields[0]))
    return found


def process_identity(pid: int) -> str | None:
    """Who `pid` is, beyond its number: this boot's id and the process's start time (clock ticks since boot).

    PIDs are reused (a reboot, or just time), so a pidfile's number alone proves nothing; a process with the
    same number and the same start time in the same boot is the same process. None where /proc cannot tell
    (not Linux, or no such process)."""
    boot, fields = _boot_id(), _stat_fields(Path(f"/proc/{pid}/stat"))
    return None if boot is None or fields is None else f"{boot}:{fields[19]}"


def _environment_names_other_run(pid: int, run_id: str) -> bool:
    """True when /proc shows `pid`'s environment and it lacks this run's INFERSWEEP_RUN_ID (every engine process
    is started with it); False when it carries it or cannot be read (another user's process, not Linux)."""
    try:
        environment = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    return f"INFERSWEEP_RUN_ID={run_id}".encode() not in environment


def _owner_gone(info: dict[str, Any]) -> bool:
    """The pidfile's owner no longer runs: no process has its number, or the one that has is another process."""
    owner = int(info["owner_pid"])
    if not _alive(owner):
        return True
    recorded = info.get("owner_identity")
    current = process_identity(owner)
    return recorded is not None and current is not None and current != recorded


def _group_is_ours(info: dict[str, Any]) -> tuple[bool, str]:
    """Whether the pidfile's process group is still the one we started, with the reason when it is not.

    Proven when its leader has the recorded identity, or when the leader is gone but members remain: Linux
    does not hand out a number that is still some process group's id, so those members are the ones we
    started. A pidfile without an identity (written before identities were recorded), one from an earlier
    boot, or a leader with another start time proves nothing, and nothing is killed for it."""
    pgid = int(info["pgid"])
    recorded = info.get("leader_identity")
    if not isinstance(recorded, str):
        return False, "its pidfile records no process identity"
    boot = _boot_id()
    if boot is not None and not recorded.startswith(boot + ":"):
        return False, "it was started before this machine last booted"
    run_id = str(info.get("run_id", ""))
    current = process_identity(pgid)
    if current is not None and current != recorded:
        return False, f"process {pgid} is now another process (started at another time)"
    members = [pgid] if current is not None else [pid for pid, _state in _group_processes(pgid)]
    if not members:
        return False, "the group has no process left"
    if any(_environment_names_other_run(pid, run_id) for pid in members):
        return False, f"process group {pgid} does not carry INFERSWEEP_RUN_ID={run_id}"
    return True, ""


def _only_zombies_in_group(pgid: int) -> bool:
    """True when every process left in the group has exited and merely awaits reaping by its parent.

    An orphaned engine's parent is whoever adopted it (init, a container's PID 1, a test process);
    if that parent never reaps, the dead engine lingers as a zombie and must count as stopped.
    """
    if not Path("/proc").is_dir():
        return False
    return all(state == "Z" for _pid, state in _group_processes(pgid))


def _group_gone(pgid: int, leader: subprocess.Popen[bytes] | None) -> bool:
    if leader is not None:
        leader.poll()  # reap our child: a zombie leader would keep the group "alive" forever
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return _only_zombies_in_group(pgid)


def _kill_group(pgid: int, grace_s: float, leader: subprocess.Popen[bytes] | None = None) -> bool:
    """SIGTERM the group, wait up to `grace_s` for it to vanish, then SIGKILL; True once it is gone."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if _group_gone(pgid, leader):
            return True
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    for _ in range(50):
        if _group_gone(pgid, leader):
            return True
        time.sleep(0.1)
    return False


def _run_stop_argv(info: dict[str, object]) -> bool:
    """Run the pidfile's `stop_argv` (a container engine's `docker rm -f NAME`); True when it succeeded or
    there is none. The process group alone is not the engine when a daemon owns it."""
    argv = info.get("stop_argv")
    if not isinstance(argv, list) or not argv:
        return True
    try:
        completed = subprocess.run([str(arg) for arg in argv], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    stderr = completed.stderr.lower()  # already gone counts as stopped (docker's and podman's wording)
    return completed.returncode == 0 or "no such container" in stderr or "no container with" in stderr


def reap_orphaned_engines(log: Callable[[str], None] = print) -> list[str]:
    """Stop engines whose owner process is gone; return the run ids reaped."""
    reaped = []
    for pidfile in pid_dir().glob("*.json"):
        try:
            info = json.loads(pidfile.read_text())
        except (OSError, json.JSONDecodeError):
            pidfile.unlink(missing_ok=True)
            continue
        if not _owner_gone(info):
            continue
        stopped = _run_stop_argv(info)  # a container named after our run id: ours whatever the group is
        ours, why_not = _group_is_ours(info)
        if not ours:
            log(f"not reaping process group {info['pgid']} of dead run {info['run_id']}: {why_not}; pidfile removed")
            if stopped:
                pidfile.unlink(missing_ok=True)
            continue
        log(f"reaping engine of dead run {info['run_id']} (process group {info['pgid']})")
        if _kill_group(int(info["pgid"]), grace_s=5.0) and stopped:
            pidfile.unlink(missing_ok=True)
        reaped.append(str(info["run_id"]))
    return reaped


def stop_engines_owned_by(owner_pid: int) -> list[str]:
    """Stop the engines this process started (by their pidfiles), whatever its main thread is doing;
    return their run ids. The last resort of a process that must exit now."""
    stopped_runs = []
    for pidfile in pid_dir().glob("*.json"):
        try:
            info = json.loads(pidfile.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if int(info["owner_pid"]) != owner_pid:
            continue
        container_stopped = _run_stop_argv(info)
        if _group_is_ours(info)[0] and not _kill_group(int(info["pgid"]), grace_s=5.0):
            continue  # still running: the pidfile stays for the next run's reaper
        if container_stopped:
            pidfile.unlink(missing_ok=True)
        stopped_runs.append(str(info["run_id"]))
    return stopped_runs


def running_engines() -> list[dict[str, object]]:
    """Pidfiles of engines believed to be running on this host (for tests and `infersweep doctor`)."""
    entries = []
    for pidfile in pid_dir().glob("*.json"):
        with contextlib.suppress(OSError, json.JSONDecodeError):
            entries.append(json.loads(pidfile.read_text()))
    return entries


class EngineProcess:
    """One engine server. Use as a context manager: the process group is stopped on every exit path."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        port: int,
        log_path: Path,
        run_id: str,
        health_path: str = "/health",
        stop_grace_s: float = 20.0,
        ready_model: str | None = None,
        files: dict[str, str] | None = None,
        ready_workers: int | None = None,
    ) -> None:
        self.argv = argv
        # Config files the engine reads by relative path (LaunchPlan.files): written into its working
        # directory, the log's directory, before launch.
        self.files = files or {}
        self.env = env
        self.port = port
        self.log_path = log_path
        self.run_id = run_id
        self.health_url = f"http://127.0.0.1:{port}{health_path}"
        # When set (LaunchPlan.ready_model), ready means this model is listed by the health URL (an OpenAI
        # /v1/models answer), not just a 200: Dynamo's frontend answers before any worker has registered.
        self.ready_model = ready_model
        # When set (LaunchPlan.ready_workers), ready also means /health lists this many `generate` workers.
        self.ready_workers = ready_workers
        self.stop_grace_s = stop_grace_s
        self.process: subprocess.Popen[bytes] | None = None
        self._pidfile = pid_dir() / f"{run_id}.json"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env_names(self) -> list[str]:
        """Names of the variables this launch sets (beside the run id), never their values."""
        return sorted(self.env)

    def _prepare(self) -> None:
        """Before launch: the port is free, and the config files are in the working directory (the log's)."""
        if not port_is_free(self.port):
            raise InfrastructureError(
                f"engine.port: port {self.port} is already in use on 127.0.0.1; stop what listens there or "
                "leave engine.port unset to pick a free port"
            )
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        for relative, content in self.files.items():
            target = self.log_path.parent / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")

    def _spawn(self, argv: list[str], env: dict[str, str], log_path: Path, **grouping: Any) -> subprocess.Popen[bytes]:
        """Start one process in the working directory, its output appended to `log_path`, tagged with the run id
        (`grouping`: Popen's start_new_session or process_group)."""
        with open(log_path, "ab") as log:
            return subprocess.Popen(
                argv,
                cwd=self.log_path.parent,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=engine_environment(env, self.run_id),
                **grouping,
            )

    def start(self) -> None:
        self._prepare()
        self.process = self._spawn(self._launch_argv(), self.env, self.log_path, start_new_session=True)
        self._pidfile.write_text(self._pidfile_text())

    def _launch_argv(self) -> list[str]:
        """What is started in the new session (a container engine starts its runtime's client instead)."""
        return self.argv

    def _pidfile_extra(self) -> dict[str, object]:
        """More pidfile fields: a `stop_argv` run before the group is killed, when the group is not all."""
        return {}

    def _pidfile_text(self) -> str:
        pgid = self.process.pid if self.process is not None else None
        info = {
            "run_id": self.run_id,
            "pgid": pgid,
            "owner_pid": os.getpid(),
            "port": self.port,
            # What proves, later, that the group and its owner are still the processes this run started.
            "leader_identity": process_identity(pgid) if pgid is not None else None,
            "owner_identity": process_identity(os.getpid()),
        }
        return json.dumps({**info, **self._pidfile_extra()})

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no engine log)"
        return "\n".join(text.splitlines()[-lines:])

    def exited(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def wait_healthy(self, timeout_s: float, poll_s: float = 0.5) -> float:
        """Block until the health URL answers 200 (and lists `ready_model` when set); return seconds waited.
        Raises with the log tail on failure."""
        started = time.monotonic()
        deadline = started + timeout_s
        while True:
            code = self.exited()
            if code is not None:
                raise InfrastructureError(
                    f"engine exited with code {code} before becoming healthy; log tail ({self.log_path}):\n"
                    f"{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(self.health_url, timeout=2) as response:  # noqa: S310 - loopback URL
                    if (
                        response.status == 200
                        and (self.ready_model is None or self._lists_model(response.read()))
                        and self._workers_registered()
                    ):
                        return time.monotonic() - started
            except (urllib.error.URLError, OSError, TimeoutError):
                pass  # not up yet
            if time.monotonic() > deadline:
                raise InfrastructureError(
                    f"engine not healthy after {timeout_s:g} s (engine.startup_timeout_s); "
                    f"log tail ({self.log_path}):\n{self.log_tail()}"
                )
            time.sleep(poll_s)

    def _lists_model(self, body: bytes) -> bool:
        """True when `body` is an OpenAI model list (`{"data": [{"id": ...}, ...]}`) naming `ready_model`."""
        try:
            listed = json.loads(body)
        except ValueError:
            return False
        models = listed.get("data") if isinstance(listed, dict) else None
        return isinstance(models, list) and any(
            isinstance(model, dict) and model.get("id") == self.ready_model for model in models
        )

    def _workers_registered(self) -> bool:
        """True when no worker count is asked for, or `/health` lists that many instances serving `generate`
        (Dynamo's frontend: `{"instances": [{"component": ..., "endpoint": "generate", ...}, ...]}`)."""
        if self.ready_workers is None:
            return True
        try:
            with urllib.request.urlopen(self.base_url + "/health", timeout=2) as response:  # noqa: S310 - loopback
                listed = json.loads(response.read())
        except (urllib.error.URLError, OSError, TimeoutError, ValueError):
            return False
        instances = listed.get("instances") if isinstance(listed, dict) else None
        if not isinstance(instances, list):
            return False
        serving = [item for item in instances if isinstance(item, dict) and item.get("endpoint") == "generate"]
        return len(serving) >= self.ready_workers

    def stop(self) -> None:
        gone = True
        if self.process is not None:
            gone = _kill_group(self.process.pid, self.stop_grace_s, self.process)
        if gone:
            # Only a confirmed-dead engine loses its pidfile: otherwise the next run's reaper needs it.
            self._pidfile.unlink(missing_ok=True)

    def __enter__(self) -> EngineProcess:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def member_log_name(name: str) -> str:
    """The log file of a multi-process engine's process other than its entry (whose log is engine.log)."""
    return f"engine-{name}.log"


@dataclass(frozen=True)
class GroupMember:
    """One process of a multi-process engine (e.g. Dynamo's frontend and workers), started in list order."""

    name: str  # e.g. "frontend-0", "prefill-0": names its log file
    argv: list[str]
    env: dict[str, str]
    entry: bool = False  # the process listening on the engine's port: its log is engine.log


class EngineProcessGroup(EngineProcess):
    """An engine made of several processes sharing one process group: one pidfile, one `killpg` stops them all,
    and the reaper of dead runs needs nothing new. The engine is dead as soon as any member exits."""

    def __init__(self, members: list[GroupMember], port: int, log_path: Path, run_id: str, **options: Any) -> None:
        """`options`: EngineProcess's keyword arguments after `run_id` (readiness, stop grace, config files)."""
        entries = [member for member in members if member.entry]
        if len(entries) != 1:
            raise ValueError(f"an engine process group needs exactly one entry process, got {len(entries)}")
        super().__init__(entries[0].argv, entries[0].env, port, log_path, run_id, **options)
        self.members = members
        self.started: list[tuple[GroupMember, subprocess.Popen[bytes]]] = []

    def env_names(self) -> list[str]:
        return sorted({name for member in self.members for name in member.env})

    def member_log(self, member: GroupMember) -> Path:
        return self.log_path if member.entry else self.log_path.with_name(member_log_name(member.name))

    def start(self) -> None:
        self._prepare()
        try:
            for member in self.members:
                self._start_member(member)
        except BaseException:
            self.stop()  # the members already running: `with` never reaches __exit__ when __enter__ raises
            raise

    def _start_member(self, member: GroupMember) -> None:
        try:
            # The first process leads a new process group (of this session: a group of another session cannot be
            # joined); a terminal's Ctrl-C reaches only its foreground group, not this one.
            group = 0 if self.process is None else self.process.pid
            process = self._spawn(member.argv, member.env, self.member_log(member), process_group=group)
        except FileNotFoundError as error:
            raise ConfigurationError(
                f"engine process {member.name}: {member.argv[0]!r} is not installed on this host ({error.strerror})"
            ) from error
        self.started.append((member, process))
        if self.process is None:
            self.process = process
            # Written once the group exists, before the other members start: a crash from here on leaves the
            # reaper the group to stop.
            self._pidfile.write_text(self._pidfile_text())

    def _first_exited(self) -> tuple[GroupMember, int] | None:
        for member, process in self.started:
            code = process.poll()
            if code is not None:
                return member, code
        return None

    def exited(self) -> int | None:
        ended = self._first_exited()
        return None if ended is None else ended[1]

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The tail of the member that exited first (what explains the failure), else of the entry process."""
        ended = self._first_exited()
        member = ended[0] if ended is not None else next(member for member in self.members if member.entry)
        try:
            text = self.member_log(member).read_text(errors="replace")
        except OSError:
            return f"(no log of {member.name})"
        return f"[{member.name}]\n" + "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        super().stop()
        for _member, process in self.started:
            process.poll()  # reap every member (the group kill only reaps the leader)
