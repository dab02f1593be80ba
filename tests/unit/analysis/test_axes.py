"""The Pareto explorer's y metrics, derived from output tok/s/GPU, with hand-worked numbers.

B200 at its owning-hyperscaler TCO of $1.73/GPU/hr and all-in 1.71 kW per GPU, 1500 tok/s/GPU:
cost = 1.73 / (1500 × 3600 / 10⁶) = 1.73 / 5.4 = $0.32037 per million tokens; tokens per $ =
5.4 M / 1.73 = 3,121,387; tok/s per all-in MW = 1500 × 1000 / 1.71 = 877,193.
"""

from __future__ import annotations

import numpy as np
import pytest

from analysis.axes import (
    COST,
    E2E_LATENCY,
    INTERACTIVITY,
    THROUGHPUT,
    TOKENS_PER_DOLLAR,
    TOKENS_PER_MW,
    TTFT,
    X_AXES,
    Y_AXES,
    tokens_per_dollar,
    y_interval,
    y_value,
)
from analysis.intervals import Interval


def _interval(mean: float, low: float | None, high: float | None) -> Interval:
    n = 1 if low is None else 3
    return Interval(mean=mean, low=low, high=high, n=n, confidence=0.95, method="single" if n == 1 else "student-t")


def test_directions() -> None:
    assert Y_AXES[THROUGHPUT].maximise and Y_AXES[TOKENS_PER_DOLLAR].maximise and Y_AXES[TOKENS_PER_MW].maximise
    assert not Y_AXES[COST].maximise
    assert X_AXES[INTERACTIVITY].maximise
    assert not X_AXES[E2E_LATENCY].maximise and not X_AXES[TTFT].maximise


def test_hand_worked_values() -> None:
    assert y_value(THROUGHPUT, 1500.0) == 1500.0
    assert y_value(COST, 1500.0, usd_per_gpu_hour=1.73) == pytest.approx(0.320370, abs=1e-6)
    assert y_value(TOKENS_PER_DOLLAR, 1500.0, usd_per_gpu_hour=1.73) == pytest.approx(3_121_387.3, abs=0.1)
    assert tokens_per_dollar(1.0, 1.0) == pytest.approx(3600.0)  # one token/s for an hour, for a dollar
    assert y_value(TOKENS_PER_MW, 1500.0, all_in_kw=1.71) == pytest.approx(877_192.98, abs=0.01)


def test_missing_rates_give_no_value() -> None:
    assert y_value(COST, 1500.0) is None  # no $/GPU/hr (e.g. a host with no TCO figure)
    assert y_value(TOKENS_PER_DOLLAR, 0.0, usd_per_gpu_hour=1.73) is None  # no tokens: no finite cost
    assert y_value(TOKENS_PER_MW, 1500.0, all_in_kw=None) is None
    with pytest.raises(ValueError, match="unknown y metric"):
        y_value("joules", 1.0)


def test_interval_maps_through_the_metric_and_swaps_for_cost() -> None:
    throughput = _interval(1500.0, 1450.0, 1550.0)
    assert y_interval(THROUGHPUT, throughput) == (1500.0, 1450.0, 1550.0)
    value, low, high = y_interval(COST, throughput, usd_per_gpu_hour=1.73)
    # Higher throughput is the cheaper end: low cost comes from 1550, high cost from 1450.
    assert value == pytest.approx(0.320370, abs=1e-6)
    assert low == pytest.approx(1.73 / (1550 * 0.0036)) and high == pytest.approx(1.73 / (1450 * 0.0036))
    assert low < value < high
    _, low, high = y_interval(TOKENS_PER_MW, throughput, all_in_kw=2.0)
    assert (low, high) == (pytest.approx(725_000.0), pytest.approx(775_000.0))


def test_interval_without_bounds_or_with_a_bound_that_has_no_cost() -> None:
    assert y_interval(COST, _interval(1500.0, None, None), usd_per_gpu_hour=1.73)[1:] == (None, None)
    # Two wildly different repeats: the t interval reaches below zero, where a cost does not exist.
    value, low, high = y_interval(COST, _interval(100.0, -50.0, 250.0), usd_per_gpu_hour=1.0)
    assert value == pytest.approx(1 / 0.36) and low is None and high is None


def test_vectorised_values_match_the_cost_library_and_mark_what_is_undefined() -> None:
    from analysis.axes import y_bounds, y_values
    from analysis.cost import cost_per_million_tokens, tokens_per_all_in_mw

    throughput = np.array([1500.0, 900.0, 0.0, np.nan])
    usd = np.array([1.73, 1.22, 1.0, 1.0])
    cost = y_values(COST, throughput, usd_per_gpu_hour=usd)
    assert cost[:2] == pytest.approx([cost_per_million_tokens(1.73, 1500), cost_per_million_tokens(1.22, 900)])
    assert np.isnan(cost[2:]).all()  # no tokens, no figure; a missing throughput stays missing
    assert np.isnan(
        y_values(COST, [1500.0, 900.0], usd_per_gpu_hour=[1.73, np.nan])[1]
    )  # hardware without a TCO figure
    assert y_values(COST, [1500.0], usd_per_gpu_hour=0.0)[0] == 0.0
    assert np.isnan(y_values(TOKENS_PER_DOLLAR, [1500.0], usd_per_gpu_hour=0.0)[0])
    assert y_values(TOKENS_PER_MW, [1500.0, 700.0], all_in_kw=1.71) == pytest.approx(
        [tokens_per_all_in_mw(1500, 1.71), tokens_per_all_in_mw(700, 1.71)]
    )
    assert np.isnan(y_values(TOKENS_PER_MW, [1500.0], all_in_kw=None)[0])
    low, high = y_bounds(COST, [1450.0, -50.0], [1550.0, 250.0], usd_per_gpu_hour=1.73)
    assert low[0] == pytest.approx(1.73 / (1550 * 0.0036)) and high[0] == pytest.approx(1.73 / (1450 * 0.0036))
    assert np.isnan(low[1]) and np.isnan(high[1])


def test_repeat_intervals_equal_mean_interval_group_by_group() -> None:
    from analysis.axes import repeat_intervals
    from analysis.intervals import mean_interval

    rng = np.random.default_rng(3)
    sizes = [3, 1, 2, 10, 60, 3]  # one group large enough for the BCa bootstrap
    groups = np.repeat(np.arange(len(sizes)), sizes)
    values = rng.normal(1000, 20, groups.size)
    order = rng.permutation(groups.size)  # members need not be adjacent
    groups, values = groups[order], values[order]
    mean, low, high, count = repeat_intervals(groups, values)
    assert list(count) == sizes
    for group in range(len(sizes)):
        # Each group's values in the order given (the bootstrap's seeded resampling depends on the order).
        expected = mean_interval(values[groups == group])
        assert mean[group] == pytest.approx(expected.mean)
        if expected.low is None:
            assert np.isnan(low[group]) and np.isnan(high[group])
        else:
            assert (low[group], high[group]) == (pytest.approx(expected.low), pytest.approx(expected.high))
    # The fixture's B200 point by hand: 1480, 1500, 1520 → 1500 ± 4.3027 · 20 / √3.
    mean, low, high, _ = repeat_intervals([0, 0, 0], [1480.0, 1500.0, 1520.0])
    assert (mean[0], low[0], high[0]) == (
        1500.0,
        pytest.approx(1450.3172, abs=1e-4),
        pytest.approx(1549.6828, abs=1e-4),
    )
    with pytest.raises(ValueError, match="differ in shape"):
        repeat_intervals([0, 1], [1.0])
