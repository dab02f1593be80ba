"""Engines never see the runner's credentials (runners/host/process.py `engine_environment`): a real engine process
is started while the runner's environment holds a database URL with a password and cloud keys, and its
/proc/<pid>/environ is read while it serves. The Slurm batch job exports only the same names (`--export`)."""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

import pytest

from runners.host.process import EngineProcess, pick_free_port

CREDENTIALS = ("INFERSWEEP_DB_URL", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "SLURM_JWT", "HTTPS_PROXY")


def environ_of(pid: int) -> dict[str, str]:
    entries = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    pairs = (entry.decode().split("=", 1) for entry in entries if b"=" in entry)
    return {name: value for name, value in pairs}


def test_an_engine_starts_without_the_runners_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    password = secrets.token_hex(12)
    values = {
        "INFERSWEEP_DB_URL": f"postgresql://postgres:{password}@127.0.0.1:5432/test",
        "AWS_SECRET_ACCESS_KEY": secrets.token_hex(20),
        "AWS_ACCESS_KEY_ID": "AKIA" + secrets.token_hex(8).upper(),
        "SLURM_JWT": secrets.token_hex(16),
        "HTTPS_PROXY": f"http://user:{password}@proxy.example:3128",
        "INFERSWEEP_TEST_PASSED": "asked-for",
        "LC_TIME": "C.UTF-8",
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    port = pick_free_port()
    server = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
    # What the local runner passes: the adapter's variables and engine.env_from's values.
    launch_env = {"VLLM_CPU_KVCACHE_SPACE": "1", "INFERSWEEP_TEST_PASSED": os.environ["INFERSWEEP_TEST_PASSED"]}
    engine = EngineProcess(server, launch_env, port, tmp_path / "engine.log", "env-run", files={"health": "ok"})
    with engine:
        engine.wait_healthy(timeout_s=30, poll_s=0.1)
        assert engine.process is not None
        seen = environ_of(engine.process.pid)
    assert not any(name in seen for name in CREDENTIALS), sorted(seen)
    assert not any(password in value for value in seen.values())
    assert seen["INFERSWEEP_RUN_ID"] == "env-run" and seen["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert seen["INFERSWEEP_TEST_PASSED"] == "asked-for"  # named by the recipe: passed
    assert seen["PATH"] == os.environ["PATH"] and seen["LC_TIME"] == "C.UTF-8"  # the host's own settings: kept
