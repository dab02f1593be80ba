"""The roofline projections on hand-made curves: bandwidth-bound curves follow bandwidth, compute-bound ones FLOP/s,
KV capacity and scale-up domains cap what a target reaches, and disaggregated decode workers move by the model's
facts (analysis.projection)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import pytest

from analysis.curves import (
    Curve,
    CurveKey,
    CurvePoint,
    DisaggSplit,
    curves_of,
    read_at,
)
from analysis.projection import (
    DISAGG_MODEL,
    ChipRates,
    OverheadRoofline,
    ProjectionError,
    Rate,
    StepShape,
    chip_rates,
    chip_ratios,
    fit_overhead_roofline,
    fit_roofline,
    kv_capacity,
    project_band,
    project_between,
    project_curve,
)
from recipes.hardware import load_hardware_registry
from recipes.model_registry import load_model_registry
from tests.unit.analysis.result_rows import (
    chip_rows,
)

GIB = 2**30


def chip(
    key: str, bandwidth: float, pflops: float, memory: float = 100.0, high_bandwidth: float | None = None
) -> ChipRates:
    bw = Rate(bandwidth, bandwidth, high_bandwidth or bandwidth, "hand-made")
    return ChipRates(key, bw, Rate(pflops, pflops, pflops, "hand-made"), None, memory * GIB)  # memory in GiB


def curve(
    step: Callable[[int], float], concurrencies: Sequence[int] = (1, 2, 4, 8, 16, 32, 64), configuration: str = "tp8"
) -> list[CurvePoint]:
    """Points whose step time is `step(C)`: interactivity 1/step, output per GPU C/step/8 (8 GPUs)."""
    return [CurvePoint(configuration, c, 1.0 / step(c), c / step(c) / 8, 2 * c / step(c) / 8) for c in concurrencies]


def test_a_purely_bandwidth_bound_curve_scales_exactly_with_bandwidth() -> None:
    points = curve(lambda c: 0.010 + 0.0001 * c)
    fit = fit_roofline([p.concurrency for p in points], [1 / p.interactivity for p in points])
    assert fit.compute_s_per_seq == 0.0 and fit.relative_rms_error == pytest.approx(0.0, abs=1e-12)
    projection = project_curve(points, chip("a", 4.0, 2.0), chip("b", 6.0, 9.0))  # 1.5x bandwidth, 4.5x compute
    for moved, original in zip(projection.points, points, strict=True):
        assert moved.regime == "memory" and moved.source_regime == "memory"
        assert moved.speedup == pytest.approx(1.5)
        assert moved.point.interactivity == pytest.approx(original.interactivity * 1.5)
        assert moved.point.output_per_gpu == pytest.approx(original.output_per_gpu * 1.5)
        assert moved.point.concurrency == original.concurrency


def test_a_compute_bound_curve_scales_with_flops() -> None:
    points = curve(lambda c: 0.002 * c, concurrencies=(8, 16, 32, 64))
    projection = project_curve(points, chip("a", 4.0, 2.0), chip("b", 6.0, 5.0))  # 1.5x bandwidth, 2.5x compute
    assert all(p.regime == "compute" for p in projection.points)
    assert [p.speedup for p in projection.points] == pytest.approx([2.5] * 4)


def test_a_knee_is_found_and_each_side_scales_with_its_own_figure() -> None:
    # Memory line 10 ms + 0.1 ms/seq, compute 0.5 ms/seq: the knee is at 25 sequences.
    points = curve(lambda c: max(0.010 + 0.0001 * c, 0.0005 * c), concurrencies=(1, 4, 8, 16, 32, 48, 64, 128))
    fit = fit_roofline([p.concurrency for p in points], [1 / p.interactivity for p in points])
    assert fit.memory_s == pytest.approx(0.010) and fit.memory_s_per_seq == pytest.approx(0.0001)
    assert fit.compute_s_per_seq == pytest.approx(0.0005)
    projection = project_curve(points, chip("a", 4.0, 2.0), chip("b", 8.0, 2.0))  # 2x bandwidth, same compute
    by_concurrency = {p.point.concurrency: p for p in projection.points}
    assert by_concurrency[1].regime == "memory" and by_concurrency[1].speedup == pytest.approx(2.0)
    assert by_concurrency[128].regime == "compute" and by_concurrency[128].speedup == pytest.approx(1.0)
    # At 32 sequences the source is compute-bound (16 ms > 13.2 ms); on the target memory takes 6.6 ms: 16 ms.
    assert by_concurrency[32].source_regime == "compute" and by_concurrency[32].speedup == pytest.approx(1.0)


def test_kv_capacity_caps_the_concurrency_a_smaller_chip_reaches() -> None:
    models = load_model_registry()
    llama = models["llama-3.3-70b"]  # 70 B bf16 = 140 GB of weights; 320 KiB of KV per token in bf16
    big = kv_capacity(141.0 * GIB, 8, llama, "bf16", 2048, "tp8")
    small = kv_capacity(80.0 * GIB, 8, llama, "bf16", 2048, "tp8")
    # By hand: (8 x 80 GiB x 0.9 - 140 GB) / (80 layers x 8 heads x 128 x 2 x 2 bytes x 2048) = 478 GB / 671 MB.
    assert small == int((8 * 80 * GIB * 0.9 - 70e9 * 2) // (80 * 8 * 128 * 2 * 2 * 2048))
    assert big is not None and small is not None and small < big
    points = curve(lambda c: 0.02 + 0.0001 * c, concurrencies=(64, 256, small + 1, big))
    projection = project_curve(points, chip("h200", 4.8, 2.0, 141), chip("h100", 3.35, 2.0, 80),
                               capacity={"tp8": (big, small)})  # fmt: skip
    assert [p.point.concurrency for p in projection.points] == [64, 256]
    assert [p.concurrency for p, _ in projection.dropped] == [small + 1, big]
    assert all("KV capacity" in why for _, why in projection.dropped)
    # A chip that holds more never drops anything (nothing beyond the source's own range is invented either).
    wider = project_curve(points, chip("h100", 3.35, 2.0, 80), chip("h200", 4.8, 2.0, 141),
                          capacity={"tp8": (small, big)})  # fmt: skip
    assert len(wider.points) == 4 and not wider.dropped


def test_each_configuration_is_capped_by_what_its_own_gpus_hold() -> None:
    """gpt-oss-120b 8k/1k from H200 to H100 (InferenceX ran H200 at TP1 up to 64 users): one H100 holds ~39
    sequences of 9k tokens beside 60 GB of weights, eight hold ~1,500. Each configuration is capped by its own
    deployment, not by the curve's largest one."""
    registry, models = load_hardware_registry(), load_model_registry()
    model = models["gpt-oss-120b"]
    one = kv_capacity(registry["h100"].memory_bytes, 1, model, "fp4", 9216, "tp1")
    eight = kv_capacity(registry["h100"].memory_bytes, 8, model, "fp4", 9216, "tp8")
    assert one is not None and eight is not None and 16 < one < 64 < eight
    points = curve(lambda c: 0.010 + 0.0001 * c, (4, 16, 64), "tp1") + curve(lambda c: 0.008 + 0.00005 * c, (4, 64))
    measured = Curve(CurveKey("gpt-oss-120b", "fp4", "vllm", "8k/1k"), "h200", points, set(), 8192, 1024,
                     {"tp1": 1, "tp8": 8})  # fmt: skip
    projection = project_between(measured, registry["h200"], registry["h100"], model)
    assert [(p.configuration, p.concurrency) for p, _ in projection.dropped] == [("tp1", 64)]
    assert f"KV capacity of {one} sequences" in projection.dropped[0][1]
    assert projection.kv_capacity["tp1"][1] == one and projection.kv_capacity["tp8"][1] == eight


def test_a_range_in_the_registry_gives_a_band_and_a_missing_dense_figure_a_bounded_one() -> None:
    registry = load_hardware_registry()
    b200, rubin = chip_rates(registry["b200"], "fp4"), chip_rates(registry["vr200-nvl72"], "fp4")
    points = curve(lambda c: 0.010 + 0.0001 * c)
    low, high = (project_curve(points, b200, rubin, edge) for edge in ("low", "high"))
    assert low.bandwidth_ratio == pytest.approx(13 / 8) and high.bandwidth_ratio == pytest.approx(22 / 8)
    # No dense FP4 figure is published for Rubin: 1x (no gain) up to its 50 PFLOPS inference figure over B200's 9.
    assert low.compute_ratio == 1.0 and high.compute_ratio == pytest.approx(50 / 9)
    assert all(top.speedup > bottom.speedup for top, bottom in zip(high.points, low.points, strict=True))
    assert read_at([p.point for p in low.points], 120.0) is not None
    # H100 has no FP4 units: FP4 weights are computed at its FP8 rate, and the source says so.
    assert "FP8 rate" in chip_rates(registry["h100"], "fp4").dense_pflops.source
    with pytest.raises(ProjectionError, match="int3"):
        chip_rates(registry["b200"], "int3")


def test_a_ratio_of_projections_reads_both_frontiers_per_end_of_the_targets_range() -> None:
    registry, models = load_hardware_registry(), load_model_registry()
    (curve,) = [by_chip["b300"] for by_chip in curves_of(chip_rows("b300", 200.0)).values()]
    model = models.get(curve.key.model)
    rows = chip_ratios(curve, registry["b300"], registry["vr200-nvl72"], registry["b300"], model, 100.0)
    assert [row.edge for row in rows] == ["low", "high"]  # Rubin's bandwidth is a range (13-22 TB/s)
    low, high = rows
    assert low.denominator_peak == pytest.approx(max(p.output_per_gpu for p in curve.points))  # B300 as measured
    # This curve's step fits as overhead plus arithmetic: the low end (no FP4 gain published) does not move it.
    assert low.at_peak == pytest.approx(1.0) and high.at_peak > 1.5
    assert low.at_level == pytest.approx(1.0) and (high.at_level is None or high.at_level > 1.5)
    itself = chip_ratios(curve, registry["b300"], registry["b300"], registry["b300"], model, 100.0)
    assert [(row.at_level, row.at_peak) for row in itself] == [(pytest.approx(1.0), pytest.approx(1.0))]


SHAPE = StepShape(
    weight_bytes_per_gpu=20e9, active_share=0.05, kv_bytes_per_sequence_per_gpu=50e6, flops_per_sequence_per_gpu=4e11
)


def overhead_curve(overhead: float, per_byte: float, per_flop: float, concurrencies: Sequence[int]) -> list[CurvePoint]:
    truth = OverheadRoofline(overhead, per_byte, per_flop, SHAPE)
    return curve(truth.step_s, concurrencies)


def test_the_overhead_model_recovers_a_hand_made_step_and_keeps_the_overhead_on_the_target() -> None:
    # 4 ms of overhead; 20 GB at 2 TB/s achieved is 10 ms when every weight is touched (at C = 1 a 5 % share, plus
    # 50 MB of KV: 0.525 ms); 0.4 TFLOP per sequence at 1 PFLOP/s achieved is 0.4 ms per sequence.
    points = overhead_curve(0.004, 1 / 2e12, 1 / 1e15, (1, 2, 4, 8, 16, 32, 64, 128))
    fit = fit_overhead_roofline([p.concurrency for p in points], [1 / p.interactivity for p in points], SHAPE)
    assert fit.overhead_s == pytest.approx(0.004, rel=1e-6) and fit.s_per_byte == pytest.approx(1 / 2e12, rel=1e-6)
    assert fit.s_per_flop == pytest.approx(1 / 1e15, rel=1e-6) and fit.relative_rms_error < 1e-9
    projection = project_curve(points, chip("a", 4.0, 2.0), chip("b", 8.0, 2.0), shapes={"tp8": SHAPE})
    assert projection.model_version == "roofline-overhead-2"
    # C = 1 is memory-bound on the source (0.525 ms > 0.4 ms); at twice the bandwidth traffic takes 0.2625 ms and
    # arithmetic (unchanged) binds: 4.525 ms -> 4.4 ms. The overhead is kept as measured.
    first = projection.points[0]
    assert first.source_regime == "memory" and first.regime == "compute"
    assert first.speedup == pytest.approx(0.004525 / 0.0044)
    last = projection.points[-1]  # C = 128: compute-bound and compute is unchanged, so is the step
    assert last.regime == "compute" and last.speedup == pytest.approx(1.0)


def test_a_step_that_is_all_overhead_does_not_move_with_the_chip() -> None:
    points = overhead_curve(0.008, 0.0, 0.0, (1, 4, 16, 64))
    projection = project_curve(points, chip("a", 4.0, 2.0), chip("b", 12.0, 9.0), shapes={"tp8": SHAPE})
    assert [p.speedup for p in projection.points] == pytest.approx([1.0] * 4)
    # The plain roofline has no overhead: it moves the same curve by the whole bandwidth ratio (3x).
    plain = project_curve(points, chip("a", 4.0, 2.0), chip("b", 12.0, 9.0))
    assert plain.model_version == "roofline-fit-1"
    assert [p.speedup for p in plain.points] == pytest.approx([3.0] * 4)
    # The backtest's variant (never the model) divides the overhead by the FLOP/s ratio (4.5x) as well.
    variant = project_curve(
        points, chip("a", 4.0, 2.0), chip("b", 12.0, 9.0), shapes={"tp8": SHAPE}, target_overhead="follows-compute"
    )
    assert [p.speedup for p in variant.points] == pytest.approx([4.5] * 4)


def test_given_the_targets_own_overhead_a_projection_lands_on_the_targets_curve() -> None:
    """The backtest's diagnostic: a target that scales traffic with bandwidth but has its own overhead is missed
    by the model (which keeps the source's overhead) and hit once the target's fitted overhead is given."""
    concurrencies = (1, 2, 4, 8, 16, 32, 64)
    source = overhead_curve(0.012, 1 / 2e12, 1 / 1e15, concurrencies)
    target = overhead_curve(0.005, 1 / 4e12, 1 / 1e15, concurrencies)  # twice the bandwidth, its own overhead
    fitted = fit_overhead_roofline([p.concurrency for p in target], [1 / p.interactivity for p in target], SHAPE)
    a, b = chip("a", 4.0, 2.0), chip("b", 8.0, 2.0)
    kept = project_curve(source, a, b, shapes={"tp8": SHAPE})
    given = project_curve(source, a, b, shapes={"tp8": SHAPE}, target_overhead={"tp8": fitted.overhead_s})
    measured = [p.interactivity for p in target]
    assert [p.point.interactivity for p in given.points] == pytest.approx(measured, rel=1e-6)
    assert all(p.point.interactivity < m * 0.9 for p, m in zip(kept.points, measured, strict=True))
    # A configuration the target never ran keeps the source's overhead.
    other = project_curve(source, a, b, shapes={"tp8": SHAPE}, target_overhead={"tp4": fitted.overhead_s})
    assert [p.speedup for p in other.points] == pytest.approx([p.speedup for p in kept.points])


def test_the_step_shape_follows_the_model_registry() -> None:
    r1 = load_model_registry()["deepseek-r1"]
    shape = StepShape.of(r1, "fp8", 1024, 1024, 8, "tp8")
    assert shape is not None
    assert shape.weight_bytes_per_gpu == pytest.approx(671e9 / 8)
    assert shape.active_share == pytest.approx(37 / 671)
    # MLA: 61 layers x (512 + 64) x 2 bytes (bf16 KV) per token, at the mean decode context of 1,536 tokens, held
    # whole by each tensor-parallel rank; with data-parallel attention it is spread over the GPUs.
    assert shape.kv_bytes_per_sequence_per_gpu == pytest.approx(61 * 576 * 2 * 1536)
    spread = StepShape.of(r1, "fp8", 1024, 1024, 8, "tp8·dpa")
    assert spread is not None and spread.kv_bytes_per_sequence_per_gpu == pytest.approx(61 * 576 * 2 * 1536 / 8)
    assert shape.flops_per_sequence_per_gpu == pytest.approx(2 * 37e9 * 2 / 8)
    assert shape.bytes(1) == pytest.approx(671e9 / 8 * 37 / 671 + 61 * 576 * 2 * 1536)


def test_a_band_is_stored_only_where_the_target_publishes_a_range() -> None:
    registry, models = load_hardware_registry(), load_model_registry()
    points = curve(lambda c: 0.010 + 0.0001 * c)
    one = Curve(CurveKey("deepseek-r1", "fp8", "sglang", "1k/1k"), "h200", points, set(), 1024, 1024, {"tp8": 8})
    # H100 -> H200: single figures, one projection, labelled central.
    assert [p.edge for p in project_band(one, registry["h200"], registry["h100"], models["deepseek-r1"])] == ["central"]
    # B200 -> Rubin: bandwidth 13-22 TB/s and no dense FP4 figure; the central figures equal the low end, so the band
    # is its two ends.
    fp4 = Curve(CurveKey("deepseek-r1", "fp4", "sglang", "1k/1k"), "b200", points, set(), 1024, 1024, {"tp8": 8})
    band = project_band(fp4, registry["b200"], registry["vr200-nvl72"], models["deepseek-r1"])
    assert [p.edge for p in band] == ["low", "high"]
    assert [p.bandwidth_ratio for p in band] == pytest.approx([13 / 8, 22 / 8])


# ------------------------------------------------------------------------------------- disaggregated deployments


DEEPSEEK = load_model_registry()["deepseek-r1"]


def disaggregated(
    split: DisaggSplit, concurrencies: Sequence[int], configuration: str = "disagg·p1×tp4·ep4 4gpu·d1×tp8·ep8 8gpu"
) -> list[CurvePoint]:
    """A disaggregated deployment's points (their coordinates do not matter: nothing is fitted)."""
    gpus = split.prefill_gpus + split.decode_gpus
    return [CurvePoint(configuration, c, 100.0 / c**0.5, 50.0 * c**0.5 / gpus, 60.0 * c**0.5 / gpus, (), split)
            for c in concurrencies]  # fmt: skip


def decode_shape(split: DisaggSplit) -> StepShape:
    shape = StepShape.of(DEEPSEEK, "fp8", 1024, 1024, split.gpus_per_decode_worker, "", with_prefill=False)
    assert shape is not None
    return shape


def test_a_disaggregated_decode_worker_at_small_batch_scales_with_bandwidth_and_its_prefill_pool_is_resized() -> None:
    split = DisaggSplit(prefill_gpus=4, decode_gpus=8, decode_workers=1, decode_dp_attention=False)
    points = disaggregated(split, [1, 2, 4])
    name = points[0].configuration
    # 2x bandwidth, 4x FLOP/s: a decode step reading the weights (memory-bound at a batch of 4) runs twice as fast,
    # and the prefill pool feeding it needs 4 x 2 / 4 = 2 GPUs, so output per GPU grows 2 x 12 / 10 = 2.4x.
    projection = project_curve(points, chip("a", 4.0, 2.0), chip("b", 8.0, 8.0), shapes={name: decode_shape(split)})
    assert projection.model_version == DISAGG_MODEL
    for moved, original in zip(projection.points, points, strict=True):
        assert moved.regime == "memory" and moved.speedup == pytest.approx(2.0)
        assert moved.prefill_gpus == pytest.approx(2.0)
        assert moved.point.interactivity == pytest.approx(original.interactivity * 2.0)
        assert moved.point.output_per_gpu == pytest.approx(original.output_per_gpu * 2.0 * 12 / 10)
    # Same FLOP/s: the prefill pool doubles with the decode speed (4 -> 8 GPUs): 2 x 12 / 16 = 1.5x per GPU.
    same_compute = project_curve(points, chip("a", 4.0, 2.0), chip("b", 8.0, 2.0), shapes={name: decode_shape(split)})
    assert [p.point.output_per_gpu / p.source.output_per_gpu for p in same_compute.points] == pytest.approx([1.5] * 3)


def test_a_disaggregated_decode_worker_at_a_large_batch_scales_with_flops() -> None:
    split = DisaggSplit(prefill_gpus=8, decode_gpus=8, decode_workers=1, decode_dp_attention=True)
    shape = StepShape.of(DEEPSEEK, "fp8", 1024, 1024, 8, "dpa", with_prefill=False)
    assert shape is not None
    batch = 100_000  # far past the ridge: arithmetic dominates
    assert shape.flops(batch) / 2e15 > shape.bytes(batch) / 4e12
    points = disaggregated(split, [batch])
    # 2x bandwidth, 1.5x FLOP/s: compute-bound on both chips, the step follows FLOP/s.
    projection = project_curve(
        points, chip("a", 4.0, 2.0), chip("b", 8.0, 3.0), shapes={points[0].configuration: shape}
    )
    assert projection.points[0].source_regime == "compute" and projection.points[0].regime == "compute"
    assert projection.points[0].speedup == pytest.approx(1.5)


def test_a_disaggregated_point_the_target_cannot_hold_is_dropped_and_says_why() -> None:
    wide = DisaggSplit(prefill_gpus=8, decode_gpus=32, decode_workers=1, decode_dp_attention=True)
    points = disaggregated(wide, [64, 256])
    name = points[0].configuration
    narrow = replace(chip("hgx", 8.0, 5.0), scale_up_domain=8)
    projection = project_curve(points, replace(chip("nvl", 8.0, 5.0), scale_up_domain=72), narrow,
                               shapes={name: decode_shape(wide)})  # fmt: skip
    assert not projection.points
    assert all("wider than hgx's scale-up domain of 8" in why for _, why in projection.dropped)
    # KV capacity per decode worker: the target holds 100 sequences per worker, the source 1,000.
    split = DisaggSplit(prefill_gpus=4, decode_gpus=8, decode_workers=2, decode_dp_attention=False)
    points = disaggregated(split, [100, 400])  # 50 and 200 sequences per decode worker
    capped = project_curve(points, chip("a", 8.0, 5.0), chip("b", 8.0, 5.0), shapes={name: decode_shape(split)},
                           capacity={name: (1000, 100)})  # fmt: skip
    assert [p.point.concurrency for p in capped.points] == [100]
    assert "KV capacity of 100 sequences per decode worker" in capped.dropped[0][1]
    # Without the model's facts nothing is guessed: every point is dropped with the reason.
    blind = project_curve(points, chip("a", 8.0, 5.0), chip("b", 8.0, 5.0))
    assert not blind.points and "model's facts" in blind.dropped[0][1]
