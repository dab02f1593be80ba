"""A chip's envelope over its configurations, read at a target interactivity: figures worked by hand."""

from __future__ import annotations

import itertools
import math
import random
from types import SimpleNamespace
from typing import Any

import pytest

from analysis.economics import GpuHourRate, chip_costs_at, read_chips, scorecard
from analysis.envelope import by_configuration, envelope, output_at, read_chip, run_spread
from recipes.hardware import load_hardware_registry

REGISTRY = load_hardware_registry()


def point(interactivity: float, output: float, fingerprint: str, *, concurrency: int, repeat: int = 0,
          sweep: str = "s1", hardware: str = "gb200-nvl72", valid: bool = True) -> Any:  # fmt: skip
    return SimpleNamespace(
        sweep=sweep, recipe=f"{fingerprint}-recipe", fingerprint=fingerprint, configuration=fingerprint,
        hardware=hardware, engine="dynamo", origin="imported", model="deepseek-r1", precision="fp4",
        workload_kind="fixed-length", isl=8192, osl=1024, concurrency=concurrency, repeat_index=repeat, valid=valid,
        interactivity_p50=interactivity, output_throughput_per_gpu=output, total_token_throughput_per_gpu=output * 9,
        realized_hit_rate=None, source=None, point_key=f"{fingerprint}-c{concurrency}",
    )  # fmt: skip


def two_configurations() -> list[Any]:
    """'wide' serves slow users well, 'fast' serves fast users well; neither spans 20 to 110 alone.

    wide: (20, 3000), (40, 2000); fast: (45, 1000), (60, 1500), (110, 400). Fast's (45, 1000) is beaten by its own
    (60, 1500), faster and more. Envelope: (20, 3000), (40, 2000), (60, 1500), (110, 400).
    """
    return [point(20, 3000, "wide", concurrency=64), point(40, 2000, "wide", concurrency=32),
            point(45, 1000, "fast", concurrency=64), point(60, 1500, "fast", concurrency=16),
            point(110, 400, "fast", concurrency=2)]  # fmt: skip


def test_the_envelope_is_the_frontier_over_every_configuration() -> None:
    frontier = envelope(two_configurations())
    assert [(row.interactivity_p50, row.output_throughput_per_gpu) for row in frontier] == [
        (20, 3000), (40, 2000), (60, 1500), (110, 400)]  # fmt: skip


def test_a_read_between_two_configurations_names_both_and_stays_between_them() -> None:
    read = read_chip(two_configurations(), 50.0)
    # Each configuration alone: 'wide' ends at 40 and 'fast' reads 1000..1500 at 50 along its own curve; the chip
    # serves 50 with the envelope between (40, 2000) and (60, 1500): a monotone cubic stays within [1500, 2000].
    assert read.output is not None and 1500.0 <= read.output.mean <= 2000.0
    assert [row.fingerprint for row in read.rests_on] == ["wide", "fast"]
    assert read.read_at == 50.0 and not read.served_faster and read.configurations == 2


def test_below_the_slowest_point_the_chip_serves_faster_and_says_so() -> None:
    rows = [point(60, 1500, "fast", concurrency=16), point(110, 400, "fast", concurrency=2)]
    read = read_chip(rows, 30.0)
    assert read.output.mean == 1500.0 and read.read_at == 60.0 and read.served_faster
    assert "served faster than asked" in read.reason and "60" in read.reason


def test_above_the_fastest_point_nothing_is_extrapolated() -> None:
    read = read_chip(two_configurations(), 150.0)
    assert read.output is None and "faster than every configuration measured (fastest 110)" in read.reason


def test_cost_along_the_envelope_never_falls_as_the_target_speed_rises() -> None:
    """Per-configuration reads made GB200's 8k/1k cost rise and fall (~$7 at 80 tok/s/user, $1.3 at 115)."""
    rows = two_configurations()
    costs = []
    for target in range(10, 111, 5):
        (item,) = chip_costs_at(rows, float(target), REGISTRY, GpuHourRate(custom_usd=2.0))
        costs.append(item.output.usd_per_million)
    assert all(later >= earlier - 1e-12 for earlier, later in itertools.pairwise(costs))


def test_equal_repeats_give_an_interval_and_unequal_ones_a_curve_of_means() -> None:
    rows = []
    for repeat, middle in enumerate((1480.0, 1500.0, 1520.0)):
        rows += [point(20, 3000, "a", concurrency=64, repeat=repeat), point(50, middle, "a", concurrency=16,
                                                                              repeat=repeat)]  # fmt: skip
    read = read_chip(rows, 50.0)
    assert read.output.n == 3 and read.output.mean == pytest.approx(1500.0) and read.output.low < 1500.0
    rows.append(point(50, 1000, "b", concurrency=16))  # one repeat only
    mixed = read_chip(rows, 50.0)
    assert mixed.output.n == 1 and mixed.output.mean == pytest.approx(1500.0) and "repeat means" in mixed.reason


def test_runs_of_the_configurations_a_read_rests_on_give_their_spread() -> None:
    """Three runs of one B200 configuration read 308.6, 254.7 and 235.9 tok/s/GPU at 50 on the real files."""
    history = [point(50, value, "b200-tp4", concurrency=64, sweep=f"run-{i}", hardware="b200")
               for i, value in enumerate((308.6, 254.7, 235.9))]  # fmt: skip
    spread = run_spread(history, history[:1], 50.0)
    assert (spread.runs, spread.low, spread.high) == (3, 235.9, 308.6)
    (read,) = read_chips(history[:1], 50.0, history=history)
    assert read.runs == 3 and read.run_spread == (235.9, 308.6) and read.rests_on == ("b200-tp4",)


def test_a_runs_figure_is_the_output_of_its_whole_read_at_every_target() -> None:
    """`output_at` (a run's figure behind a spread) is `read_chip`'s output mean, made without the rest of the read:
    compared on random chips of one to three configurations, with and without repeats, at targets below, between,
    on and above their points (a point with no measured speed included)."""
    rng = random.Random(7)
    for _ in range(300):
        rows, repeats = [], rng.choice((1, 1, 2, 3))
        for configuration in range(rng.randint(1, 3)):
            for concurrency in rng.sample((1, 2, 4, 8, 16, 32, 64), rng.randint(1, 5)):
                speed, output = rng.uniform(5, 150), rng.uniform(50, 4000)
                for repeat in range(repeats if rng.random() < 0.9 else 1):
                    rows.append(
                        point(
                            speed * rng.uniform(0.95, 1.05),
                            output * rng.uniform(0.95, 1.05),
                            f"c{configuration}",
                            concurrency=concurrency,
                            repeat=repeat,
                        )
                    )
        if rng.random() < 0.1:
            rows.append(point(math.nan, 100.0, "c0", concurrency=128))
        speeds = sorted(row.interactivity_p50 for row in rows if math.isfinite(row.interactivity_p50))
        for target in (1.0, rng.uniform(5, 150), speeds[0], speeds[-1], speeds[len(speeds) // 2], 200.0):
            read = read_chip(rows, target)
            assert output_at(rows, target) == (read.output.mean if read.output is not None else None)


def joined_runs() -> list[Any]:
    """MI355X DeepSeek-R1 FP4 1k/1k on the public corpus, two configurations of two runs: SGLang TP4 (run 1) reaches
    94.2 tok/s/user, ATOM TP8 (run 2) 107.5. At 100 the chip's envelope runs from SGLang's fastest point to ATOM's."""
    return [point(80.6, 153.3, "sglang-tp4", concurrency=8, sweep="run-1", hardware="mi355x"),
            point(94.2, 89.0, "sglang-tp4", concurrency=4, sweep="run-1", hardware="mi355x"),
            point(90.8, 89.4, "atom-tp8", concurrency=8, sweep="run-2", hardware="mi355x"),
            point(107.5, 53.0, "atom-tp8", concurrency=4, sweep="run-2", hardware="mi355x")]  # fmt: skip


def test_only_runs_that_read_a_figure_at_the_target_count_and_a_read_names_the_runs_it_joins() -> None:
    """The read at 100 rests on both runs' configurations; alone, run 1 does not reach 100 and run 2 reads lower than
    the joined figure. 'Two runs' with one figure was what the Overview said."""
    rows = joined_runs()
    (read,) = read_chips(rows, 100.0, history=rows)
    assert read.sweeps == ("run-1", "run-2") and set(read.rests_on) == {"sglang-tp4", "atom-tp8"}
    spread = run_spread(rows, [row for row in rows if row.fingerprint == "atom-tp8"], 100.0)
    assert spread.runs == 1 and spread.low == spread.high
    assert read.runs == 1 and read.run_spread == (spread.low, spread.high)
    assert read.run_spread[0] < read.output.mean  # the joined figure is above what either run reads alone
    assert run_spread(rows[:2], rows[:2], 100.0).runs == 0


def test_the_scorecard_names_the_chip_whose_envelope_is_cheapest() -> None:
    """The Overview's defect on the real files: GB200 measured only at 54-60 tok/s/user was 'outside the measured
    range' at 50, and a B200 at $2.04 was named cheapest. A chip measured faster than the target serves it."""
    gb200 = [point(54, 2000, "gb200-disagg", concurrency=64), point(60, 1800, "gb200-disagg", concurrency=32)]
    b200 = [point(40, 900, "b200-tp8", concurrency=64, hardware="b200"),
            point(70, 400, "b200-tp8", concurrency=16, hardware="b200")]  # fmt: skip
    cells = scorecard([*gb200, *b200], REGISTRY, GpuHourRate(custom_usd=2.0), (50.0,))
    by_chip = {cell.hardware: cell for cell in cells}
    gb200_cost = by_chip["gb200-nvl72"].best.output.usd_per_million
    assert gb200_cost == pytest.approx(2.0 / (2000 * 3600 / 1e6))
    assert by_chip["gb200-nvl72"].best.read.served_faster and by_chip["gb200-nvl72"].best.read.read_at == 54
    assert gb200_cost < by_chip["b200"].best.output.usd_per_million
    assert math.isfinite(by_chip["b200"].best.output.usd_per_million)


def test_a_memo_gives_back_a_chips_read_while_its_rows_and_runs_are_the_same() -> None:
    """The hub keeps chip reads across page runs: removing one chip from the filter must give the other chips' reads
    back unchanged, and a chip whose runs changed must be read again (its spread is different). The runs come grouped
    by configuration, the same lists on every page run, as the hub keeps them (`public_results.every_run_of`)."""
    gb200 = [point(54, 2000, "gb200-disagg", concurrency=64), point(60, 1800, "gb200-disagg", concurrency=32)]
    b200 = [point(40, 900, "b200-tp8", concurrency=64, hardware="b200"),
            point(70, 400, "b200-tp8", concurrency=16, hardware="b200")]  # fmt: skip
    earlier_b200 = [point(40, 700, "b200-tp8", concurrency=64, hardware="b200", sweep="s0"),
                    point(70, 300, "b200-tp8", concurrency=16, hardware="b200", sweep="s0")]  # fmt: skip
    rate, history = GpuHourRate(custom_usd=2.0), [*gb200, *b200, *earlier_b200]
    runs = by_configuration(history)
    memo: dict[Any, Any] = {}
    both = scorecard([*gb200, *b200], REGISTRY, rate, (50.0,), history=runs, memo=memo)
    assert both == scorecard([*gb200, *b200], REGISTRY, rate, (50.0,), history=history)
    assert len(memo) == 2
    b200_read = next(cell.best.read for cell in both if cell.hardware == "b200")
    assert b200_read.runs == 2
    (alone,) = scorecard(b200, REGISTRY, rate, (50.0,), history=runs, memo=memo)
    assert len(memo) == 2 and alone.best.read is b200_read
    (one_run,) = scorecard(b200, REGISTRY, rate, (50.0,), history=by_configuration(b200), memo=memo)
    assert len(memo) == 3 and one_run.best.read.runs == 1
    assert one_run == scorecard(b200, REGISTRY, rate, (50.0,), history=b200)[0]
    # Other lists of the same rows are read again, never taken for the lists a read was made from.
    (again,) = scorecard(b200, REGISTRY, rate, (50.0,), history=by_configuration(history), memo=memo)
    assert len(memo) == 4 and again == alone and again.best.read is not b200_read


def test_invalid_points_never_enter_the_envelope() -> None:
    rows = [*two_configurations(), point(50, 99_999, "broken", concurrency=8, valid=False)]
    (read,) = read_chips(rows, 50.0)
    assert read.output.mean <= 2000.0 and "broken" not in read.rests_on


def test_a_projection_below_its_source_in_the_same_view_says_why() -> None:
    """The B200 -> GB300 case of the real files: GB300 projected from B200's median curve over three runs read 230
    tok/s/GPU at 50 tok/s/user, below the latest B200 run the Overview showed (309), with no word of why."""
    b200 = [point(45.5, 342.5, "b200-tp4", concurrency=32, hardware="b200"),
            point(64.6, 166.2, "b200-tp4", concurrency=16, hardware="b200")]  # fmt: skip
    gb300 = [point(45.5, 262.0, "gb300-projected", concurrency=32, hardware="gb300-nvl72"),
             point(64.6, 167.2, "gb300-projected", concurrency=16, hardware="gb300-nvl72")]  # fmt: skip
    for row in gb300:
        row.origin, row.projection_source, row.projection_edge = "projected", "b200", "central"
    reads = {read.hardware: read for read in read_chips([*b200, *gb300], 50.0)}
    assert reads["gb300-nvl72"].output.mean < reads["b200"].output.mean
    assert reads["gb300-nvl72"].below_source == "b200" and "below b200's" in reads["gb300-nvl72"].reason
    assert "median of its runs" in reads["gb300-nvl72"].reason and reads["b200"].below_source == ""
    # At or above its source, nothing is said.
    for row in gb300:
        row.output_throughput_per_gpu *= 2
    assert {read.hardware: read.below_source for read in read_chips([*b200, *gb300], 50.0)}["gb300-nvl72"] == ""


def test_a_configurations_own_curve_above_the_point_envelope_wins() -> None:
    """The envelope of points is not the envelope of curves: 'wide' runs from (40, 2000) to (80, 1000), a straight
    line through 1750 at 50; 'narrow' has one point, (55, 1200), on the point envelope between them, which reads
    2000 - 10 / 15 × 800 = 1466.7 at 50 (a line between two points stays a line). The chip serves 50 at 1750 with
    'wide' (GB200 DeepSeek-R1 FP8 1k/1k on the real files: $1.56/M on the points, $1.19/M on one configuration)."""
    rows = [point(40, 2000, "wide", concurrency=64), point(80, 1000, "wide", concurrency=8),
            point(55, 1200, "narrow", concurrency=32)]  # fmt: skip
    read = read_chip(rows, 50.0)
    assert read.output.mean == pytest.approx(1750.0) and [row.fingerprint for row in read.rests_on] == ["wide", "wide"]
    costs = [chip_costs_at(rows, float(t), REGISTRY, GpuHourRate(custom_usd=2.0))[0].output.usd_per_million
             for t in range(30, 81, 2)]  # fmt: skip
    assert all(later >= earlier - 1e-12 for earlier, later in itertools.pairwise(costs))
