"""A Slurm allocation's nodes, read by running `scontrol` (a stand-in printing its documented output).
Moved from the unit tier: it starts processes; the real single-node Slurm is in tests/integration/runners."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runners.host import placement
from runners.host.placement import Node


def test_the_allocation_is_read_with_scontrol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Node names in allocation order, each with the NodeAddr other nodes reach it at (a fake scontrol)."""
    scontrol = tmp_path / "scontrol"
    scontrol.write_text(
        "#!/bin/sh\n"
        'if [ "$2" = hostnames ]; then printf "gb-07\\ngb-08\\n"; exit 0; fi\n'
        'echo "NodeName=gb-08 Arch=aarch64 NodeAddr=10.1.0.8 NodeHostName=gb-08 State=ALLOCATED"\n'
        'echo "NodeName=gb-07 Arch=aarch64 NodeAddr=10.1.0.7 NodeHostName=gb-07 State=ALLOCATED"\n'
    )
    scontrol.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    assert placement.slurm_allocation() is None  # not in a Slurm job
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gb-[07-08]")
    assert placement.slurm_allocation() == [Node("gb-07", "10.1.0.7"), Node("gb-08", "10.1.0.8")]
