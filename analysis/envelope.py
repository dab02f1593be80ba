"""Each chip's envelope: what a chip serves at a target speed per user, over all its configurations.

A chip serves a target interactivity T (tok/s/user) with whichever of its configurations does best at T or
faster. So a chip is read along its *envelope* (InferenceX calls it the roofline): the Pareto frontier of
(interactivity p50, output tok/s/GPU) over every valid point of every configuration of the chip in the rows
given (one model, precision and workload; the selected runs). Reading configurations one at a time and
dropping those whose own range misses T named b200 cheapest for DeepSeek-R1 FP4 8k/1k at 50 tok/s/user on the
real InferenceX files, where GB200 NVL72's disaggregated configurations serve 54-60 tok/s/user for a quarter of
the cost (docs/METRICS.md, "A chip's envelope").

The read at T:

- inside the envelope's range: the monotone cubic (`interpolate.py`) through the envelope's points, which may
  bracket T with two configurations: both are named (`rests_on`);
- below the envelope's slowest point: the slowest point itself, which serves T faster than asked (`read_at`
  says where it was measured); a chip that is measured only at higher speeds still serves the slower target;
- above its fastest point: nothing. Nothing is extrapolated.

The envelope is non-increasing in T, so a cost read from it never falls as the target speed rises.

Repeats: when every configuration of the chip measured the same repeats (0..R-1), repeat r's envelope is drawn
from every configuration's repeat r and the R reads give the mean and a 95 % interval; otherwise each
configuration's points are the means of its repeats at each concurrency, one curve, no interval (the note
says so). Runs: the configurations a read rests on are read in every run (sweep) of `history` that measured
them; their spread (min-max of output tok/s/GPU) and count go with the read.

Rows are result views or DataFrame tuples (only attributes are read). Pure Python + numpy.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from analysis.compare import workload_of
from analysis.interpolate import pchip_at, pchip_evaluate
from analysis.intervals import Interval, mean_interval
from analysis.pareto import pareto_frontier

RowValue = Callable[[Any], float]


def _placeable(row: Any) -> bool:
    value = getattr(row, "interactivity_p50", None)
    return value is not None and isinstance(value, int | float) and math.isfinite(value) and value > 0


def configuration_label(row: Any) -> str:
    """A configuration's readable name: the hub's `configuration` column, else the recipe name."""
    label = getattr(row, "configuration", None)
    if isinstance(label, str) and label:
        return label
    return str(row.recipe)


def _configuration_key(row: Any) -> tuple[str, str]:
    return (str(row.fingerprint), str(row.sweep))


@dataclass(frozen=True)
class EnvelopeValue:
    """One curve of the envelope read at the target: the value, where it was read, the rows it rests on."""

    value: float
    read_at: float  # the interactivity the value stands at: the target, or the slowest point when T lies below
    rests_on: tuple[Any, ...]  # the envelope rows the read stands on: one (measured point) or two (between)


def envelope(rows: Sequence[Any]) -> list[Any]:
    """The rows on the (interactivity p50, output tok/s/GPU) Pareto frontier of `rows`, by interactivity."""
    placed = [row for row in rows if _placeable(row)]
    points = [(float(row.interactivity_p50), float(row.output_throughput_per_gpu)) for row in placed]
    return [placed[i] for i in pareto_frontier(points)]


def read_envelope(frontier: Sequence[Any], target: float, value: RowValue) -> EnvelopeValue | None:
    """`value` along `frontier` (from `envelope`) at `target` tok/s/user; None above its fastest point."""
    if not frontier or not math.isfinite(target):
        return None
    xs = [float(row.interactivity_p50) for row in frontier]
    if target > xs[-1]:
        return None
    if target <= xs[0]:
        return EnvelopeValue(value(frontier[0]), xs[0], (frontier[0],))
    right = bisect_left(xs, target)  # the first point at the target or faster
    if xs[right] == target:
        return EnvelopeValue(value(frontier[right]), target, (frontier[right],))
    read = pchip_at(xs, [value(row) for row in frontier], target)
    return EnvelopeValue(read, target, (frontier[right - 1], frontier[right]))


def _mean_rows(rows: Sequence[Any]) -> list[Any]:
    """Each configuration's points as the mean of its repeats at each concurrency (one curve per configuration)."""
    groups: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
    for row in rows:
        if _placeable(row):
            groups[(*_configuration_key(row), row.concurrency)].append(row)
    means = []
    for members in groups.values():
        first = members[0]
        fields = {
            name: getattr(first, name, None)
            for name in (
                "fingerprint",
                "sweep",
                "recipe",
                "configuration",
                "hardware",
                "engine",
                "origin",
                "concurrency",
            )
        }
        for name in ("interactivity_p50", "output_throughput_per_gpu", "total_token_throughput_per_gpu"):
            fields[name] = sum(float(getattr(row, name)) for row in members) / len(members)
        hits = [getattr(row, "realized_hit_rate", None) for row in members]
        finite = [float(h) for h in hits if isinstance(h, int | float) and math.isfinite(h)]
        fields["realized_hit_rate"] = sum(finite) / len(finite) if len(finite) == len(hits) else None
        fields["repeat_index"] = 0
        means.append(SimpleNamespace(**fields))
    return means


def repeat_samples(rows: Sequence[Any]) -> tuple[list[list[Any]], str]:
    """The envelope's curves, one per repeat where every configuration measured the same repeats, else one curve
    of repeat means; with a note when the repeats could not be paired."""
    repeats_of: dict[tuple[str, str], set[int]] = defaultdict(set)
    for row in rows:
        repeats_of[_configuration_key(row)].add(int(row.repeat_index))
    sets = {frozenset(indices) for indices in repeats_of.values()}
    if len(sets) == 1:
        indices = sorted(next(iter(sets)))
        if len(indices) == 1:
            return [list(rows)], ""
        return [[row for row in rows if int(row.repeat_index) == index] for index in indices], ""
    return [_mean_rows(rows)], "configurations measured different repeats: one curve of repeat means, no interval"


@dataclass(frozen=True)
class EnvelopeRead:
    """A chip's envelope read at one target: values with intervals, and what the read rests on."""

    target: float
    output: Interval | None
    total: Interval | None
    input: Interval | None
    cache_hit: float
    cache_hit_measured: bool
    read_at: float | None  # where the value stands (the target, or the slowest point when served faster)
    rests_on: tuple[Any, ...]  # rows (of the first curve) the read stands on
    configurations: int  # configurations (fingerprint and sweep) in the envelope
    reason: str  # why there is no value, or notes

    @property
    def served_faster(self) -> bool:
        return self.read_at is not None and self.read_at > self.target


def output_of(row: Any) -> float:
    """Output tok/s/GPU of a row: the envelope's y axis."""
    return float(row.output_throughput_per_gpu)


def total_of(row: Any) -> float:
    return float(row.total_token_throughput_per_gpu)


def input_of(row: Any) -> float:
    """The warehouse stores output and total throughput; input is their difference (as on the hub)."""
    return float(row.total_token_throughput_per_gpu) - float(row.output_throughput_per_gpu)


def hit_of(row: Any) -> float:
    return float(row.realized_hit_rate)


def _hit_measured(row: Any) -> bool:
    value = getattr(row, "realized_hit_rate", None)
    return isinstance(value, int | float) and math.isfinite(value)


def _interval(values: Sequence[float]) -> Interval | None:
    return mean_interval(values) if values else None


def best_curve(rows: Sequence[Any], target: float) -> list[Any]:
    """The curve a chip's read at `target` stands on: the envelope of its points, or one configuration's own
    frontier where that reads higher at `target`.

    The envelope of *points* is not the envelope of the configurations' *curves*: between two envelope points of
    different configurations, a third configuration's own curve (between its points on either side of the target)
    can pass above the line through them. On the real InferenceX files GB200 NVL72's DeepSeek-R1 FP8 1k/1k read
    $1.56/M at 50 tok/s/user along the point envelope, while one of its configurations' own curve read $1.19/M
    there. So every configuration's own frontier is read too, and the highest read wins: still non-increasing in
    the target (a maximum of non-increasing curves), so a cost never falls as the speed rises."""
    return _best_of(_candidates(rows), target)


def _candidates(rows: Sequence[Any]) -> list[list[Any]]:
    """The curves a chip's read may stand on: the envelope of its points, then each configuration's own frontier."""
    candidates = [envelope(rows)]
    by_configuration: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for row in rows:
        by_configuration[_configuration_key(row)].append(row)
    if len(by_configuration) > 1:
        candidates += [envelope(members) for members in by_configuration.values()]
    return candidates


def _best_of(candidates: list[list[Any]], target: float) -> list[Any]:
    best: list[Any] = []
    best_value = -math.inf
    for frontier in candidates:
        read = read_envelope(frontier, target, output_of)
        if read is not None and read.value > best_value:
            best, best_value = frontier, read.value
    return best or candidates[0]


ENVELOPE_SAMPLES = 64  # points of a drawn envelope: the chart's monotone line through them stays within 0.5 % of it


def envelope_curve(rows: Sequence[Any], samples: int = ENVELOPE_SAMPLES) -> list[tuple[float, float]]:
    """(interactivity, output tok/s/GPU) along the curve `read_chip` reads, from the chip's slowest envelope point to
    its fastest: at each speed the highest read of the envelope of points and of each configuration's own curve (as
    `best_curve` picks), so a chart drawn through it shows exactly what the Overview reads at any tier. Each curve's
    monotone cubic is evaluated at every speed at once (`read_envelope`'s rule: below its slowest point, that point;
    above its fastest, nothing)."""
    candidates = [frontier for frontier in _candidates(rows) if frontier]  # once for every speed of the line
    if not candidates:
        return []
    frontier = candidates[0]
    low, high = float(frontier[0].interactivity_p50), float(frontier[-1].interactivity_p50)
    if len(frontier) == 1 or high <= low:
        return [(low, output_of(frontier[0]))]
    # Every measured speed of the envelope, and an even grid between: the line passes through each point it rests on.
    grid = np.array(sorted({*(float(row.interactivity_p50) for row in frontier),
                            *np.linspace(low, high, samples).tolist()}))  # fmt: skip
    best = np.full(grid.shape, -np.inf)
    for curve in candidates:
        xs = np.array([float(row.interactivity_p50) for row in curve])
        ys = np.array([output_of(row) for row in curve])
        values = np.full(grid.shape, -np.inf)
        values[grid <= xs[0]] = ys[0]
        inside = (grid > xs[0]) & (grid <= xs[-1])
        if inside.any() and len(xs) > 1:
            values[inside] = pchip_evaluate(xs, ys, grid[inside])
        best = np.maximum(best, values)
    return [(float(speed), float(value)) for speed, value in zip(grid, best, strict=True) if np.isfinite(value)]


def read_chip(rows: Sequence[Any], target: float) -> EnvelopeRead:
    """The envelope of `rows` (valid rows of one chip's configurations) read at `target` tok/s/user."""
    samples, note = repeat_samples(rows)
    frontiers = [best_curve(sample, target) for sample in samples]
    frontiers = [frontier for frontier in frontiers if frontier]
    configurations = len({_configuration_key(row) for row in rows})
    if not frontiers:
        return EnvelopeRead(target, None, None, None, 0.0, False, None, (), configurations,
                            "no point with a measured interactivity")  # fmt: skip
    outputs = [read_envelope(frontier, target, output_of) for frontier in frontiers]
    if any(read is None for read in outputs):
        fastest = max(float(frontier[-1].interactivity_p50) for frontier in frontiers)
        return EnvelopeRead(target, None, None, None, 0.0, False, None, (), configurations,
                            f"target {target:g} tok/s/user is faster than every configuration measured "
                            f"(fastest {fastest:.3g}); not extrapolated")  # fmt: skip
    reads = [read for read in outputs if read is not None]
    totals = [read_envelope(frontier, target, total_of) for frontier in frontiers]
    inputs = [read_envelope(frontier, target, input_of) for frontier in frontiers]
    hit, hit_measured = 0.0, False
    if all(_hit_measured(row) for frontier in frontiers for row in frontier):
        hits = [read_envelope(frontier, target, hit_of) for frontier in frontiers]
        hit = min(max(sum(h.value for h in hits if h) / len(hits), 0.0), 1.0)
        hit_measured = True
    read_at = sum(read.read_at for read in reads) / len(reads)
    notes = [note]
    if read_at > target:
        notes.append(f"served faster than asked: the slowest point on the envelope is at {read_at:.3g} tok/s/user")
    return EnvelopeRead(
        target=target,
        output=_interval([read.value for read in reads]),
        total=_interval([read.value for read in totals if read]),
        input=_interval([read.value for read in inputs if read]),
        cache_hit=hit,
        cache_hit_measured=hit_measured,
        read_at=read_at,
        rests_on=reads[0].rests_on,
        configurations=configurations,
        reason="; ".join(part for part in notes if part),
    )


@dataclass(frozen=True)
class RunSpread:
    """The configurations a read rests on, read in each run that measured them: how much runs disagree."""

    runs: int  # runs whose own rows of those configurations read a figure at the target
    low: float | None  # lowest output tok/s/GPU of a run at the target; None when no run could be read
    high: float | None


def run_spread(history: Iterable[Any], rests_on: Sequence[Any], target: float) -> RunSpread:
    """Output tok/s/GPU at `target` of the configurations `rests_on` names, in every run (sweep) of `history`.

    A run that measured them but not around the target reads nothing and is not counted: on the public corpus MI355X
    DeepSeek-R1 FP4 1k/1k at 100 tok/s/user rests on an SGLang configuration of one run and an ATOM one of another,
    and only the ATOM run reaches 100 alone ("3 runs" with one figure was shown)."""
    fingerprints = {str(row.fingerprint) for row in rests_on}
    workloads = {workload_of(row) for row in rests_on}
    by_run: dict[str, list[Any]] = defaultdict(list)
    for row in history:
        if row.valid and str(row.fingerprint) in fingerprints and workload_of(row) in workloads:
            by_run[str(row.sweep)].append(row)
    values = [value for members in by_run.values() if (value := output_at(members, target)) is not None]
    if not values:
        return RunSpread(0, None, None)
    return RunSpread(len(values), min(values), max(values))


def output_at(rows: Sequence[Any], target: float) -> float | None:
    """`read_chip(rows, target)`'s output tok/s/GPU (the mean over repeats), and nothing else of the read: a run's
    figure in `run_spread`, made once per run of every configuration a read rests on (17,000 times at 100k results).
    Each repeat's read is the highest of its candidate curves (`best_curve`); a repeat with no placed point is left
    out, as `read_chip` leaves it; None when a repeat reads nothing at the target."""
    values = []
    for sample in repeat_samples(rows)[0]:
        candidates = _candidates(sample)
        if not candidates[0]:
            continue
        reads = [read.value for frontier in candidates if (read := read_envelope(frontier, target, output_of))]
        if not reads:
            return None
        values.append(max(reads))
    if not values:
        return None
    return values[0] if len(values) == 1 else float(np.asarray(values, dtype=float).mean())


def by_configuration(rows: Iterable[Any]) -> dict[str, list[Any]]:
    """Result rows by their configuration's fingerprint, in their order: the runs `run_spread` may count for the
    configurations a read rests on."""
    grouped: dict[str, list[Any]] = {}
    for row in rows:
        grouped.setdefault(str(row.fingerprint), []).append(row)
    return grouped


def chip_groups(rows: Iterable[Any], key: Callable[[Any], Hashable]) -> dict[Hashable, list[Any]]:
    """The valid rows of each chip group (`key` of a row), in order of first appearance."""
    groups: dict[Hashable, list[Any]] = defaultdict(list)
    for row in rows:
        if row.valid:
            groups[key(row)].append(row)
    return dict(groups)


__all__ = [
    "EnvelopeRead",
    "EnvelopeValue",
    "RunSpread",
    "best_curve",
    "by_configuration",
    "chip_groups",
    "configuration_label",
    "envelope",
    "envelope_curve",
    "hit_of",
    "input_of",
    "output_at",
    "output_of",
    "read_chip",
    "read_envelope",
    "repeat_samples",
    "run_spread",
    "total_of",
]
