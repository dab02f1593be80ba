"""The remote agent's last resort (runners/agent.py `_stop_for_good`): with its main thread stuck, it stops
every engine it owns and exits, so no engine outlives the connection that started it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.conftest import ROOT

STUCK_AGENT = textwrap.dedent("""
    import json, signal, subprocess, sys, threading, time
    import runners.agent as agent
    from runners.host.process import pid_dir, process_identity

    engines = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True,
                                env={**__import__("os").environ, "INFERSWEEP_RUN_ID": f"agent-run-{index}"})
               for index in range(2)]
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a main thread that will not unwind (engines keep SIGTERM)
    agent.UNWIND_GRACE_S = 0.2
    for index, engine in enumerate(engines):
        (pid_dir() / f"agent-run-{index}.json").write_text(json.dumps({
            "run_id": f"agent-run-{index}", "pgid": engine.pid, "owner_pid": __import__("os").getpid(),
            "port": 0, "leader_identity": process_identity(engine.pid)}))
    print(" ".join(str(engine.pid) for engine in engines), flush=True)
    threading.Thread(target=agent._stop_for_good, daemon=True).start()
    time.sleep(60)  # stuck: only the last resort can end this process
""")


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_stuck_agent_stops_both_of_its_engines_and_exits(tmp_path: Path) -> None:
    started = time.monotonic()
    completed = subprocess.run(
        [sys.executable, "-c", STUCK_AGENT], cwd=ROOT, capture_output=True, text=True, timeout=50, check=False,
        env={**os.environ, "INFERSWEEP_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert completed.returncode == 143, completed.stderr
    assert time.monotonic() - started < 45, "the agent exited only when its main thread woke up"
    pids = [int(word) for word in completed.stdout.split()]
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(pids) == 2 and not any(alive(pid) for pid in pids)
    assert list((tmp_path / "engines-running").glob("*.json")) == []
