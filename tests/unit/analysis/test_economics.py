"""Reads at a target interactivity, cost, profit and the scorecard, against figures worked by hand."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import pytest

from analysis.compare import compare_at_interactivity
from analysis.cost import TokenPrices
from analysis.economics import (
    GpuHourRate,
    best_per,
    best_profit_per,
    cell_cost_band,
    cheapest_and_ties,
    cost_figure,
    costs_at,
    default_reference,
    model_price,
    profits_at,
    read_configurations,
    scorecard,
)
from analysis.intervals import Interval
from recipes.hardware import load_hardware_registry
from recipes.model_registry import load_model_registry
from recipes.prices import load_price_table

REGISTRY = load_hardware_registry()
PRICES = TokenPrices(input_per_m=0.50, cached_input_per_m=0.125, output_per_m=2.00)
T_975_2 = 4.302652729911275  # Student-t 97.5 % quantile, 2 degrees of freedom (tables: 4.303)


def row(interactivity: float | None, output: float, *, repeat: int = 0, fingerprint: str = "fp-b200",
        sweep: str = "s1", hardware: str = "b200", engine: str = "vllm", precision: str = "fp8",
        model: str = "deepseek-r1", hit: float | None = None, valid: bool = True, agentic: bool = False,
        origin: str = "measured", concurrency: int | None = None) -> Any:  # fmt: skip
    """A result row: 8k in / 1k out, so total tok/s = 9 × output and input = 8 × output. Its concurrency (the load
    level repeats share) defaults to one per interactivity."""
    if concurrency is None:
        concurrency = int(interactivity) if interactivity is not None and math.isfinite(interactivity) else 0
    return SimpleNamespace(concurrency=concurrency,
        sweep=sweep, recipe=f"{fingerprint}-recipe", fingerprint=fingerprint, hardware=hardware, engine=engine,
        origin=origin, model=model, precision=precision, workload_kind="agentic-replay" if agentic else "fixed-length",
        isl=None if agentic else 8192, osl=None if agentic else 1024, repeat_index=repeat, valid=valid,
        interactivity_p50=interactivity, output_throughput_per_gpu=output, total_token_throughput_per_gpu=output * 9,
        realized_hit_rate=hit, source=None,
    )  # fmt: skip


def b200_three_repeats(**overrides: Any) -> list[Any]:
    """Three repeats reading 1480, 1500 and 1520 tok/s/GPU at exactly 50 tok/s/user."""
    rows = []
    for repeat, middle in enumerate((1480.0, 1500.0, 1520.0)):
        rows += [row(100.0, 500.0, repeat=repeat, **overrides), row(50.0, middle, repeat=repeat, **overrides),
                 row(20.0, 3000.0, repeat=repeat, **overrides)]  # fmt: skip
    return rows


def h200(**overrides: Any) -> list[Any]:
    """Two points, (30, 900) and (60, 400): a straight line, 900 − (t − 30) × 500 / 30 between them."""
    return [row(60.0, 400.0, fingerprint="fp-h200", hardware="h200", **overrides),
            row(30.0, 900.0, fingerprint="fp-h200", hardware="h200", **overrides)]  # fmt: skip


def test_read_at_a_measured_interactivity_has_the_mean_and_student_t_interval() -> None:
    (read,) = read_configurations(b200_three_repeats(), 50.0)
    # Mean 1500; s = 20 (deviations −20, 0, +20: √(800 / 2)); half width = 4.3027 × 20 / √3 = 49.683.
    half = T_975_2 * 20 / math.sqrt(3)
    assert read.output is not None and read.output.mean == pytest.approx(1500.0)
    assert (read.output.low, read.output.high) == pytest.approx((1500 - half, 1500 + half))
    assert (read.output.low, read.output.high) == pytest.approx((1450.317, 1549.683), abs=1e-3)
    # Total = 9 × output and input = 8 × output at every point, so their reads are 13,500 and 12,000.
    assert read.total.mean == pytest.approx(13_500.0) and read.total.high == pytest.approx(9 * (1500 + half))
    assert read.input.mean == pytest.approx(12_000.0)
    assert read.covered and read.repeats_used == 3 and read.repeats_dropped == 0 and read.reason == ""
    assert read.cache_hit == 0.0 and not read.cache_hit_measured  # fixed-length: nothing measured, counts as 0
    assert read.workload == "8192/1024" and read.sweeps == ("s1",)


def test_cost_per_million_tokens_from_the_interpolated_throughput() -> None:
    (cost,) = costs_at(b200_three_repeats(), 50.0, REGISTRY, GpuHourRate(custom_usd=1.73))
    # 1500 tok/s/GPU × 3600 / 10⁶ = 5.4 M tokens per hour; $1.73 / 5.4 = $0.320370 per M output tokens.
    assert cost.output.usd_per_million == pytest.approx(0.320370370)
    # Error bar: the interval's high throughput (1549.683) gives the low cost, and the reverse.
    assert cost.output.low == pytest.approx(1.73 / (1549.6827 * 0.0036), rel=1e-6)
    assert cost.output.high == pytest.approx(1.73 / (1450.3173 * 0.0036), rel=1e-6)
    assert (cost.output.low, cost.output.high) == pytest.approx((0.310099, 0.331345), abs=1e-6)
    # Total: 13,500 tok/s → 48.6 M/hr → $0.035597; input: 12,000 → 43.2 M/hr → $0.040046.
    assert cost.total.usd_per_million == pytest.approx(1.73 / 48.6)
    assert cost.input.usd_per_million == pytest.approx(1.73 / 43.2)
    assert cost.breakdown.output == pytest.approx(0.320370370)
    assert cost.rate_label == "custom $1.73/GPU-hr" and cost.usd_per_gpu_hour == 1.73


def test_tco_tier_and_tokens_per_all_in_mw_come_from_the_registry() -> None:
    b200 = REGISTRY["b200"]
    usd, kw = b200.tco("owning_hyperscaler"), b200.all_in_kw.value
    (cost,) = costs_at(b200_three_repeats(), 50.0, REGISTRY, GpuHourRate("owning_hyperscaler"))
    assert cost.usd_per_gpu_hour == usd and cost.rate_label == "owning (hyperscaler scale) TCO"
    assert cost.output.usd_per_million == pytest.approx(usd / 5.4)
    # 1500 tok/s/GPU × 1000 / kW per GPU (e.g. 1.71 kW → 877,193 tok/s per MW).
    assert cost.output_tokens_per_all_in_mw == pytest.approx(1500 * 1000 / kw)
    assert cost.total_tokens_per_all_in_mw == pytest.approx(13_500 * 1000 / kw)


def test_between_points_the_read_is_the_monotone_cubic_and_dropped_repeats_are_named() -> None:
    # At 30 tok/s/user repeats 0 and 1 read between (20, 3000) and (50, 1480 or 1500); repeat 2 lost its
    # 20 tok/s/user point (invalid), so 30 lies outside its range [50, 100] and it is dropped, not clamped.
    rows = [r for r in b200_three_repeats() if not (r.repeat_index == 2 and r.interactivity_p50 == 20.0)]
    rows.append(row(20.0, 3000.0, repeat=2, valid=False))
    (read,) = read_configurations(rows, 30.0)
    assert read.repeats_used == 2 and read.repeats_dropped == 1
    assert "repeat 2: target 30 is outside the measured range [50, 100]" in read.reason
    # Repeat 1, by hand: x = 20, 50, 100; y = 3000, 1500, 500. Secants d0 = −50, d1 = −20; h0 = 30, h1 = 50.
    # Interior slope (weighted harmonic mean): w1 = 2·50 + 30 = 130, w2 = 50 + 60 = 110,
    #   m1 = 240 / (130 / −50 + 110 / −20) = 240 / −8.1 = −29.6296.
    # End slope: ((2·30 + 50)(−50) − 30(−20)) / 80 = (−5500 + 600) / 80 = −61.25 (same sign as d0: kept).
    # At s = (30 − 20) / 30 = 1/3: h00 = 20/27, h10 = 4/27, h01 = 7/27, h11 = −2/27, so
    #   y = 2222.222 − 272.222 + 388.889 + 65.844 = 2404.733.
    repeat_1 = 3000 * 20 / 27 + 30 * -61.25 * 4 / 27 + 1500 * 7 / 27 + 30 * (240 / -8.1) * -2 / 27
    assert repeat_1 == pytest.approx(2404.733, abs=1e-3)
    # Repeat 0 (1480 in the middle): d0 = −50.6667, d1 = −19.6; w's as above;
    #   m1 = 240 / (130 / −50.6667 + 110 / −19.6) = −29.3275; end = ((110)(−50.6667) − 30(−19.6)) / 80 = −62.315.
    d0, d1 = -1520 / 30, -980 / 50
    m1, m0 = 240 / (130 / d0 + 110 / d1), (110 * d0 - 30 * d1) / 80
    repeat_0 = 3000 * 20 / 27 + 30 * m0 * 4 / 27 + 1480 * 7 / 27 + 30 * m1 * -2 / 27
    assert read.output.mean == pytest.approx((repeat_0 + repeat_1) / 2)
    assert read.output.n == 2


def test_a_target_outside_every_range_is_dropped_with_its_reason_and_no_numbers() -> None:
    (cost,) = costs_at(h200(), 100.0, REGISTRY, GpuHourRate(custom_usd=2.0))
    assert not cost.read.covered and cost.read.output is None and cost.read.total is None
    assert cost.output is None and cost.total is None and cost.input is None and cost.breakdown is None
    assert "target 100 is outside the measured range [30, 60]; not extrapolated" in cost.reason
    (profit_read,) = profits_at(h200(), 100.0, REGISTRY, GpuHourRate(custom_usd=2.0), custom_prices=PRICES)
    assert profit_read.profit is None and "outside the measured range" in profit_read.reason


def test_profit_of_a_fixed_length_configuration() -> None:
    (item,) = profits_at(b200_three_repeats(), 50.0, REGISTRY, GpuHourRate(custom_usd=1.73), utilisation=0.6,
                         licence_fee=0.30, custom_prices=PRICES)  # fmt: skip
    # 12,000 input tok/s → 43.2 M/hr × $0.50 = $21.60; 1500 output tok/s → 5.4 M/hr × $2.00 = $10.80;
    # revenue $32.40/GPU-hr; × 0.6 = $19.44; licence 30 % = $5.832; profit = 19.44 − 1.73 − 5.832 = $11.878;
    # margin = 11.878 / 19.44 = 61.10 %.
    assert item.profit.revenue_usd_per_gpu_hour == pytest.approx(32.40)
    assert item.profit.realised_revenue_usd_per_gpu_hour == pytest.approx(19.44)
    assert item.profit.licence_usd_per_gpu_hour == pytest.approx(5.832)
    assert item.profit.profit_usd_per_gpu_hour == pytest.approx(11.878)
    assert item.profit.margin == pytest.approx(0.611008230)
    assert item.price_source == "custom" and item.reason == ""


def test_profit_applies_the_cache_hit_share_read_at_the_target() -> None:
    # Agentic arm: (25 tok/s/user, 700 tok/s/GPU, 55 % hits) and (40, 300, 80 %); two points → a straight line.
    rows = [row(40.0, 300.0, hit=0.80, agentic=True), row(25.0, 700.0, hit=0.55, agentic=True)]
    (item,) = profits_at(rows, 30.0, REGISTRY, GpuHourRate(custom_usd=1.73), custom_prices=PRICES)
    # At 30: output = 700 − (5/15)·400 = 566.667 tok/s; hits = 0.55 + (5/15)·0.25 = 0.63333.
    assert item.read.output.mean == pytest.approx(566.6667, abs=1e-4)
    assert item.read.cache_hit == pytest.approx(0.633333, abs=1e-6) and item.read.cache_hit_measured
    assert item.read.workload == "agentic"
    # Input 8 × 566.667 = 4533.33 tok/s → 16.32 M/hr at 0.63333 × 0.125 + 0.36667 × 0.50 = $0.2625 → $4.284;
    # output 2.04 M/hr × $2 = $4.08; revenue $8.364; × 0.6 = $5.0184; licence $1.50552;
    # profit = 5.0184 − 1.73 − 1.50552 = $1.78288; margin 35.53 %.
    assert item.profit.revenue_usd_per_gpu_hour == pytest.approx(8.364)
    assert item.profit.profit_usd_per_gpu_hour == pytest.approx(1.78288)
    assert item.profit.margin == pytest.approx(1.78288 / 5.0184)
    # Without the hit share, input would sell at $0.50: revenue 16.32 × 0.5 + 4.08 = $12.24.
    unmeasured = [row(40.0, 300.0, hit=math.nan, agentic=True), row(25.0, 700.0, hit=0.55, agentic=True)]
    (plain,) = profits_at(unmeasured, 30.0, REGISTRY, GpuHourRate(custom_usd=1.73), custom_prices=PRICES)
    assert not plain.read.cache_hit_measured and plain.profit.revenue_usd_per_gpu_hour == pytest.approx(12.24)


def test_model_prices_come_from_the_table_through_the_model_registry() -> None:
    models, table = load_model_registry(), load_price_table()
    hub_id = models["deepseek-r1"].hf_id
    assert model_price("deepseek-r1", models, table) == table[hub_id]
    assert model_price(hub_id, models, table) == table[hub_id]
    assert model_price("no-such-model", models, table) is None
    (item,) = profits_at(b200_three_repeats(), 50.0, REGISTRY, GpuHourRate(custom_usd=1.73), models=models,
                         price_table=table)  # fmt: skip
    entry = table[hub_id]
    assert item.prices == TokenPrices.from_price(entry) and hub_id in item.price_source
    # Revenue by hand with the table's prices: 43.2 M input tokens/hr and 5.4 M output tokens/hr.
    expected = 43.2 * entry.input_usd_per_m + 5.4 * entry.output_usd_per_m
    assert item.profit.revenue_usd_per_gpu_hour == pytest.approx(expected)
    (unpriced,) = profits_at(b200_three_repeats(model="mystery"), 50.0, REGISTRY, models=models, price_table=table)
    assert unpriced.profit is None and "no token prices for model mystery" in unpriced.reason


def test_rates_name_what_is_missing() -> None:
    with pytest.raises(ValueError, match="unknown TCO tier"):
        GpuHourRate("cheap")
    with pytest.raises(ValueError, match="custom"):
        GpuHourRate(custom_usd=-1.0)
    assert GpuHourRate().usd_per_gpu_hour("no-such-chip", REGISTRY) == (
        None,
        "no-such-chip is not in the hardware registry",
    )
    usd, reason = GpuHourRate("neocloud").usd_per_gpu_hour("cpu-local", REGISTRY)
    assert usd is None and "no neocloud TCO for cpu-local" in reason
    (cost,) = costs_at([row(50.0, 100.0, hardware="cpu-local")], 50.0, REGISTRY, GpuHourRate("neocloud"))
    assert cost.read.covered and cost.output is None and "no neocloud TCO for cpu-local" in cost.reason


def test_cost_figure_without_an_interval() -> None:
    single = Interval(mean=1000.0, low=None, high=None, n=1, confidence=0.95, method="single")
    assert cost_figure(3.6, single) == cost_figure(3.6, single)
    figure = cost_figure(3.6, single)
    assert figure.usd_per_million == pytest.approx(1.0) and figure.low is None and figure.high is None
    reaching_zero = Interval(mean=10.0, low=-5.0, high=25.0, n=2, confidence=0.95, method="student-t")
    figure = cost_figure(3.6, reaching_zero)
    assert figure.high is None and figure.low == pytest.approx(3.6 / (25 * 0.0036))
    assert cost_figure(3.6, None) is None


def test_best_per_hardware_is_the_cheapest_priced_configuration() -> None:
    rows = [*b200_three_repeats(), row(50.0, 1000.0, fingerprint="fp-b200-sglang", engine="sglang"), *h200()]
    best, unpriced = best_per(costs_at(rows, 50.0, REGISTRY, GpuHourRate(custom_usd=2.0)))
    assert best["b200"].read.fingerprint == "fp-b200" and best["h200"].read.fingerprint == "fp-h200"
    assert unpriced == []
    best, unpriced = best_per(costs_at(rows, 100.0, REGISTRY, GpuHourRate(custom_usd=2.0)))
    # At 100 only the first B200 configuration was measured; the others are listed with their reasons.
    assert list(best) == ["b200"] and {item.read.fingerprint for item in unpriced} == {"fp-b200-sglang", "fp-h200"}
    profits = profits_at(rows, 50.0, REGISTRY, GpuHourRate(custom_usd=2.0), custom_prices=PRICES)
    top, without = best_profit_per(profits)
    assert top["b200"].read.fingerprint == "fp-b200" and without == []


def test_scorecard_cells_and_change_vs_reference_only_where_comparable() -> None:
    rows = [*b200_three_repeats(), row(50.0, 1000.0, fingerprint="fp-b200-sglang", engine="sglang"), *h200(),
            row(50.0, 2000.0, fingerprint="fp-b200-fp4", precision="fp4")]  # fmt: skip
    cells = scorecard(rows, REGISTRY, GpuHourRate(custom_usd=2.0), (50.0, 100.0), reference="h200")
    table = {(cell.precision, cell.hardware, cell.interactivity): cell for cell in cells}
    assert len(cells) == 6  # fp8 × {b200, h200} and fp4 × b200, at 50 and 100
    b200 = table[("fp8", "b200", 50.0)]
    # Cheapest B200 FP8: 1500 tok/s/GPU (not the SGLang 1000): $2 / 5.4 = $0.37037 per M output tokens.
    assert b200.best.read.fingerprint == "fp-b200" and b200.configurations == 2
    assert b200.best.output.usd_per_million == pytest.approx(2 / 5.4)
    # H200 at 50: 900 − 20 × 500 / 30 = 566.667 tok/s/GPU → $2 / 2.04 = $0.98039; B200 vs H200:
    # 0.37037 / 0.98039 − 1 = 566.667 / 1500 − 1 = −62.22 %.
    assert table[("fp8", "h200", 50.0)].best.output.usd_per_million == pytest.approx(2 / 2.04)
    assert b200.vs_reference == pytest.approx(-0.622222, abs=1e-6) and b200.reference == "h200"
    assert table[("fp8", "h200", 50.0)].vs_reference == pytest.approx(0.0)
    # FP4 has no H200 cell to compare with; at 100 the H200 was not measured, so no change there either.
    assert table[("fp4", "b200", 50.0)].vs_reference is None and table[("fp4", "b200", 50.0)].reference is None
    assert table[("fp8", "b200", 100.0)].vs_reference is None
    missing = table[("fp8", "h200", 100.0)]
    assert (
        missing.best is None and "target 100 tok/s/user is faster than every configuration measured" in missing.reason
    )


def test_default_reference_is_the_most_widely_measured_hardware() -> None:
    rows = [*b200_three_repeats(), *h200(), row(50.0, 2000.0, fingerprint="fp-b200-fp4", precision="fp4")]
    assert default_reference(rows) == "b200"
    assert default_reference([*h200(), row(50.0, 10.0, hardware="a100")]) == "a100"  # a tie: first by name
    assert default_reference([]) is None


def test_sweeps_are_read_apart_unless_pooled_and_invalid_rows_are_ignored() -> None:
    rows = [row(50.0, 1000.0, sweep="night-1"), row(50.0, 1200.0, sweep="night-2"),
            row(50.0, 9999.0, sweep="night-2", repeat=1, valid=False)]  # fmt: skip
    reads = {read.sweeps: read.output.mean for read in read_configurations(rows, 50.0)}
    assert reads == {("night-1",): 1000.0, ("night-2",): 1200.0}
    (pooled,) = read_configurations(rows, 50.0, per_sweep=False)
    # Pooled, repeat 0 of both nights is one curve; the frontier keeps the better point at 50 tok/s/user.
    assert pooled.sweeps == ("night-1", "night-2") and pooled.output.mean == 1200.0


def test_rows_without_interactivity_have_no_curve() -> None:
    (read,) = read_configurations([row(None, 100.0), row(math.nan, 200.0, repeat=1)], 50.0)
    assert not read.covered and read.reason == "no point with a measured interactivity"


def test_compare_keeps_its_table_and_names_the_fingerprint() -> None:
    (item,) = compare_at_interactivity(b200_three_repeats(), 50.0, REGISTRY)
    assert item.fingerprint == "fp-b200" and item.points == 9 and item.throughput.mean == pytest.approx(1500.0)
    assert item.usd_per_million_output == pytest.approx(REGISTRY["b200"].tco("owning_hyperscaler") / 5.4)


def test_best_per_a_composite_key_and_cell_origins() -> None:
    rows = [*b200_three_repeats(), row(50.0, 1000.0, fingerprint="fp-b200-agentic", agentic=True),
            row(50.0, 5000.0, fingerprint="fp-b200-import", origin="imported")]  # fmt: skip
    best, _ = best_per(costs_at(rows, 50.0, REGISTRY, GpuHourRate(custom_usd=2.0)),
                       key=lambda read: (read.workload, read.hardware))  # fmt: skip
    # Per workload: the imported 5000 tok/s/GPU beats 1500 on 8k/1k; the agentic arm stands alone.
    assert {group: item.read.fingerprint for group, item in best.items()} == {
        ("8192/1024", "b200"): "fp-b200-import", ("agentic", "b200"): "fp-b200-agentic"}  # fmt: skip
    cells = scorecard(rows, REGISTRY, GpuHourRate(custom_usd=2.0), (50.0,))
    fixed = next(cell for cell in cells if cell.workload == "8192/1024")
    assert fixed.origins == ("imported", "measured") and fixed.best.read.origins == ("imported",)


def test_joules_per_token_worked_by_hand() -> None:
    from analysis.cost import joules_per_token

    # 700 W per GPU serving 1,400 output tok/s per GPU: 0.5 J per token.
    assert joules_per_token(700.0, 1400.0) == 0.5
    with pytest.raises(ValueError, match="tokens_per_s_per_gpu"):
        joules_per_token(700.0, 0.0)


def test_compare_reads_each_sweep_on_its_own_unless_pooled() -> None:
    # Repeat 0 of two nights: read per sweep, two rows of one repeat each (no interval); pooled, one curve.
    rows = [row(50.0, 1000.0, sweep="night-1"), row(50.0, 1200.0, sweep="night-2")]
    per_sweep = {item.sweep: item.throughput for item in compare_at_interactivity(rows, 50.0, REGISTRY)}
    assert {name: (read.n, read.mean, read.low) for name, read in per_sweep.items()} == {
        "night-1": (1, 1000.0, None), "night-2": (1, 1200.0, None),
    }  # fmt: skip
    (pooled,) = compare_at_interactivity(rows, 50.0, REGISTRY, per_sweep=False)
    assert pooled.sweep == "night-1, night-2" and pooled.throughput is not None and pooled.throughput.n == 1


def test_a_recipe_measuring_two_workloads_reads_two_curves_never_one() -> None:
    """Found on the real InferenceX sample: an imported configuration has one fingerprint for 1k/1k, 1k/8k and 8k/1k,
    and pooling them put 1k/8k points on the 1k/1k frontier (B200 DeepSeek-R1 FP4 TP8 read 611 tok/s/GPU at 50
    tok/s/user on 1k/1k, where its 1k/1k points end at 75)."""
    from analysis.economics import read_configurations

    short = [row(100.0, 500.0), row(60.0, 900.0)]  # 8k/1k by `row`'s default: ends at 60 tok/s/user
    long = [SimpleNamespace(**{**vars(r), "isl": 1024, "osl": 8192}) for r in (row(60.0, 2000.0), row(40.0, 4000.0))]
    reads = {read.workload: read for read in read_configurations(short + long, 50.0)}
    assert set(reads) == {"8192/1024", "1024/8192"}
    assert reads["8192/1024"].output is None  # 50 is outside its own points (60-100)
    assert reads["1024/8192"].output is not None and 2000.0 <= reads["1024/8192"].output.mean <= 4000.0


def test_a_chip_within_the_cheapest_ones_spread_is_a_tie_not_a_loser() -> None:
    # B200: three repeats, 1500 ± 49.68 tok/s/GPU at 50 (95 % interval), so $2 / 5.4 = $0.3704 with a band from
    # $2 / (1549.68 × 0.0036) = $0.3585 to $2 / (1450.32 × 0.0036) = $0.3830. H200 one point at 50 reading 1470:
    # $0.3779, inside B200's band: a tie. At 1400 ($0.3968) it is outside: B200 alone is the cheapest.
    for h200_output, tie in ((1470.0, True), (1400.0, False)):
        rows = [*b200_three_repeats(), row(50.0, h200_output, fingerprint="fp-h200", hardware="h200")]
        cells = scorecard(rows, REGISTRY, GpuHourRate(custom_usd=2.0), (50.0,), reference="b200")
        band = cell_cost_band(next(cell for cell in cells if cell.hardware == "b200"))
        assert band == pytest.approx((2 / (1549.683 * 0.0036), 2 / (1450.317 * 0.0036)), rel=1e-4)
        ranked = [cell.hardware for cell in cheapest_and_ties(cells)]
        assert ranked == (["b200", "h200"] if tie else ["b200"]), (h200_output, ranked)
    assert cheapest_and_ties([]) == []
