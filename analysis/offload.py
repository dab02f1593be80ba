"""Where a DRAM tier for the KV cache pays: the offload map over concurrency x tokens/s/user (model-based).

For one deployment (its HBM and DRAM capacity in KV blocks, runners/traces/planner.py `kv_capacity`), one agent
corpus and each concurrency, the capacity planner predicts the prefix-cache hit rate with HBM only and with the
DRAM tier (`ReplayTraffic.hit_rate`, AgentX-like traffic: `concurrency` salted session trees at once). What the
tier saves is prefill: (hit with DRAM - hit with HBM only) x the mean prompt tokens per request.

What that is worth, at an operating point (a tokens/s/user level with its decode and prefill rates per
accelerator: measured, imported or projected results, labelled, or given), follows from one request's
accelerator time:

    seconds per request = prompt tokens x (1 - hit) / prefill rate + output tokens / decode rate

(prefill and decode take turns on the accelerators: the rates are each phase's tokens/s per accelerator). The
cost per output token is that time x the $/accelerator-hour, so offload's change in $/M output tokens is
1 - seconds with DRAM / seconds with HBM only, whatever the price; it "pays" where that saving reaches the
threshold (default 10 %). The DRAM tier's own cost (host memory, transfers) is not charged: the saving is an
upper bound, and the transfer of the hit blocks over the host link is assumed hidden.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from analysis.cost import cost_per_million_tokens
from analysis.fast_tokens import OperatingPoint
from runners.traces.models import Trace
from runners.traces.planner import ReplayShape, ReplayTraffic

DEFAULT_THRESHOLD = 0.10


@dataclass(frozen=True)
class ServingRates:
    """One operating point: its speed per user and each phase's tokens/s per accelerator."""

    interactivity: float
    decode_per_gpu: float
    prefill_per_gpu: float
    label: str = "given"
    usd_per_gpu_hour: float | None = None


def rates_at(point: OperatingPoint, usd_per_gpu_hour: float | None) -> ServingRates:
    """A stored frontier point's rates (fast_tokens.operating_points): decode = its output tokens/s per GPU, prefill
    = ISL / TTFT p50 per GPU (queueing included: prefill's cost, and so what offload saves, is overstated)."""
    return ServingRates(
        interactivity=point.interactivity, decode_per_gpu=point.throughput_per_gpu,
        prefill_per_gpu=point.prefill_tokens_per_s_per_gpu, label=point.label, usd_per_gpu_hour=usd_per_gpu_hour,
    )  # fmt: skip


@dataclass(frozen=True)
class HitRates:
    concurrency: int
    hbm_only: float
    with_dram: float
    prompt_tokens: float  # mean per measured request
    output_tokens: float


@dataclass(frozen=True)
class OffloadCell:
    concurrency: int
    rates: ServingRates
    hits: HitRates
    seconds_hbm: float
    seconds_dram: float
    threshold: float

    @property
    def saving(self) -> float:
        """Offload's relative drop in cost per output token (and rise in requests per accelerator-second)."""
        return 1 - self.seconds_dram / self.seconds_hbm

    @property
    def throughput_gain(self) -> float:
        """Offload's rise in requests (and output tokens) per accelerator-second at this operating point."""
        return self.seconds_hbm / self.seconds_dram - 1

    @property
    def pays(self) -> bool:
        return self.saving >= self.threshold

    @property
    def prefill_tokens_saved(self) -> float:
        """Prompt tokens per request the DRAM tier serves from cache instead of recomputing."""
        return (self.hits.with_dram - self.hits.hbm_only) * self.hits.prompt_tokens

    def usd_per_million_output(self, with_dram: bool) -> float | None:
        price = self.rates.usd_per_gpu_hour
        if price is None or self.hits.output_tokens <= 0:
            return None
        seconds = self.seconds_dram if with_dram else self.seconds_hbm
        if seconds <= 0:
            return None
        # One request's output tokens over the accelerator time it takes: the rate the cost formula prices.
        return cost_per_million_tokens(price, self.hits.output_tokens / seconds)


def seconds_per_request(prompt_tokens: float, output_tokens: float, hit: float, rates: ServingRates) -> float:
    """One request's accelerator time at `rates`: its uncached prompt at the prefill rate, its output at decode's."""
    return prompt_tokens * (1 - hit) / rates.prefill_per_gpu + output_tokens / rates.decode_per_gpu


def planned_hits(trace: Trace, concurrencies: Sequence[int], block_size: int, hbm_blocks: int, dram_blocks: int,
                 requests_per_lane: int = 50, warmup: bool = True) -> list[HitRates]:  # fmt: skip
    """The planner's hit rates with HBM only and with the DRAM tier, at each concurrency."""
    rows = []
    for concurrency in concurrencies:
        traffic = ReplayTraffic(trace, ReplayShape(concurrency=concurrency, warmup=warmup), block_size,
                                requests_per_lane)  # fmt: skip
        hbm, tiered = traffic.hit_rate(hbm_blocks, 0), traffic.hit_rate(hbm_blocks, dram_blocks)
        measured = [access for access in traffic.accesses if access.counted]
        prompt = sum(access.input_tokens for access in measured) / max(len(measured), 1)
        rows.append(HitRates(concurrency, hbm.rate, tiered.rate, prompt, _mean_output(trace)))
    return rows


def _mean_output(trace: Trace) -> float:
    outputs = [request.output_tokens for _root, session in trace.walk_sessions() for request in session.requests]
    return sum(outputs) / max(len(outputs), 1)


def offload_map(hits: Sequence[HitRates], levels: Sequence[ServingRates],
                threshold: float = DEFAULT_THRESHOLD) -> list[OffloadCell]:  # fmt: skip
    """One cell per concurrency x operating point (module docstring)."""
    cells = []
    for row in hits:
        for rates in levels:
            hbm = seconds_per_request(row.prompt_tokens, row.output_tokens, row.hbm_only, rates)
            dram = seconds_per_request(row.prompt_tokens, row.output_tokens, row.with_dram, rates)
            cells.append(OffloadCell(row.concurrency, rates, row, hbm, dram, threshold))
    return cells
