"""Frontier area and the uplift between two states, worked by hand."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from analysis.uplift import frontier_area, uplift


def _row(hardware: str, speed: float, output: float, valid: bool = True) -> SimpleNamespace:
    return SimpleNamespace(model="m", precision="fp8", workload="1k/1k", hardware=hardware, valid=valid,
                           interactivity_p50=speed, output_throughput_per_gpu=output)  # fmt: skip


def test_the_area_is_the_rectangles_under_the_frontier_from_the_origin() -> None:
    # (10, 100) (20, 60) (40, 10); (15, 50) is dominated by (20, 60) and adds nothing.
    rows = [_row("a", 10, 100), _row("a", 20, 60), _row("a", 40, 10), _row("a", 15, 50)]
    assert frontier_area(rows) == pytest.approx(10 * 100 + 10 * 60 + 20 * 10)
    assert frontier_area([]) == 0.0


def test_uplift_names_moved_new_and_gone_chips_and_reads_each_tier() -> None:
    base = [_row("a", 10, 100), _row("a", 40, 10), _row("gone", 20, 5), _row("a", 80, 999, valid=False)]
    head = [_row("a", 10, 100), _row("a", 40, 20), _row("new", 20, 5)]
    chips = {item.key[3]: item for item in uplift(base, head, tiers=(10.0, 50.0))}
    assert (chips["a"].status, chips["gone"].status, chips["new"].status) == ("moved", "gone", "new")
    # a: 10·100 + 30·10 = 1,300 before (the invalid point counts nowhere), 10·100 + 30·20 = 1,600 after.
    assert (chips["a"].base_area, chips["a"].head_area) == (pytest.approx(1300), pytest.approx(1600))
    assert chips["a"].change == pytest.approx(1600 / 1300 - 1)
    assert chips["a"].base_at == {10.0: pytest.approx(100), 50.0: None}  # nothing read beyond the fastest point
    assert chips["new"].change is None and chips["gone"].head_at == {10.0: None, 50.0: None}
