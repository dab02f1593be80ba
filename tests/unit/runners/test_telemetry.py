"""Pre-flight checks and power/utilisation sampling, with a stand-in `nvidia-smi` on PATH (its documented
CSV output) where the machine has no GPU."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from recipes.errors import InfrastructureError
from runners import telemetry
from runners.telemetry import TelemetrySampler, parse_nvidia_smi, run_preflight

GPU_QUERY_OUTPUT = "712.45, 97, 81234\n698.10, 95, 80011\n"


def fake_nvidia_smi(directory: Path, gpu_query: str, compute_apps: str = "") -> None:
    script = directory / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        f"  --query-gpu=*) printf '{gpu_query}' ;;\n"
        f"  --query-compute-apps=*) printf '{compute_apps}' ;;\n"
        "esac\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def test_parse_nvidia_smi_sums_power_and_memory_and_averages_utilisation() -> None:
    power, utilization, memory_gb = parse_nvidia_smi(GPU_QUERY_OUTPUT)
    assert power == pytest.approx(712.45 + 698.10)
    assert utilization == pytest.approx(96.0)
    assert memory_gb == pytest.approx((81234 + 80011) * 1.048576 / 1000)
    assert parse_nvidia_smi("[N/A], [N/A], [N/A]\n") is None


def test_sampler_reads_nvidia_smi_when_present(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvidia_smi(tmp_path, GPU_QUERY_OUTPUT)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    sampler = TelemetrySampler(interval_s=0.05)
    with sampler.running():
        time.sleep(0.5)
    summary = sampler.summary()
    assert summary.source == "nvidia-smi" and summary.samples >= 2
    assert summary.power_w_mean == pytest.approx(1410.55) and summary.power_w_max == pytest.approx(1410.55)
    assert summary.utilization_pct_mean == pytest.approx(96.0)


def test_without_nvidia_smi_power_is_reported_unavailable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH
    sampler = TelemetrySampler(interval_s=0.05)
    with sampler.running():
        sum(i * i for i in range(2_000_000))  # keep a core busy
    summary = sampler.summary()
    assert summary.source == "/proc/stat" and summary.power_w_mean is None
    assert summary.unavailable[0].startswith("power: no nvidia-smi on this host")
    assert summary.utilization_pct_mean is None or 0 <= summary.utilization_pct_mean <= 100


def test_preflight_refuses_busy_accelerators_and_a_full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvidia_smi(tmp_path, GPU_QUERY_OUTPUT, compute_apps="4242, python3, 70000 MiB\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(InfrastructureError) as busy:
        run_preflight(tmp_path, leftover_engines=0)
    assert busy.value.retryable
    assert "the accelerators are busy with processes this job did not start: 4242, python3, 70000 MiB" in str(
        busy.value
    )

    fake_nvidia_smi(tmp_path, GPU_QUERY_OUTPUT, compute_apps="")
    report = run_preflight(tmp_path, leftover_engines=2)
    assert report.accelerators_idle is True and report.leftover_engines == 2

    monkeypatch.setattr(telemetry, "MIN_FREE_DISK_GB", 1e9)
    with pytest.raises(InfrastructureError, match=r"pre-flight: only .* GB free in .* \(need 1e\+09 GB\)"):
        run_preflight(tmp_path, leftover_engines=0)
