"""Regression detection: did the latest sweep get worse than the history says is normal?

A nightly sweep of the same recipe should reproduce its earlier figures (e.g. throughput at a fixed
interactivity). `detect_regression` compares the latest value with the history's *prediction*
interval (`intervals.prediction_interval`: where one new run of the same process falls, mean ±
t·s·√(1 + 1/n)) and flags a regression only when both hold:

1. the latest value lies beyond that interval on the bad side (below it when higher is better, above
   it when lower is better), so run-to-run noise alone does not trigger it;
2. it is worse than the history's mean by at least `min_relative_drop` (default 5 %), so a tiny but
   very consistent history does not flag changes nobody would act on.

The interval of the history's *mean* would be the wrong yardstick: it narrows as history grows, while
a single new run still varies by the full run-to-run spread.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.analysis.intervals import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Interval,
    mean_interval,
    prediction_interval,
)


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
    if baseline.low is None or baseline.high is None:
        return RegressionResult(
            regressed=False,
            latest=latest,
            baseline=baseline,
            relative_change=change,
            reason=f"history has {baseline.n} value; at least 2 are needed for an interval",
        )
    pct = f"{confidence:.0%}"
    bounds = f"[{baseline.low:.6g}, {baseline.high:.6g}]"
    beyond = latest < baseline.low if higher_is_better else latest > baseline.high
    direction = "below" if higher_is_better else "above"
    change_text = "n/a (history mean is 0)" if change is None else f"{change:+.1%}"
    if not beyond:
        return RegressionResult(
            regressed=False,
            latest=latest,
            baseline=baseline,
            relative_change=change,
            reason=(
                f"latest {latest:.6g} is not {direction} the history's {pct} interval {bounds} "
                f"(mean {mean:.6g}, n={baseline.n}; change {change_text})"
            ),
        )
    large = worse is not None and worse >= min_relative_drop
    if not large:
        return RegressionResult(
            regressed=False,
            latest=latest,
            baseline=baseline,
            relative_change=change,
            reason=(
                f"latest {latest:.6g} is {direction} the history's {pct} interval {bounds} but the change "
                f"{change_text} is smaller than the {min_relative_drop:.1%} minimum"
            ),
        )
    return RegressionResult(
        regressed=True,
        latest=latest,
        baseline=baseline,
        relative_change=change,
        reason=(
            f"regression: latest {latest:.6g} is {direction} the history's {pct} interval {bounds} "
            f"(mean {mean:.6g}, n={baseline.n}) and changed {change_text}, beyond the {min_relative_drop:.1%} minimum"
        ),
    )
