"""Projections of a measured Pareto curve to another chip, and the backtest that says how wrong they have been.

Every model here is fitted on the **source chip only**, one configuration (a parallelism of one engine, model,
precision and workload) at a time. Its points give the decode step time at each measured concurrency C,
`t(C) = 1 / interactivity` (seconds per output token of one user). The step is split into parts that follow
different hardware figures; on the target the memory part is divided by the ratio of memory bandwidths and the
arithmetic part by the ratio of dense FLOP/s at the precision (`chip_rates`), and each measured point is scaled by
`s = t(C) / t'(C)`, interactivity and throughput per accelerator alike (a configuration keeps its concurrency;
prefill is assumed to speed up like the step that bounds it). Each projected point says which part bounds it on
the target (`regime`).

- `roofline-overhead-2` (`OverheadRoofline`, where the model registry knows the model):
  `t(C) = overhead + max(s_per_byte * bytes(C), s_per_flop * flops(C))`, with bytes and FLOPs per step from the
  model's facts (`StepShape`: weights touched, KV read, 2 x active parameters per token plus amortised prefill).
  The overhead (launches, scheduling, synchronisation) follows neither figure and is kept as measured.
- `roofline-fit-1` (`Roofline`, the plain roofline, needing no model facts):
  `t(C) = max(m0 + m1 * C, k * C)`; every second of the step follows a hardware figure.
- `disagg-decode-roofline-1` (`DisaggRoofline`, disaggregated deployments whose split is known: prefill and decode
  workers on separate GPUs): each point's decode worker, at its own batch (concurrency over decode workers), by the
  roofline of the model's facts, `max(bytes / bandwidth, FLOPs / FLOP/s)`, nothing fitted (a chip's splits give
  one to five points each). The decode GPUs are kept; the prefill pool is re-sized to feed the faster decode
  (`P x speedup / FLOP/s ratio`, prompts being compute-bound). A decode worker wider than the target's scale-up
  domain is dropped, and says so.

KV capacity caps the reachable concurrency, configuration by configuration: where the target holds less KV than the
source (HBM, read in binary GB as drivers report it, less the weights: `kv_capacity`) on the same GPUs (one server's
deployment, or one decode worker), points above the target's capacity are dropped, and say so.

Assumptions, stated once here and in docs/METHODOLOGY.md: same engine, image and parallelism on both chips; the
source's efficiency against peak carries over; the overhead is the same on both chips; scale-up bandwidth is not
modelled (pairs whose scale-up domains differ are marked); a chip without FP4 units computes FP4 weights at its
FP8 rate; bf16 runs at half the FP8 rate. A figure published as a range (Vera Rubin's bandwidth) gives a band:
the projection at each end of the range.

A chip's curve is one engine image (software generation): `infersweep project` starts from each chip's newest,
never from a median across releases. The backtest projects every chip's curve to every other chip that measured
the same model, precision, engine, workload and parallelism, one image against the same image where both chips ran
one (else their fullest curves, marked), and compares the projected frontier with the measured one at the
interactivity levels both reach, next to the plain roofline and the unchanged-curve baseline (the source's own
curve, as if the chips were equal). Speculative decoding (MTP) makes a curve of its own; disaggregated deployments
are compared frontier to frontier over every split, apart from single-server ones. A reading between frontier
points more than `SPARSE_GAP` times apart in interactivity or in throughput is marked sparse (points are missing
there: the interpolation guesses), and `project ratio` gives no ratio at such a level.

Here: the hardware figures, the step models and their fits, and projecting one chip's curve to another
(`project_between`, `project_band`, `chip_ratios`). Results become curves in `analysis.curves`;
the backtest is `analysis.backtest`.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from analysis.curves import SPARSE_GAP, Curve, CurveKey, CurvePoint, DisaggSplit, gap_at, read_at
from recipes.hardware import Figure, Hardware
from recipes.model_registry import MlaAttention, RegistryModelSpec, kv_bytes_per_token

# The overhead model where the model registry knows the model, the plain roofline otherwise (both named per fit).
OVERHEAD_MODEL = "roofline-overhead-2"
PLAIN_MODEL = "roofline-fit-1"
# Disaggregated deployments: each point's decode worker by the roofline of the model's facts (nothing fitted).
DISAGG_MODEL = "disagg-decode-roofline-1"
# What a projection takes a fitted overhead to be on the target: "kept" as measured on the source (the model),
# or one of the backtest's diagnostics (`OverheadRoofline`): "follows-compute", or the target's own fitted
# overhead per configuration (a mapping; it reads the target, so it is never a projection).
TargetOverhead = Literal["kept", "follows-compute"] | Mapping[str, float]
# Share of accelerator memory an engine gives to weights and KV cache (vLLM's gpu_memory_utilization default).
MEMORY_FRACTION = 0.9
WEIGHT_BYTES_PER_PARAMETER = {"fp4": 0.5, "fp8": 1.0, "bf16": 2.0, "fp16": 2.0}

Regime = Literal["memory", "compute"]
Edge = Literal["low", "central", "high"]


class ProjectionError(ValueError):
    """A projection that cannot be made from these figures (not retryable: the registry or the input is short)."""


@dataclass(frozen=True)
class Rate:
    """A chip figure used by the projection: its central value, its band (low, high) and where it comes from."""

    value: float
    low: float
    high: float
    source: str

    def at(self, edge: Edge) -> float:
        return {"low": self.low, "central": self.value, "high": self.high}[edge]


@dataclass(frozen=True)
class ChipRates:
    key: str
    bandwidth_tbps: Rate
    dense_pflops: Rate | None  # None: no dense figure at this precision (a bound may still come from `inference`)
    inference_pflops: float | None  # a vendor's non-dense inference figure, an upper bound only
    memory_bytes: float | None  # per unit (`HardwareSpec.memory_bytes`)
    scale_up_domain: int | None = None  # accelerators one scale-up fabric joins (8 for HGX, 72 for NVL72)


def _rate(figure: Figure | None, scale: float = 1.0, why: str = "") -> Rate | None:
    if figure is None or figure.value is None:
        return None
    low, high = figure.span
    source = f"{figure.source} ({figure.as_of}){why}"
    return Rate(value=figure.value * scale, low=low * scale, high=high * scale, source=source)


def chip_rates(hardware: Hardware, precision: str) -> ChipRates:
    """The registry figures a projection at `precision` reads, with the precision's compute figure chosen."""
    if precision not in WEIGHT_BYTES_PER_PARAMETER:
        known = ", ".join(WEIGHT_BYTES_PER_PARAMETER)
        raise ProjectionError(f"precision {precision!r} has no compute figure rule; expected one of {known}")
    bandwidth = _rate(hardware.memory_bandwidth_tbps)
    if bandwidth is None:
        raise ProjectionError(f"hardware {hardware.key!r} has no memory bandwidth figure (memory_bandwidth_tbps)")
    if precision == "fp4":
        dense = _rate(hardware.dense_fp4_pflops) or _rate(
            hardware.dense_fp8_pflops, why="; no FP4 units: FP4 weights computed at the FP8 rate"
        )
    elif precision == "fp8":
        dense = _rate(hardware.dense_fp8_pflops)
    else:
        dense = _rate(hardware.dense_fp8_pflops, 0.5, why="; 16-bit taken as half the FP8 rate")
    inference = hardware.fp4_inference_pflops.value if hardware.fp4_inference_pflops is not None else None
    if inference is not None and precision != "fp4":
        # An FP4 figure bounds FP8 at half of it: every chip in the registry with both dense figures has FP8 at
        # most half its FP4 (B200, GB200, MI355X half; B300, GB300 a third). 16-bit at a quarter.
        inference *= 0.5 if precision == "fp8" else 0.25
    return ChipRates(hardware.key, bandwidth, dense, inference, hardware.memory_bytes, hardware.scale_up_domain)


def flops_ratio(source: ChipRates, target: ChipRates) -> Rate:
    """Target over source dense FLOP/s. Where the target publishes no dense figure, only a vendor inference figure,
    the band runs from no gain (1x, also the central value: conservative) to that figure over the source's."""
    if source.dense_pflops is None:
        raise ProjectionError(f"source hardware {source.key!r} has no dense compute figure at this precision")
    if target.dense_pflops is not None:
        base = source.dense_pflops.value
        return Rate(
            value=target.dense_pflops.value / base, low=target.dense_pflops.low / base,
            high=target.dense_pflops.high / base, source=target.dense_pflops.source,
        )  # fmt: skip
    if target.inference_pflops is not None:
        high = max(1.0, target.inference_pflops / source.dense_pflops.value)
        why = f"{target.key} publishes no dense figure: 1x up to its inference figure over {source.key}'s dense figure"
        return Rate(value=1.0, low=1.0, high=high, source=why)
    raise ProjectionError(f"target hardware {target.key!r} has no compute figure at this precision")


# ------------------------------------------------------------------------------------------------- the fit


@dataclass(frozen=True)
class Roofline:
    """t(C) = max(memory_s + memory_s_per_seq * C, compute_s_per_seq * C), seconds per output token per user."""

    memory_s: float
    memory_s_per_seq: float
    compute_s_per_seq: float
    relative_rms_error: float = 0.0

    def memory_term(self, concurrency: float) -> float:
        return self.memory_s + self.memory_s_per_seq * concurrency

    def compute_term(self, concurrency: float) -> float:
        return self.compute_s_per_seq * concurrency

    def step_s(self, concurrency: float, bandwidth_ratio: float = 1.0, compute_ratio: float = 1.0) -> float:
        return max(self.memory_term(concurrency) / bandwidth_ratio, self.compute_term(concurrency) / compute_ratio)

    def on_target(self) -> Roofline:
        """The model as it carries over to the target: every second follows a figure, nothing else changes."""
        return self

    def regime(self, concurrency: float, bandwidth_ratio: float = 1.0, compute_ratio: float = 1.0) -> Regime:
        memory = self.memory_term(concurrency) / bandwidth_ratio
        return "memory" if memory >= self.compute_term(concurrency) / compute_ratio else "compute"

    def throughput_scale(self, speedup: float, compute_ratio: float) -> float:
        """Output per accelerator on the target over the source's: one server keeps its GPUs and concurrency."""
        return speedup

    def prefill_gpus(self, speedup: float, compute_ratio: float) -> float | None:
        return None  # prefill runs on the same GPUs

    def parameters(self) -> dict[str, float]:
        return {"memory_s": self.memory_s, "memory_s_per_seq": self.memory_s_per_seq,
                "compute_s_per_seq": self.compute_s_per_seq, "relative_rms_error": self.relative_rms_error}  # fmt: skip


def _line(cs: Sequence[float], ts: Sequence[float]) -> tuple[float, float]:
    """Non-negative (intercept, slope) minimising the relative squared error of t = a + b*C."""
    weights = [1.0 / (t * t) for t in ts]
    if len(cs) == 1:
        return ts[0], 0.0
    sw = sum(weights)
    sc = sum(w * c for w, c in zip(weights, cs, strict=True))
    st = sum(w * t for w, t in zip(weights, ts, strict=True))
    scc = sum(w * c * c for w, c in zip(weights, cs, strict=True))
    sct = sum(w * c * t for w, c, t in zip(weights, cs, ts, strict=True))
    denominator = sw * scc - sc * sc
    slope = (sw * sct - sc * st) / denominator if denominator > 0 else 0.0
    if slope < 0:
        return st / sw, 0.0
    intercept = (st - slope * sc) / sw
    if intercept < 0:
        return 0.0, sct / scc
    return intercept, slope


def _through_origin(cs: Sequence[float], ts: Sequence[float]) -> float:
    weights = [1.0 / (t * t) for t in ts]
    return sum(w * c * t for w, c, t in zip(weights, cs, ts, strict=True)) / sum(
        w * c * c for w, c in zip(weights, cs, strict=True)
    )


def _error(model: Roofline, cs: Sequence[float], ts: Sequence[float]) -> float:
    return math.sqrt(statistics.fmean(((model.step_s(c) - t) / t) ** 2 for c, t in zip(cs, ts, strict=True)))


def _measured_steps(concurrency: Sequence[float], step_s: Sequence[float]) -> tuple[list[float], list[float]]:
    """(concurrencies, step times) sorted by concurrency, refused unless every pair is positive and finite."""
    if len(concurrency) != len(step_s) or not concurrency:
        raise ProjectionError("a roofline needs at least one (concurrency, step time) pair")
    pairs = sorted(zip(concurrency, step_s, strict=True))
    if any(c <= 0 or t <= 0 or not math.isfinite(t) for c, t in pairs):
        raise ProjectionError(f"concurrency and step time must be positive, got {pairs}")
    return [c for c, _ in pairs], [t for _, t in pairs]


def fit_roofline(concurrency: Sequence[float], step_s: Sequence[float]) -> Roofline:
    """The roofline closest (relative least squares) to measured step times, one per distinct concurrency.

    Tried: every split of the points sorted by concurrency into a memory-bound head (a line) and a compute-bound
    tail (a line through the origin), and no tail at all. With no compute-bound point the arithmetic term is 0:
    nothing on the source shows where compute would bind, so the projection scales such a curve by bandwidth.
    A curve whose step time is proportional to concurrency (no fixed part) is compute-bound throughout.
    """
    cs, ts = _measured_steps(concurrency, step_s)
    intercept, slope = _line(cs, ts)
    # A memory-bound step always reads the weights (a positive intercept); a step time proportional to
    # concurrency with no fixed part is arithmetic.
    best = Roofline(intercept, slope, 0.0) if intercept > 0 else Roofline(0.0, 0.0, slope)
    best_error = _error(best, cs, ts)
    for split in range(1, len(cs)):
        intercept, slope = _line(cs[:split], ts[:split])
        k = _through_origin(cs[split:], ts[split:])
        if k <= slope:
            continue  # no knee: the tail would never bind
        candidate = Roofline(intercept, slope, k)
        error = _error(candidate, cs, ts)
        if error < best_error - 1e-12:
            best, best_error = candidate, error
    return replace(best, relative_rms_error=best_error)


@dataclass(frozen=True)
class StepShape:
    """How a step's memory traffic and arithmetic grow with concurrency, from the model registry's facts (per GPU).

    Bytes read per step: the weights the batch touches (all of a dense model; of a mixture of experts, a share
    1 - (1 - active/total)^C, as if each sequence touched a random `active/total` of the weights) plus the KV cache
    of C sequences at the mean decode context (ISL + OSL/2). Arithmetic per step: 2 x active parameters per token
    for C sequences, plus their prefill amortised over the output (ISL/OSL prompt tokens per output token).
    Everything is spread over the deployment's GPUs, except MLA's latent KV, which every tensor-parallel rank holds
    whole unless attention is data-parallel ('dpa').
    """

    weight_bytes_per_gpu: float
    active_share: float
    kv_bytes_per_sequence_per_gpu: float
    flops_per_sequence_per_gpu: float

    @classmethod
    def of(
        cls, model: RegistryModelSpec, precision: str, isl: int, osl: int, gpus: int, parallelism: str,
        with_prefill: bool = True,
    ) -> StepShape | None:  # fmt: skip
        """`with_prefill=False`: a disaggregated decode worker's step, whose prompts were computed elsewhere."""
        if precision not in WEIGHT_BYTES_PER_PARAMETER:
            return None
        total, active = model.total_params_b.value * 1e9, model.active_params_b.value * 1e9
        context = max(1, int(isl + osl / 2))
        kv = kv_bytes_per_token(model, context) * context
        if not (isinstance(model.attention, MlaAttention) and "dpa" not in parallelism):
            kv /= gpus
        return cls(
            weight_bytes_per_gpu=total * WEIGHT_BYTES_PER_PARAMETER[precision] / gpus,
            active_share=min(1.0, active / total), kv_bytes_per_sequence_per_gpu=kv,
            flops_per_sequence_per_gpu=2 * active * (1 + (isl / osl if with_prefill else 0.0)) / gpus,
        )  # fmt: skip

    def bytes(self, concurrency: float) -> float:
        touched = 1.0 - (1.0 - self.active_share) ** concurrency
        return self.weight_bytes_per_gpu * touched + concurrency * self.kv_bytes_per_sequence_per_gpu

    def flops(self, concurrency: float) -> float:
        return concurrency * self.flops_per_sequence_per_gpu


@dataclass(frozen=True)
class OverheadRoofline:
    """t(C) = overhead + max(s_per_byte * bytes(C), s_per_flop * flops(C)), with `shape` giving bytes and flops.

    The overhead (kernel launches, scheduling, synchronisation) is the part of a step that follows neither memory
    bandwidth nor FLOP/s: it is taken to be the same on the target. `s_per_byte` and `s_per_flop` are the source's
    achieved seconds per byte and per FLOP (peak figures over efficiency), scaled on the target by the ratios.
    """

    overhead_s: float
    s_per_byte: float
    s_per_flop: float
    shape: StepShape
    relative_rms_error: float = 0.0
    # The overhead on the target, where one of the backtest's diagnostics sets it (`TargetOverhead`); None, the
    # model: kept as measured on the source.
    target_overhead_s: float | None = None

    def memory_term(self, concurrency: float) -> float:
        return self.s_per_byte * self.shape.bytes(concurrency)

    def compute_term(self, concurrency: float) -> float:
        return self.s_per_flop * self.shape.flops(concurrency)

    def step_s(self, concurrency: float, bandwidth_ratio: float = 1.0, compute_ratio: float = 1.0) -> float:
        return self.overhead_s + max(
            self.memory_term(concurrency) / bandwidth_ratio, self.compute_term(concurrency) / compute_ratio
        )

    def on_target(self) -> OverheadRoofline:
        """The model as it carries over to the target: the overhead kept as measured on the source, unless one of
        the backtest's diagnostics set it."""
        if self.target_overhead_s is None:
            return self
        return replace(self, overhead_s=self.target_overhead_s, target_overhead_s=None)

    def regime(self, concurrency: float, bandwidth_ratio: float = 1.0, compute_ratio: float = 1.0) -> Regime:
        memory = self.memory_term(concurrency) / bandwidth_ratio
        return "memory" if memory >= self.compute_term(concurrency) / compute_ratio else "compute"

    def throughput_scale(self, speedup: float, compute_ratio: float) -> float:
        """Output per accelerator on the target over the source's: one server keeps its GPUs and concurrency."""
        return speedup

    def prefill_gpus(self, speedup: float, compute_ratio: float) -> float | None:
        return None  # prefill runs on the same GPUs

    def parameters(self) -> dict[str, float]:
        return {"overhead_s": self.overhead_s, "s_per_byte": self.s_per_byte, "s_per_flop": self.s_per_flop,
                "relative_rms_error": self.relative_rms_error}  # fmt: skip


@dataclass(frozen=True)
class DisaggRoofline:
    """A disaggregated point (`DISAGG_MODEL`): one decode worker's step at its own batch (concurrency over decode
    workers), by the roofline of the model's facts at the source's peak figures, `max(bytes / bandwidth, FLOPs /
    FLOP/s)`. Nothing is fitted: InferenceX publishes one to five points per chip, each a different split, too few
    to fit an overhead per split. So every second of the step follows a hardware figure (no fixed overhead), and
    the source's efficiency carries over. The decode GPUs are kept; the prefill pool is re-sized to feed them
    (`prefill_gpus`): the source's split is taken as balanced (InferenceX tunes each split so), prompts are
    compute-bound, so the target needs `P x speedup / FLOP/s ratio` prefill GPUs (a fraction: a fleet of such
    deployments averages it out)."""

    shape: StepShape  # one GPU of one decode worker, prompts computed elsewhere
    split: DisaggSplit
    peak_tbps: float  # the source's peak figures: only their ratios to the target's matter
    peak_pflops: float

    def batch(self, concurrency: float) -> float:
        return concurrency / max(1, self.split.decode_workers)

    def memory_term(self, concurrency: float) -> float:
        return self.shape.bytes(self.batch(concurrency)) / (self.peak_tbps * 1e12)

    def compute_term(self, concurrency: float) -> float:
        return self.shape.flops(self.batch(concurrency)) / (self.peak_pflops * 1e15)

    def step_s(self, concurrency: float, bandwidth_ratio: float = 1.0, compute_ratio: float = 1.0) -> float:
        """The roofline's step time at peak (not the measured one: only ratios of it are used)."""
        return max(self.memory_term(concurrency) / bandwidth_ratio, self.compute_term(concurrency) / compute_ratio)

    def on_target(self) -> DisaggRoofline:
        return self  # nothing fitted, nothing kept: every second follows a figure

    def regime(self, concurrency: float, bandwidth_ratio: float = 1.0, compute_ratio: float = 1.0) -> Regime:
        memory = self.memory_term(concurrency) / bandwidth_ratio
        return "memory" if memory >= self.compute_term(concurrency) / compute_ratio else "compute"

    def prefill_gpus(self, speedup: float, compute_ratio: float) -> float:
        """Prefill GPUs that feed decode workers `speedup` times faster on a chip of `compute_ratio` x FLOP/s."""
        return self.split.prefill_gpus * speedup / compute_ratio

    def throughput_scale(self, speedup: float, compute_ratio: float) -> float:
        """Output per accelerator on the target over the source's: `speedup` x the output over the re-sized GPUs."""
        before = self.split.prefill_gpus + self.split.decode_gpus
        return speedup * before / (self.prefill_gpus(speedup, compute_ratio) + self.split.decode_gpus)

    def parameters(self) -> dict[str, float]:
        return {"prefill_gpus": self.split.prefill_gpus, "decode_gpus": self.split.decode_gpus,
                "decode_workers": self.split.decode_workers,
                "decode_dp_attention": float(self.split.decode_dp_attention),
                "source_peak_tbps": self.peak_tbps, "source_peak_pflops": self.peak_pflops}  # fmt: skip


StepModel = Roofline | OverheadRoofline | DisaggRoofline


def model_version_of(fit: StepModel) -> str:
    if isinstance(fit, DisaggRoofline):
        return DISAGG_MODEL
    return OVERHEAD_MODEL if isinstance(fit, OverheadRoofline) else PLAIN_MODEL


def _nonnegative_least_squares(rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """argmin |rows x - values| with x >= 0, by trying every set of free unknowns (three at most here)."""
    unknowns = rows.shape[1]
    best, best_error = np.zeros(unknowns), float(np.sum(values**2))
    for mask in range(1, 2**unknowns):
        free = [i for i in range(unknowns) if mask >> i & 1]
        solution, *_ = np.linalg.lstsq(rows[:, free], values, rcond=None)
        if np.any(solution < 0):
            continue
        candidate = np.zeros(unknowns)
        candidate[free] = solution
        error = float(np.sum((rows @ candidate - values) ** 2))
        if error < best_error - 1e-15:
            best, best_error = candidate, error
    return best


def fit_overhead_roofline(concurrency: Sequence[float], step_s: Sequence[float], shape: StepShape) -> OverheadRoofline:
    """The `OverheadRoofline` closest (relative least squares) to measured step times, from the source alone.

    Tried: every split of the points sorted by concurrency into a memory-bound head and a compute-bound tail
    (possibly empty), the three coefficients solved jointly and non-negative for each; the split whose max() model
    fits best wins. A single point cannot tell overhead from traffic: it is read as all traffic (no overhead).
    """
    cs, steps = _measured_steps(concurrency, step_s)
    ts = np.array(steps)
    if len(cs) == 1:
        model = OverheadRoofline(0.0, float(ts[0]) / shape.bytes(cs[0]), 0.0, shape)
        return replace(model, relative_rms_error=0.0)
    best, best_error = OverheadRoofline(0.0, 0.0, 0.0, shape), math.inf
    for split in range(1, len(cs) + 1):
        rows = np.array(
            [[1.0, shape.bytes(c), 0.0] if index < split else [1.0, 0.0, shape.flops(c)] for index, c in enumerate(cs)]
        )
        overhead, per_byte, per_flop = _nonnegative_least_squares(rows / ts[:, None], np.ones(len(cs)))
        candidate = OverheadRoofline(float(overhead), float(per_byte), float(per_flop), shape)
        error = math.sqrt(float(np.mean([((candidate.step_s(c) - t) / t) ** 2 for c, t in zip(cs, ts, strict=True)])))
        if error < best_error - 1e-12:
            best, best_error = candidate, error
    return replace(best, relative_rms_error=best_error)


# ------------------------------------------------------------------------------------------------- curves


@dataclass(frozen=True)
class ProjectedPoint:
    point: CurvePoint  # the projected coordinates (same configuration and concurrency)
    source: CurvePoint
    speedup: float
    regime: Regime
    source_regime: Regime
    prefill_gpus: float | None = None  # a disaggregated point's prefill pool, re-sized for the target


@dataclass(frozen=True)
class Projection:
    source: str
    target: str
    edge: Edge
    bandwidth_ratio: float
    compute_ratio: float
    points: list[ProjectedPoint]
    fits: dict[str, StepModel]
    dropped: list[tuple[CurvePoint, str]] = field(default_factory=list)
    # By configuration: (source, target) sequences it holds where known, per decode worker for a disaggregated one.
    kv_capacity: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)

    @property
    def model_version(self) -> str:
        """The model's name when every configuration was projected with one model, else the names joined with '+'
        (a curve of disaggregated and single-server configurations; each configuration's fit names its own)."""
        single = [fit for fit in self.fits.values() if not isinstance(fit, DisaggRoofline)]
        names = []
        if single:
            names.append(OVERHEAD_MODEL if all(isinstance(fit, OverheadRoofline) for fit in single) else PLAIN_MODEL)
        if len(single) < len(self.fits):
            names.append(DISAGG_MODEL)
        return "+".join(names) or PLAIN_MODEL

    def parameters(self) -> dict[str, Any]:
        """What is stored with every projected point: the model, its inputs and its fitted coefficients."""
        return {
            "model_version": self.model_version, "from": self.source, "to": self.target, "band_edge": self.edge,
            "bandwidth_ratio": self.bandwidth_ratio, "compute_ratio": self.compute_ratio,
            "kv_capacity_sequences": {name: list(pair) for name, pair in self.kv_capacity.items()},
            "fits": {name: {"model_version": model_version_of(fit), **fit.parameters()}
                     for name, fit in self.fits.items()},
            "dropped": [{"configuration": p.configuration, "concurrency": p.concurrency, "why": why}
                        for p, why in self.dropped],
        }  # fmt: skip


def kv_capacity(
    memory_bytes: float | None, gpus: int, model: RegistryModelSpec | None, precision: str, context_tokens: int,
    parallelism: str,
) -> int | None:  # fmt: skip
    """Sequences of `context_tokens` a deployment's KV cache holds: memory x MEMORY_FRACTION less the weights,
    over KV bytes per sequence. MLA's latent cache is held whole by every tensor-parallel rank unless attention
    is data-parallel ('dpa'), so it counts once per GPU there. None when the model or memory is unknown."""
    if memory_bytes is None or model is None or precision not in WEIGHT_BYTES_PER_PARAMETER:
        return None
    weights = model.total_params_b.value * 1e9 * WEIGHT_BYTES_PER_PARAMETER[precision]
    usable = gpus * memory_bytes * MEMORY_FRACTION - weights
    if usable <= 0:
        return 0
    per_sequence = kv_bytes_per_token(model, context_tokens) * context_tokens
    if isinstance(model.attention, MlaAttention) and "dpa" not in parallelism:
        per_sequence *= gpus
    return int(usable // per_sequence)


def project_curve(
    points: Sequence[CurvePoint], source: ChipRates, target: ChipRates, edge: Edge = "central",
    capacity: Mapping[str, tuple[int | None, int | None]] | None = None,
    shapes: Mapping[str, StepShape] | None = None, target_overhead: TargetOverhead = "kept",
) -> Projection:  # fmt: skip
    """Project `points` (one chip's curve) to `target`, at one edge of the target's figure bands.

    A configuration with a `StepShape` (the model's facts are known) is fitted with the overhead model
    (`OVERHEAD_MODEL`), any other with the plain roofline (`PLAIN_MODEL`). A disaggregated configuration (its
    points carry a `split`) is projected point by point with `DisaggRoofline`, its shape being one decode worker's
    GPU; without the model's facts its points are dropped, and say so. `capacity` gives each configuration's KV
    capacity (source, target) in sequences: of the deployment for one server, per decode worker for a disaggregated
    one; a point the target cannot hold is dropped, and says why."""
    bandwidth_ratio = target.bandwidth_tbps.at(edge) / source.bandwidth_tbps.value
    compute_ratio = flops_ratio(source, target).at(edge)
    by_configuration: dict[str, list[CurvePoint]] = defaultdict(list)
    for point in points:
        by_configuration[point.configuration].append(point)
    fits: dict[str, StepModel] = {}
    for name, members in sorted(by_configuration.items()):
        concurrency, steps = [p.concurrency for p in members], [1.0 / p.interactivity for p in members]
        shape = (shapes or {}).get(name)
        split = members[0].split
        if split is not None:
            if shape is not None and source.dense_pflops is not None:
                fits[name] = DisaggRoofline(shape, split, source.bandwidth_tbps.value, source.dense_pflops.value)
            continue
        fits[name] = (
            fit_roofline(concurrency, steps) if shape is None
            else _with_target_overhead(fit_overhead_roofline(concurrency, steps, shape), name, target_overhead,
                                       compute_ratio)
        )  # fmt: skip
    projected: list[ProjectedPoint] = []
    dropped: list[tuple[CurvePoint, str]] = []
    for point in points:
        fit = fits.get(point.configuration)
        if fit is None:
            dropped.append((point, "a disaggregated point is projected from the model's facts, which are unknown"))
            continue
        why = _why_not_on_target(fit, point, target, (capacity or {}).get(point.configuration))
        if why is not None:
            dropped.append((point, why))
            continue
        target_step = fit.on_target().step_s(point.concurrency, bandwidth_ratio, compute_ratio)
        speedup = fit.step_s(point.concurrency) / target_step
        regime = fit.regime(point.concurrency, bandwidth_ratio, compute_ratio)
        throughput = fit.throughput_scale(speedup, compute_ratio)
        moved = replace(
            point, interactivity=point.interactivity * speedup, output_per_gpu=point.output_per_gpu * throughput,
            total_per_gpu=point.total_per_gpu * throughput,
        )  # fmt: skip
        projected.append(ProjectedPoint(moved, point, speedup, regime, fit.regime(point.concurrency),
                                        fit.prefill_gpus(speedup, compute_ratio)))  # fmt: skip
    return Projection(source.key, target.key, edge, bandwidth_ratio, compute_ratio, projected, fits, dropped,
                      dict(capacity or {}))  # fmt: skip


def _with_target_overhead(
    fit: OverheadRoofline, configuration: str, rule: TargetOverhead, compute_ratio: float
) -> OverheadRoofline:  # fmt: skip
    """`fit` with the overhead a diagnostic gives the target: "follows-compute" divides it by the FLOP/s ratio too
    (as if it were small kernels bound by issue rate; it mends AMD across generations and breaks NVIDIA); a
    mapping gives the target's own fitted overhead per configuration (it reads the target: how much of a miss a
    per-step overhead explains at all)."""
    if rule == "kept":
        return fit
    if rule == "follows-compute":
        return replace(fit, target_overhead_s=fit.overhead_s / compute_ratio)
    if isinstance(rule, Mapping) and configuration in rule:
        return replace(fit, target_overhead_s=rule[configuration])
    return fit  # the target never ran this configuration: nothing to take from it


def _why_not_on_target(
    fit: StepModel, point: CurvePoint, target: ChipRates, capacity: tuple[int | None, int | None] | None
) -> str | None:
    """Why a point cannot run on the target, or None: a disaggregated decode worker wider than the target's scale-up
    domain (its tensor- or expert-parallel traffic needs one fabric), or more sequences than the target holds (the
    deployment's for one server, a decode worker's batch for a disaggregated one), where it holds fewer than the
    source (nothing beyond the source's own range is judged)."""
    sequences, unit = float(point.concurrency), ""
    if isinstance(fit, DisaggRoofline):
        worker, domain = fit.split.gpus_per_decode_worker, target.scale_up_domain
        if domain is not None and worker > domain:
            return f"a decode worker of {worker} GPUs is wider than {target.key}'s scale-up domain of {domain}"
        sequences, unit = fit.batch(point.concurrency), " per decode worker"
    source_capacity, target_capacity = capacity or (None, None)
    if target_capacity is None or (source_capacity is not None and target_capacity >= source_capacity):
        return None
    if sequences <= target_capacity:
        return None
    return f"beyond {target.key}'s KV capacity of {target_capacity} sequences{unit}"


def project_between(
    curve: Curve,
    source: Hardware,
    target: Hardware,
    model: RegistryModelSpec | None,
    edge: Edge = "central",
    target_overhead: TargetOverhead = "kept",
) -> Projection:
    """`curve` (measured on `source`) projected to `target`, KV capacity from the model registry where known."""
    source_rates = chip_rates(source, curve.key.precision)
    target_rates = chip_rates(target, curve.key.precision)
    context = curve.isl + curve.osl
    splits = {p.configuration: p.split for p in curve.points if p.split is not None}
    # What holds the KV cache, by configuration: the whole deployment of one server, one decode worker of a split.
    holders = {name: (gpus, name) for name, gpus in curve.gpus.items() if name not in splits}
    holders |= {name: (split.gpus_per_decode_worker, "dpa" if split.decode_dp_attention else "")
                for name, split in splits.items()}  # fmt: skip
    capacity = {
        name: (kv_capacity(source_rates.memory_bytes, gpus, model, curve.key.precision, context, parallelism),
               kv_capacity(target_rates.memory_bytes, gpus, model, curve.key.precision, context, parallelism))
        for name, (gpus, parallelism) in holders.items()
    }  # fmt: skip
    shapes: dict[str, StepShape] = {}
    if model is not None:
        for name, (gpus, parallelism) in holders.items():
            with_prefill = name not in splits  # a decode worker's prompts are computed elsewhere
            shape = StepShape.of(model, curve.key.precision, curve.isl, curve.osl, gpus, parallelism, with_prefill)
            if shape is not None:
                shapes[name] = shape
    return project_curve(curve.points, source_rates, target_rates, edge, capacity, shapes, target_overhead)


def project_band(curve: Curve, source: Hardware, target: Hardware, model: RegistryModelSpec | None) -> list[Projection]:
    """The projections to store for `curve`: one (edge 'central') where the target's figures are single values,
    else one per end of their ranges ('low', 'high'), and the central one too where it differs from both ends."""
    projections = {edge: project_between(curve, source, target, model, edge) for edge in ("low", "central", "high")}

    def ratios(edge: str) -> tuple[float, float]:
        return projections[edge].bandwidth_ratio, projections[edge].compute_ratio

    if ratios("low") == ratios("high"):
        return [projections["central"]]
    kept = [projections["low"], projections["high"]]
    if ratios("central") not in {ratios("low"), ratios("high")}:
        kept.insert(1, projections["central"])
    return kept


@dataclass(frozen=True)
class ChipRatio:
    """One chip's projected frontier over another's (measured, or projected from the same source curve), at one
    interactivity level and at each frontier's highest throughput, for one edge of the numerator's figure band."""

    curve: CurveKey
    edge: Edge
    level: float
    numerator_at_level: float | None
    denominator_at_level: float | None
    numerator_peak: float
    denominator_peak: float
    # Either frontier is read at the level between points more than SPARSE_GAP x apart: no ratio is given there.
    sparse: bool = False

    @property
    def at_level(self) -> float | None:
        if self.sparse or self.numerator_at_level is None or not self.denominator_at_level:
            return None
        return self.numerator_at_level / self.denominator_at_level

    @property
    def at_peak(self) -> float:
        return self.numerator_peak / self.denominator_peak


def chip_ratios(
    curve: Curve, source: Hardware, numerator: Hardware, denominator: Hardware, model: RegistryModelSpec | None,
    level: float,
) -> list[ChipRatio]:  # fmt: skip
    """`numerator` over `denominator` on `curve` (measured on `source`): both projected from the one measured curve
    (the source's own points where the denominator is the source), one row per edge of the numerator's band."""
    if denominator.key == source.key:
        over = curve.points
    else:
        over = [p.point for p in project_between(curve, source, denominator, model).points]
    out = []
    for projection in project_band(curve, source, numerator, model):
        points = [p.point for p in projection.points]
        if not points or not over:
            continue
        out.append(ChipRatio(
            curve.key, projection.edge, level, read_at(points, level), read_at(over, level),
            max(p.output_per_gpu for p in points), max(p.output_per_gpu for p in over),
            sparse=max(gap_at(points, level), gap_at(over, level)) > SPARSE_GAP,
        ))  # fmt: skip
    return out
