"""Regression detection: planted drops are flagged, noise is not."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.regression import detect_regression

RNG_SEED = 5


def _history(rng: np.random.Generator, n: int = 10, mean: float = 1000.0, sigma: float = 10.0) -> list[float]:
    return list(rng.normal(mean, sigma, size=n))


def test_planted_regression_is_flagged() -> None:
    rng = np.random.default_rng(RNG_SEED)
    result = detect_regression(_history(rng), 900.0)
    assert result.regressed
    assert result.relative_change is not None and result.relative_change < -0.05
    assert "regression" in result.reason and "900" in result.reason


def test_noise_only_is_not_flagged() -> None:
    # Latest drawn from the same distribution as the history (σ = 1 % of the mean): the 5 % floor is
    # 5 σ away, so over 300 seeded trials nothing is flagged.
    rng = np.random.default_rng(RNG_SEED)
    flagged = [detect_regression(_history(rng), float(rng.normal(1000, 10))).regressed for _ in range(300)]
    assert not any(flagged)


def test_below_interval_but_small_drop_is_not_flagged() -> None:
    # Mean ≈ 1000, s ≈ 10, n = 10: the prediction interval is about ± t(9)·10·√1.1 ≈ ± 24, so 960 is
    # below it, but a 4 % drop is under the 5 % floor…
    rng = np.random.default_rng(RNG_SEED)
    history = _history(rng)
    small = detect_regression(history, 960.0)
    assert not small.regressed and "smaller than" in small.reason
    # …and flagged once the floor is removed.
    assert detect_regression(history, 960.0, min_relative_drop=0.0).regressed


def test_prediction_interval_is_calibrated_without_the_floor() -> None:
    # Without the 5 % floor, a new value from the history's own distribution falls below the 95 %
    # prediction interval 2.5 % of the time (one-sided). The interval of the *mean* would flag far more.
    rng = np.random.default_rng(RNG_SEED)
    trials = 1000
    flagged = sum(
        detect_regression(_history(rng), float(rng.normal(1000, 10)), min_relative_drop=0.0).regressed
        for _ in range(trials)
    )
    tolerance = 3 * (0.025 * 0.975 / trials) ** 0.5
    assert abs(flagged / trials - 0.025) <= tolerance, flagged


def test_large_drop_inside_a_wide_interval_is_not_flagged_nor_cleared() -> None:
    # Mean 1000, s ≈ 432, interval ≈ 1000 ± 688: a 10 % drop to 900 is within the noise, and so would a halving be:
    # not a regression, and no all-clear either.
    result = detect_regression([500.0, 1500.0, 800.0, 1200.0], 900.0)
    assert not result.regressed and not result.conclusive and "too spread to tell" in result.reason


def test_a_history_clears_a_sweep_only_when_it_could_have_seen_a_halving() -> None:
    # Two sweeps 10 % apart: t(1) = 12.71 makes the interval [-150.39, 2050.39] (mean 950); nothing is cleared.
    spread = detect_regression([1000.0, 900.0], 950.0)
    assert not spread.regressed and not spread.conclusive
    assert spread.baseline is not None and spread.baseline.low == pytest.approx(-150.39, abs=0.01)
    # Two sweeps 0.5 % apart: [947.48, 1057.52], a half-width of 5.5 % of the mean: 990 is cleared.
    close = detect_regression([1000.0, 1005.0], 990.0)
    assert not close.regressed and close.conclusive and "not below" in close.reason
    # Lower is better: the bad side is above the mean.
    assert not detect_regression([1.0, 0.9], 0.95, higher_is_better=False).conclusive


def test_lower_is_better_metric() -> None:
    rng = np.random.default_rng(RNG_SEED)
    costs = _history(rng, mean=1.0, sigma=0.01)
    assert detect_regression(costs, 1.2, higher_is_better=False).regressed
    assert not detect_regression(costs, 0.8, higher_is_better=False).regressed
    # The same drop is a regression when higher is better.
    assert detect_regression(costs, 0.8).regressed


def test_long_history_and_too_little_history() -> None:
    rng = np.random.default_rng(RNG_SEED)
    long = detect_regression(_history(rng, n=30), 900.0)
    assert long.regressed and long.baseline is not None and long.baseline.method == "prediction"
    one = detect_regression([1000.0], 500.0)
    assert not one.regressed and not one.conclusive and "at least 2" in one.reason
    assert not detect_regression([], 500.0).regressed
