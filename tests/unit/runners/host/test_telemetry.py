"""Pre-flight checks and power/utilisation sampling, with a stand-in `nvidia-smi` on PATH (its documented
CSV output) where the machine has no GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from runners.host import telemetry
from runners.host.telemetry import TelemetrySampler, parse_nvidia_smi

GPU_QUERY_OUTPUT = "712.45, 97, 81234\n698.10, 95, 80011\n"


def test_parse_nvidia_smi_sums_power_and_memory_and_averages_utilisation() -> None:
    power, utilization, memory_gb = parse_nvidia_smi(GPU_QUERY_OUTPUT)
    assert power == pytest.approx(712.45 + 698.10)
    assert utilization == pytest.approx(96.0)
    assert memory_gb == pytest.approx((81234 + 80011) * 1.048576 / 1000)
    assert parse_nvidia_smi("[N/A], [N/A], [N/A]\n") is None


def test_without_nvidia_smi_power_is_reported_unavailable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH
    sampler = TelemetrySampler(interval_s=0.05)
    with sampler.running():
        sum(i * i for i in range(2_000_000))  # keep a core busy
    summary = sampler.summary()
    assert summary.source == "/proc/stat" and summary.power_w_mean is None
    assert summary.unavailable[0].startswith("power: none of nvidia-smi, amd-smi, dcgmi on this host")
    assert summary.utilization_pct_mean is None or 0 <= summary.utilization_pct_mean <= 100


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
