"""The axes of the Pareto explorer: what each one measures, which direction is better, and its error bars.

Every y metric is derived from one measured figure, output tokens/s per GPU (docs/ARCHITECTURE.md §7):

- output tok/s per GPU, as measured (higher is better);
- cost per million output tokens = ($/GPU/hr) / (tok/s/GPU × 3600 / 10⁶) (lower is better);
- output tokens per dollar = tok/s/GPU × 3600 / ($/GPU/hr), i.e. 10⁶ / cost per million (higher is better);
- output tok/s per all-in MW = tok/s/GPU × 1000 / (all-in kW per GPU) (higher is better);
- total (input + output) and input tok/s per GPU, as measured (higher is better): each its own figure, with its own
  interval over repeats (`Y_FIGURES`).

Each is a monotone function of throughput, so the 95 % interval of a derived metric is the image of the
throughput interval (its bounds swap for a decreasing function such as cost), and the derived figure of
several repeats is the function of their *mean throughput*: the same rule as for a read at a target
interactivity, where $/Mtok comes from the interpolated throughput rather than from averaging reciprocals.

The x metrics are measured directly: interactivity p50 (1000 / TPOT p50, higher is better), E2E latency
p50, TTFT p50 and p90 (lower is better), and the agentic E2E-normalised interactivity p90 (higher is better).
A frontier on a pair of axes keeps the points no other point beats in both directions (`pareto.py`).

The explorer plots tens of thousands of points, so the conversions and the per-point repeat intervals
(`repeat_intervals`: the same Student-t interval as `intervals.mean_interval`, computed for every point
at once) work on whole numpy arrays; `y_value` and `y_interval` are the one-point forms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from analysis.cost import TOKENS_PER_MILLION, millions_of_tokens_per_hour
from analysis.intervals import BCA_MIN_SAMPLES, Interval, mean_interval, student_t_quantile

ArrayLike = Sequence[float] | np.ndarray | float | None


@dataclass(frozen=True)
class Axis:
    key: str
    label: str
    maximise: bool
    definition: str


THROUGHPUT = "throughput"
COST = "cost"
TOKENS_PER_DOLLAR = "tokens_per_dollar"
TOKENS_PER_MW = "tokens_per_mw"
TOTAL_THROUGHPUT = "total_throughput"
INPUT_THROUGHPUT = "input_throughput"

Y_AXES: dict[str, Axis] = {
    THROUGHPUT: Axis(THROUGHPUT, "Output tok/s per GPU", True, "output tokens/s over the measured window ÷ GPUs"),
    COST: Axis(COST, "$ per million output tokens", False, "($/GPU/hr) ÷ (output tok/s/GPU × 3600 ÷ 10⁶)"),
    TOKENS_PER_DOLLAR: Axis(TOKENS_PER_DOLLAR, "Output tokens per $", True, "output tok/s/GPU × 3600 ÷ ($/GPU/hr)"),
    TOKENS_PER_MW: Axis(
        TOKENS_PER_MW, "Output tok/s per all-in MW", True, "output tok/s/GPU × 1000 ÷ (all-in kW per GPU)"
    ),
    # InferenceX's dashboard plots these too: the same Point, counted in every token or in prompt tokens only.
    TOTAL_THROUGHPUT: Axis(
        TOTAL_THROUGHPUT,
        "Total (input + output) tok/s per GPU",
        True,
        "input + output tokens/s over the measured window ÷ GPUs",
    ),
    INPUT_THROUGHPUT: Axis(
        INPUT_THROUGHPUT,
        "Input tok/s per GPU",
        True,
        "prompt tokens/s over the measured window ÷ GPUs (total − output)",
    ),
}
# The measured figure each y metric is made from (the rest are made from output tok/s per GPU).
Y_FIGURES: dict[str, str] = {
    TOTAL_THROUGHPUT: "total_token_throughput_per_gpu",
    INPUT_THROUGHPUT: "input_throughput_per_gpu",
}
OUTPUT_FIGURE = "output_throughput_per_gpu"

INTERACTIVITY = "interactivity"
E2E_LATENCY = "e2e_latency"
TTFT = "ttft"
TTFT_P90 = "ttft_p90"
E2E_INTERACTIVITY = "e2e_interactivity"

X_AXES: dict[str, Axis] = {
    INTERACTIVITY: Axis(INTERACTIVITY, "Interactivity p50 (tok/s/user)", True, "1000 ÷ TPOT p50 (ms)"),
    E2E_LATENCY: Axis(E2E_LATENCY, "E2E latency p50 (ms)", False, "end − sent, median over requests"),
    TTFT: Axis(TTFT, "TTFT p50 (ms)", False, "first generated token − sent, median over requests"),
    TTFT_P90: Axis(TTFT_P90, "TTFT p90 (ms)", False, "first generated token − sent, 90th percentile over requests"),
    E2E_INTERACTIVITY: Axis(
        E2E_INTERACTIVITY,
        "E2E-normalised interactivity p90 (tok/s/user)",
        True,
        "output tokens ÷ E2E latency per request, at the slow (p90) tail; agentic replays",
    ),
}


def _array(values: ArrayLike, shape: tuple[int, ...]) -> np.ndarray:
    """`values` as floats of `shape`; None (no rate known) becomes NaN."""
    if values is None:
        return np.full(shape, np.nan)
    return np.broadcast_to(np.asarray(values, dtype=float), shape)


def y_values(
    metric: str, throughput: ArrayLike, *, usd_per_gpu_hour: ArrayLike = None, all_in_kw: ArrayLike = None
) -> np.ndarray:
    """The y `metric` of each output `throughput` (tok/s/GPU), NaN wherever it is not defined.

    Cost and tokens per $ need a positive throughput and a known $/GPU/hr (positive for tokens per $);
    tokens per MW needs a non-negative throughput and a positive all-in kW. Rates are per point or one
    for all.
    """
    tokens = np.atleast_1d(np.asarray(throughput, dtype=float))
    if metric in (THROUGHPUT, *Y_FIGURES):  # the measured figure itself
        return tokens.copy()
    with np.errstate(divide="ignore", invalid="ignore"):
        if metric in (COST, TOKENS_PER_DOLLAR):
            usd = _array(usd_per_gpu_hour, tokens.shape)
            # The cost formula's own conversion (analysis/cost.py), applied to every point at once.
            millions_per_hour = millions_of_tokens_per_hour(tokens)
            # A free GPU-hour costs nothing per token but buys unboundedly many: no tokens-per-$ figure.
            defined = (tokens > 0) & ((usd >= 0) if metric == COST else (usd > 0))
            value = usd / millions_per_hour if metric == COST else millions_per_hour * TOKENS_PER_MILLION / usd
            return np.where(defined, value, np.nan)
        if metric == TOKENS_PER_MW:
            kw = _array(all_in_kw, tokens.shape)
            return np.where((tokens >= 0) & (kw > 0), tokens * 1000.0 / kw, np.nan)
    raise ValueError(f"unknown y metric {metric!r}; expected one of {', '.join(Y_AXES)}")


def y_bounds(
    metric: str, low: ArrayLike, high: ArrayLike, *, usd_per_gpu_hour: ArrayLike = None, all_in_kw: ArrayLike = None
) -> tuple[np.ndarray, np.ndarray]:
    """The metric's interval from throughput bounds: (lower, upper) per point, NaN where either end is undefined.

    A decreasing metric (cost) takes its lower bound from the higher throughput; a lower throughput bound
    at or below zero has no finite cost, so that interval is left out rather than cut.
    """
    rates = {"usd_per_gpu_hour": usd_per_gpu_hour, "all_in_kw": all_in_kw}
    ends = (y_values(metric, low, **rates), y_values(metric, high, **rates))
    both = np.isfinite(ends[0]) & np.isfinite(ends[1])
    return np.where(both, np.fmin(*ends), np.nan), np.where(both, np.fmax(*ends), np.nan)


def tokens_per_dollar(usd_per_gpu_hour: float, tokens_per_s_per_gpu: float) -> float:
    """tok/s/GPU × 3600 ÷ ($/GPU/hr): how many tokens one dollar of GPU time buys."""
    return float(y_values(TOKENS_PER_DOLLAR, tokens_per_s_per_gpu, usd_per_gpu_hour=usd_per_gpu_hour)[0])


def _optional(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def y_value(
    metric: str, throughput: float, *, usd_per_gpu_hour: float | None = None, all_in_kw: float | None = None
) -> float | None:
    """One point's y `metric` (see `y_values`); None when it is not defined (e.g. no $/GPU-hr known)."""
    return _optional(y_values(metric, throughput, usd_per_gpu_hour=usd_per_gpu_hour, all_in_kw=all_in_kw)[0])


def y_interval(
    metric: str, throughput: Interval, *, usd_per_gpu_hour: float | None = None, all_in_kw: float | None = None
) -> tuple[float | None, float | None, float | None]:
    """(value, low, high) of `metric` from one throughput interval: the metric at the mean and at each bound.

    The bounds are None when the throughput has no interval (one sample) or an end cannot be converted.
    """
    rates = {"usd_per_gpu_hour": usd_per_gpu_hour, "all_in_kw": all_in_kw}
    value = y_value(metric, throughput.mean, **rates)
    if value is None or throughput.low is None or throughput.high is None:
        return value, None, None
    low, high = y_bounds(metric, throughput.low, throughput.high, **rates)
    return value, _optional(low[0]), _optional(high[0])


def repeat_intervals(
    groups: Sequence[int] | np.ndarray, values: Sequence[float] | np.ndarray, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per group of repeats: (mean, low, high, n), as `intervals.mean_interval` gives for each group alone.

    `groups[i]` in 0..G−1 names the group of `values[i]`. Groups of fewer than 50 get the Student-t
    interval mean ± t(n − 1)·s/√n in one pass over all groups; larger ones (rare) go through
    `mean_interval` (BCa bootstrap); a single value has no interval (NaN bounds).
    """
    ids = np.asarray(groups, dtype=np.int64)
    samples = np.asarray(values, dtype=float)
    if ids.shape != samples.shape:
        raise ValueError(f"groups and values differ in shape ({ids.shape} vs {samples.shape})")
    if ids.size == 0:
        empty = np.array([], dtype=float)
        return empty, empty, empty, np.array([], dtype=np.int64)
    count = np.bincount(ids)
    mean = np.bincount(ids, weights=samples) / np.where(count > 0, count, 1)
    squares = np.bincount(ids, weights=(samples - mean[ids]) ** 2)
    low = np.full(count.shape, np.nan)
    high = np.full(count.shape, np.nan)
    quantile = 0.5 + confidence / 2
    for n in np.unique(count[(count >= 2) & (count < BCA_MIN_SAMPLES)]):
        members = count == n
        half = student_t_quantile(quantile, float(n - 1)) * np.sqrt(squares[members] / (n - 1)) / np.sqrt(n)
        low[members], high[members] = mean[members] - half, mean[members] + half
    for group in np.flatnonzero(count >= BCA_MIN_SAMPLES):
        interval = mean_interval(samples[ids == group], confidence)
        mean[group], low[group], high[group] = interval.mean, interval.low, interval.high
    return mean, low, high, count
