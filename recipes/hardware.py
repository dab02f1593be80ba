"""Hardware registry: the accelerators a recipe's hardware pool may name, with their public figures.

`recipes/hardware.yaml` holds one entry per accelerator (H100 ... MI355X, TPU v7, Vera Rubin, plus
`cpu-local`, the CPU host that runs the embedded benchmark). Each entry gives memory, bandwidth,
dense FP8/FP4 throughput, power, node and scale-up-domain sizes, how the hardware is provisioned, and
the total cost of ownership per accelerator-hour in up to three tiers.

Every number is a `Figure`: a value with its unit, the `source` it was taken from and the month it
describes (`as_of`, YYYY-MM), plus an optional `note` for approximate values, ranges and caveats.
A figure whose value is unknown (null) must say why in its note, so no number in a report is ever
without provenance.

The file is validated strictly (unknown keys are errors); any problem becomes a `RecipeError` naming
the file and the dotted field path. Only pydantic, PyYAML and the standard library are imported.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from recipes.keyed_file import KeyedFile
from recipes.strict import StrictModel

SCHEMA_VERSION = 1
DEFAULT_PATH = Path(__file__).with_name("hardware.yaml")

AcceleratorUnit = Literal["gpu", "package", "chip", "host"]
TcoTier = Literal["owning_hyperscaler", "rental_3yr", "neocloud"]
TCO_TIERS: tuple[str, ...] = ("owning_hyperscaler", "rental_3yr", "neocloud")
# How a reader names each tier (headings and captions; the keys stay in links, files and the CLI).
TCO_TIER_LABELS: dict[str, str] = {
    "owning_hyperscaler": "owning (hyperscaler scale)", "rental_3yr": "3-year rental", "neocloud": "neocloud",
}  # fmt: skip

_KEY_PATTERN = r"^[a-z0-9][a-z0-9-]*$"


class Figure(StrictModel):
    """One number with its provenance: value, unit, where it comes from and when it was true."""

    value: float | None = Field(
        ...,
        ge=0,
        strict=True,
        description="The number (ints are accepted); null when it is unknown or varies, with a note why.",
    )
    unit: str = Field(..., min_length=1, description="Unit of `value`, e.g. 'GB', 'TB/s', 'USD per GPU-hour'.")
    source: str = Field(..., min_length=1, description="Where the number comes from (document, table, vendor).")
    as_of: str = Field(
        ...,
        pattern=r"^\d{4}-(0[1-9]|1[0-2])$",
        description="Month the figure describes or was taken, as YYYY-MM.",
    )
    note: str | None = Field(
        None, min_length=1, description="Caveat: approximate ('~'), a range, a per-package figure, etc."
    )
    range: tuple[float, float] | None = Field(
        None,
        description="Lowest and highest public figure where sources disagree (Vera Rubin's bandwidth moved from "
        "~13 to ~22 TB/s over 2025-26); `value` lies within it. Projections draw a band over it.",
    )

    @field_validator("value")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("value must be a finite number")
        return value

    @model_validator(mode="after")
    def _null_needs_note(self) -> Figure:
        if self.value is None and not self.note:
            raise ValueError("a figure with value null needs a note saying why")
        if self.range is not None:
            low, high = self.range
            if not (math.isfinite(low) and math.isfinite(high) and 0 <= low <= high):
                raise ValueError(f"range must be [low, high] with 0 <= low <= high, got {list(self.range)}")
            if self.value is None or not low <= self.value <= high:
                raise ValueError(f"value {self.value} must lie within range {list(self.range)}")
        return self

    @property
    def span(self) -> tuple[float, float]:
        """(low, high): the range where one is given, else the value twice. Only for a figure with a value."""
        if self.value is None:
            raise ValueError("a figure without a value has no span")
        return self.range if self.range is not None else (self.value, self.value)


class HostLink(StrictModel):
    """An accelerator's link to its host's memory, as one accelerator sees it (per direction)."""

    kind: str = Field(..., min_length=1, description="The link, e.g. 'PCIe Gen5 x16', 'NVLink-C2C'.")
    bandwidth_gbps: Figure = Field(..., description="Host-to-accelerator bandwidth per accelerator, GB/s.")
    latency_us: Figure = Field(..., description="Fixed cost of one batched transfer (launch + round trip), µs.")


class LocalSsd(StrictModel):
    """The node's local NVMe storage as one accelerator's share of it."""

    read_gbps: Figure = Field(..., description="Sequential read bandwidth, GB/s.")
    read_iops: Figure = Field(..., description="Random 4 KiB reads per second.")
    latency_us: Figure = Field(..., description="One random read's latency at low queue depth, µs.")


class HardwareSpec(StrictModel):
    """One accelerator as written in the registry file (the mapping key is its `key`)."""

    vendor: str = Field(..., min_length=1, description="Vendor, e.g. 'NVIDIA', 'AMD', 'Google'.")
    name: str = Field(..., min_length=1, description="Human-readable product name.")
    accelerator_unit: AcceleratorUnit = Field(
        ...,
        description=(
            "What one 'GPU' counts in every per-accelerator figure: 'gpu', 'package' (Vera Rubin counts "
            "packages, not dies), 'chip' (TPU) or 'host' (the local CPU machine)."
        ),
    )
    memory_gb: Figure = Field(
        ..., description="Accelerator memory per unit as vendors state it, in GB (binary: see `memory_bytes`)."
    )
    memory_type: str = Field(..., min_length=1, description="Memory technology, e.g. 'HBM3e', 'HBM4'.")
    memory_bandwidth_tbps: Figure = Field(..., description="Memory bandwidth per unit, in TB/s.")
    dense_fp8_pflops: Figure | None = Field(
        ..., description="Dense FP8 throughput per unit, in PFLOPS; null when no figure is published."
    )
    dense_fp4_pflops: Figure | None = Field(
        ..., description="Dense FP4 throughput per unit, in PFLOPS; null when no figure is published."
    )
    fp4_inference_pflops: Figure | None = Field(
        None,
        description=(
            "Vendor's FP4 *inference* (not dense) throughput per unit, in PFLOPS, where only that figure "
            "is published (Vera Rubin); not comparable with dense_fp4_pflops."
        ),
    )
    tdp_w: Figure = Field(..., description="Thermal design power per unit, in W.")
    aliases: list[str] = Field(
        default_factory=list,
        description="Other names imported results use for it (InferenceX: 'gb200', runner labels such as "
        "'b200-trt'); a label '<key or alias>-<runner>' maps by its first part.",
    )
    all_in_kw: Figure | None = Field(
        ..., description="All-in power per unit including host, network and facility share, in kW."
    )
    gpus_per_node: int = Field(
        ..., gt=0, strict=True, description="Units per node (per host, or per compute tray in a rack)."
    )
    scale_up_domain: int = Field(
        ..., gt=0, strict=True, description="Units in one scale-up (NVLink / Infinity Fabric / ICI) domain."
    )
    interconnect: str = Field(..., min_length=1, description="Scale-up interconnect, e.g. 'NVLink switch'.")
    provisioning: list[str] = Field(
        ...,
        min_length=1,
        description="How this hardware is usually provisioned, e.g. ['bare-metal', 'slurm'], ['gke'].",
    )
    host_link: HostLink | None = Field(
        None, description="Link to host DRAM (where a table or KV offload is fetched from); null for a host."
    )
    local_ssd: LocalSsd | None = Field(None, description="Local NVMe storage per accelerator, where known.")
    host_dram_gb: Figure | None = Field(
        None, description="Host DRAM per node (per compute tray in a rack), GB: what a KV offload tier can use."
    )
    tco_usd_per_gpu_hour: dict[TcoTier, Figure] = Field(
        ...,
        description=(
            "Total cost of ownership per unit-hour in USD by tier (owning_hyperscaler, rental_3yr, "
            "neocloud); a tier without a published number is omitted."
        ),
    )

    @property
    def memory_bytes(self) -> float | None:
        """Accelerator memory per unit in bytes, the vendors' HBM 'GB' read as binary gigabytes (GiB): HBM comes in
        power-of-two stacks and drivers report it so (nvidia-smi shows a B200, '180 GB', as 183,359 MiB: 179 GiB,
        192 decimal GB; NVIDIA/TensorRT-LLM issue 10278). Read as decimal GB a deployment holds 7 % less than it
        does: DeepSeek-R1 FP8 (671 GB) would not fit on four B200s, which InferenceX ran at 32 users (8k/1k)."""
        value = self.memory_gb.value
        return None if value is None else value * 2**30

    @model_validator(mode="after")
    def _domain_holds_a_node(self) -> HardwareSpec:
        if self.scale_up_domain < self.gpus_per_node:
            raise ValueError("scale_up_domain must be at least gpus_per_node")
        return self


# InferenceX's cap on the DRAM an agentic run offloads to (shared/reference/peer-tools.md): min(host DRAM, 3 TB) x
# utilisation x (GPUs used / GPUs per node).
OFFLOAD_CAP_GB = 3000.0


def offload_budget_gib(hardware: HardwareSpec, gpus: int, utilisation: float = 0.8) -> float | None:
    """The host DRAM an engine on `gpus` of this hardware may offload KV to, GiB, by InferenceX's rule; None where
    the registry has no host-DRAM figure."""
    dram = hardware.host_dram_gb
    if dram is None or dram.value is None:
        return None
    share = gpus / hardware.gpus_per_node  # an engine over two nodes offloads to both hosts
    return min(dram.value, OFFLOAD_CAP_GB) * utilisation * share * 1e9 / 2**30


class Hardware(HardwareSpec):
    """One accelerator of the registry, with its registry key."""

    key: str = Field(..., pattern=_KEY_PATTERN, description="Registry key, e.g. 'b200', 'gb200-nvl72'.")

    def tco(self, tier: str) -> float | None:
        """TCO in USD per unit-hour for `tier`; None when the registry has no number for that tier."""
        if tier not in TCO_TIERS:
            raise ValueError(f"unknown TCO tier {tier!r}; expected one of {', '.join(TCO_TIERS)}")
        figure = self.tco_usd_per_gpu_hour.get(tier)  # type: ignore[call-overload]  # tier was checked to be a TCO tier above
        return None if figure is None else figure.value


def pool_resource_name(key: str) -> str:
    """Ray custom-resource name of the hardware pool for registry key `key`."""
    return f"pool:{key}"


_REGISTRY = KeyedFile(
    default_path=DEFAULT_PATH, what="hardware registry", section="accelerators", spec=HardwareSpec,
    entry=Hardware, key_field="key", key_pattern=_KEY_PATTERN, key_rule="lowercase letters, digits and '-'",
)  # fmt: skip


# Load and validate it; the path defaults to `hardware.yaml` next to this module (read once per process).
load_hardware_registry = _REGISTRY.load


def hardware_key_for(label: str, registry: dict[str, Hardware] | None = None) -> str | None:
    """The registry key another tool's hardware label means: a key or alias (case-insensitive), or a runner label
    `<key or alias>-<runner>` / `<key or alias>_<n>` by its first part ('mi355x-amd_0' is mi355x); else None."""
    machines = registry if registry is not None else load_hardware_registry()
    names = {key: key for key in machines}
    names.update({alias.lower(): key for key, machine in machines.items() for alias in machine.aliases})
    wanted = label.strip().lower()
    if wanted in names:
        return names[wanted]
    first = re.split(r"[-_]", wanted, maxsplit=1)[0]
    return names.get(first)
