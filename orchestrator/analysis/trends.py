"""Trends: each configuration's figure at one interactivity, sweep after sweep, and regressions flagged.

A configuration is a recipe fingerprint; its history is the sweeps that measured it, in time order.
Each sweep's value is its frontier read at the target interactivity (the mean over repeats); the latest
sweep is compared with the earlier ones by `regression.detect_regression` (prediction interval plus a
minimum relative drop), so a nightly run can fail loudly when a configuration got slower.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator.analysis.intervals import interval_of_interpolated
from orchestrator.analysis.pareto import pareto_frontier
from orchestrator.analysis.regression import RegressionResult, detect_regression


@dataclass(frozen=True)
class Trend:
    recipe: str
    hardware: str
    points: tuple[tuple[str, float | None], ...]  # (sweep, throughput at the target) in time order
    verdict: RegressionResult | None  # None when fewer than two sweeps could be read


def _read(rows: Sequence[Any], target: float) -> float | None:
    by_repeat: dict[int, list[Any]] = defaultdict(list)
    for row in rows:
        by_repeat[row.repeat_index].append(row)
    curves = []
    for members in by_repeat.values():
        pairs = [(r.interactivity_p50, r.output_throughput_per_gpu) for r in members if r.interactivity_p50]
        frontier = pareto_frontier(pairs) if pairs else []
        curves.append(([pairs[i][0] for i in frontier], [pairs[i][1] for i in frontier]))
    read = interval_of_interpolated(curves, target)
    return read.interval.mean if read.interval is not None else None


def trends_at(rows: Sequence[Any], target: float, min_relative_drop: float = 0.05) -> list[Trend]:
    """`rows` are result views with sweep, fingerprint and finished_at; valid ones are used."""
    groups: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if row.valid:
            groups[row.fingerprint][row.sweep].append(row)
    trends = []
    for sweeps in groups.values():
        ordered = sorted(sweeps.items(), key=lambda item: max(r.finished_at for r in item[1]))
        points = tuple((name, _read(members, target)) for name, members in ordered)
        values = [value for _, value in points if value is not None]
        verdict = None
        if len(values) >= 2 and points[-1][1] is not None:
            verdict = detect_regression(values[:-1], values[-1], min_relative_drop=min_relative_drop)
        first = next(iter(sweeps.values()))[0]
        trends.append(Trend(recipe=first.recipe, hardware=first.hardware, points=points, verdict=verdict))
    return trends
