"""Results as curves (orchestrator.analysis.curves): each chip's newest release, rows read from a DataFrame, and
frontier readings marked sparse where points are missing."""

from __future__ import annotations

import pytest

from orchestrator.analysis.backtest import backtest
from orchestrator.analysis.curves import (
    SPARSE_GAP,
    CurvePoint,
    curves_of,
    gap_at,
    read_at,
)
from recipes.hardware import load_hardware_registry
from recipes.model_registry import load_model_registry
from tests.unit.orchestrator.analysis.result_rows import (
    chip_rows,
    on_image,
)


def test_a_projection_starts_from_the_chips_newest_release_alone() -> None:
    from datetime import datetime

    older = on_image(chip_rows("b300", 200.0), "sglang:v0.5.9")
    newer = on_image(chip_rows("b300", 200.0), "sglang:v0.5.12", 1.5)
    for row in older:
        row.finished_at = datetime(2026, 3, 1)
    for row in newer:
        row.finished_at = datetime(2026, 5, 22)
    (curve,) = [by_chip["b300"] for by_chip in curves_of(older + newer).values()]
    assert curve.images == {"sglang:v0.5.12"} and len(curve.points) == 6  # not the median of both releases
    assert max(p.output_per_gpu for p in curve.points) == pytest.approx(max(r.output_throughput_per_gpu for r in newer))


def test_rows_read_from_a_data_frame_without_an_image_are_one_curve_of_their_own() -> None:
    """The hub hands the backtest DataFrame rows, where a missing image is NaN: found on the Methodology page with
    the dashboard's rows imported (a TypeError in place of the backtest table)."""
    import pandas as pd

    registry, models = load_hardware_registry(), load_model_registry()
    rows = on_image(chip_rows("h100", 200.0), "a:1") + chip_rows("h200", 230.0)
    frame = pd.DataFrame([vars(row) for row in rows])
    frame.loc[frame["hardware"] == "h200", "engine_image"] = None
    result = backtest(frame.itertuples(index=False), registry, models)
    assert result.rows and not any(row.images_differ or row.one_release for row in result.rows)


def test_a_reading_between_distant_frontier_points_is_marked_sparse() -> None:
    points = [CurvePoint("tp8", 1, 130.0, 14.0, 28.0), CurvePoint("tp8", 4096, 12.0, 4900.0, 9800.0)]
    assert gap_at(points, 100.0) == pytest.approx(4900.0 / 14.0)  # 10.8x in interactivity, 350x in throughput
    assert read_at(points, 100.0) is not None  # still read (PCHIP), but marked
    dense = [CurvePoint("tp8", c, 130.0 / (1 + c / 64), c, 2 * c) for c in (1, 2, 4, 8)]
    assert gap_at(dense, 128.0) < SPARSE_GAP
    assert gap_at(dense, 500.0) == 1.0  # outside the range: nothing is read, nothing is sparse
    # Close in interactivity but 15x apart in throughput (GB300's Dynamo-SGLang FP8 1k/1k frontier on the dashboard
    # rows jumps from concurrency 32 to 2048): points are missing there too.
    steep = [CurvePoint("disagg", 32, 80.7, 121.0, 242.0), CurvePoint("disagg", 2048, 49.3, 1883.0, 3766.0)]
    assert gap_at(steep, 60.0) == pytest.approx(1883.0 / 121.0)
