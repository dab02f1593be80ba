"""Monotone cubic interpolation: exact at knots, monotone between, never extrapolating."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.interpolate import interpolate_at, pchip_evaluate

# A frontier: throughput per GPU falls as interactivity (tok/s/user) rises.
XS = [10.0, 20.0, 40.0, 80.0]
YS = [1000.0, 800.0, 500.0, 100.0]


def test_exact_at_knots() -> None:
    for x, y in zip(XS, YS, strict=True):
        read = interpolate_at(XS, YS, x)
        assert read.in_range and read.value == y, read


def test_monotone_and_no_overshoot_between_knots() -> None:
    grid = np.linspace(XS[0], XS[-1], 2001)
    values = pchip_evaluate(XS, YS, grid)
    assert np.all(np.isfinite(values))
    assert np.all(np.diff(values) <= 1e-9)
    for k in range(len(XS) - 1):
        inside = values[(grid >= XS[k]) & (grid <= XS[k + 1])]
        assert inside.max() <= YS[k] + 1e-9 and inside.min() >= YS[k + 1] - 1e-9


def test_step_data_do_not_overshoot() -> None:
    # An ordinary cubic spline rings around a step; PCHIP stays within [0, 1] and non-decreasing.
    xs, ys = [0, 1, 2, 3, 4], [0, 0, 0, 1, 1]
    values = pchip_evaluate(xs, ys, np.linspace(0, 4, 801))
    assert values.min() >= 0.0 and values.max() <= 1.0
    assert np.all(np.diff(values) >= -1e-12)


def test_linear_data_read_exactly() -> None:
    # y = 2x + 1 at uneven knots: every secant slope is 2, so every knot slope is 2 and the cubic is
    # the line itself; at 2.5 the hand value is 2 × 2.5 + 1 = 6.
    read = interpolate_at([0, 1, 3, 4], [1, 3, 7, 9], 2.5)
    assert read.in_range
    assert read.value == pytest.approx(6.0, abs=1e-12)
    assert "between measured points at 1 and 3" in read.reason


def test_hand_worked_curved_value() -> None:
    # xs = 0, 1, 2; ys = 0, 1, 3. h = 1, 1; secants δ0 = 1, δ1 = 2.
    # Interior slope (weighted harmonic mean, w1 = w2 = 3): 6 / (3/1 + 3/2) = 4/3.
    # End slope at 0: ((2·1 + 1)·1 − 1·2) / 2 = 0.5 (same sign as δ0, kept).
    # At x = 0.5 (s = 0.5): h00 = 0.5, h10 = 0.125, h01 = 0.5, h11 = −0.125, so
    # y = 0.5·0 + 0.125·0.5 + 0.5·1 − 0.125·4/3 = 0.0625 + 0.5 − 0.1666… = 0.3958333…
    read = interpolate_at([0, 1, 2], [0, 1, 3], 0.5)
    assert read.value == pytest.approx(0.39583333333, abs=1e-9)


def test_out_of_range_is_flagged_not_extrapolated() -> None:
    below = interpolate_at(XS, YS, 5.0)
    assert below.value is None and not below.in_range
    assert "5" in below.reason and "[10, 80]" in below.reason and "not extrapolated" in below.reason
    above = interpolate_at(XS, YS, 80.5)
    assert above.value is None and not above.in_range and "80.5" in above.reason
    assert interpolate_at(XS, YS, math.nan).value is None
    assert np.isnan(pchip_evaluate(XS, YS, [9.99, 80.01])).all()


def test_unsorted_input_and_bad_input() -> None:
    read = interpolate_at(list(reversed(XS)), list(reversed(YS)), 20.0)
    assert read.value == 800.0
    with pytest.raises(ValueError, match="distinct"):
        interpolate_at([1, 1, 2], [1, 2, 3], 1.5)
    with pytest.raises(ValueError, match="same length"):
        interpolate_at([1, 2], [1], 1.5)
    with pytest.raises(ValueError):
        interpolate_at([], [], 1.0)


def test_single_point() -> None:
    assert interpolate_at([5.0], [7.0], 5.0).value == 7.0
    assert interpolate_at([5.0], [7.0], 5.1).in_range is False
