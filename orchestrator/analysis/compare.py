"""Cross-configuration comparison at a target interactivity: throughput with its interval, and cost.

Each configuration (recipe fingerprint) contributes one curve per repeat: its valid points'
(interactivity p50, output tok/s/GPU), reduced to the Pareto frontier. Each repeat's frontier is read
at the target with monotone interpolation (never extrapolated) and the reads give the mean and 95 %
interval. Cost per million output tokens is derived from the interpolated throughput (DESIGN.md §7),
never splined itself.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator.analysis.cost import cost_per_million_tokens
from orchestrator.analysis.intervals import Interval, interval_of_interpolated
from orchestrator.analysis.pareto import pareto_frontier
from recipes.hardware import Hardware


@dataclass(frozen=True)
class ComparisonRow:
    recipe: str
    hardware: str
    engine: str
    origins: tuple[str, ...]
    points: int
    throughput: Interval | None
    dropped_repeats: int
    usd_per_gpu_hour: float | None
    usd_per_million_output: float | None
    note: str


def _curve(rows: Sequence[Any]) -> tuple[list[float], list[float]]:
    pairs = [(r.interactivity_p50, r.output_throughput_per_gpu) for r in rows if r.interactivity_p50]
    frontier = pareto_frontier(pairs) if pairs else []
    return [pairs[i][0] for i in frontier], [pairs[i][1] for i in frontier]


def compare_at_interactivity(
    rows: Sequence[Any], target: float, hardware: dict[str, Hardware], tier: str = "owning_hyperscaler"
) -> list[ComparisonRow]:
    """`rows` are result views (valid ones are used); one ComparisonRow per recipe fingerprint."""
    groups: dict[str, list[Any]] = defaultdict(list)
    for row in rows:
        if row.valid:
            groups[row.fingerprint].append(row)
    table = []
    for members in groups.values():
        first = members[0]
        by_repeat: dict[int, list[Any]] = defaultdict(list)
        for row in members:
            by_repeat[row.repeat_index].append(row)
        read = interval_of_interpolated([_curve(repeat) for repeat in by_repeat.values()], target)
        spec = hardware.get(first.hardware)
        price = spec.tco(tier) if spec is not None else None
        mean = read.interval.mean if read.interval is not None else None
        cost = cost_per_million_tokens(price, mean) if price and mean else None
        note = "; ".join(read.reasons) if read.reasons else ""
        if price is None:
            note = (note + "; " if note else "") + f"no {tier} TCO for {first.hardware}"
        table.append(
            ComparisonRow(
                recipe=first.recipe,
                hardware=first.hardware,
                engine=first.engine,
                origins=tuple(sorted({row.origin for row in members})),
                points=len(members),
                throughput=read.interval,
                dropped_repeats=read.dropped,
                usd_per_gpu_hour=price,
                usd_per_million_output=cost,
                note=note,
            )
        )
    table.sort(key=lambda row: -(row.throughput.mean if row.throughput else -1))
    return table
