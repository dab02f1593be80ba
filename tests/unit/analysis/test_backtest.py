"""The backtest's promises on hand-made results: a target never calibrates itself, like is compared with like (one
image, one parallelism, one kind of deployment), and the groups it reports (analysis.backtest)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from analysis.backtest import (
    Backtest,
    BacktestRow,
    backtest,
    fitted_overheads,
    groups,
    how_wrong,
    medians,
    step_changes,
)
from analysis.curves import (
    CurveKey,
    DisaggSplit,
    read_at,
)
from analysis.projection import (
    OverheadRoofline,
    StepShape,
)
from recipes.hardware import load_hardware_registry
from recipes.model_registry import load_model_registry
from tests.unit.analysis.result_rows import (
    chip_rows,
    on_image,
    replace_row,
    replace_view,
    result_points,
    result_row,
    view_of_split,
)


def test_the_target_chips_measurements_never_enter_the_projection() -> None:
    registry, models = load_hardware_registry(), load_model_registry()
    rows = chip_rows("h100", 200.0) + chip_rows("h200", 230.0)
    first = backtest(rows, registry, models)
    assert {(r.source, r.target) for r in first.rows} == {("h100", "h200"), ("h200", "h100")}
    # Move every H200 measurement: the projections made *to* H200 do not change; only their errors do.
    moved = rows[:6] + [replace_row(r, 1.7) for r in rows[6:]]
    second = backtest(moved, registry, models)
    to_h200 = {r.level: r for r in first.rows if r.target == "h200"}
    for row in (r for r in second.rows if r.target == "h200"):
        if row.level in to_h200:
            assert row.projected == pytest.approx(to_h200[row.level].projected)
            assert row.measured != pytest.approx(to_h200[row.level].measured)
    # H100 -> H200 is bandwidth-bound on this curve: projected = measured H100 curve x 4.8/3.35 at the same C.
    assert first.median_abs_error() is not None and first.count() == len(first.rows)


def test_only_parallelisms_both_chips_measured_are_compared() -> None:
    registry, models = load_hardware_registry(), load_model_registry()
    rows = chip_rows("h100", 200.0)
    rows += [SimpleNamespace(**{**vars(r), "parallelism": "tp2"}) for r in chip_rows("h200", 230.0)]
    result = backtest(rows, registry, models)
    assert not result.rows
    assert any("no parallelism measured on both" in line for line in result.skipped)


def test_a_release_is_compared_with_the_same_release_never_a_median_across_releases() -> None:
    """A chip measured on two engine releases is two curves: H100 v0.13 is compared with H200 v0.13 and v0.11 with
    v0.11 (InferenceX's gpt-oss curves), not the median of both releases with the median of both."""
    registry, models = load_hardware_registry(), load_model_registry()
    old, new = "vllm/vllm-openai:v0.11.2", "vllm/vllm-openai:v0.13.0"
    rows = (on_image(chip_rows("h100", 200.0), old) + on_image(chip_rows("h100", 200.0), new, 1.6)
            + on_image(chip_rows("h200", 230.0), old) + on_image(chip_rows("h200", 230.0), new, 1.6))  # fmt: skip
    result = backtest(rows, registry, models)
    assert result.rows and not any(row.images_differ for row in result.rows)
    by_release = {}
    for row in result.rows:
        by_release.setdefault((row.source, row.level), []).append(row)
    # Each release's pair is its own row; the newer release's curve (x1.6) projects to its own measurement.
    assert any(len(rows_at) == 2 for rows_at in by_release.values())
    pooled = backtest(on_image(rows[:12], old) + on_image(rows[12:], new), registry, models)
    assert pooled.rows and all(row.images_differ for row in pooled.rows)  # one release per chip: marked


def test_chips_that_never_ran_one_image_compare_their_fullest_curves_once_and_marked() -> None:
    registry, models = load_hardware_registry(), load_model_registry()
    rows = (on_image(chip_rows("h100", 200.0), "a:1") + on_image(chip_rows("h100", 200.0)[:3], "a:0")
            + on_image(chip_rows("h200", 230.0), "a:2"))  # fmt: skip
    result = backtest(rows, registry, models)
    assert result.rows and all(row.images_differ for row in result.rows)
    assert len({(row.source, row.target, row.level) for row in result.rows}) == len(result.rows)  # one pair each
    # The fuller H100 curve (a:1) is the one compared: the sparse a:0 curve reaches none of the levels.
    from_h100 = [row for row in result.rows if row.source == "h100"]
    assert from_h100 and all(
        row.unchanged == pytest.approx(read_at(result_points(rows, "a:1"), row.level)) for row in from_h100
    )


def test_per_arch_builds_of_one_release_are_marked_apart_from_other_releases() -> None:
    """InferenceX ran one SGLang release on MI300X/MI325X and MI355X as two images (`-mi30x`, `-mi35x` builds)."""
    registry, models = load_hardware_registry(), load_model_registry()
    amd = [SimpleNamespace(**{**vars(r), "hardware": r.hardware.replace("h100", "mi300x").replace("h200", "mi355x")})
           for r in chip_rows("h100", 200.0) + chip_rows("h200", 230.0)]  # fmt: skip
    same_release = on_image(amd[:6], "lmsysorg/sglang:v0.5.5.post3-rocm700-mi30x") + on_image(
        amd[6:], "lmsysorg/sglang:v0.5.5.post3-rocm700-mi35x"
    )
    rows = backtest(same_release, registry, models).rows
    assert rows and all(row.images_differ and row.one_release for row in rows)
    newer = on_image(amd[:6], "lmsysorg/sglang:v0.5.5.post3-rocm700-mi30x") + on_image(
        amd[6:], "lmsysorg/sglang:v0.5.7-rocm700-mi35x"
    )
    rows = backtest(newer, registry, models).rows
    assert rows and all(row.images_differ and not row.one_release for row in rows)


def test_the_overhead_each_chip_fits_is_reported_per_family() -> None:
    models = load_model_registry()
    shape = StepShape.of(models["gpt-oss-120b"], "fp4", 1024, 1024, 8, "tp8")
    assert shape is not None
    truth = OverheadRoofline(0.004, 1 / 3e12, 0.0, shape)
    rows = [result_row("h100", c, 1 / truth.step_s(c), c / truth.step_s(c) / 8) for c in (1, 4, 16, 64)] + chip_rows(
        "h200", 230.0
    )[:3]  # three points: too few to tell an overhead from traffic
    (fitted,) = fitted_overheads(rows, models)
    assert (fitted.family, fitted.hardware, fitted.fits) == ("gpt-oss-120b fp4 · vllm", "h100", 1)
    assert fitted.median_ms == pytest.approx(4.0, rel=1e-3)


def test_the_targets_own_overhead_is_a_diagnostic_beside_the_projection_never_in_it() -> None:
    """H200 has H100's traffic at its own bandwidth but half H100's overhead: the model keeps H100's and misses;
    the diagnostic (the target's fitted overhead) lands on H200's curve; the projection is the same either way."""
    registry, models = load_hardware_registry(), load_model_registry()
    shape = StepShape.of(models["gpt-oss-120b"], "fp4", 1024, 1024, 8, "tp8")
    assert shape is not None
    ratio = registry["h200"].memory_bandwidth_tbps.value / registry["h100"].memory_bandwidth_tbps.value
    # Achieved 0.5 TB/s and 20 TFLOP/s: memory-bound to C = 64, compute-bound (the same on both chips) at 256 and
    # 512, so the curves span 14-200 tok/s/user and the fit has one decomposition.
    per_byte, per_flop = 1 / 5e11, 1 / 2e13
    chips = {"h100": OverheadRoofline(0.004, per_byte, per_flop, shape),
             "h200": OverheadRoofline(0.002, per_byte / ratio, per_flop, shape)}  # fmt: skip
    rows = [result_row(chip, c, 1 / truth.step_s(c), c / truth.step_s(c) / 8)
            for chip, truth in chips.items() for c in (1, 4, 16, 64, 256, 512)]  # fmt: skip
    plain, diagnosed = backtest(rows, registry, models), backtest(rows, registry, models, with_diagnostics=True)
    to_h200 = [row for row in diagnosed.rows if row.target == "h200"]
    assert to_h200 and all(row.target_overhead_error_pct == pytest.approx(0.0, abs=0.5) for row in to_h200)
    assert all(row.error_pct < -5.0 for row in to_h200)  # the source's 4 ms kept: slower than measured
    assert [row.projected for row in diagnosed.rows] == pytest.approx([row.projected for row in plain.rows])
    assert all(row.target_overhead is None for row in plain.rows)
    assert medians(to_h200).target_overhead[1] == len(to_h200)


def test_disaggregated_chips_compare_frontier_to_frontier_over_different_splits_and_apart() -> None:
    """Two chips tuned to different splits are still compared (their frontiers over every split), as rows marked
    disaggregated; the target's points never change the projection (its own splits are never read to project)."""
    registry = load_hardware_registry()
    small = DisaggSplit(4, 8, 1, False)
    large = DisaggSplit(8, 32, 4, False)
    source = [view_of_split("gb200-nvl72", c, 120.0 / (1 + c / 64), 10.0 * c / (1 + c / 64), small)
              for c in (4, 8, 16, 32, 64, 128)]  # fmt: skip
    target = [view_of_split("gb300-nvl72", c, 130.0 / (1 + c / 64), 12.0 * c / (1 + c / 64), large)
              for c in (4, 8, 16, 32, 64, 128)]  # fmt: skip
    result = backtest(source + target, registry, load_model_registry())
    rows = [row for row in result.rows if row.source == "gb200-nvl72"]
    assert rows and all(row.disaggregated for row in rows)
    assert result.count(disaggregated=True) == len(result.rows)
    # GB300's FP8 and bandwidth equal GB200's: the projection is the source's own frontier, whatever GB300 measured.
    assert all(row.projected == pytest.approx(row.unchanged) for row in rows)
    halved = [replace_view(view, output_throughput_per_gpu=view.output_throughput_per_gpu / 2) for view in target]
    again = backtest(source + halved, registry, load_model_registry())
    assert [row.projected for row in again.rows if row.source == "gb200-nvl72"] == pytest.approx(
        [row.projected for row in rows])  # fmt: skip
    # The diagnostics are of the overhead model: a disaggregated point has none.
    diagnosed = backtest(source + target, registry, load_model_registry(), with_diagnostics=True)
    assert all(row.target_overhead is None and row.overhead_on_compute is None for row in diagnosed.rows)


def test_disaggregated_rows_read_from_a_data_frame_give_the_same_backtest() -> None:
    """The hub reads results as a DataFrame: beside single-server rows the split's counts become floats and NaN."""
    import pandas as pd

    registry, models = load_hardware_registry(), load_model_registry()
    small, large = DisaggSplit(4, 8, 1, True), DisaggSplit(8, 32, 4, False)
    views = [view_of_split("gb200-nvl72", c, 120.0 / (1 + c / 64), 10.0 * c / (1 + c / 64), small)
             for c in (4, 8, 16, 32, 64, 128)]  # fmt: skip
    views += [view_of_split("gb300-nvl72", c, 130.0 / (1 + c / 64), 12.0 * c / (1 + c / 64), large)
              for c in (4, 8, 16, 32, 64, 128)]  # fmt: skip
    single = [SimpleNamespace(**{**vars(row), "speculative_decoding": None, "finished_at": None})
              for row in chip_rows("h100", 200.0) + chip_rows("h200", 230.0)]  # fmt: skip
    frame = pd.DataFrame([vars(row) for row in views + single])
    assert frame["decode_gpus"].dtype == float  # NaN for the single-server rows
    from_frame = backtest(list(frame.itertuples(index=False)), registry, models)
    from_views = backtest(views + single, registry, models)
    assert from_frame.count(disaggregated=True) == from_views.count(disaggregated=True) > 0
    assert [row.projected for row in from_frame.rows] == pytest.approx([row.projected for row in from_views.rows])


def test_medians_can_leave_sparse_readings_out() -> None:
    key = CurveKey("deepseek-r1", "fp8", "sglang", "1k/1k")

    def row(error_pct: float, sparse: bool, disaggregated: bool = False) -> BacktestRow:
        return BacktestRow(key, "h100", "h200", 50.0, 100.0 + error_pct, 100.0, images_differ=False, same_vendor=True,
                           scale_up_differs=False, sparse=sparse, disaggregated=disaggregated)  # fmt: skip

    result = Backtest([row(5.0, False), row(7.0, False), row(90.0, True), row(80.0, True), row(60.0, True, True)], [])
    assert result.median_abs_error(disaggregated=False) == pytest.approx(43.5)
    assert result.count(True, False) == 4 and result.count(disaggregated=True) == 1
    grouped = groups(result.rows, load_hardware_registry())
    assert {name: len(rows) for name, rows in grouped.items()} == {
        "disaggregated, same-vendor": 1, "disaggregated, same-vendor, same image": 1, "same-vendor": 4,
        "same-vendor, NVIDIA": 4, "same-vendor, same image": 4,
    }  # fmt: skip
    same_vendor = medians(grouped["same-vendor"])
    assert (same_vendor.rows, same_vendor.projection) == (4, pytest.approx(43.5))
    assert same_vendor.dense == (pytest.approx(6.0), 2)  # the two readings that are not sparse
    assert same_vendor.plain == (None, 0)  # no peer figure on these rows


def test_a_projection_is_told_how_wrong_its_group_has_been() -> None:
    """`how_wrong`: the group a projection belongs to by its chips and kind of deployment, whatever images it ran,
    and that group's medians; none where the backtest holds no such row."""
    registry = load_hardware_registry()
    key = CurveKey("deepseek-r1", "fp8", "sglang", "1k/1k")
    rows = [BacktestRow(key, "h100", "h200", 50.0, 100.0 + error, 100.0, images_differ=error > 10, same_vendor=True,
                        scale_up_differs=False) for error in (4.0, -8.0, 30.0)]  # fmt: skip
    result = Backtest(rows, [])
    name, told = how_wrong(result, registry, "b200", "vr200-nvl72", disaggregated=False)
    assert name == "same-vendor, NVIDIA" and told is not None and (told.rows, told.projection) == (3, 8.0)
    name, told = how_wrong(result, registry, "gb300-nvl72", "vr200-nvl72", disaggregated=True)
    assert name == "disaggregated, same-vendor" and told is None
    name, told = how_wrong(result, registry, "h200", "mi355x", disaggregated=False)
    assert name == "cross-vendor" and told is None
    assert set(groups(rows, registry)) >= {"same-vendor", "same-vendor, NVIDIA", "same-vendor, same image"}


def test_step_changes_compare_floors_and_growth_of_one_release_without_a_model() -> None:
    """H200's step (1 / interactivity) at 4 users is H100's, and its growth to 64 users half of H100's: the change
    reads floor 1x, growth 2x, beside bandwidth 4.8 / 3.35; another release, another vendor or one point is not
    compared, and each pair once (from the chip of less bandwidth)."""
    registry = load_hardware_registry()

    def rows(chip: str, floor_s: float, growth_s: float, image: str = "vllm/vllm-openai:v0.11.2") -> list:
        steps = {4: floor_s, 64: floor_s + growth_s}
        return on_image([result_row(chip, c, 1 / step, c / step / 8) for c, step in steps.items()], image)

    views = rows("h100", 0.010, 0.020) + rows("h200", 0.010, 0.010) + rows("mi300x", 0.030, 0.010)
    views += rows("b200", 0.005, 0.004, image="vllm/vllm-openai:v0.13.0")  # another release: no pair
    views += [result_row("b300", 4, 100.0, 50.0)]  # one concurrency only
    (change,) = step_changes(views, registry)
    assert (change.source, change.target, change.configuration) == ("h100", "h200", "tp8")
    assert change.floor == pytest.approx(1.0) and change.growth == pytest.approx(2.0)
    ratio = registry["h200"].memory_bandwidth_tbps.value / registry["h100"].memory_bandwidth_tbps.value
    assert change.bandwidth == pytest.approx(ratio) and change.compute == pytest.approx(1.0)
    assert change.release == "vllm/vllm-openai:v0.11.2"


def test_step_changes_without_images_compare_runs_of_one_day_never_one_run_with_another() -> None:
    """The dashboard's history names no image: a chip's runs of several days were one release, so one run's step
    at 4 users met another run's at 64. Runs of one day stand in for one release."""
    from datetime import datetime
    from types import SimpleNamespace

    registry = load_hardware_registry()

    def run(chip: str, floor_s: float, growth_s: float, day: int) -> list:
        steps = {4: floor_s, 64: floor_s + growth_s}
        return [SimpleNamespace(**{**vars(row), "engine_image": None, "sweep": f"{chip}-{day}",
                                   "finished_at": datetime(2026, 5, day)})
                for row in (result_row(chip, c, 1 / step, c / step / 8) for c, step in steps.items())]  # fmt: skip

    views = run("mi300x", 0.010, 0.020, 1) + run("mi325x", 0.010, 0.010, 1)  # one day: growth 2x
    views += run("mi300x", 0.020, 0.060, 9)  # a later run of MI300X alone: never compared
    (change,) = step_changes(views, registry)
    assert (change.source, change.target) == ("mi300x", "mi325x") and change.release == "run of 2026-05-01"
    assert change.floor == pytest.approx(1.0) and change.growth == pytest.approx(2.0)


def test_a_backtest_of_some_groups_projects_those_pairs_alone_and_the_same_rows() -> None:
    """`infersweep project` needs one group's median: it projects that group's pairs only, with the rows the whole
    backtest gives them."""
    from analysis.backtest import group_of

    registry, models = load_hardware_registry(), load_model_registry()
    rows = chip_rows("h100", 200.0) + chip_rows("h200", 230.0) + chip_rows("mi300x", 180.0) + chip_rows("mi325x", 190.0)
    whole = backtest(rows, registry, models)
    amd = backtest(rows, registry, models, only_groups={"same-vendor, AMD"})
    expected = [r for r in whole.rows if group_of(registry[r.source], registry[r.target], False) == "same-vendor, AMD"]
    assert amd.rows and amd.rows == expected
    assert {r.source for r in whole.rows} > {r.source for r in amd.rows}  # the others were not projected
