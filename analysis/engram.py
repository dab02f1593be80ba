"""Engram placement what-if: can a table of n-gram embeddings live off the accelerator, and what does that free?

The public work modelled: X. Cheng et al. (Peking University, DeepSeek-AI), "Conditional Memory via Scalable
Lookup: A New Axis of Sparsity for Large Language Models", arXiv 2601.07372 (January 2026; code
github.com/deepseek-ai/Engram). Its lookups are indexed by the input token ids alone, so the rows a step needs
are known before the step starts: they can be fetched from host DRAM (or SSD) while the layers before the first
Engram layer compute, as long as they arrive in time. The paper places that layer at the start of the second
layer for this reason and reports a 100-billion-parameter table in host memory at under 3 % overhead.

This is a model, not a measurement (the hub and the CLI say so). Per decode step and per accelerator:

- rows fetched = batch x lookups per token; bytes = rows x bytes per embedding;
- fetch time = the tier's latency + max(bytes / bandwidth, rows / IOPS) (IOPS only bound an SSD, whose reads
  are 4 KiB pages: a row smaller than a page costs a page);
- time to hide it = the layers before the first Engram layer x (decode step time / layers): the step time
  split evenly over the layers (an assumption: attention and MoE layers differ) at an operating point, i.e. a
  measured, imported or projected Point's interactivity (step time = 1 / interactivity) and concurrency;
- hidden when fetch time <= that budget; the HBM freed (the table, where it would otherwise sit in HBM) becomes
  KV cache: freed bytes / (KV bytes per token x tokens per sequence) more sequences at once, which the capacity
  planner can take as extra concurrency.

Prefill is not modelled: a prompt's lookups are many more rows in one step, and whether they hide depends on
the prefill step's length, which this model does not have.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from recipes.hardware import Hardware
from recipes.model_registry import RegistryModelSpec, kv_bytes_per_token
from recipes.strict import StrictModel

Tier = Literal["hbm", "host-dram", "local-ssd"]
TIERS: tuple[Tier, ...] = ("hbm", "host-dram", "local-ssd")
SSD_PAGE_BYTES = 4096
GB = 1e9


class EngramTable(StrictModel):
    """The table and where the model reads it."""

    table_gb: float = Field(gt=0, description="Size of the embedding table per accelerator holding it, GB.")
    lookups_per_token: int = Field(ge=1, description="Rows read per token (n-gram orders x hash heads).")
    bytes_per_embedding: int = Field(ge=1, description="Bytes of one row (dimension x bytes per element).")
    first_layer: int = Field(ge=0, description="0-based index of the first layer that reads the rows.")


class OperatingPoint(StrictModel):
    """Where the deployment runs: one decode step's time and how many sequences share it."""

    interactivity: float = Field(gt=0, description="Output tokens/s per user: one decode step is 1 / this.")
    batch: int = Field(ge=1, description="Sequences in each decode step on one accelerator (its concurrency).")
    label: str = Field("given", description="Where the point comes from: 'given', or a Point's origin and key.")


@dataclass(frozen=True)
class TierVerdict:
    tier: Tier
    bandwidth_gbps: float | None  # None: the registry has no figure for this chip's tier (TPU v7's host link)
    latency_us: float | None
    fetch_us: float | None
    budget_us: float
    hidden: bool | None  # None: unknown, for want of a figure
    hbm_freed_gb: float
    extra_sequences: float | None  # more sequences the freed HBM holds as KV cache
    sources: tuple[str, ...]  # where each figure used comes from

    @property
    def slack_us(self) -> float | None:
        return None if self.fetch_us is None else self.budget_us - self.fetch_us


def step_budget_us(table: EngramTable, point: OperatingPoint, layers: int) -> float:
    """Time the layers before the first Engram layer take in one decode step, µs (step time split evenly)."""
    if table.first_layer >= layers:
        raise ValueError(f"first_layer: got {table.first_layer}; the model has {layers} layers (0-based index)")
    return 1e6 / point.interactivity * table.first_layer / layers


def fetch_us(rows: int, row_bytes: int, bandwidth_gbps: float, latency_us: float, iops: float | None) -> float:
    """One step's fetch of `rows` rows over a tier: latency + the larger of its transfer and its IO-count time."""
    transfer = rows * (max(row_bytes, SSD_PAGE_BYTES) if iops else row_bytes) / (bandwidth_gbps * GB) * 1e6
    by_count = rows / iops * 1e6 if iops else 0.0
    return latency_us + max(transfer, by_count)


def what_if(table: EngramTable, point: OperatingPoint, hardware: Hardware, model: RegistryModelSpec,
            context_tokens: int) -> list[TierVerdict]:  # fmt: skip
    """Each tier's verdict for `table` on `hardware` at `point` (module docstring)."""
    budget = step_budget_us(table, point, int(model.layers.value))
    rows = point.batch * table.lookups_per_token
    kv_per_sequence = kv_bytes_per_token(model, context_tokens) * context_tokens
    freed_sequences = table.table_gb * GB / kv_per_sequence
    verdicts = []
    hbm = hardware.memory_bandwidth_tbps
    hbm_gbps = hbm.value * 1000 if hbm.value else None
    hbm_fetch = fetch_us(rows, table.bytes_per_embedding, hbm_gbps, 0.0, None) if hbm_gbps else None
    hidden = None if hbm_fetch is None else hbm_fetch <= budget
    verdicts.append(TierVerdict("hbm", hbm_gbps, 0.0, hbm_fetch, budget, hidden, 0.0, 0.0, (hbm.source,)))
    link = hardware.host_link
    if link is not None:
        bandwidth, latency = link.bandwidth_gbps.value, link.latency_us.value
        time = fetch_us(rows, table.bytes_per_embedding, bandwidth, latency or 0.0, None) if bandwidth else None
        verdicts.append(TierVerdict("host-dram", bandwidth, latency, time, budget,
                                    None if time is None else time <= budget, table.table_gb, freed_sequences,
                                    (link.bandwidth_gbps.source, link.latency_us.source)))  # fmt: skip
    ssd = hardware.local_ssd
    if ssd is not None:
        bandwidth, latency, iops = ssd.read_gbps.value, ssd.latency_us.value, ssd.read_iops.value
        time = None
        if bandwidth and iops:  # a tier without both figures is not timed
            time = fetch_us(rows, table.bytes_per_embedding, bandwidth, latency or 0.0, iops)
        verdicts.append(TierVerdict("local-ssd", bandwidth, latency, time, budget,
                                    None if time is None else time <= budget, table.table_gb, freed_sequences,
                                    (ssd.read_gbps.source, ssd.read_iops.source, ssd.latency_us.source)))  # fmt: skip
    return verdicts
