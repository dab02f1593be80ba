"""The backtest: every chip's measured curve projected to every other chip that measured the same curve key and
configuration family, compared with that chip's measurement at the interactivity levels both frontiers reach, next
to the plain roofline and the unchanged-curve baseline; and the overhead the model fits per chip and family, where
it misses. The target's points are read only to compare, never to fit (analysis.projection states
the models; docs/BENCHMARKS.md, "Projection backtest", the figures on the public InferenceX corpora)."""

from __future__ import annotations

import math
import re
import statistics
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from analysis.curves import (
    SPARSE_GAP,
    Curve,
    CurveKey,
    CurvePoint,
    gap_at,
    image_curves_of,
    is_disaggregated_curve,
    read_at,
)
from analysis.projection import (
    ProjectedPoint,
    ProjectionError,
    StepShape,
    chip_rates,
    fit_overhead_roofline,
    flops_ratio,
    project_between,
)
from recipes.hardware import Hardware
from recipes.model_registry import RegistryModelSpec

DEFAULT_LEVELS = (30.0, 50.0, 100.0)


@dataclass(frozen=True)
class FittedOverhead:
    """The overhead the model fits on one chip's curves of one family (model, precision, engine): the part of a
    step it keeps as measured when it projects from that chip."""

    family: str
    hardware: str
    median_ms: float
    low_ms: float
    high_ms: float
    fits: int


def fitted_overheads(
    rows: Iterable[Any], models: Mapping[str, RegistryModelSpec], min_points: int = 4
) -> list[FittedOverhead]:  # fmt: skip
    """`OverheadRoofline.overhead_s` per chip and family over every configuration of `min_points` or more points
    (three coefficients: a fourth point tests the fit), by family and chip. Chips whose overheads differ are where
    a projection that keeps the source's overhead misses (docs/BENCHMARKS.md, "Projection backtest")."""
    found: dict[tuple[str, str], list[float]] = defaultdict(list)
    for key, chips in image_curves_of(rows).items():
        model = models.get(key.model)
        if model is None:
            continue
        spec = f" · {key.speculative}" if key.speculative else ""
        for chip, curves in chips.items():
            for curve in curves:
                for overhead_s in configuration_overheads(curve, model, min_points).values():
                    found[(f"{key.model} {key.precision} · {key.engine}{spec}", chip)].append(overhead_s * 1000)
    return [
        FittedOverhead(family, chip, statistics.median(values), min(values), max(values), len(values))
        for (family, chip), values in sorted(found.items())
    ]


def configuration_overheads(curve: Curve, model: RegistryModelSpec, min_points: int = 1) -> dict[str, float]:
    """`OverheadRoofline.overhead_s` fitted on each single-server configuration of `curve` with `min_points` or
    more points, by configuration."""
    found: dict[str, float] = {}
    for name, gpus in curve.gpus.items():
        points = [p for p in curve.points if p.configuration == name and p.split is None]
        shape = StepShape.of(model, curve.key.precision, curve.isl, curve.osl, gpus, name)
        if shape is None or len(points) < min_points:
            continue
        fit = fit_overhead_roofline([p.concurrency for p in points], [1 / p.interactivity for p in points], shape)
        found[name] = fit.overhead_s
    return found


@dataclass(frozen=True)
class StepChange:
    """Model-free: how a target chip's step (1 / interactivity: the time between one user's tokens) compares with a
    source chip's on one configuration under one engine release, beside the datasheet ratios. `floor`: the step at
    few users, mostly what a step costs whatever its batch; `growth`: what the step gains from few to many users,
    the traffic and arithmetic the batch adds. Each as source over target (above 1: the target is faster)."""

    curve: CurveKey
    release: str  # the engine release both ran (`engine_release`)
    configuration: str
    source: str
    target: str
    floor: float
    growth: float
    bandwidth: float
    compute: float | None


def step_changes(
    rows: Iterable[Any], registry: dict[str, Hardware], low: int = 4, high: int = 64
) -> list[StepChange]:  # fmt: skip
    """Every same-vendor pair of chips (source: the one of less bandwidth) that measured one configuration under one
    engine release (`_release_of`) at both `low` and `high` users, single-server deployments only."""
    out: list[StepChange] = []
    for key, by_chip in image_curves_of(rows).items():
        steps: dict[tuple[str, str, str], dict[int, float]] = defaultdict(dict)  # (chip, release, configuration)
        for chip, curves in by_chip.items():
            for curve in curves:
                release = _release_of(curve)
                for point in curve.points:
                    if point.split is None and point.concurrency in (low, high):
                        steps[(chip, release, point.configuration)][point.concurrency] = 1.0 / point.interactivity
        for (source, release, configuration), before in sorted(steps.items()):
            for (target, other_release, other_configuration), after in sorted(steps.items()):
                chips = registry.get(source), registry.get(target)
                if chips[0] is None or chips[1] is None or source == target or (release, configuration) != (
                    other_release, other_configuration
                ) or chips[0].vendor != chips[1].vendor or len(before) < 2 or len(after) < 2:  # fmt: skip
                    continue
                try:
                    rates = chip_rates(chips[0], key.precision), chip_rates(chips[1], key.precision)
                except ProjectionError:
                    continue  # no figure to set beside the change
                bandwidth = rates[1].bandwidth_tbps.value / rates[0].bandwidth_tbps.value
                if bandwidth < 1.0 or (bandwidth == 1.0 and source > target):
                    continue  # one direction: from the chip of less bandwidth
                try:
                    compute: float | None = flops_ratio(*rates).value
                except ProjectionError:
                    compute = None
                growth_before, growth_after = before[high] - before[low], after[high] - after[low]
                if growth_after <= 0 or growth_before <= 0:
                    continue  # a step that does not grow with users has no growth to compare
                out.append(StepChange(
                    key, release, configuration, source, target, before[low] / after[low],
                    growth_before / growth_after, bandwidth, compute,
                ))  # fmt: skip
    return out


@dataclass(frozen=True)
class BacktestRow:
    curve: CurveKey
    source: str
    target: str
    level: float
    projected: float
    measured: float
    images_differ: bool
    same_vendor: bool
    scale_up_differs: bool
    # The images differ only by their per-architecture build suffix (`-mi30x` / `-mi35x`): one engine release.
    one_release: bool = False
    # A curve names no image (the dashboard's history rows): neither the same image nor a known difference.
    images_unknown: bool = False
    # The no-model baseline: the source chip's own measured frontier at the level, as if the chips were equal.
    unchanged: float | None = None
    # The plain roofline's projection (no model facts, no overhead), for comparison.
    plain: float | None = None
    # The variant whose overhead follows FLOP/s too (`TargetOverhead` 'follows-compute'), for comparison.
    overhead_on_compute: float | None = None
    # A diagnostic, no projection: the model with the target's own fitted overhead (`target_overhead_s`); what is
    # left of the error is what no per-step overhead explains.
    target_overhead: float | None = None
    model_version: str = ""
    # Disaggregated deployments (`DisaggRoofline`): frontiers over every split, reported apart.
    disaggregated: bool = False
    # The projected or the measured frontier is read between points more than SPARSE_GAP x apart (`gap_at`).
    sparse: bool = False

    def _error(self, value: float | None) -> float | None:
        return None if value is None else 100.0 * (value - self.measured) / self.measured

    @property
    def same_image(self) -> bool:
        """Both chips ran one image, as both curves name it (an unknown image is no evidence of it)."""
        return not (self.images_differ or self.images_unknown)

    @property
    def error_pct(self) -> float:
        return 100.0 * (self.projected - self.measured) / self.measured

    @property
    def unchanged_error_pct(self) -> float | None:
        return self._error(self.unchanged)

    @property
    def plain_error_pct(self) -> float | None:
        return self._error(self.plain)

    @property
    def overhead_on_compute_error_pct(self) -> float | None:
        return self._error(self.overhead_on_compute)

    @property
    def target_overhead_error_pct(self) -> float | None:
        return self._error(self.target_overhead)


@dataclass
class Backtest:
    rows: list[BacktestRow]
    skipped: list[str]

    def _chosen(self, same_vendor: bool | None, disaggregated: bool | None = None) -> list[BacktestRow]:
        return [r for r in self.rows if (same_vendor is None or r.same_vendor == same_vendor)
                and (disaggregated is None or r.disaggregated == disaggregated)]  # fmt: skip

    def median_abs_error(
        self, same_vendor: bool | None = None, of: Literal["projection", "plain", "unchanged"] = "projection",
        disaggregated: bool | None = None,
    ) -> float | None:  # fmt: skip
        """Median |error| in %: of the projection, of the plain roofline, or of the unchanged-curve baseline."""
        attribute = {"projection": "error_pct", "plain": "plain_error_pct", "unchanged": "unchanged_error_pct"}[of]
        return median_abs(self._chosen(same_vendor, disaggregated), attribute)[0]

    def count(self, same_vendor: bool | None = None, disaggregated: bool | None = None) -> int:
        return len(self._chosen(same_vendor, disaggregated))

    def worst(self, same_vendor: bool | None = None, disaggregated: bool | None = None) -> BacktestRow | None:
        return max(self._chosen(same_vendor, disaggregated), key=lambda row: abs(row.error_pct), default=None)


@dataclass
class _Pair:
    key: CurveKey
    source: Hardware
    target: Hardware
    projected: list[CurvePoint]
    measured: list[CurvePoint]
    images_differ: bool
    one_release: bool
    images_unknown: bool
    source_points: list[CurvePoint]
    plain: list[CurvePoint]
    model_version: str
    overhead_on_compute: list[CurvePoint]
    target_overhead: list[CurvePoint]
    disaggregated: bool = False


# The family of every disaggregated point: no single-server configuration label reads so.
EVERY_SPLIT = "disaggregated (every split)"


def _family(point: CurvePoint) -> str:
    """What two chips must share to be compared: the parallelism of one server, or `EVERY_SPLIT` for every split
    of a disaggregated deployment (chips are tuned to different splits; their frontiers over all splits compare)."""
    return EVERY_SPLIT if point.split is not None else point.configuration


def _families(curve: Curve) -> set[str]:
    return {_family(p) for p in curve.points}


def _restricted(curve: Curve, families: set[str]) -> Curve:
    points = [p for p in curve.points if _family(p) in families]
    kept = {p.configuration for p in points}
    return replace(curve, points=points, gpus={name: n for name, n in curve.gpus.items() if name in kept})


# A per-architecture build suffix of an image tag: SGLang's ROCm images build one release for gfx942 (`-mi30x`:
# MI300X, MI325X) and gfx950 (`-mi35x`: MI355X); the ATOM images say `-MI350x`.
_ARCH_BUILD = re.compile(r"-mi\d{2,3}x$", re.IGNORECASE)


def engine_release(image: str) -> str:
    """The image without its per-architecture build suffix: what two chips share when they ran one release."""
    return _ARCH_BUILD.sub("", image)


def _release_of(curve: Curve) -> str:
    """The engine release a curve ran (`engine_release` of its image); where it names no image, the day of its run:
    runs of one day stand in for one release, in the backtest's pairs (`_chosen_curves`) and in `step_changes`."""
    if curve.images:
        return engine_release(min(curve.images))
    return f"run of {curve.newest.date().isoformat()}" if curve.newest is not None else ""


def _one_release(curve: Curve, other: Curve) -> bool:
    """Both curves' images are builds of one release for different architectures (the images still differ)."""
    return _images_differ(curve, other) and {engine_release(i) for i in curve.images} == {
        engine_release(i) for i in other.images
    }


def _same_image(curve: Curve, other: Curve) -> bool:
    return bool(curve.images) and curve.images == other.images


def _images_differ(curve: Curve, other: Curve) -> bool:
    return bool(curve.images and other.images and curve.images != other.images)


def _images_unknown(curve: Curve, other: Curve) -> bool:
    return not (curve.images and other.images)


def _days_apart(pair: tuple[Curve, Curve]) -> float:
    """How far apart in time the two curves' newest points are, in days (unknown: very far)."""
    source, target = pair
    if source.newest is None or target.newest is None:
        return math.inf
    return abs((source.newest - target.newest).total_seconds()) / 86400


def _older_of(pair: tuple[Curve, Curve]) -> float:
    """When the older of the two curves' newest points was measured (a timestamp; unknown: the earliest)."""
    dates = [curve.newest.timestamp() for curve in pair if curve.newest is not None]
    return min(dates) if len(dates) == 2 else -math.inf


def _chosen_curves(sources: list[Curve], targets: list[Curve]) -> list[tuple[Curve, Curve]]:
    """Which (source, target) curves of two chips to compare, restricted to the parallelisms both measured: every
    pair that ran the same image (where an image is unknown, every pair of runs of one day: rows naming no image
    are one curve per run), else the one pair with the most shared points, among equals the nearest in time and
    then the newest (an image difference or an unknown image, marked); single-server and disaggregated deployments
    each on their own."""
    candidates = []
    for source in sources:
        for target in targets:
            shared = _families(source) & _families(target)
            # Disaggregated and single-server deployments are compared apart (each on its own frontier).
            for kind in ({f for f in shared if f == EVERY_SPLIT}, {f for f in shared if f != EVERY_SPLIT}):
                if kind:
                    candidates.append((_restricted(source, kind), _restricted(target, kind)))
    chosen = []
    for disaggregated in (False, True):  # each kind: its same-image pairs, else its fullest pair
        of_kind = [pair for pair in candidates if is_disaggregated_curve(pair[0]) == disaggregated]
        same = [(source, target) for source, target in of_kind if _same_image(source, target)]
        # Where a curve names no image, runs measured within one day stand in for one image (an assumption: the
        # dashboard's history ran its chips on the same days, as one scheduled sweep would); one pair of them
        # would be as arbitrary as the day picked.
        same = same or [(a, b) for a, b in of_kind if _images_unknown(a, b) and _release_of(a) == _release_of(b)]
        if same:
            chosen += same
        elif of_kind:
            chosen.append(max(of_kind, key=lambda pair: (
                len(pair[0].points) + len(pair[1].points), -_days_apart(pair), _older_of(pair), sorted(pair[0].images),
                sorted(pair[1].images),
            )))  # fmt: skip
    return chosen


def _pairs(
    rows: Iterable[Any], registry: dict[str, Hardware], models: Mapping[str, RegistryModelSpec], skipped: list[str],
    with_diagnostics: bool, only_groups: Collection[str] | None = None,
) -> list[_Pair]:  # fmt: skip
    pairs: list[_Pair] = []
    for key, by_chip in image_curves_of(rows).items():
        for source_key, target_key in ((s, t) for s in by_chip for t in by_chip if s != t):
            source, target = registry.get(source_key), registry.get(target_key)
            if source is None or target is None:
                skipped.append(f"{key.label()}: {source_key} -> {target_key}: not in the hardware registry")
                continue
            # Like for like: only the parallelisms both chips measured (a configuration one chip never ran is a
            # difference of sampling, not of chips), and one image against the same image where both ran one.
            chosen = _chosen_curves(by_chip[source_key], by_chip[target_key])
            if not chosen:
                skipped.append(f"{key.label()}: {source_key} -> {target_key}: no parallelism measured on both")
            for curve, other in chosen:
                wanted = only_groups is None or group_of(source, target, is_disaggregated_curve(curve)) in only_groups
                if not wanted:
                    continue  # a projection nobody asked about (`how_wrong` needs one group)
                model = models.get(key.model)
                try:
                    projection = project_between(curve, source, target, model)
                    plain = project_between(curve, source, target, None)
                    variant: list[ProjectedPoint] = []
                    oracle: list[ProjectedPoint] = []
                    # Both diagnostics are of the overhead model: a disaggregated point has no overhead.
                    if with_diagnostics and model is not None and not is_disaggregated_curve(curve):
                        variant = project_between(
                            curve, source, target, model, target_overhead="follows-compute"
                        ).points
                        # Reads the target's curve (its fitted overheads): a diagnostic, never the projection.
                        oracle = project_between(
                            curve, source, target, model, target_overhead=configuration_overheads(other, model)
                        ).points
                except ProjectionError as error:
                    skipped.append(f"{key.label()}: {source_key} -> {target_key}: {error}")
                    continue
                pairs.append(_Pair(
                    key, source, target, [p.point for p in projection.points], other.points,
                    images_differ=_images_differ(curve, other), one_release=_one_release(curve, other),
                    images_unknown=_images_unknown(curve, other), source_points=curve.points,
                    plain=[p.point for p in plain.points], model_version=projection.model_version,
                    overhead_on_compute=[p.point for p in variant], target_overhead=[p.point for p in oracle],
                    disaggregated=is_disaggregated_curve(curve),
                ))  # fmt: skip
    return pairs


def backtest(
    rows: Iterable[Any], registry: dict[str, Hardware], models: Mapping[str, RegistryModelSpec],
    levels: Sequence[float] = DEFAULT_LEVELS, with_diagnostics: bool = False,
    only_groups: Collection[str] | None = None,
) -> Backtest:  # fmt: skip
    """Every ordered pair of chips on a shared curve key: the source's projection against the target's measurement
    at each level both reach. The target's points are read only to compare, never to fit the projection.
    `with_diagnostics` adds the benchmark's two diagnostics (the hub and the CLI do not show them): the overhead
    following FLOP/s, and the target's own fitted overhead (which reads the target: how much of a miss a per-step
    overhead explains). `only_groups` keeps the pairs of those groups (`group_of`) alone, projecting no other."""
    skipped: list[str] = []
    out: list[BacktestRow] = []
    for pair in _pairs(rows, registry, models, skipped, with_diagnostics, only_groups):
        for level in levels:
            projected = read_at(pair.projected, level)
            measured = read_at(pair.measured, level)
            if projected is None or measured is None:
                continue
            out.append(BacktestRow(
                pair.key, pair.source.key, pair.target.key, level, projected, measured, pair.images_differ,
                same_vendor=pair.source.vendor == pair.target.vendor,
                scale_up_differs=pair.source.scale_up_domain != pair.target.scale_up_domain,
                unchanged=read_at(pair.source_points, level), plain=read_at(pair.plain, level),
                model_version=pair.model_version, one_release=pair.one_release, images_unknown=pair.images_unknown,
                overhead_on_compute=read_at(pair.overhead_on_compute, level), disaggregated=pair.disaggregated,
                target_overhead=read_at(pair.target_overhead, level),
                sparse=max(gap_at(pair.projected, level), gap_at(pair.measured, level)) > SPARSE_GAP,
            ))  # fmt: skip
    return Backtest(out, skipped)


def median_abs(rows: Iterable[BacktestRow], attribute: str = "error_pct") -> tuple[float | None, int]:
    """Median |error| in % of `attribute` over the rows that have it, and how many do."""
    errors = [abs(value) for row in rows if (value := getattr(row, attribute)) is not None]
    return (statistics.median(errors) if errors else None), len(errors)


@dataclass(frozen=True)
class Medians:
    """One group's median |error| in % of the projection and of each peer, each with the rows it is over (a peer
    has no value where its curve does not reach the level); `dense` leaves sparse readings out."""

    rows: int
    projection: float | None
    plain: tuple[float | None, int]
    unchanged: tuple[float | None, int]
    overhead_on_compute: tuple[float | None, int]
    dense: tuple[float | None, int]
    target_overhead: tuple[float | None, int] = (None, 0)


def medians(members: Sequence[BacktestRow]) -> Medians:
    """What the CLI, the hub and the backtest benchmark report of a group: one computation for the three."""
    return Medians(
        len(members), median_abs(members)[0], median_abs(members, "plain_error_pct"),
        median_abs(members, "unchanged_error_pct"), median_abs(members, "overhead_on_compute_error_pct"),
        median_abs([row for row in members if not row.sparse]), median_abs(members, "target_overhead_error_pct"),
    )  # fmt: skip


def group_of(source: Hardware, target: Hardware, disaggregated: bool) -> str:
    """The narrowest group of `groups` a projection from `source` to `target` belongs to, whatever images it ran:
    the group whose backtest says how wrong projections like it have been."""
    same_vendor = source.vendor == target.vendor
    if disaggregated:
        return f"disaggregated, {'same' if same_vendor else 'cross'}-vendor"
    return f"same-vendor, {source.vendor}" if same_vendor else "cross-vendor"


def groups(rows: Iterable[BacktestRow], registry: dict[str, Hardware]) -> dict[str, list[BacktestRow]]:
    """The rows by the groups docs/BENCHMARKS.md reports, in name order: single-server same- and cross-vendor, same
    vendor by vendor (`group_of`), same image, per-architecture builds of one release; disaggregated ones apart."""
    grouped: dict[str, list[BacktestRow]] = defaultdict(list)
    for row in rows:
        grouped[group_of(registry[row.source], registry[row.target], row.disaggregated)].append(row)
        if row.disaggregated:  # reported apart: a model that fits nothing (DisaggRoofline)
            if row.same_vendor and row.same_image:
                grouped["disaggregated, same-vendor, same image"].append(row)
            continue
        if row.same_vendor:
            grouped["same-vendor"].append(row)
            if row.same_image:
                grouped["same-vendor, same image"].append(row)
            elif row.one_release:
                grouped["same-vendor, per-arch builds of one release"].append(row)
    return dict(sorted(grouped.items()))


def how_wrong(
    result: Backtest, registry: dict[str, Hardware], source: str, target: str, disaggregated: bool
) -> tuple[str, Medians | None]:  # fmt: skip
    """The group a projection from `source` to `target` belongs to and its backtest medians in `result` (None
    where the backtest holds no row of that group): shown beside every projection."""
    name = group_of(registry[source], registry[target], disaggregated)
    members = groups(result.rows, registry).get(name)
    return name, medians(members) if members else None
