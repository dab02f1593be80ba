"""Pareto frontiers: the points no other point beats on both axes.

A sweep measures many (interactivity, throughput) points, one per concurrency and configuration; the
publishable curve is the frontier of the non-dominated ones (InferenceX plots throughput per GPU
against tok/s/user this way). `pareto_frontier` selects it for one set of points; `frontier_by_group`
does so per hardware / model / stack from a list of result rows.

`frontier_mask` flags the frontier points of each group in parallel columns (the hub's tables).

A point is dominated when another point is at least as good on both axes and strictly better on one;
"good" is larger for a maximised axis and smaller for a minimised one. Equal points are one point:
the first (lowest index) is kept. Pure Python; no pandas, no numpy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any


def pareto_frontier(points: Sequence[tuple[float, float]], maximize: tuple[bool, bool] = (True, True)) -> list[int]:
    """Indices of the non-dominated points, sorted by x ascending.

    `maximize` says per axis whether larger is better. Exact duplicates count once (the first index is
    kept). No two frontier points share an x value (the better y would dominate), so the order by x is
    total. Raises ValueError on a non-finite coordinate.
    """
    signs = (1.0 if maximize[0] else -1.0, 1.0 if maximize[1] else -1.0)
    for index, (x, y) in enumerate(points):
        if not (math.isfinite(x) and math.isfinite(y)):
            raise ValueError(f"point {index} is not finite: ({x!r}, {y!r})")
    # In "larger is better" space: best x first, then best y, then lowest index (so duplicates keep
    # the first). Walking that order, a point is on the frontier exactly when its y beats every y seen
    # so far: any earlier point has x at least as good, so equal-or-better y would dominate it.
    order = sorted(range(len(points)), key=lambda i: (-signs[0] * points[i][0], -signs[1] * points[i][1], i))
    frontier: list[int] = []
    best_y = -math.inf
    for index in order:
        y = signs[1] * points[index][1]
        if y > best_y:
            frontier.append(index)
            best_y = y
    frontier.sort(key=lambda i: (points[i][0], i))
    return frontier


def _field(row: Any, name: str) -> Any:
    if isinstance(row, Mapping):
        return row.get(name)
    return getattr(row, name, None)


def frontier_by_group(
    rows: Sequence[Any],
    key: str | Callable[[Any], Hashable],
    x: str,
    y: str,
    maximize: tuple[bool, bool] = (True, True),
) -> dict[Hashable, list[Any]]:
    """The Pareto frontier of each group of `rows`, as the rows themselves sorted by `x`.

    `rows` is a list of mappings (dicts, e.g. `DataFrame.to_dict("records")`) or of objects with
    attributes (dataclasses, SQLModel rows); `x` and `y` name the fields to compare and `key` is a field
    name or a function of the row giving its group. Rows whose x or y is missing or None (e.g. an
    invalid point without a measurement) are left out, since they cannot be placed. Groups appear in
    the order of their first row.
    """
    groups: dict[Hashable, list[Any]] = {}
    for row in rows:
        group = key(row) if callable(key) else _field(row, key)
        if _field(row, x) is None or _field(row, y) is None:
            continue
        groups.setdefault(group, []).append(row)
    result: dict[Hashable, list[Any]] = {}
    for group, members in groups.items():
        points = [(float(_field(row, x)), float(_field(row, y))) for row in members]
        result[group] = [members[i] for i in pareto_frontier(points, maximize)]
    return result


def frontier_mask(
    groups: Sequence[Hashable],
    xs: Sequence[float | None],
    ys: Sequence[float | None],
    maximize: tuple[bool, bool] = (True, True),
) -> list[bool]:
    """Per point, whether it is on the frontier of its group: parallel columns in, one flag per point out.

    Suits a table (e.g. a DataFrame's series, x and y columns): point i belongs to group `groups[i]`.
    Points with a missing or non-finite coordinate cannot be placed and are never on a frontier; among
    equal points of a group only the first is.
    """
    if not len(groups) == len(xs) == len(ys):
        raise ValueError(f"groups, xs and ys differ in length ({len(groups)}, {len(xs)}, {len(ys)})")
    members: dict[Hashable, list[int]] = {}
    for index, (group, x, y) in enumerate(zip(groups, xs, ys, strict=True)):
        if x is None or y is None or not (math.isfinite(x) and math.isfinite(y)):
            continue
        members.setdefault(group, []).append(index)
    mask = [False] * len(xs)
    for indices in members.values():
        points = [(float(xs[i]), float(ys[i])) for i in indices]  # type: ignore[arg-type]  # indices are those whose x and y were checked finite
        for kept in pareto_frontier(points, maximize):
            mask[indices[kept]] = True
    return mask
