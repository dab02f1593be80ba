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


def _end_slope(h0: float, h1: float, d0: float, d1: float) -> float:
    """Shape-preserving one-sided three-point slope at an end of the data."""
    slope = ((2.0 * h0 + h1) * d0 - h0 * d1) / (h0 + h1)
    if np.sign(slope) != np.sign(d0):
        return 0.0
    if np.sign(d0) != np.sign(d1) and abs(slope) > abs(3.0 * d0):
        return 3.0 * d0
    return float(slope)


def pchip_slopes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Knot derivatives of the monotone piecewise-cubic Hermite interpolant (x strictly increasing)."""
    n = x.size
    h = np.diff(x)
    delta = np.diff(y) / h
    slopes = np.zeros(n)
    if n == 2:
        slopes[:] = delta[0]
        return slopes
    for k in range(1, n - 1):
        # A local extremum (or flat segment) gets slope 0; otherwise the weighted harmonic mean of the
        # neighbouring secant slopes, which keeps each segment monotone (Fritsch–Butland).
        if delta[k - 1] * delta[k] > 0:
            w1 = 2.0 * h[k] + h[k - 1]
            w2 = h[k] + 2.0 * h[k - 1]
            slopes[k] = (w1 + w2) / (w1 / delta[k - 1] + w2 / delta[k])
    slopes[0] = _end_slope(h[0], h[1], delta[0], delta[1])
    slopes[-1] = _end_slope(h[-1], h[-2], delta[-1], delta[-2])
    return slopes


def pchip_evaluate(
    xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray, targets: Sequence[float] | np.ndarray
) -> np.ndarray:
    """The monotone cubic through (xs, ys) at each target; NaN where a target is outside [min x, max x]."""
    x, y = _prepare(xs, ys)
    t = np.atleast_1d(np.asarray(targets, dtype=float))
    out = np.full(t.shape, np.nan)
    inside = (t >= x[0]) & (t <= x[-1])
    if x.size == 1:
        out[inside] = y[0]
        return out
    slopes = pchip_slopes(x, y)
    ti = t[inside]
    k = np.clip(np.searchsorted(x, ti, side="right") - 1, 0, x.size - 2)
    h = x[k + 1] - x[k]
    s = (ti - x[k]) / h
    h00 = (1 + 2 * s) * (1 - s) ** 2
    h10 = s * (1 - s) ** 2
    h01 = s**2 * (3 - 2 * s)
    h11 = s**2 * (s - 1)
    out[inside] = h00 * y[k] + h10 * h * slopes[k] + h01 * y[k + 1] + h11 * h * slopes[k + 1]
    return out


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
