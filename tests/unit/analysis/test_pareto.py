"""Pareto frontier selection: dominated points, ties, duplicates and every maximize direction."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import pytest

from analysis.pareto import frontier_by_group, pareto_frontier


def _brute_force(points: list[tuple[float, float]], maximize: tuple[bool, bool]) -> list[int]:
    """The definition, O(n²): not dominated by any point, and not a later copy of an equal point."""
    sx = 1 if maximize[0] else -1
    sy = 1 if maximize[1] else -1
    keep = []
    for i, (x, y) in enumerate(points):
        dominated = any(
            sx * a >= sx * x and sy * b >= sy * y and (sx * a > sx * x or sy * b > sy * y) for a, b in points
        )
        earlier_copy = any(points[j] == (x, y) for j in range(i))
        if not dominated and not earlier_copy:
            keep.append(i)
    return sorted(keep, key=lambda i: points[i][0])


def test_maximize_both_drops_dominated_and_duplicates() -> None:
    points = [(1, 10), (2, 8), (3, 9), (1, 10), (4, 1), (0.5, 5), (4, 0.5), (0.5, 10)]
    # (2, 8) < (3, 9); the second (1, 10) is a copy of index 0; (0.5, 5) and (0.5, 10) lose to (1, 10)
    # (equal y, smaller x); (4, 0.5) loses to (4, 1) (equal x, smaller y).
    assert pareto_frontier(points) == [0, 2, 4]


def test_duplicate_keeps_first_index() -> None:
    assert pareto_frontier([(5, 5), (5, 5), (5, 5)]) == [0]
    assert pareto_frontier([(1, 1), (5, 5), (5, 5)]) == [1]


def test_minimize_x_maximize_y() -> None:
    # E.g. latency (lower is better) against throughput.
    points = [(1, 5), (2, 10), (3, 8), (1, 5), (0.5, 1)]
    assert pareto_frontier(points, maximize=(False, True)) == [4, 0, 1]


def test_maximize_x_minimize_y() -> None:
    points = [(1, 1), (2, 2), (2, 1), (0, 0)]
    # (2, 1) beats (1, 1) (more x, same y) and (2, 2) (same x, less y); (0, 0) has the least y.
    assert pareto_frontier(points, maximize=(True, False)) == [3, 2]


def test_minimize_both() -> None:
    points = [(1, 3), (2, 2), (3, 1), (2, 3), (3, 3)]
    assert pareto_frontier(points, maximize=(False, False)) == [0, 1, 2]


@pytest.mark.parametrize("maximize", [(True, True), (True, False), (False, True), (False, False)])
def test_matches_definition_on_random_points_with_ties(maximize: tuple[bool, bool]) -> None:
    rng = random.Random(7)
    for _ in range(200):
        points = [(float(rng.randint(0, 6)), float(rng.randint(0, 6))) for _ in range(rng.randint(0, 15))]
        assert pareto_frontier(points, maximize) == _brute_force(points, maximize), points


def test_empty_and_non_finite() -> None:
    assert pareto_frontier([]) == []
    with pytest.raises(ValueError, match="point 1"):
        pareto_frontier([(1, 1), (math.nan, 2)])


@dataclass
class Row:
    hw: str
    interactivity: float | None
    throughput: float | None


def test_frontier_by_group_over_dicts_and_dataclasses() -> None:
    dicts = [
        {"hw": "a", "interactivity": 10.0, "throughput": 100.0},
        {"hw": "b", "interactivity": 5.0, "throughput": 50.0},
        {"hw": "a", "interactivity": 20.0, "throughput": 60.0},
        {"hw": "a", "interactivity": 15.0, "throughput": 50.0},  # dominated by (20, 60)
        {"hw": "a", "interactivity": None, "throughput": 999.0},  # no measurement: left out
        {"hw": "b", "interactivity": 6.0, "throughput": 40.0},
    ]
    result = frontier_by_group(dicts, "hw", "interactivity", "throughput")
    assert list(result) == ["a", "b"]
    assert [r["interactivity"] for r in result["a"]] == [10.0, 20.0]
    assert [r["interactivity"] for r in result["b"]] == [5.0, 6.0]

    rows = [Row(**d) for d in dicts]
    by_callable = frontier_by_group(rows, lambda r: r.hw.upper(), "interactivity", "throughput")
    assert [r.interactivity for r in by_callable["A"]] == [10.0, 20.0]


def test_frontier_mask_flags_each_groups_frontier_in_place() -> None:
    from analysis.pareto import frontier_mask

    groups = ["a", "a", "a", "b", "b", "a", "b"]
    xs = [100.0, 50.0, 50.0, 60.0, 30.0, 20.0, float("nan")]
    ys = [500.0, 1500.0, 1510.0, 400.0, 1000.0, 3000.0, 9999.0]
    # Group a: (50, 1500) is beaten by (50, 1510); group b keeps both; a NaN cannot be placed.
    assert frontier_mask(groups, xs, ys) == [True, False, True, True, True, True, False]
    # Minimising y (e.g. cost) against maximised x: a slower *and* dearer point is dominated (b's second),
    # although on throughput (maximised) it would not be.
    cost = [0.96, 0.32, 0.318, 1.2, 1.5, 0.16, 0.1]
    assert frontier_mask(groups, xs, cost, maximize=(True, False)) == [True, False, True, True, False, True, False]
    # Minimising x (latency) and maximising y: the bigger, slower points are not dominated.
    assert frontier_mask(["g"] * 3, [10.0, 20.0, 15.0], [1.0, 2.0, 0.5], maximize=(False, True)) == [True, True, False]
    assert frontier_mask([], [], []) == []
    with pytest.raises(ValueError, match="differ in length"):
        frontier_mask(["a"], [1.0], [])
