"""What the host was doing: pre-flight checks before a job, power and utilisation during each Point.

Both are stored with every result (`PointMetrics.host`), so a reader can tell a measurement taken on
a busy or thermally limited machine from a clean one. Where the host has no way to report a figure
(no `nvidia-smi`, say) the result says so and why, rather than leaving a silent gap.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from recipes.errors import InfrastructureError
from runners.loadgen.records import Preflight, TelemetrySummary

MIN_FREE_DISK_GB = 2.0  # engine logs, request records and staged artifacts of one job fit in far less


def _run(argv: list[str]) -> str | None:
    try:
        completed = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return completed.stdout if completed.returncode == 0 else None


def accelerator_processes() -> tuple[bool | None, list[str], list[str]]:
    """(idle?, processes found, notes) from nvidia-smi; (None, [], [why]) where it is missing."""
    if shutil.which("nvidia-smi") is None:
        return None, [], ["accelerator idleness not checked: no nvidia-smi on this host"]
    output = _run(["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"])
    if output is None:
        return None, [], ["accelerator idleness not checked: nvidia-smi failed"]
    found = [line.strip() for line in output.splitlines() if line.strip()]
    return not found, found, []


def accelerator_driver() -> str | None:
    """The accelerator driver's version (`nvidia-smi --query-gpu=driver_version`); None where not reported."""
    if shutil.which("nvidia-smi") is None:
        return None
    output = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    versions = sorted({line.strip() for line in (output or "").splitlines() if line.strip()})
    return ", ".join(versions) or None


def run_preflight(work_dir: Path, leftover_engines: int) -> Preflight:
    """Checks before an engine starts; raises a retryable error when the host is not fit to measure on."""
    free_gb = shutil.disk_usage(work_dir).free / 1e9
    idle, processes, notes = accelerator_processes()
    report = Preflight(
        checked_at=time.time(), free_disk_gb=round(free_gb, 2), accelerators_idle=idle,
        accelerator_processes=processes, leftover_engines=leftover_engines, notes=notes,
        accelerator_driver=accelerator_driver(),
    )  # fmt: skip
    if free_gb < MIN_FREE_DISK_GB:
        raise InfrastructureError(
            f"pre-flight: only {free_gb:.2f} GB free in {work_dir} (need {MIN_FREE_DISK_GB:g} GB); free space or "
            "use another host"
        )
    if idle is False:
        raise InfrastructureError(
            f"pre-flight: the accelerators are busy with processes this job did not start: {'; '.join(processes)}"
        )
    return report


# --- sampling during a Point -----------------------------------------------------------------------


Reading = tuple[float, float, float]  # (total power W, mean utilisation %, total memory used GB) of all accelerators


def parse_nvidia_smi(output: str) -> Reading | None:
    """A reading from `nvidia-smi --query-gpu=power.draw,utilization.gpu,memory.used --format=csv,noheader,nounits`."""
    power = utilization = memory = 0.0
    rows = 0
    for line in output.strip().splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) != 3:
            continue
        try:
            watts, percent, mebibytes = (float(field) for field in fields)
        except ValueError:
            continue  # "[N/A]" on GPUs that do not report a figure
        power, utilization, memory, rows = power + watts, utilization + percent, memory + mebibytes, rows + 1
    if rows == 0:
        return None
    return power, utilization / rows, memory * 1.048576 / 1000


def _amd_value(entry: object, unit_scale: dict[str, float]) -> float | None:
    """amd-smi prints a figure as {"value": v, "unit": u} (ROCm 6.1+) or as a bare number; "N/A" is no figure."""
    if isinstance(entry, dict):
        value, unit = entry.get("value"), str(entry.get("unit", ""))
        scale = unit_scale.get(unit, 1.0)
    else:
        value, scale = entry, 1.0
    return float(value) * scale if isinstance(value, int | float) and not isinstance(value, bool) else None


def parse_amd_smi(output: str) -> Reading | None:
    """A reading from `amd-smi metric --power --usage --mem-usage --json` (one object per GPU)."""
    try:
        gpus = json.loads(output)
    except ValueError:
        return None
    if isinstance(gpus, dict):
        gpus = [gpus]
    power = utilization = memory = 0.0
    rows = 0
    for gpu in gpus if isinstance(gpus, list) else []:
        if not isinstance(gpu, dict):
            continue
        watts = _amd_value((gpu.get("power") or {}).get("socket_power"), {"mW": 1e-3})
        percent = _amd_value((gpu.get("usage") or {}).get("gfx_activity"), {})
        megabytes = _amd_value((gpu.get("mem_usage") or {}).get("used_vram"), {"GB": 1000.0, "B": 1e-6})
        if watts is None or percent is None:
            continue
        power, utilization, memory, rows = power + watts, utilization + percent, memory + (megabytes or 0.0), rows + 1
    if rows == 0:
        return None
    return power, utilization / rows, memory / 1000


# DCGM field ids: 155 DCGM_FI_DEV_POWER_USAGE (W), 203 DCGM_FI_DEV_GPU_UTIL (%), 252 DCGM_FI_DEV_FB_USED (MiB).
DCGM_FIELDS = "155,203,252"


def parse_dcgmi_dmon(output: str) -> Reading | None:
    """A reading from `dcgmi dmon -e 155,203,252 -c 1`: one `GPU <id> <power> <util> <fb used>` row per GPU."""
    power = utilization = memory = 0.0
    rows = 0
    for line in output.splitlines():
        fields = line.split()
        if len(fields) != 5 or fields[0] != "GPU":
            continue  # the '#Entity ...' header, the units line, blank lines
        try:
            watts, percent, mebibytes = (float(field) for field in fields[2:])
        except ValueError:
            continue  # "N/A" where DCGM has no figure
        power, utilization, memory, rows = power + watts, utilization + percent, memory + mebibytes, rows + 1
    if rows == 0:
        return None
    return power, utilization / rows, memory * 1.048576 / 1000


@dataclass(frozen=True)
class AcceleratorTool:
    """A host tool that reports accelerator power, utilisation and memory: its command and its parser."""

    name: str
    argv: tuple[str, ...]
    parse: Callable[[str], Reading | None]


# Tried in this order; the first whose executable the host has is sampled. A new vendor is one entry here.
ACCELERATOR_TOOLS = (
    AcceleratorTool(
        "nvidia-smi",
        ("nvidia-smi", "--query-gpu=power.draw,utilization.gpu,memory.used", "--format=csv,noheader,nounits"),
        parse_nvidia_smi,
    ),
    AcceleratorTool("amd-smi", ("amd-smi", "metric", "--power", "--usage", "--mem-usage", "--json"), parse_amd_smi),
    AcceleratorTool("dcgmi", ("dcgmi", "dmon", "-e", DCGM_FIELDS, "-c", "1"), parse_dcgmi_dmon),
)


def accelerator_tool() -> AcceleratorTool | None:
    return next((tool for tool in ACCELERATOR_TOOLS if shutil.which(tool.argv[0])), None)


def _cpu_times() -> tuple[float, float] | None:
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except (OSError, IndexError):
        return None
    values = [float(value) for value in fields]
    idle = values[3] + (values[4] if len(values) > 4 else 0.0)
    return sum(values), idle


class TelemetrySampler:
    """Samples in a thread while a Point runs: GPU power/utilisation via nvidia-smi, else host CPU use."""

    def __init__(self, interval_s: float = 1.0, accelerator_unit: str = "gpu") -> None:
        self.interval_s = interval_s
        self.accelerator_unit = accelerator_unit
        self._stop = threading.Event()
        self._gpu_samples: list[Reading] = []
        self._cpu_samples: list[float] = []
        self._thread: threading.Thread | None = None
        self.tool = accelerator_tool()
        self.source = self.tool.name if self.tool else ("/proc/stat" if _cpu_times() else "unavailable")

    def _sample_gpu(self) -> None:
        assert self.tool is not None  # only scheduled when a tool was found
        output = _run(list(self.tool.argv))
        parsed = self.tool.parse(output) if output else None
        if parsed is not None:
            self._gpu_samples.append(parsed)

    def _loop(self, sample: Callable[[], None]) -> None:
        while not self._stop.wait(self.interval_s):
            sample()

    def _cpu_sampler(self) -> Callable[[], None]:
        previous = _cpu_times()

        def sample() -> None:
            nonlocal previous
            current = _cpu_times()
            if previous is not None and current is not None and current[0] > previous[0]:
                busy = 1 - (current[1] - previous[1]) / (current[0] - previous[0])
                self._cpu_samples.append(100.0 * busy)
            previous = current

        return sample

    @contextlib.contextmanager
    def running(self) -> Iterator[TelemetrySampler]:
        sample = self._sample_gpu if self.tool is not None else self._cpu_sampler()
        if self.source != "unavailable":
            self._thread = threading.Thread(target=self._loop, args=(sample,), name="telemetry", daemon=True)
            self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            if self._thread is not None:
                self._thread.join(timeout=self.interval_s + 11)

    def summary(self) -> TelemetrySummary:
        if self.tool is not None:
            powers = [power for power, _, _ in self._gpu_samples]
            return TelemetrySummary(
                source=self.source, samples=len(self._gpu_samples), interval_s=self.interval_s,
                power_w_mean=sum(powers) / len(powers) if powers else None, power_w_max=max(powers, default=None),
                utilization_pct_mean=(sum(u for _, u, _ in self._gpu_samples) / len(powers)) if powers else None,
                memory_used_gb_max=max((m for _, _, m in self._gpu_samples), default=None),
            )  # fmt: skip
        tools = ", ".join(tool.name for tool in ACCELERATOR_TOOLS)
        unavailable = [f"power: none of {tools} on this host (accelerator unit {self.accelerator_unit!r})"]
        if self.source == "/proc/stat":
            mean = sum(self._cpu_samples) / len(self._cpu_samples) if self._cpu_samples else None
            return TelemetrySummary(
                source=self.source, samples=len(self._cpu_samples), interval_s=self.interval_s,
                utilization_pct_mean=mean, unavailable=[*unavailable, "utilisation is the host CPU's"],
            )  # fmt: skip
        return TelemetrySummary(
            source="unavailable", samples=0, interval_s=self.interval_s,
            unavailable=[*unavailable, "utilisation: no /proc/stat"],
        )  # fmt: skip
