"""`PointMetrics.out_of_range`: a figure no Point can have is named; words in its texts are not figures."""

from __future__ import annotations

import math

from recipes.schema import ValidityThresholds
from runners.loadgen.metrics import compute_point_metrics
from runners.loadgen.records import PointMetrics
from tests.unit.runners.loadgen.test_metrics import sequential_records


def measured() -> PointMetrics:
    return compute_point_metrics(sequential_records(40), concurrency=1, accelerators=1,
                                 thresholds=ValidityThresholds())  # fmt: skip


def test_finite_figures_with_texts_saying_nan_and_infinity_are_in_range() -> None:
    metrics = measured()
    metrics.validity.reasons = ["the engine logged NaN and Infinity"]
    metrics.peer_figures = {"NaN": 1.0, "-Infinity": 2.0}
    assert metrics.out_of_range() == []


def test_each_non_finite_figure_is_named_by_its_path() -> None:
    metrics = measured()
    metrics.ttft_ms.p99 = math.inf
    metrics.peer_figures = {"tput": math.nan}
    metrics.duration_s = -math.inf
    named = {path for path, _value, expected in metrics.out_of_range() if expected == "a finite number"}
    assert named == {"ttft_ms.p99", "peer_figures.tput", "duration_s"}
