"""Student-t quantiles, the mean intervals and their coverage, and intervals of interpolated reads."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.intervals import (
    bca_interval,
    interval_of_interpolated,
    mean_interval,
    prediction_interval,
    student_t_cdf,
    student_t_quantile,
)

# Two-sided 95 % (p = 0.975) and other critical values from standard t tables.
T_TABLE = [
    (0.975, 1, 12.7062),
    (0.975, 2, 4.3027),
    (0.975, 3, 3.1824),
    (0.975, 4, 2.7764),
    (0.975, 5, 2.5706),
    (0.975, 10, 2.2281),
    (0.975, 19, 2.0930),
    (0.975, 30, 2.0423),
    (0.975, 120, 1.9799),
    (0.95, 1, 6.3138),
    (0.95, 5, 2.0150),
    (0.995, 2, 9.9248),
    (0.995, 10, 3.1693),
]


@pytest.mark.parametrize(("p", "df", "expected"), T_TABLE)
def test_t_quantile_matches_tables(p: float, df: int, expected: float) -> None:
    assert student_t_quantile(p, df) == pytest.approx(expected, abs=5e-5)
    assert student_t_quantile(1 - p, df) == pytest.approx(-expected, abs=5e-5)


@pytest.mark.parametrize("p", [0.6, 0.9, 0.975, 0.999])
def test_t_quantile_closed_forms(p: float) -> None:
    # df = 1 is the Cauchy distribution: t = tan(π (p − ½)).
    assert student_t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-9)
    # df = 2: F(t) = ½ + t / (2 √(2 + t²)), so t = (2p − 1) / √(2 p (1 − p)).
    assert student_t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-9)
    # Large df tends to the normal: z_0.975 = 1.959964.
    assert student_t_cdf(1.959964, 1e7) == pytest.approx(0.975, abs=1e-6)


def test_student_t_interval_by_hand() -> None:
    # 9..13: mean 11, s = √(10/4) = 1.581139, s/√5 = 0.707107, t(0.975, 4) = 2.776445,
    # half-width 2.776445 × 0.707107 = 1.963243 → [9.036757, 12.963243].
    interval = mean_interval([9, 10, 11, 12, 13])
    assert interval.method == "student-t" and interval.n == 5
    assert interval.mean == pytest.approx(11.0)
    assert interval.low == pytest.approx(9.036757, abs=1e-5)
    assert interval.high == pytest.approx(12.963243, abs=1e-5)


def test_method_by_sample_size() -> None:
    single = mean_interval([4.2])
    assert single.method == "single" and single.low is None and single.high is None and single.mean == 4.2
    assert mean_interval(list(range(49))).method == "student-t"
    assert mean_interval(list(range(50))).method == "bca-bootstrap"
    with pytest.raises(ValueError):
        mean_interval([])
    with pytest.raises(ValueError):
        mean_interval([1.0, math.inf])


def test_bca_is_seeded_and_handles_constant_samples() -> None:
    samples = np.random.default_rng(1).normal(100, 5, size=40)
    assert bca_interval(samples, seed=3) == bca_interval(samples, seed=3)
    assert bca_interval(samples, seed=3) != bca_interval(samples, seed=4)
    constant = mean_interval([7.0] * 25)
    assert constant.low == constant.high == 7.0


def test_bca_close_to_t_for_large_normal_samples() -> None:
    samples = np.random.default_rng(2).normal(50, 10, size=400)
    low, high = bca_interval(samples)
    t_half = student_t_quantile(0.975, 399) * samples.std(ddof=1) / math.sqrt(400)
    assert (high - low) / 2 == pytest.approx(t_half, rel=0.1)
    assert (low + high) / 2 == pytest.approx(samples.mean(), abs=0.2 * t_half)


def _tolerance(trials: int) -> float:
    """Binomial tolerance on the observed coverage of a 95 % interval: 3 σ = 3 √(0.95 × 0.05 / trials).

    400 trials: 0.0327; 1000 trials: 0.0207.
    """
    return 3 * math.sqrt(0.95 * 0.05 / trials)


def _coverage(n: int, trials: int, seed: int) -> tuple[float, set[str]]:
    rng = np.random.default_rng(seed)
    true_mean = 3.0
    hits = 0
    methods = set()
    for _ in range(trials):
        interval = mean_interval(rng.normal(true_mean, 2.0, size=n))
        methods.add(interval.method)
        assert interval.low is not None and interval.high is not None
        hits += interval.low <= true_mean <= interval.high
    return hits / trials, methods


def test_student_t_coverage_n5() -> None:
    # With normal quantiles instead of t the coverage at n = 5 would be P(|T₄| < 1.96) ≈ 0.88, far
    # outside the tolerance (0.95 ± 0.021): the test would catch that mistake.
    coverage, methods = _coverage(5, trials=1000, seed=11)
    assert methods == {"student-t"}
    assert abs(coverage - 0.95) <= _tolerance(1000), coverage


def test_bca_coverage_n50() -> None:
    # Bootstrap intervals of a mean are slightly narrow at small n (plug-in variance, no t correction):
    # over 5000 trials BCa covered 91.8 % at n = 20 and 93.5 % at n = 30, hence Student-t below n = 50.
    # At n = 50 coverage must lie within the binomial tolerance (0.95 ± 0.033 for 400 trials).
    coverage, methods = _coverage(50, trials=400, seed=12)
    assert methods == {"bca-bootstrap"}
    assert abs(coverage - 0.95) <= _tolerance(400), coverage


def test_prediction_interval_covers_new_values() -> None:
    # A new draw from N(10, 2) falls in the 95 % prediction interval of 8 earlier draws 95 % of the time.
    rng = np.random.default_rng(7)
    trials, hits = 1000, 0
    for _ in range(trials):
        history = rng.normal(10, 2, size=8)
        low, high = prediction_interval(history)
        hits += low <= rng.normal(10, 2) <= high
    assert abs(hits / trials - 0.95) <= _tolerance(trials)
    assert prediction_interval([1.0]) is None


def test_interval_of_interpolated_drops_out_of_range_repeats() -> None:
    # Three repeats of a linear frontier y = 1000 − 10 x, offset by −5, 0, +5; a fourth repeat only
    # reaches x = 30. At x = 40 the reads are 595, 600, 605: mean 600, s = 5, n = 3,
    # half-width t(0.975, 2) × 5 / √3 = 4.30265 × 2.88675 = 12.4207.
    curves = [([10, 50, 90], [1000 - 10 * x + offset for x in (10, 50, 90)]) for offset in (-5, 0, 5)]
    curves.insert(1, ([10, 20, 30], [900, 800, 700]))
    result = interval_of_interpolated(curves, 40.0)
    assert result.used == 3 and result.dropped == 1
    assert result.reasons[0].startswith("repeat 1:") and "[10, 30]" in result.reasons[0]
    assert result.interval is not None and result.interval.mean == pytest.approx(600.0)
    assert result.interval.high - 600.0 == pytest.approx(12.4207, abs=1e-3)

    nothing = interval_of_interpolated(curves, 5.0)
    assert nothing.interval is None and nothing.used == 0 and nothing.dropped == 4
