"""Results as curves (analysis.curves): each chip's newest release, rows read from a DataFrame, and
frontier readings marked sparse where points are missing."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from analysis.backtest import backtest, groups
from analysis.curves import (
    FIT_POINTS,
    SPARSE_GAP,
    CurvePoint,
    curves_of,
    gap_at,
    image_curves_of,
    read_at,
)
from recipes.hardware import load_hardware_registry
from recipes.model_registry import load_model_registry
from tests.unit.analysis.result_rows import (
    chip_rows,
    on_image,
)


def _run(hardware: str, speed: float, sweep: str, when: datetime) -> list[SimpleNamespace]:
    """A chip's run as the dashboard's history holds it: no image, one sweep, one date."""
    return [SimpleNamespace(**{**vars(r), "engine_image": None, "sweep": sweep, "finished_at": when})
            for r in chip_rows(hardware, speed)]  # fmt: skip


def test_a_projection_starts_from_the_chips_newest_release_alone() -> None:
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
    assert all(row.images_unknown and not row.same_image for row in result.rows)


def test_rows_naming_no_image_are_one_curve_per_run_never_pooled_across_runs() -> None:
    """The dashboard's history names no image and holds six months of runs of one configuration: pooled, each
    concurrency was the median across releases. One run is one curve, and the newest run is the chip's curve."""
    older = _run("mi325x", 100.0, "run-dec", datetime(2025, 12, 1))
    newer = _run("mi325x", 160.0, "run-may", datetime(2026, 5, 1))
    (by_chip,) = image_curves_of(older + newer).values()
    assert len(by_chip["mi325x"]) == 2 and all(len(curve.points) == 6 for curve in by_chip["mi325x"])
    (curve,) = [chips["mi325x"] for chips in curves_of(older + newer).values()]
    assert max(p.output_per_gpu for p in curve.points) == pytest.approx(max(r.output_throughput_per_gpu for r in newer))
    # A newest run of too few points to fit (the history keeps one to three concurrencies of a run) is passed over.
    single = _run("mi325x", 200.0, "run-jun", datetime(2026, 6, 1))[: FIT_POINTS - 1]
    (curve,) = [chips["mi325x"] for chips in curves_of(older + newer + single).values()]
    assert len(curve.points) == 6 and curve.newest == datetime(2026, 5, 1, tzinfo=UTC)
    (curve,) = [chips["mi325x"] for chips in curves_of(single).values()]
    assert len(curve.points) == FIT_POINTS - 1  # none has enough: the newest


def test_a_runs_rows_naming_no_image_take_the_one_image_its_other_rows_name() -> None:
    """The dashboard names the image in its latest results and not in its history, one run's rows in both: with
    both imported, the history's other concurrencies made a second curve of the same run, 'image unknown'."""
    run = _run("b200", 200.0, "inferencex-run-7", datetime(2026, 5, 1))
    for row in run[:3]:
        row.engine_image = "sglang:v0.5.12"
    (by_chip,) = image_curves_of(run).values()
    (curve,) = by_chip["b200"]
    assert curve.images == {"sglang:v0.5.12"} and len(curve.points) == 6
    # Another run's rows are not its: they stay a curve of their own run, its image unknown.
    other = _run("b200", 210.0, "inferencex-run-8", datetime(2026, 5, 2))
    (by_chip,) = image_curves_of(run + other).values()
    assert sorted(len(c.images) for c in by_chip["b200"]) == [0, 1]
    # A run naming two images for one configuration tells nothing of its rows naming none.
    for row in run[1:3]:
        row.engine_image = "sglang:v0.5.13"
    (by_chip,) = image_curves_of(run).values()
    assert sorted(sorted(c.images) for c in by_chip["b200"]) == [[], ["sglang:v0.5.12"], ["sglang:v0.5.13"]]


def _unchanged_by_source_run(rows: list[SimpleNamespace], result_rows: list) -> set[str]:  # type: ignore[type-arg]
    """Which of the source chip's runs each backtest row started from (its unchanged-curve reading tells)."""
    found = set()
    for row in result_rows:
        for sweep in {r.sweep for r in rows if r.hardware == row.source}:
            run = [r for r in rows if r.sweep == sweep]
            if row.unchanged == pytest.approx(read_at(curves_of(run)[row.curve][row.source].points, row.level)):
                found.add(sweep)
    return found


def test_without_images_the_backtest_compares_runs_of_one_day_and_never_calls_them_same_image() -> None:
    registry, models = load_hardware_registry(), load_model_registry()
    rows = [
        *_run("mi300x", 100.0, "a-dec", datetime(2025, 12, 1, 3)),
        *_run("mi325x", 110.0, "b-dec", datetime(2025, 12, 1, 9)),
        *_run("mi300x", 130.0, "a-mar", datetime(2026, 3, 1)),
        *_run("mi300x", 150.0, "a-may", datetime(2026, 5, 1, 2)),
        *_run("mi325x", 160.0, "b-may", datetime(2026, 5, 1, 4)),
    ]
    result = backtest(rows, registry, models)
    forward = [row for row in result.rows if row.source == "mi300x"]
    # Every pair of runs of one day, as every pair of one image: December's and May's, never March's alone.
    assert _unchanged_by_source_run(rows, forward) == {"a-dec", "a-may"}
    assert all(row.images_unknown and not row.same_image for row in result.rows)
    assert "same-vendor, same image" not in groups(result.rows, registry)


def test_without_images_or_a_shared_day_the_backtest_pairs_the_runs_nearest_in_time() -> None:
    registry, models = load_hardware_registry(), load_model_registry()
    rows = [
        *_run("mi300x", 100.0, "a-dec", datetime(2025, 12, 1)),
        *_run("mi300x", 150.0, "a-may", datetime(2026, 5, 3)),
        *_run("mi325x", 160.0, "b-may", datetime(2026, 5, 1)),
    ]
    forward = [row for row in backtest(rows, registry, models).rows if row.source == "mi300x"]
    assert _unchanged_by_source_run(rows, forward) == {"a-may"}  # not December's slower run


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
