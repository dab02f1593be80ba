"""Pre-flight checks and power/utilisation sampling, with a stand-in `nvidia-smi` on PATH (its documented
CSV output) where the machine has no GPU."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from recipes.errors import InfrastructureError
from runners.host import telemetry
from runners.host.telemetry import TelemetrySampler, parse_nvidia_smi, run_preflight

GPU_QUERY_OUTPUT = "712.45, 97, 81234\n698.10, 95, 80011\n"


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
    assert summary.unavailable[0].startswith("power: none of nvidia-smi, amd-smi, dcgmi on this host")
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
    assert report.accelerator_driver == "580.65.06"  # one version, however many GPUs report it

    monkeypatch.setattr(telemetry, "MIN_FREE_DISK_GB", 1e9)
    with pytest.raises(InfrastructureError, match=r"pre-flight: only .* GB free in .* \(need 1e\+09 GB\)"):
        run_preflight(tmp_path, leftover_engines=0)


AMD_SMI_JSON = """[
 {"gpu": 0, "power": {"socket_power": {"value": 550, "unit": "W"}, "gfx_voltage": "N/A"},
  "usage": {"gfx_activity": {"value": 90, "unit": "%"}, "umc_activity": {"value": 40, "unit": "%"}},
  "mem_usage": {"total_vram": {"value": 294896, "unit": "MB"}, "used_vram": {"value": 200000, "unit": "MB"}}},
 {"gpu": 1, "power": {"socket_power": 450}, "usage": {"gfx_activity": 70}, "mem_usage": {"used_vram": 100000}},
 {"gpu": 2, "power": {"socket_power": "N/A"}, "usage": {"gfx_activity": "N/A"}, "mem_usage": {}}
]"""
DCGMI_DMON = """#Entity   POWER      GPUTL  FBUSD
ID        W          %      MB
GPU 0     650.250    88     150000
GPU 1     N/A        N/A    N/A
GPU 2     600.750    92     140000
"""


def test_amd_smi_and_dcgm_readings_worked_by_hand() -> None:
    # amd-smi: GPU 2 reports nothing and is skipped; both unit styles (value/unit and bare numbers) read.
    assert telemetry.parse_amd_smi(AMD_SMI_JSON) == (1000.0, 80.0, 300.0)
    assert telemetry.parse_amd_smi("not json") is None and telemetry.parse_amd_smi("[]") is None
    # dcgmi dmon: 650.25 + 600.75 W; (88 + 92) / 2 %; (150000 + 140000) MiB = 304.09 GB.
    power, utilisation, memory = telemetry.parse_dcgmi_dmon(DCGMI_DMON)  # type: ignore[misc]
    assert (power, utilisation) == (1251.0, 90.0) and memory == pytest.approx(290000 * 1.048576 / 1000)
    assert telemetry.parse_dcgmi_dmon("#Entity POWER\n") is None


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
