"""Trends: each configuration read at one interactivity per sweep, in time order, with regressions flagged.

The numbers are worked by hand: a two-point frontier is read linearly (PCHIP with two knots is the
chord), three repeats give a Student-t interval, and a history of two sweeps gives the prediction
interval mean ± t(1, 0.975)·s·√(1 + 1/2) with t(1, 0.975) = 12.7062.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from analysis.trends import read_sweep, trends_at

DAY0 = datetime(2026, 11, 1, tzinfo=UTC)
T_1 = 12.706204736174696  # Student-t 97.5 % quantile, 1 degree of freedom
T_2 = 4.302652729749464  # ... 2 degrees of freedom


def _row(fingerprint: str, sweep: str, day: int, interactivity: float, throughput: float, repeat: int = 0,
         valid: bool = True) -> SimpleNamespace:  # fmt: skip
    return SimpleNamespace(
        fingerprint=fingerprint, recipe=f"recipe-{fingerprint}", hardware=fingerprint.split("-")[0], sweep=sweep,
        finished_at=DAY0 + timedelta(days=day), interactivity_p50=interactivity, output_throughput_per_gpu=throughput,
        repeat_index=repeat, valid=valid,
    )  # fmt: skip


def _h200_history() -> list[SimpleNamespace]:
    # Listed latest first: the order of the rows must not matter, only when each sweep finished.
    rows = []
    for sweep, day, at_30 in (("n3", 14, 900.0), ("n1", 0, 1000.0), ("n2", 7, 1005.0)):
        rows += [_row("h200-a", sweep, day, 60.0, 400.0), _row("h200-a", sweep, day, 30.0, at_30)]
    return rows


def test_planted_drop_is_a_regression_with_hand_worked_bounds() -> None:
    (trend,) = trends_at(_h200_history(), 30.0)
    assert trend.fingerprint == "h200-a" and trend.hardware == "h200"
    assert trend.points == (("n1", 1000.0), ("n2", 1005.0), ("n3", 900.0))
    assert [read.finished_at.day for read in trend.reads] == [1, 8, 15]
    verdict = trend.verdict
    assert verdict is not None and verdict.regressed and trend.regressed
    # History 1000, 1005: mean 1002.5, s = 5/√2; prediction half-width t·s·√1.5 = 55.02.
    half = T_1 * (5 / math.sqrt(2)) * math.sqrt(1.5)
    assert verdict.baseline is not None
    assert verdict.baseline.low == pytest.approx(1002.5 - half) and verdict.baseline.low == pytest.approx(
        947.48, abs=0.01
    )
    assert verdict.relative_change == pytest.approx(900 / 1002.5 - 1)  # −10.2 %


def test_between_measured_points_each_sweep_is_read_on_its_frontier() -> None:
    # At 50 tok/s/user the two-knot frontier (30, y30)–(60, 400) is the chord: 400 + (y30 − 400)/3.
    (trend,) = trends_at(_h200_history(), 50.0)
    assert [value for _, value in trend.points] == pytest.approx([600.0, 601.6667, 566.6667], abs=1e-4)
    # History 600, 601.67: s = 1.1785, half-width 18.34 → low 582.5; 566.67 is below and 5.7 % down.
    assert trend.verdict is not None and trend.verdict.regressed
    assert trend.verdict.relative_change == pytest.approx(566.6667 / 600.8333 - 1, abs=1e-5)


def test_steady_configuration_is_not_a_regression() -> None:
    rows = []
    for sweep, day, mid in (("n1", 0, 1500.0), ("n2", 7, 1510.0), ("n3", 14, 1500.0)):
        rows += [_row("b200-a", sweep, day, x, y) for x, y in ((100.0, 500.0), (50.0, mid), (20.0, 3000.0))]
    (trend,) = trends_at(rows, 50.0)
    assert trend.points == (("n1", 1500.0), ("n2", 1510.0), ("n3", 1500.0))
    assert trend.verdict is not None and not trend.verdict.regressed and not trend.regressed
    assert "not below" in trend.verdict.reason


def test_repeats_give_the_mean_and_a_student_t_interval() -> None:
    rows = [_row("b200-a", "n3", 0, 100.0, 500.0, repeat) for repeat in range(3)]
    rows += [_row("b200-a", "n3", 0, 50.0, mid, repeat) for repeat, mid in enumerate((1480.0, 1500.0, 1520.0))]
    read = read_sweep(rows, 50.0)
    assert read.used == 3 and read.dropped == 0 and read.interval is not None
    assert read.interval.mean == pytest.approx(1500.0)
    assert read.interval.low == pytest.approx(1500 - T_2 * 20 / math.sqrt(3))  # 1450.32
    assert read.interval.high == pytest.approx(1549.68, abs=0.01)


def test_unreadable_sweeps_stay_in_the_history_without_a_value() -> None:
    rows = _h200_history()
    # A sweep that only measured high interactivity cannot be read at 30: no value, no extrapolation.
    rows += [_row("h200-a", "n4", 21, 60.0, 400.0), _row("h200-a", "n4", 21, 45.0, 700.0)]
    (trend,) = trends_at(rows, 30.0)
    assert trend.points[-1] == ("n4", None)
    assert "outside the measured range" in trend.reads[-1].read.reasons[0]
    assert trend.verdict is None  # the latest sweep has no value to judge

    # A middle sweep without a value is left out of the history, not counted as zero.
    rows += [_row("h200-a", "n5", 28, 60.0, 400.0), _row("h200-a", "n5", 28, 30.0, 1002.0)]
    (trend,) = trends_at(rows, 30.0)
    assert [value for _, value in trend.points] == [1000.0, 1005.0, 900.0, None, 1002.0]
    assert trend.verdict is not None and trend.verdict.baseline is not None and trend.verdict.baseline.n == 3


def test_invalid_points_and_single_sweeps() -> None:
    rows = _h200_history()
    # An invalid point is not a measurement of the configuration: the inflated figure is ignored.
    rows.append(_row("h200-a", "n3", 14, 30.0, 5000.0, repeat=1, valid=False))
    rows += [_row("mi355x-a", "import", 14, 80.0, 600.0), _row("mi355x-a", "import", 14, 40.0, 1400.0)]
    trends = {trend.fingerprint: trend for trend in trends_at(rows, 30.0)}
    assert trends["h200-a"].points[-1] == ("n3", 900.0)
    assert trends["mi355x-a"].points == (("import", None),)  # 30 is below its range [40, 80]
    assert trends["mi355x-a"].verdict is None and not trends["mi355x-a"].regressed
    assert trends_at(rows, 50.0)[1].verdict is None  # one sweep: nothing to compare with


def test_a_sweep_of_unknown_order_is_listed_and_left_out_of_the_verdict() -> None:
    """A run keyed by its content (neither a date nor a run id) may be older or newer than the others: it is listed
    first, marked, and the verdict compares the newest ordered sweep with the other ordered ones."""
    rows = _h200_history()
    for row in (_row("h200-a", "inferencex-run-sha-0123abcd", 30, 60.0, 400.0),
                _row("h200-a", "inferencex-run-sha-0123abcd", 30, 30.0, 2000.0)):  # fmt: skip
        row.date_known = False
        rows.append(row)
    (trend,) = trends_at(rows, 30.0)
    assert trend.order_unknown and trend.points[0] == ("inferencex-run-sha-0123abcd", 2000.0)
    # Unchanged by the unordered sweep's 2000: n3's 900 against n1's 1000 and n2's 1005 is still a regression.
    assert trend.regressed and trend.verdict.relative_change == pytest.approx(900 / 1002.5 - 1)
