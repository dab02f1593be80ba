"""Fewer points to draw, the same picture: a chart's points thinned to a budget, frontier points first.

A browser draws tens of thousands of marks slowly (docs/BENCHMARKS.md, "Hub render") and a reader cannot
tell them apart anyway. `thin_mask` keeps, in this order:

1. every frontier point, when they fit the budget; otherwise each group's frontier evenly spread along x
   (both ends kept), each group getting a share of the budget in proportion to its frontier points;
2. with what is left of the budget, each group's other points evenly spread along x, each group in
   proportion to its number of other points.

Every group keeps at least one point, so no configuration disappears from a chart (the total can then pass
the budget by at most the number of groups). Pure numpy, deterministic: the same inputs keep the same points.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np


def _spread(members: np.ndarray, x: np.ndarray, count: int) -> np.ndarray:
    """`count` of `members` (row indices) evenly spread along x, both ends included; one is the middle one."""
    ordered = members[np.argsort(x[members], kind="stable")]
    if count >= len(ordered):
        return ordered
    if count <= 0:
        return ordered[:0]
    if count == 1:
        return ordered[[len(ordered) // 2]]
    return ordered[np.unique(np.round(np.linspace(0, len(ordered) - 1, count)).astype(int))]


def thin_mask(groups: Sequence[Hashable], x: Sequence[float], frontier: Sequence[bool], budget: int) -> np.ndarray:
    """Which points to draw (a boolean mask) so that about `budget` remain; all of them when they fit.

    `groups` names each point's series (e.g. its configuration), `x` places it along the x axis and
    `frontier` says whether it is on its group's frontier (`pareto.frontier_mask`).
    """
    if budget < 1:
        raise ValueError(f"budget must be at least 1, got {budget}")
    x_values = np.asarray(x, dtype=float)
    on_frontier = np.asarray(frontier, dtype=bool)
    if not len(groups) == len(x_values) == len(on_frontier):
        raise ValueError(f"groups, x and frontier differ in length: {len(groups)}, {len(x_values)}, {len(on_frontier)}")
    count = len(x_values)
    if count <= budget:
        return np.ones(count, dtype=bool)
    numbers: dict[Hashable, int] = {}  # a dict, not np.unique: sorting 50,000 long labels costs more
    codes = np.fromiter((numbers.setdefault(group, len(numbers)) for group in groups), dtype=int, count=count)
    by_group = np.argsort(codes, kind="stable")
    members = np.split(by_group, np.cumsum(np.bincount(codes))[:-1])
    keep = np.zeros(count, dtype=bool)

    def share(candidates: list[np.ndarray], room: int, at_least_one: bool) -> None:
        total = sum(len(chosen) for chosen in candidates)
        for chosen in candidates:
            quota = room * len(chosen) // total if total else 0
            keep[_spread(chosen, x_values, max(quota, 1) if at_least_one and len(chosen) else quota)] = True

    frontiers = [group[on_frontier[group]] for group in members]
    if on_frontier.sum() <= budget:
        keep[on_frontier] = True
    else:
        share(frontiers, budget, at_least_one=True)
    room = budget - int(keep.sum())
    if room > 0:
        share([group[~on_frontier[group]] for group in members], room, at_least_one=False)
    for group in members:  # a group without a frontier point (e.g. none computed) still shows
        if not keep[group].any():
            keep[_spread(group, x_values, 1)] = True
    return keep
