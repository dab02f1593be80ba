"""Regression detection: did the latest sweep get worse than the history says is normal?

A nightly sweep of the same recipe should reproduce its earlier figures (e.g. throughput at a fixed
interactivity). `detect_regression` compares the latest value with the history's *prediction*
interval (`intervals.prediction_interval`: where one new run of the same process falls, mean ±
t·s·√(1 + 1/n)) and flags a regression only when both hold:

1. the latest value lies beyond that interval on the bad side (below it when higher is better, above
   it when lower is better), so run-to-run noise alone does not trigger it;
2. it is worse than the history's mean by at least `min_relative_drop` (default 5 %), so a tiny but
   very consistent history does not flag changes nobody would act on.

A history so spread that its interval would hide even a halving (`SPREAD_TOO_WIDE`) cannot clear a sweep: its
verdict is not a regression and not conclusive either (two sweeps of 1,000 and 900 tok/s give [-150, 2,050]: a
reader shown "ok" there is told nothing; two sweeps agree within about 4 % before one more can be cleared).

The interval of the history's *mean* would be the wrong yardstick: it narrows as history grows, while
a single new run still varies by the full run-to-run spread.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from analysis.intervals import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Interval,
    mean_interval,
    prediction_interval,
)

# A history whose interval reaches this far below its mean (as a share of the mean) on the bad side cannot tell a
# drop of this size from noise, so its "not regressed" is no all-clear.
SPREAD_TOO_WIDE = 0.5


class RegressionResult(BaseModel):
    """Verdict on the latest value against its history."""

    model_config = ConfigDict(frozen=True)

    regressed: bool = Field(description="True when the latest value is a regression by both tests.")
    latest: float = Field(description="The latest value.")
    baseline: Interval | None = Field(
        description="History mean with its prediction interval for one new run; None with no history."
    )
    relative_change: float | None = Field(
        description="(latest − history mean) / |history mean|; negative is a drop. None when the mean is 0."
    )
    reason: str = Field(description="Human-readable explanation of the verdict.")
    conclusive: bool = Field(
        True,
        description="False when the history is too spread to tell (its interval would hide a drop of "
        "SPREAD_TOO_WIDE of its mean) or too short for an interval: not regressed, and not cleared either.",
    )


def detect_regression(
    history: Sequence[float],
    latest: float,
    *,
    confidence: float = 0.95,
    min_relative_drop: float = 0.05,
    higher_is_better: bool = True,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> RegressionResult:
    """Flag `latest` when it is worse than the history's interval and by at least `min_relative_drop`.

    `higher_is_better` is True for throughput-like metrics; set it False for cost or latency, where a
    rise is the regression. At least two history values are needed to form an interval; with fewer the
    verdict is "not regressed" and the reason says why.
    """
    if min_relative_drop < 0:
        raise ValueError(f"min_relative_drop must be non-negative, got {min_relative_drop}")
    if not history:
        return RegressionResult(
            regressed=False, latest=latest, baseline=None, relative_change=None, reason="no history to compare with"
        )
    summary = mean_interval(history, confidence, resamples=resamples, seed=seed)
    predicted = prediction_interval(history, confidence)
    low, high = predicted if predicted is not None else (None, None)
    baseline = Interval(mean=summary.mean, low=low, high=high, n=summary.n, confidence=confidence, method="prediction")
    mean = baseline.mean
    change = (latest - mean) / abs(mean) if mean != 0 else None
    worse = -change if (change is not None and higher_is_better) else change

    def verdict(reason: str, regressed: bool = False, conclusive: bool = True) -> RegressionResult:
        return RegressionResult(regressed=regressed, latest=latest, baseline=baseline, relative_change=change,
                                reason=reason, conclusive=conclusive)  # fmt: skip

    if baseline.low is None or baseline.high is None:
        return verdict(f"history has {baseline.n} value; at least 2 are needed for an interval", conclusive=False)
    pct = f"{confidence:.0%}"
    bounds = f"[{baseline.low:.6g}, {baseline.high:.6g}]"
    beyond = latest < baseline.low if higher_is_better else latest > baseline.high
    direction = "below" if higher_is_better else "above"
    change_text = "n/a (history mean is 0)" if change is None else f"{change:+.1%}"
    spread = (mean - baseline.low if higher_is_better else baseline.high - mean) / abs(mean) if mean != 0 else None
    if not beyond and (spread is None or spread >= SPREAD_TOO_WIDE):
        return verdict(
            f"too spread to tell: the history's {pct} interval {bounds} (mean {mean:.6g}, n={baseline.n}) would hide "
            f"a change of {SPREAD_TOO_WIDE:.0%}; latest {latest:.6g} (change {change_text})",
            conclusive=False,
        )
    if not beyond:
        return verdict(
            f"latest {latest:.6g} is not {direction} the history's {pct} interval {bounds} "
            f"(mean {mean:.6g}, n={baseline.n}; change {change_text})"
        )
    if worse is None or worse < min_relative_drop:
        return verdict(
            f"latest {latest:.6g} is {direction} the history's {pct} interval {bounds} but the change "
            f"{change_text} is smaller than the {min_relative_drop:.1%} minimum"
        )
    return verdict(
        f"regression: latest {latest:.6g} is {direction} the history's {pct} interval {bounds} "
        f"(mean {mean:.6g}, n={baseline.n}) and changed {change_text}, beyond the {min_relative_drop:.1%} minimum",
        regressed=True,
    )
