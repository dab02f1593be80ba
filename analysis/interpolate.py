"""Monotone interpolation along a frontier, for comparisons at the same interactivity.

Two systems are compared at a target interactivity (tok/s/user) that neither measured exactly, so
each system's throughput is read off its Pareto frontier between the measured points. The curve is a
monotone piecewise cubic (PCHIP: Fritsch–Carlson monotone Hermite, with the Fritsch–Butland weighted
harmonic-mean slopes and shape-preserving end slopes, as in Moler's `pchip`): it passes through every
measured point, never overshoots between them, and stays monotone where the data are monotone (a
frontier's throughput falls as interactivity rises), which an ordinary cubic spline does not promise.

It never extrapolates: a target outside the measured range gives value None, `in_range` False and a
reason quoting the target and the range (docs/ARCHITECTURE.md §7: flag and drop out-of-range reads). Reciprocal
metrics ($ per million tokens) are derived from the interpolated throughput (see `cost.py`), not
splined themselves: a reciprocal of a monotone curve is monotone, but a spline through reciprocals
reads different values between the knots.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field


class InterpolatedValue(BaseModel):
    """One interpolated read: the value, whether the target was inside the measured range, and why."""

    model_config = ConfigDict(frozen=True)

    target: float = Field(description="The x value (e.g. tok/s/user) the curve was read at.")
    value: float | None = Field(description="The interpolated y value; None when the target is out of range.")
    in_range: bool = Field(description="True when the target lies within the measured x range (inclusive).")
    reason: str = Field(description="How the value was obtained, or why there is none.")


def _prepare(xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    if x.ndim != 1 or y.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"xs and ys must be 1-D and the same length (got {x.shape} and {y.shape})")
    if x.size == 0:
        raise ValueError("at least one point is needed")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("xs and ys must be finite")
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    if x.size > 1 and np.any(np.diff(x) == 0):
        repeated = sorted({float(v) for v in x[1:][np.diff(x) == 0]})
        raise ValueError(f"xs must be distinct (repeated: {repeated}); take the frontier first")
    return x, y


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


def _end_slope(h0: float, h1: float, d0: float, d1: float) -> float:
    """Shape-preserving one-sided three-point slope at an end of the data."""
    slope = ((2.0 * h0 + h1) * d0 - h0 * d1) / (h0 + h1)
    if _sign(slope) != _sign(d0):
        return 0.0
    if _sign(d0) != _sign(d1) and abs(slope) > abs(3.0 * d0):
        return 3.0 * d0
    return slope


def _knot_slope(x: Sequence[float], y: Sequence[float], k: int) -> float:
    """Knot k's derivative of the monotone piecewise-cubic Hermite interpolant (x strictly increasing, two knots or
    more): it depends on the two secants beside the knot only, so a read between two knots needs just their two."""
    n = len(x)
    if n == 2:
        return (y[1] - y[0]) / (x[1] - x[0])
    if k == 0:
        return _end_slope(x[1] - x[0], x[2] - x[1], (y[1] - y[0]) / (x[1] - x[0]), (y[2] - y[1]) / (x[2] - x[1]))
    if k == n - 1:
        h0, h1 = x[k] - x[k - 1], x[k - 1] - x[k - 2]
        return _end_slope(h0, h1, (y[k] - y[k - 1]) / h0, (y[k - 1] - y[k - 2]) / h1)
    h0, h1 = x[k] - x[k - 1], x[k + 1] - x[k]
    d0, d1 = (y[k] - y[k - 1]) / h0, (y[k + 1] - y[k]) / h1
    if d0 * d1 <= 0:
        return 0.0  # a local extremum or a flat segment: slope 0 keeps each segment monotone
    # Otherwise the weighted harmonic mean of the neighbouring secant slopes (Fritsch–Butland).
    w1, w2 = 2.0 * h1 + h0, h1 + 2.0 * h0
    return (w1 + w2) / (w1 / d0 + w2 / d1)


def pchip_at(x: Sequence[float], y: Sequence[float], target: float) -> float:
    """The monotone cubic through (x, y) at `target`: x strictly increasing, x[0] <= target <= x[-1] (the caller
    checked both). Pure Python: a chip's read per run is one such read, tens of thousands of them at 100k results,
    where numpy's per-call cost was most of the time."""
    if len(x) == 1:
        return float(y[0])
    k = min(max(bisect_right(x, target) - 1, 0), len(x) - 2)
    h = x[k + 1] - x[k]
    s = (target - x[k]) / h
    one_less = 1 - s
    h00 = (1 + 2 * s) * (one_less * one_less)
    h10 = s * (one_less * one_less)
    h01 = (s * s) * (3 - 2 * s)
    h11 = (s * s) * (s - 1)
    return float(h00 * y[k] + h10 * h * _knot_slope(x, y, k) + h01 * y[k + 1] + h11 * h * _knot_slope(x, y, k + 1))


def pchip_evaluate(
    xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray, targets: Sequence[float] | np.ndarray
) -> np.ndarray:
    """The monotone cubic through (xs, ys) at each target; NaN where a target is outside [min x, max x]."""
    x, y = (values.tolist() for values in _prepare(xs, ys))
    t = np.atleast_1d(np.asarray(targets, dtype=float))
    return np.array(
        [pchip_at(x, y, value) if x[0] <= value <= x[-1] else math.nan for value in t.tolist()], dtype=float
    ).reshape(t.shape)


def interpolate_at(xs: Sequence[float], ys: Sequence[float], target: float) -> InterpolatedValue:
    """Read the monotone cubic through (xs, ys) at `target`, refusing to extrapolate.

    `xs` need not be sorted but must be distinct (pass a frontier, e.g. from `pareto_frontier`).
    """
    x, y = _prepare(xs, ys)
    lo, hi = float(x[0]), float(x[-1])
    if not math.isfinite(target) or target < lo or target > hi:
        return InterpolatedValue(
            target=target,
            value=None,
            in_range=False,
            reason=f"target {target:g} is outside the measured range [{lo:g}, {hi:g}]; not extrapolated",
        )
    hits = np.flatnonzero(x == target)
    if hits.size:
        return InterpolatedValue(
            target=target, value=float(y[hits[0]]), in_range=True, reason=f"measured point at {target:g}"
        )
    value = float(pchip_evaluate(x, y, [target])[0])
    k = int(np.searchsorted(x, target, side="right") - 1)
    return InterpolatedValue(
        target=target,
        value=value,
        in_range=True,
        reason=f"monotone cubic (PCHIP) between measured points at {x[k]:g} and {x[k + 1]:g}",
    )
