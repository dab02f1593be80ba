"""Measured and imported results as Pareto curves a projection starts from and a backtest compares with: one
curve per (model, precision, engine, speculative decoding, workload), chip and engine image, its points the median
of repeats and runs of one configuration at one concurrency; and how such a curve's frontier is read at an
interactivity level (`read_at`), and how far apart its points are there (`gap_at`). The models that move a curve to
another chip are in `analysis.projection`."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from analysis.interpolate import interpolate_at
from analysis.pareto import pareto_frontier
from analysis.recency import as_utc
from db.reads import workload_label

# A backtest reading between frontier points more than this many times apart in interactivity or in throughput is
# marked sparse: InferenceX doubles concurrency from one point to the next, which moves neither by this much, so
# such a gap is missing points (the dashboard's rows keep 1-5 concurrencies of a configuration).
SPARSE_GAP = 2.0


@dataclass(frozen=True)
class DisaggSplit:
    """A disaggregated deployment's split (InferenceX's `num_prefill_gpu`, `num_decode_gpu`, decode workers)."""

    prefill_gpus: int
    decode_gpus: int
    decode_workers: int
    decode_dp_attention: bool

    @property
    def gpus_per_decode_worker(self) -> int:
        return max(1, self.decode_gpus // max(1, self.decode_workers))


@dataclass(frozen=True)
class CurvePoint:
    """One configuration at one concurrency: the curve's coordinates (medians over repeats and runs)."""

    configuration: str
    concurrency: int
    interactivity: float
    output_per_gpu: float
    total_per_gpu: float
    sources: tuple[str, ...] = ()
    split: DisaggSplit | None = None  # a disaggregated deployment's split; None for one server


def frontier(points: Iterable[CurvePoint]) -> list[CurvePoint]:
    """The curve's Pareto frontier (interactivity against output tokens/s per accelerator), by interactivity."""
    items = list(points)
    return [items[i] for i in pareto_frontier([(p.interactivity, p.output_per_gpu) for p in items])]


def read_at(points: Sequence[CurvePoint], level: float) -> float | None:
    """Output tokens/s per accelerator on the frontier at `level` tok/s/user; None outside the measured range."""
    line = frontier(points)
    if not line:
        return None
    if len(line) == 1:
        return line[0].output_per_gpu if line[0].interactivity == level else None
    return interpolate_at([p.interactivity for p in line], [p.output_per_gpu for p in line], level).value


def gap_at(points: Sequence[CurvePoint], level: float) -> float:
    """How far apart the frontier's points on either side of `level` are: the larger ratio of their interactivities
    and of their throughputs; 1 where a point sits at the level or none brackets it. A reading across a wide gap
    is the interpolation's guess: doubling concurrency, as InferenceX sweeps do, moves neither by 2x or more."""
    line = frontier(points)
    below = [p for p in line if p.interactivity < level]
    above = [p for p in line if p.interactivity > level]
    if any(p.interactivity == level for p in line) or not below or not above:
        return 1.0
    left = max(below, key=lambda p: p.interactivity)
    right = min(above, key=lambda p: p.interactivity)
    throughputs = sorted((left.output_per_gpu, right.output_per_gpu))
    throughput_gap = throughputs[1] / throughputs[0] if throughputs[0] > 0 else math.inf
    return max(right.interactivity / left.interactivity, throughput_gap)


# ------------------------------------------------------------------------------------------------- from results


@dataclass(frozen=True)
class CurveKey:
    """What two chips must share for their curves to be compared or projected one onto the other."""

    model: str
    precision: str
    engine: str
    workload: str
    # Speculative decoding ('mtp', ...), None when off: its steps emit several tokens per user, so a chip's MTP
    # points and its plain ones are two curves (InferenceX publishes both for one chip, image and parallelism).
    speculative: str | None = None

    def label(self) -> str:
        spec = f" · {self.speculative}" if self.speculative else ""
        return f"{self.model} {self.precision} · {self.engine}{spec} · {self.workload}"


@dataclass
class Curve:
    key: CurveKey
    hardware: str
    points: list[CurvePoint]
    images: set[str]
    isl: int
    osl: int
    gpus: dict[str, int]  # accelerators per configuration
    newest: datetime | None = None  # when its newest point measured


def _median(values: Iterable[float]) -> float:
    return statistics.median(list(values))


def _image_of(row: Any) -> str | None:
    """The row's engine image; None where it names none (a DataFrame's missing value is a float NaN, not None)."""
    image = getattr(row, "engine_image", None)
    return image if isinstance(image, str) and image else None


def is_disaggregated_curve(curve: Curve) -> bool:
    return any(point.split is not None for point in curve.points)


def _count(value: Any) -> int | None:
    """A positive count, whatever the reader holds it in (a DataFrame's are floats, its missing values NaN)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return int(value) if int(value) > 0 else None


def _is_disaggregated(row: Any) -> bool:
    """`ResultView.disaggregated`, whatever the reader holds it in (a DataFrame's is a numpy bool)."""
    flag = getattr(row, "disaggregated", False)
    return isinstance(flag, bool | np.bool_) and bool(flag)


def _split_of(row: Any) -> DisaggSplit | None:
    """A disaggregated row's split, where its configuration states one (InferenceX rows do)."""
    if not _is_disaggregated(row):
        return None
    decode_gpus, workers = _count(getattr(row, "decode_gpus", None)), _count(getattr(row, "decode_workers", None))
    prefill_gpus = _count(getattr(row, "prefill_gpus", None))
    if decode_gpus is None or workers is None or prefill_gpus is None:
        return None
    attention = getattr(row, "decode_dp_attention", None)  # a DataFrame's is a numpy bool, or NaN where unknown
    return DisaggSplit(prefill_gpus, decode_gpus, workers, isinstance(attention, bool | np.bool_) and bool(attention))


def _speculative_of(row: Any) -> str | None:
    """The row's speculative decoding method; None where off (or a DataFrame's missing value, a float NaN)."""
    method = getattr(row, "speculative_decoding", None)
    return method if isinstance(method, str) and method else None


# What identifies one configuration within one run: (run, chip, curve key, parallelism).
RunConfiguration = tuple[str, str, CurveKey, str]


def _images_by_run(rows: Sequence[Any]) -> dict[RunConfiguration, set[str]]:
    """The images each run names for each of its configurations."""
    found: dict[RunConfiguration, set[str]] = defaultdict(set)
    for row in rows:
        image = _image_of(row)
        if image is not None:
            found[(row.sweep, row.hardware, _key_of(row), row.parallelism)].add(image)
    return found


def _image_in_run(row: Any, by_run: dict[RunConfiguration, set[str]]) -> str | None:
    """The row's image; where it names none, the one image its run names for the same configuration on its other
    rows. The dashboard names the image in its latest results and not in its history, one run's rows in both (no
    run of the public InferenceX corpora holds one configuration under two images); a run that names two is left
    unknown."""
    image = _image_of(row)
    if image is not None:
        return image
    named = by_run.get((row.sweep, row.hardware, _key_of(row), row.parallelism), set())
    return next(iter(named)) if len(named) == 1 else None


def _generation_of(row: Any, by_run: dict[RunConfiguration, set[str]]) -> str:
    """The software a row ran: its engine image (`_image_in_run`), or where none is known its run (sweep). Rows
    naming no image can be of any release (the dashboard's history holds six months of runs of one configuration
    without images): pooled, a curve would be the median across releases."""
    image = _image_in_run(row, by_run)
    return image if image is not None else f"run {row.sweep}"


def _key_of(row: Any) -> CurveKey:
    # The workload's lengths alone: the speculative method is the key's own field (projected recipes are named by both).
    workload = workload_label(row.workload_kind, row.isl, row.osl)
    return CurveKey(row.model, row.precision, row.engine, workload, _speculative_of(row))


def _curves(rows: Iterable[Any]) -> dict[tuple[CurveKey, str, str], Curve]:
    """Valid fixed-length points with an interactivity as curves by (key, chip, software generation: the engine
    image, or one run where the rows name no image).

    A disaggregated deployment is kept where its split is known (`_split_of`; imported InferenceX rows), else left
    out. Repeats and runs of one configuration at one concurrency become their median."""
    grouped: dict[tuple[CurveKey, str, str, str, int], list[Any]] = defaultdict(list)
    kept = [
        row for row in rows
        if row.origin in {"measured", "imported"} and row.valid and row.workload_kind == "fixed-length"
        and row.interactivity_p50 and row.output_throughput_per_gpu
        and not (_is_disaggregated(row) and _split_of(row) is None)
    ]  # fmt: skip
    by_run = _images_by_run(kept)
    for row in kept:
        grouped[(_key_of(row), row.hardware, _generation_of(row, by_run), row.parallelism, row.concurrency)].append(row)
    curves: dict[tuple[CurveKey, str, str], Curve] = {}
    for (key, hardware, generation, parallelism, concurrency), members in sorted(
        grouped.items(), key=lambda item: str(item[0])
    ):
        first = members[0]
        image = _image_in_run(first, by_run)
        # Lengths as integers whatever the reader holds them in (a DataFrame's are floats).
        curve = curves.setdefault(
            (key, hardware, generation), Curve(key, hardware, [], set(), int(first.isl), int(first.osl), {})
        )
        curve.points.append(CurvePoint(
            parallelism, int(concurrency), _median(r.interactivity_p50 for r in members),
            _median(r.output_throughput_per_gpu for r in members),
            _median(r.total_token_throughput_per_gpu for r in members),
            tuple(sorted({r.point_key for r in members})), _split_of(first),
        ))  # fmt: skip
        if image is not None:
            curve.images.add(image)
        curve.gpus[parallelism] = int(first.accelerators)
        # Naive datetimes (SQLite's) are UTC, as everything is stored.
        dates = [as_utc(when) for r in members if (when := getattr(r, "finished_at", None)) is not None]
        curve.newest = max([*dates, *([curve.newest] if curve.newest else [])], default=None)
    return curves


# Points a curve needs for the overhead model's three coefficients (overhead, seconds per byte, per FLOP): fewer
# cannot tell the overhead from traffic.
FIT_POINTS = 3


def curves_of(rows: Iterable[Any]) -> dict[CurveKey, dict[str, Curve]]:
    """Measured and imported fixed-length results as curves, by (model, precision, engine, workload) and chip: each
    chip's newest software generation (`_generation_of`: the image, or the run, whose newest point is newest) of
    those with `FIT_POINTS` points or more (the newest of all where none has), never a median across releases.
    What `infersweep project` projects from."""
    curves: dict[CurveKey, dict[str, Curve]] = defaultdict(dict)
    for key, by_chip in image_curves_of(rows).items():
        for hardware, versions in by_chip.items():
            curves[key][hardware] = max(versions, key=lambda curve: (len(curve.points) >= FIT_POINTS, _recency(curve)))
    return curves


def _recency(curve: Curve) -> tuple[datetime, int, list[str]]:
    return curve.newest or datetime.min.replace(tzinfo=UTC), len(curve.points), sorted(curve.images)


def image_curves_of(rows: Iterable[Any]) -> dict[CurveKey, dict[str, list[Curve]]]:
    """As `curves_of`, one curve per software generation of each chip (`_generation_of`: its engine image, or one
    run where rows name none): the backtest compares one generation with one, never a median across releases."""
    curves: dict[CurveKey, dict[str, list[Curve]]] = defaultdict(lambda: defaultdict(list))
    for (key, hardware, _generation), curve in _curves(rows).items():
        curves[key][hardware].append(curve)
    return curves
