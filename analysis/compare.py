"""Cross-configuration comparison at a target interactivity: throughput with its interval, and cost.

Each configuration (recipe fingerprint) contributes one curve per repeat: its valid points'
(interactivity p50, output tok/s/GPU), reduced to the Pareto frontier. Each repeat's frontier is read
at the target with monotone interpolation (never extrapolated) and the reads give the mean and 95 %
interval. Cost per million output tokens is derived from the interpolated throughput (docs/ARCHITECTURE.md §7),
never splined itself.

The pieces are public so other reads share them (`economics.py` reads total and input throughput and
the cache-hit share along the same frontiers): `valid_groups` (valid rows per configuration),
`repeat_frontiers` (each repeat's frontier rows) and `read_frontiers` (any per-row value read along
those frontiers at the target, with its interval).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from analysis.comparability import basis_of, mixed_bases
from analysis.cost import cost_per_million_tokens
from analysis.intervals import InterpolatedInterval, Interval, interval_of_interpolated
from analysis.pareto import pareto_frontier
from recipes.hardware import Hardware

RowValue = Callable[[Any], float]


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
    fingerprint: str = ""
    sweep: str = ""  # the sweep read; all of them, comma-separated, when sweeps are pooled


def output_per_gpu(row: Any) -> float:
    """Output tok/s/GPU of a result row: the y axis of the published frontier."""
    return float(row.output_throughput_per_gpu)


def _placeable(value: Any) -> bool:
    """A usable interactivity: present, finite and positive (a DataFrame row carries NaN for 'missing')."""
    return value is not None and math.isfinite(value) and value > 0


def workload_of(row: Any) -> str:
    """The row's workload label: the hub's `workload` column when present, else 'agentic' or 'ISL/OSL'."""
    label = getattr(row, "workload", None)
    if isinstance(label, str) and label:
        return label
    if getattr(row, "workload_kind", "fixed-length") == "agentic-replay":
        return "agentic"
    return f"{getattr(row, 'isl', None)}/{getattr(row, 'osl', None)}"


def configuration_of(row: Any) -> tuple[Any, ...]:
    """A configuration: a recipe fingerprint at one workload. A recipe may measure several sequence lengths (and an
    imported InferenceX configuration has one fingerprint for all of them): each is a curve of its own, and pooling
    them put 1k/8k points on the 1k/1k frontier (found on the real InferenceX sample)."""
    return (row.fingerprint, workload_of(row))


def valid_groups(
    rows: Sequence[Any], key: Callable[[Any], tuple[Any, ...]] = configuration_of
) -> dict[tuple[Any, ...], list[Any]]:
    """The valid rows of each configuration (by default its fingerprint and workload), in order of first appearance."""
    groups: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
    for row in rows:
        if row.valid:
            groups[key(row)].append(row)
    return dict(groups)


def repeat_frontiers(rows: Sequence[Any]) -> list[list[Any]]:
    """Each repeat's rows on its (interactivity p50, output tok/s/GPU) Pareto frontier, by interactivity.

    A repeat with no placeable point (no interactivity measured) has no curve and is left out.
    """
    by_repeat: dict[int, list[Any]] = defaultdict(list)
    for row in rows:
        by_repeat[row.repeat_index].append(row)
    frontiers = []
    for members in by_repeat.values():
        placed = [row for row in members if _placeable(row.interactivity_p50)]
        if placed:
            points = [(row.interactivity_p50, output_per_gpu(row)) for row in placed]
            frontiers.append([placed[i] for i in pareto_frontier(points)])
    return frontiers


def read_frontiers(
    frontiers: Sequence[Sequence[Any]], target: float, value: RowValue = output_per_gpu
) -> InterpolatedInterval:
    """`value` of each frontier's rows read at `target` interactivity (monotone cubic), mean and 95 % interval.

    Repeats whose frontier does not reach the target are dropped and named, never extrapolated.
    """
    curves = [([row.interactivity_p50 for row in frontier], [value(row) for row in frontier]) for frontier in frontiers]
    return interval_of_interpolated(curves, target)


def configuration_and_sweep(row: Any) -> tuple[Any, ...]:
    return (row.fingerprint, workload_of(row), row.sweep)


def compare_at_interactivity(
    rows: Sequence[Any], target: float, hardware: dict[str, Hardware], tier: str = "owning_hyperscaler",
    per_sweep: bool = True,
) -> list[ComparisonRow]:  # fmt: skip
    """`rows` are result views (valid ones are used); one ComparisonRow per recipe fingerprint and sweep.

    Each sweep of a configuration is read on its own (`per_sweep`): its repeats are the curves behind the
    interval, and repeat 0 of two nightly sweeps is never one curve. `per_sweep=False` pools the sweeps."""
    table = []
    groups = valid_groups(rows, configuration_and_sweep if per_sweep else configuration_of)
    bases = {basis for members in groups.values() for basis in map(basis_of, members) if basis is not None}
    for key, members in groups.items():
        fingerprint = key[0]
        first = members[0]
        refused = mixed_bases(members)
        read = read_frontiers([] if refused else repeat_frontiers(members), target)
        spec = hardware.get(first.hardware)
        price = spec.tco(tier) if spec is not None else None
        mean = read.interval.mean if read.interval is not None else None
        cost = cost_per_million_tokens(price, mean) if price and mean else None
        note = f"not read: {refused}" if refused else "; ".join(read.reasons) if read.reasons else ""
        own = basis_of(first)
        if len(bases) > 1 and own is not None and not refused:
            note = (note + "; " if note else "") + f"replayed {own.label}; other rows here replay another"
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
                fingerprint=str(fingerprint),
                sweep=", ".join(sorted({str(row.sweep) for row in members})),
            )
        )
    table.sort(key=lambda row: -(row.throughput.mean if row.throughput else -1))
    return table
