"""Trends: each configuration's figure at one interactivity, sweep after sweep, and regressions flagged.

A configuration is a recipe fingerprint; its history is the sweeps that measured it, in time order
(by when each sweep's last point of it finished). Each sweep's value is read off that sweep's frontier
at the target interactivity exactly as a comparison reads it (`compare.repeat_frontiers` and
`compare.read_frontiers`): every repeat's frontier is read with monotone interpolation (never
extrapolated) and the reads give a mean with its 95 % interval.
The latest sweep's mean is compared with the earlier sweeps' means by `regression.detect_regression`
(prediction interval plus a minimum relative drop), so a nightly run can fail loudly when a
configuration got slower. Sweeps whose range does not reach the target are kept in the history with
no value (and the reason), and are left out of the verdict.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from analysis.compare import read_frontiers, repeat_frontiers, workload_of
from analysis.intervals import InterpolatedInterval
from analysis.recency import DATED, order_known, sweep_keys
from analysis.regression import RegressionResult, detect_regression


@dataclass(frozen=True)
class SweepRead:
    """One sweep of a configuration read at the target: its mean over repeats and the interval."""

    sweep: str
    finished_at: Any  # when the sweep's last point of this configuration finished (a datetime)
    read: InterpolatedInterval
    dated: bool = True  # False: its source stated no date, finished_at is the import's (show 'date unknown')

    @property
    def value(self) -> float | None:
        return self.read.interval.mean if self.read.interval is not None else None


@dataclass(frozen=True)
class Trend:
    recipe: str
    hardware: str
    points: tuple[tuple[str, float | None], ...]  # (sweep, throughput at the target) in time order
    verdict: RegressionResult | None  # None when fewer than two sweeps could be read
    fingerprint: str = ""
    reads: tuple[SweepRead, ...] = ()  # the same sweeps with their times and intervals
    workload: str = ""  # one recipe measures one trend per workload
    order_unknown: bool = False  # a sweep with neither a date nor a run id: listed, left out of the verdict

    @property
    def regressed(self) -> bool:
        return self.verdict is not None and self.verdict.regressed


def read_sweep(rows: Sequence[Any], target: float) -> InterpolatedInterval:
    """One sweep's rows of one configuration, read at `target`: one frontier per repeat, then the interval."""
    return read_frontiers(repeat_frontiers(rows), target)


def trends_at(rows: Sequence[Any], target: float, min_relative_drop: float = 0.05) -> list[Trend]:
    """`rows` are result views with sweep, fingerprint and finished_at; valid ones are used.

    One Trend per fingerprint, in the order of their first row; its verdict compares the latest sweep
    (when it could be read at `target`) with every earlier sweep that could.
    """
    groups: dict[tuple[str, str], dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if row.valid:
            groups[(row.fingerprint, workload_of(row))][row.sweep].append(row)  # a configuration: compare.py
    trends = []
    for (fingerprint, workload), sweeps in groups.items():
        keys = sweep_keys(row for members in sweeps.values() for row in members)
        by_order = sorted(sweeps.items(), key=lambda item: keys[(fingerprint, item[0])])
        reads = tuple(
            SweepRead(
                sweep=name, finished_at=max(r.finished_at for r in members), read=read_sweep(members, target),
                dated=keys[(fingerprint, name)][0] == DATED,
            )
            for name, members in by_order
        )  # fmt: skip
        # A sweep of unknown order (neither a date nor a run id) may be older or newer than any other: it stays in
        # the history, listed first, and out of the verdict, which compares the newest ordered sweep with the rest.
        ordered = [read for read in reads if order_known(keys[(fingerprint, read.sweep)])]
        unordered = len(sweeps) > 1 and len(ordered) < len(reads)
        values = [read.value for read in ordered if read.value is not None]
        verdict = None
        if len(values) >= 2 and ordered[-1].value is not None:
            verdict = detect_regression(values[:-1], values[-1], min_relative_drop=min_relative_drop)
        first = next(iter(sweeps.values()))[0]
        trends.append(
            Trend(
                recipe=first.recipe,
                hardware=first.hardware,
                points=tuple((read.sweep, read.value) for read in reads),
                verdict=verdict,
                fingerprint=fingerprint,
                reads=reads,
                workload=workload,
                order_unknown=unordered,
            )
        )
    return trends
