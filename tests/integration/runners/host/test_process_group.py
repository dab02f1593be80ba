"""Multi-process engines (runners/host/process.py `EngineProcessGroup`): real child processes, one process group.

The entry process is Python's own file server, which answers /health once a file of that name is in its
working directory (written through `files`, as a launch plan's config files are).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from recipes.errors import ConfigurationError, InfrastructureError
from runners.host.process import EngineProcessGroup, GroupMember, pick_free_port, pid_dir, reap_orphaned_engines

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


def members(port: int, *others: GroupMember) -> list[GroupMember]:
    server = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
    return [GroupMember("frontend-0", server, {}, entry=True), *others]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_gone(pids: list[int], within_s: float = 10.0) -> list[int]:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.1)
    return [pid for pid in pids if alive(pid)]


def test_members_share_one_group_and_one_pidfile_and_stop_together(tmp_path: Path) -> None:
    port = pick_free_port()
    group = EngineProcessGroup(
        members(port, GroupMember("prefill-0", SLEEPER, {"ROLE": "prefill"}), GroupMember("decode-0", SLEEPER, {})),
        port, tmp_path / "engine.log", "group-run", files={"health": "ok"},
    )  # fmt: skip
    with group:
        assert group.wait_healthy(timeout_s=30, poll_s=0.1) < 30
        pids = [process.pid for _, process in group.started]
        assert len(pids) == 3 and {os.getpgid(pid) for pid in pids} == {pids[0]}
        info = json.loads((pid_dir() / "group-run.json").read_text())
        assert info["pgid"] == pids[0] and info["owner_pid"] == os.getpid()
        assert (tmp_path / "engine-prefill-0.log").exists() and (tmp_path / "engine-decode-0.log").exists()
        assert group.exited() is None
    assert wait_gone(pids) == []
    assert not (pid_dir() / "group-run.json").exists()


def test_any_member_exiting_is_the_engine_dying_and_its_log_explains_it(tmp_path: Path) -> None:
    port = pick_free_port()
    failing = [sys.executable, "-c", "import sys; print('decode worker: no KV cache fits', flush=True); sys.exit(3)"]
    group = EngineProcessGroup(members(port, GroupMember("decode-0", failing, {})), port, tmp_path / "engine.log",
                               "group-fail")  # fmt: skip
    with group, pytest.raises(InfrastructureError, match="exited with code 3") as raised:
        group.wait_healthy(timeout_s=30, poll_s=0.1)  # no `health` file: only the dead member can end the wait
    assert "[decode-0]" in str(raised.value) and "decode worker: no KV cache fits" in str(raised.value)
    assert wait_gone([process.pid for _, process in group.started]) == []


def test_a_missing_executable_names_the_process_and_stops_those_already_started(tmp_path: Path) -> None:
    port = pick_free_port()
    group = EngineProcessGroup(
        members(port, GroupMember("etcd-0", ["infersweep-no-such-etcd", "--listen"], {})),
        port, tmp_path / "engine.log", "group-missing",
    )  # fmt: skip
    with pytest.raises(ConfigurationError, match=r"engine process etcd-0: 'infersweep-no-such-etcd' is not installed"):
        group.start()
    (entry,) = [process.pid for _, process in group.started]
    assert wait_gone([entry]) == []
    assert not (pid_dir() / "group-missing.json").exists()


def test_the_reaper_stops_every_member_of_a_dead_owners_group(tmp_path: Path) -> None:
    """An owner killed without cleanup (a Ray worker that died) leaves the whole group to the next job's reaper."""
    port = pick_free_port()
    owner = textwrap.dedent(f"""
        import os, sys
        from pathlib import Path
        from runners.host.process import EngineProcessGroup, GroupMember
        sleeper = {SLEEPER!r}
        server = [sys.executable, "-m", "http.server", "{port}", "--bind", "127.0.0.1"]
        group = EngineProcessGroup(
            [GroupMember("frontend-0", server, {{}}, entry=True), GroupMember("decode-0", sleeper, {{}})],
            {port}, Path({str(tmp_path / "engine.log")!r}), "group-orphan",
        )
        group.start()
        print(" ".join(str(process.pid) for _, process in group.started), flush=True)
        os._exit(0)  # no stop(): the members outlive their owner
    """)
    root = Path(__file__).resolve().parents[4]
    completed = subprocess.run(
        [sys.executable, "-c", owner], cwd=root, capture_output=True, text=True, timeout=60, check=True,
        env={**os.environ, "PYTHONPATH": str(root)},
    )  # fmt: skip
    pids = [int(word) for word in completed.stdout.split()]
    assert len(pids) == 2 and all(alive(pid) for pid in pids)
    assert "group-orphan" in reap_orphaned_engines(log=lambda _line: None)
    assert wait_gone(pids) == []
    assert not (pid_dir() / "group-orphan.json").exists()
