"""Pre-flight checks and power/utilisation sampling through the accelerator tools' command lines: a stand-in
`nvidia-smi` (and its siblings) on PATH printing their documented CSV output, run as processes where the machine
has no GPU. Moved from the unit tier: it starts processes."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from recipes.errors import InfrastructureError
from runners.host import telemetry
from runners.host.telemetry import TelemetrySampler, run_preflight
from tests.unit.runners.host.test_telemetry import AMD_SMI_JSON, GPU_QUERY_OUTPUT


def fake_nvidia_smi(directory: Path, gpu_query: str, compute_apps: str = "") -> None:
    script = directory / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        "  --query-gpu=driver_version) printf '580.65.06\\n580.65.06\\n' ;;\n"
        f"  --query-gpu=*) printf '{gpu_query}' ;;\n"
        f"  --query-compute-apps=*) printf '{compute_apps}' ;;\n"
        "esac\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


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
    assert report.accelerator_driver == "580.65.06"  # one version, however many GPUs report it

    monkeypatch.setattr(telemetry, "MIN_FREE_DISK_GB", 1e9)
    with pytest.raises(InfrastructureError, match=r"pre-flight: only .* GB free in .* \(need 1e\+09 GB\)"):
        run_preflight(tmp_path, leftover_engines=0)


def test_sampler_picks_the_first_tool_the_host_has(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "amd-smi"
    script.write_text("#!/bin/sh\ncat <<'JSON'\n" + AMD_SMI_JSON + "\nJSON\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin{os.pathsep}/bin")
    sampler = TelemetrySampler(interval_s=0.05)
    assert sampler.source == "amd-smi"
    with sampler.running():
        time.sleep(0.4)
    summary = sampler.summary()
    assert summary.samples >= 1 and summary.power_w_mean == 1000.0 and summary.utilization_pct_mean == 80.0
