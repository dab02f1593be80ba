"""Thinning a chart's points to a budget: frontier first, an even spread along x, no group dropped.

Hand-worked cases: group A has 10 points at x = 0..9, group B 10 points at x = 10..19 (positions in the
input are shuffled so that the spread follows x, not the input order).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from analysis.pareto import frontier_mask
from analysis.thinning import thin_mask


def _shuffled(groups: list[str], x: list[float], frontier: list[bool]) -> tuple[list[str], list[float], list[bool]]:
    order = list(range(len(x)))
    random.Random(7).shuffle(order)
    return [groups[i] for i in order], [x[i] for i in order], [frontier[i] for i in order]


def _kept(groups: list[str], x: list[float], frontier: list[bool], budget: int) -> list[tuple[str, float]]:
    mask = thin_mask(groups, x, frontier, budget)
    return sorted((group, value) for group, value, kept in zip(groups, x, mask, strict=True) if kept)


GROUPS = ["A"] * 10 + ["B"] * 10
X = [float(value) for value in range(20)]


def test_everything_is_kept_within_the_budget() -> None:
    assert thin_mask(GROUPS, X, [False] * 20, 20).all()
    assert thin_mask([], [], [], 5).shape == (0,)


def test_every_frontier_point_then_an_even_spread_of_the_rest() -> None:
    # Frontier: A at x=9; B at x=10 and x=15. Budget 8: the 3 frontier points, then 5 more shared by the
    # other points, A's 9 and B's 8 in proportion: floor(5·9/17) = 2 and floor(5·8/17) = 2, each spread
    # along x with both ends: A's others x=0..8 give 0 and 8; B's x=11,12,13,14,16,17,18,19 give 11 and 19.
    frontier = [x in (9.0, 10.0, 15.0) for x in X]
    kept = _kept(*_shuffled(GROUPS, X, frontier), budget=8)
    assert kept == [("A", 0.0), ("A", 8.0), ("A", 9.0), ("B", 10.0), ("B", 11.0), ("B", 15.0), ("B", 19.0)]


def test_a_frontier_over_the_budget_is_spread_along_x_in_proportion() -> None:
    # A: all 10 points on its frontier; B: x=10 and 11 only. Budget 4 < 12 frontier points: A gets
    # floor(4·10/12) = 3, spread over positions round(linspace(0, 9, 3)) = 0, 4 (4.5 rounds to even), 9;
    # B gets floor(4·2/12) = 0, raised to 1: the middle of its two, x=11. No room is left for other points.
    frontier = [group == "A" or x in (10.0, 11.0) for group, x in zip(GROUPS, X, strict=True)]
    kept = _kept(*_shuffled(GROUPS, X, frontier), budget=4)
    assert kept == [("A", 0.0), ("A", 4.0), ("A", 9.0), ("B", 11.0)]


def test_no_group_disappears() -> None:
    # 30 groups of 100 points, budget 10: each group still shows (one frontier point each at least).
    rng = np.random.default_rng(3)
    groups = [f"g{index // 100}" for index in range(3000)]
    x = list(rng.uniform(0, 100, 3000))
    y = list(rng.uniform(0, 100, 3000))
    frontier = frontier_mask(groups, x, y, (True, True))
    mask = thin_mask(groups, x, frontier, 10)
    assert {group for group, kept in zip(groups, mask, strict=True) if kept} == set(groups)
    # Only frontier points were kept: the frontier alone is over the budget.
    assert all(frontier[index] for index in np.flatnonzero(mask))


def test_the_budget_holds_and_every_frontier_point_stays_when_it_fits() -> None:
    rng = np.random.default_rng(4)
    groups = [f"g{index % 50}" for index in range(20_000)]
    x = list(rng.uniform(0, 100, 20_000))
    y = list(rng.uniform(0, 100, 20_000))
    frontier = frontier_mask(groups, x, y, (True, True))
    assert sum(frontier) < 5000  # random clouds: a short frontier each
    mask = thin_mask(groups, x, frontier, 5000)
    assert 5000 - 50 <= mask.sum() <= 5000  # floor of each group's share loses less than one point per group
    assert mask[np.asarray(frontier)].all()


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="budget"):
        thin_mask(GROUPS, X, [False] * 20, 0)
    with pytest.raises(ValueError, match="differ in length"):
        thin_mask(GROUPS, X[:-1], [False] * 20, 5)
