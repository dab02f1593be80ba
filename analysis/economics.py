"""What a configuration's tokens cost and earn at one interactivity: the reads behind the hub's money pages.

Every figure starts from one read: each configuration's throughput at a target interactivity
(tok/s/user), taken along each repeat's Pareto frontier with the monotone cubic of `interpolate.py`
(`compare.read_frontiers`), the mean of the repeats with a 95 % interval. Output, total and input
tok/s/GPU are read the same way, along the same frontier points (input = total − output per point).
A configuration whose measured range does not reach the target keeps its reason and gets no numbers:
dropped, never clamped or extrapolated (docs/ARCHITECTURE.md §7).

From the reads (cost.py's formulas):

- cost per million tokens = ($/GPU/hr) / (tok/s/GPU × 3600 / 10⁶), for output, total and input tokens,
  at a TCO tier of the hardware registry or a custom $/GPU-hr; the interval's ends give the error bar
  (the reciprocal is derived from the interpolated throughput, never splined);
- tokens per all-in MW = tok/s/GPU × 1000 / (all-in kW per GPU);
- profit per GPU-hour: revenue at the model's token prices (recipes/prices.yaml, found through the
  model registry's name → hub id, or custom prices), the measured cache-hit share (realized hit rate,
  read along the same frontier; 0 where not measured) applied to input prices, then utilisation,
  licence fee and TCO → revenue, cost, profit, margin (`cost.profit`);
- a scorecard: for each model × precision × workload row and hardware column, the configuration with
  the lowest $/M output tokens at each interactivity tier, and its change against a reference hardware
  in the same row (same model, workload and precision: the only comparable case).

Rows are result views (`db.reads.ResultView`) or DataFrame tuples of the hub (`itertuples`); only
their attributes are read. Pure Python + numpy.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from analysis import envelope
from analysis.compare import (
    configuration_and_sweep,
    configuration_of,
    read_frontiers,
    repeat_frontiers,
    valid_groups,
    workload_of,
)
from analysis.cost import (
    DEFAULT_LICENCE_FEE,
    CostPerMillion,
    Profit,
    ProfitInputs,
    TokenMix,
    TokenPrices,
    cost_band,
    cost_per_million_tokens,
    profit,
    tokens_per_all_in_mw,
)
from analysis.intervals import Interval
from recipes.hardware import TCO_TIER_LABELS, TCO_TIERS, Hardware
from recipes.model_registry import RegistryModel
from recipes.prices import ModelPrice
from recipes.validity import NOT_CHECKED, VALID, requests_known

INTERACTIVITY_TIERS: tuple[float, ...] = (30.0, 50.0, 100.0)  # tok/s/user: the scorecard's columns
DEFAULT_TIER = "owning_hyperscaler"
DEFAULT_UTILISATION = 0.6  # share of hours a GPU sells tokens; the profit pages' starting value
TokenKind = Literal["output", "total", "input"]
TOKEN_KINDS: tuple[TokenKind, ...] = ("output", "total", "input")


# --- reads ---------------------------------------------------------------------------------------


_output, _total, _input, _hit_rate = envelope.output_of, envelope.total_of, envelope.input_of, envelope.hit_of


def _measured(value: Any) -> bool:
    return value is not None and isinstance(value, int | float) and math.isfinite(value)


@dataclass(frozen=True)
class ConfigurationRead:
    """One configuration (one sweep of one recipe, by default) read at a target interactivity."""

    fingerprint: str
    sweeps: tuple[str, ...]
    recipe: str
    configuration: str  # readable label (the hub's `configuration` column, else the recipe name)
    hardware: str
    engine: str
    model: str
    precision: str
    workload: str
    origins: tuple[str, ...]
    sources: tuple[str, ...]  # where imported rows came from
    target: float
    output: Interval | None  # output tok/s/GPU; None when no repeat's range covers the target
    total: Interval | None
    input: Interval | None
    cache_hit: float  # realized prefix-cache hit share at the target; 0 when not measured
    cache_hit_measured: bool
    repeats_used: int
    repeats_dropped: int
    reason: str  # why there are no numbers, or which repeats were left out
    # A chip's envelope read (`read_chips`): the configurations the read stands on (one, or the two it lies
    # between), where the value stands (the target, or a faster point), the configurations in the envelope, and
    # the runs that measured the configurations it stands on with their spread of output tok/s/GPU at the target.
    rests_on: tuple[str, ...] = ()
    read_at: float | None = None
    configurations_in_envelope: int = 1
    origins_in_envelope: tuple[str, ...] = ()  # every origin among the envelope's configurations
    runs: int = 1
    run_spread: tuple[float, float] | None = None
    validity: str = "valid"  # 'not checked' when a row the read rests on counted no request (recipes/validity.py)
    # A projected chip's band: output tok/s/GPU at the target read along the envelopes of its low and high figure
    # edges (the central edge is `output`); None where no edge was projected.
    band: tuple[float, float] | None = None
    projected_from: tuple[str, ...] = ()  # the chips a projected read's rows were projected from
    disaggregated: bool = False  # a row the read rests on is a disaggregated deployment
    below_source: str = ""  # a projected read below its source chip's read in the same view: the source chip

    @property
    def served_faster(self) -> bool:
        """True when the chip serves the target with a point measured faster than it (below its slowest point)."""
        return self.read_at is not None and self.read_at > self.target

    @property
    def covered(self) -> bool:
        """True when at least one repeat's measured range covers the target (the read has numbers)."""
        return self.output is not None

    def throughput(self, kind: TokenKind) -> Interval | None:
        return {"output": self.output, "total": self.total, "input": self.input}[kind]


def _text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def read_configuration(members: Sequence[Any], target: float) -> ConfigurationRead:
    """Read one configuration's valid rows at `target` tok/s/user (see the module docstring)."""
    first = members[0]
    frontiers = repeat_frontiers(members)
    output = read_frontiers(frontiers, target, _output)
    reason = "; ".join(output.reasons)
    if not frontiers:
        reason = "no point with a measured interactivity"
    total = input_ = None
    hit, hit_measured = 0.0, False
    if output.interval is not None:
        total = read_frontiers(frontiers, target, _total).interval
        input_ = read_frontiers(frontiers, target, _input).interval
        # The hit share changes with load, so it is read at the target like throughput, along the repeats
        # whose every frontier point measured it; elsewhere (fixed-length workloads) it counts as 0.
        measured = [f for f in frontiers if all(_measured(getattr(row, "realized_hit_rate", None)) for row in f)]
        if measured:
            hits = read_frontiers(measured, target, _hit_rate).interval
            if hits is not None:
                hit, hit_measured = min(max(hits.mean, 0.0), 1.0), True
    return ConfigurationRead(
        fingerprint=str(first.fingerprint),
        sweeps=tuple(sorted({str(row.sweep) for row in members})),
        recipe=str(first.recipe),
        configuration=_text(getattr(first, "configuration", None)) or str(first.recipe),
        hardware=str(first.hardware),
        engine=str(first.engine),
        model=_text(getattr(first, "model", "")),
        precision=_text(getattr(first, "precision", "")),
        workload=workload_of(first),
        origins=tuple(sorted({str(row.origin) for row in members})),
        sources=tuple(sorted({_text(getattr(row, "source", None)) for row in members} - {""})),
        target=target,
        output=output.interval,
        total=total,
        input=input_,
        cache_hit=hit,
        cache_hit_measured=hit_measured,
        repeats_used=output.used,
        repeats_dropped=output.dropped,
        reason=reason,
    )


def read_configurations(rows: Iterable[Any], target: float, per_sweep: bool = True) -> list[ConfigurationRead]:
    """Every configuration's read at `target` tok/s/user, covered or not (valid rows only).

    `per_sweep` (default) reads each sweep of a recipe on its own, so repeat 0 of two nightly runs is
    never one curve; pass rows of the latest sweeps only to get one read per configuration. With
    `per_sweep=False` all sweeps of a fingerprint are pooled (so does `compare_at_interactivity` when asked).
    """
    groups = valid_groups(list(rows), configuration_and_sweep if per_sweep else configuration_of)
    return [read_configuration(members, target) for members in groups.values()]


def chip_key(item: Any) -> tuple[str, str, str, str]:
    """A chip is read for one model, precision and workload: (model, precision, workload, hardware), of a result row
    or of a read made from such rows (`ConfigurationRead`), alike: the one key of a chip on every page."""
    if isinstance(item, ConfigurationRead):
        return (item.model, item.precision, item.workload, item.hardware)
    return (_text(getattr(item, "model", "")), _text(getattr(item, "precision", "")), workload_of(item),
            str(item.hardware))  # fmt: skip


def read_chip_envelope(
    members: Sequence[Any], target: float, history: Sequence[Any] | None = None
) -> ConfigurationRead:
    """One chip's envelope (`envelope.read_chip`) at `target` as a read the cost and profit formulas take."""
    first = members[0]
    read = envelope.read_chip(members, target)
    rests = read.rests_on
    named = tuple(dict.fromkeys(envelope.configuration_label(row) for row in rests))
    spread = envelope.run_spread(history if history is not None else members, rests, target) if rests else None
    basis = rests or (first,)
    return ConfigurationRead(
        fingerprint=str(basis[0].fingerprint),
        sweeps=tuple(sorted({str(row.sweep) for row in basis})),
        recipe=str(basis[0].recipe),
        configuration=" ↔ ".join(named) if named else envelope.configuration_label(first),
        hardware=str(first.hardware),
        engine=", ".join(sorted({str(row.engine) for row in basis})),
        model=_text(getattr(first, "model", "")),
        precision=_text(getattr(first, "precision", "")),
        workload=workload_of(first),
        origins=tuple(sorted({str(row.origin) for row in basis})),
        sources=tuple(sorted({_text(getattr(row, "source", None)) for row in basis} - {""})),
        target=target,
        output=read.output,
        total=read.total,
        input=read.input,
        cache_hit=read.cache_hit,
        cache_hit_measured=read.cache_hit_measured,
        repeats_used=read.output.n if read.output is not None else 0,
        repeats_dropped=0,
        reason=read.reason,
        rests_on=named,
        read_at=read.read_at,
        configurations_in_envelope=read.configurations,
        origins_in_envelope=tuple(sorted({str(row.origin) for row in members})),
        runs=spread.runs if spread is not None else 0,
        run_spread=(spread.low, spread.high) if spread is not None and spread.low is not None else None,  # type: ignore[arg-type]  # low and high are None together
        validity=NOT_CHECKED if any(_unchecked(row) for row in basis) else VALID,
        projected_from=tuple(sorted({str(row.projection_source) for row in basis if _projected(row)})),
        disaggregated=any(bool(getattr(row, "disaggregated", False)) for row in basis),
    )


def _projected(row: Any) -> bool:
    return bool(_text(getattr(row, "projection_source", None)))


def _unchecked(row: Any) -> bool:
    """A row that counts no request: the request rules had nothing to read. A row object that carries no counts at
    all (a hand-built row of a test or a caller) is taken as checked."""
    return not requests_known(int(getattr(row, "completed", 1)), int(getattr(row, "failed", 0)))


# Reads already made, by what they were made from (`read_chips`' `memo`).
ReadMemo = MutableMapping[Hashable, ConfigurationRead]
# The runs behind a figure's spread: result rows, or result rows by configuration (fingerprint).
History = Iterable[Any] | Mapping[str, Sequence[Any]]


def read_chips(
    rows: Iterable[Any], target: float, key: Callable[[Any], Hashable] = chip_key,
    history: History | None = None, memo: ReadMemo | None = None,
) -> list[ConfigurationRead]:  # fmt: skip
    """Each chip's envelope read at `target` tok/s/user, one per `key` group of the valid rows.

    `history` (default: the rows) holds the runs whose spread is reported for the configurations a read rests on.
    `memo` keeps each chip's read by the identities of the rows it was made from (`row_identity`) and by the lists
    of the history's rows of its configurations, so a caller that reads again after a change that left a chip's rows
    as they were (the hub: a filter that removed another chip, a tier added) and passes the same lists (`history`
    grouped by configuration, as `public_results.every_run_of` gives it) gets that chip's read back instead of
    working it out again. Only rows of one state of the results may share a memo: an identity stands for the row's
    content there.
    """
    return _read_groups(envelope.chip_groups(rows, key).values(), (target,), _grouped(history), memo)[0]


def _grouped(history: History | None) -> Mapping[str, Sequence[Any]] | None:
    """The history's rows by configuration: as given where they come grouped, else grouped here."""
    if history is None or isinstance(history, Mapping):
        return history
    return envelope.by_configuration(history)


def _read_groups(
    groups: Iterable[Sequence[Any]], targets: Sequence[float],
    past_by_fingerprint: Mapping[str, Sequence[Any]] | None, memo: ReadMemo | None,
) -> list[list[ConfigurationRead]]:  # fmt: skip
    """`read_chips` of rows already grouped per chip at each of `targets` (the reads of each target, in order), with
    the history grouped per configuration. A chip's history and what its reads are made from are worked out once for
    all the targets (a scorecard reads every tier): at 100k results they were most of the hub's filter change.

    The runs behind a read's spread are those of its configurations (`envelope.run_spread` keeps only their
    fingerprints), so the chip's history is the rows of its members' fingerprints, and a read depends on nothing
    else."""
    per_target: list[list[ConfigurationRead]] = [[] for _ in targets]
    for members in groups:
        runs: tuple[tuple[str, _Same], ...] | None = None
        if past_by_fingerprint is not None:
            fingerprints = dict.fromkeys(str(row.fingerprint) for row in members)
            runs = tuple((fingerprint, _Same(past_by_fingerprint.get(fingerprint, ()))) for fingerprint in fingerprints)
        made_from = None if memo is None else (tuple(map(row_identity, members)), runs)
        history: list[Any] | None = None  # the chip's runs as one list, made for the first read not remembered
        for reads, target in zip(per_target, targets, strict=True):
            read = None if memo is None else memo.get((target, made_from))
            if read is None:
                if history is None and runs is not None:
                    history = [row for _, same in runs for row in same.rows]
                read = _with_band(members, target, history)
                if memo is not None:
                    memo[(target, made_from)] = read
            reads.append(read)
    return [_below_source(reads) for reads in per_target]


def row_identity(row: Any) -> tuple[str, str, int, str | None]:
    """What names one result row among the results of one state of the store: its sweep, Point key, repeat and
    projection edge."""
    return (str(row.sweep), str(row.point_key), int(row.repeat_index), _edge(row))


@dataclass(frozen=True, eq=False)
class _Same:
    """A history's rows of one configuration, in a memo key by the list itself: the same list object is the same rows
    (the lists of one state of the results are made once and never changed), and holding it keeps its identity from
    being reused. Naming every row of a 100k-result history instead was most of the hub's filter change."""

    rows: Sequence[Any]

    def __hash__(self) -> int:
        return id(self.rows)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and self.rows is other.rows


def _below_source(reads: list[ConfigurationRead]) -> list[ConfigurationRead]:
    """Say so where a projected chip reads below the chip it was projected from, in the same view.

    A projection starts from its source chip's curve of one software generation (the median of that generation's
    runs at each concurrency, `curves.py`), while a view reads the source's runs it selects: projected GB300 read
    230 tok/s/GPU at 50 tok/s/user on the real InferenceX files, below the B200 run the Overview showed (309),
    though no GB300 figure is below B200's. Such a read keeps its figure and carries why, never silently."""
    by_chip = {chip_key(read): read for read in reads}
    checked = []
    for read in reads:
        for source in read.projected_from:
            origin = by_chip.get((read.model, read.precision, read.workload, source))
            if origin is None or origin.output is None or read.output is None or read.output.mean >= origin.output.mean:
                continue
            why = (
                f"below {source}'s {origin.output.mean:.3g} tok/s/GPU here: projected from {source}'s curve of "
                "one software generation (the median of its runs at each concurrency), not from the runs shown"
            )
            read = dataclasses.replace(read, reason=_join(read.reason, why), below_source=source)
        checked.append(read)
    return checked


def _edge(row: Any) -> str | None:
    """A projected row's band edge ('low', 'central', 'high'); None for a result that is no projection (a DataFrame
    row carries NaN for it)."""
    return _text(getattr(row, "projection_edge", None)) or None


def _with_band(members: Sequence[Any], target: float, history: Sequence[Any] | None) -> ConfigurationRead:
    """A chip's read; where a projection's band edges are among its rows, the figure and the band apart.

    The low and high edges of one projected configuration are its uncertainty, not two more configurations: an
    envelope over both would read the optimistic edge as the chip's figure. The figure is read on the central edge,
    or on the low edge (the conservative one) where the target's figures are ranges and no central edge was
    projected; each edge's envelope (with the chip's other rows) gives one end of the band."""
    edges = {edge for row in members if (edge := _edge(row)) is not None}
    if not edges:
        return read_chip_envelope(members, target, history)
    figure_edge = "central" if "central" in edges else "low" if "low" in edges else sorted(edges)[0]
    read = read_chip_envelope([row for row in members if _edge(row) in (None, figure_edge)], target, history)
    if read.output is None or edges == {"central"}:
        return read
    values = [read.output.mean]
    for edge in sorted(edges - {figure_edge}):
        edged = envelope.read_chip([row for row in members if _edge(row) in (None, edge)], target)
        if edged.output is not None:
            values.append(edged.output.mean)
    return dataclasses.replace(read, band=(min(values), max(values)))


@dataclass(frozen=True)
class ChipRatio:
    """Chip A's output tok/s/GPU over chip B's for one model, precision and workload, at a target and at peak."""

    model: str
    precision: str
    workload: str
    at: str  # 'N tok/s/user' or 'peak'
    over: float | None  # A / B; None where either has no figure
    band: tuple[float, float] | None  # the ratio's range over the chips' bands (projections); None without one
    numerator: ConfigurationRead
    denominator: ConfigurationRead


PEAK = 0.0  # a target below every envelope: each chip's slowest point, its highest throughput per GPU


def chip_ratios(rows: Iterable[Any], over: str, under: str, target: float) -> list[ChipRatio]:
    """`over`'s throughput per GPU over `under`'s along their envelopes, at `target` tok/s/user and at peak (each
    envelope's slowest point), per model, precision and workload both measured; the ratio's band spans the chips'
    bands (a projected chip's figure ranges), the worst case each way."""
    rows = list(rows)
    ratios = []
    for at, label in ((target, f"{target:g} tok/s/user"), (PEAK, "peak")):
        reads = {chip_key(read): read for read in read_chips(rows, at)}
        for (model, precision, workload, hardware), numerator in sorted(reads.items()):
            denominator = reads.get((model, precision, workload, under))
            if hardware != over or denominator is None:
                continue
            value = band = None
            if numerator.output is not None and denominator.output is not None and denominator.output.mean > 0:
                value = numerator.output.mean / denominator.output.mean
                top = numerator.band or (numerator.output.mean,) * 2
                bottom = denominator.band or (denominator.output.mean,) * 2
                if numerator.band or denominator.band:
                    band = (top[0] / bottom[1], top[1] / bottom[0])
            ratios.append(ChipRatio(model, precision, workload, label, value, band, numerator, denominator))
    return ratios


# --- cost ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuHourRate:
    """The price of one GPU-hour: a TCO tier of the hardware registry, or a custom figure for every chip."""

    tier: str | None = DEFAULT_TIER
    custom_usd: float | None = None

    def __post_init__(self) -> None:
        if self.custom_usd is None and self.tier not in TCO_TIERS:
            raise ValueError(f"unknown TCO tier {self.tier!r}; expected one of {', '.join(TCO_TIERS)} or a custom $")
        if self.custom_usd is not None and not (math.isfinite(self.custom_usd) and self.custom_usd >= 0):
            raise ValueError(f"a custom $/GPU-hr must be a non-negative number, got {self.custom_usd!r}")

    @property
    def label(self) -> str:
        if self.custom_usd is not None:
            return f"custom ${self.custom_usd:g}/GPU-hr"
        return f"{TCO_TIER_LABELS.get(str(self.tier), str(self.tier))} TCO"

    def usd_per_gpu_hour(self, hardware_key: str, registry: Mapping[str, Hardware]) -> tuple[float | None, str]:
        """($/GPU-hr, '') or (None, why not)."""
        if self.custom_usd is not None:
            return self.custom_usd, ""
        spec = registry.get(hardware_key)
        if spec is None:
            return None, f"{hardware_key} is not in the hardware registry"
        value = spec.tco(str(self.tier))
        if value is None:
            return None, f"no {self.tier} TCO for {hardware_key} in recipes/hardware.yaml"
        return value, ""


@dataclass(frozen=True)
class CostFigure:
    """USD per million tokens at the mean throughput, with the ends given by the throughput interval."""

    usd_per_million: float
    low: float | None  # at the interval's high throughput; None without an interval
    high: float | None  # at the interval's low throughput; None without an interval or when it reaches 0


def cost_figure(usd_per_gpu_hour: float, throughput: Interval | None) -> CostFigure | None:
    """$/M tokens from an interpolated throughput (mean and interval); None when there is no positive mean."""
    if throughput is None or not throughput.mean > 0:
        return None
    low, high = cost_band(usd_per_gpu_hour, (throughput.low, throughput.high))
    return CostFigure(cost_per_million_tokens(usd_per_gpu_hour, throughput.mean), low, high)


@dataclass(frozen=True)
class CostRead:
    """A configuration's read with what its tokens cost at one $/GPU-hr."""

    read: ConfigurationRead
    rate_label: str
    usd_per_gpu_hour: float | None
    output: CostFigure | None
    total: CostFigure | None
    input: CostFigure | None
    output_tokens_per_all_in_mw: float | None  # output tok/s per MW of all-in power
    total_tokens_per_all_in_mw: float | None
    reason: str  # why there is no cost (out of range, no TCO figure), else notes

    def per_million(self, kind: TokenKind) -> CostFigure | None:
        return {"output": self.output, "total": self.total, "input": self.input}[kind]

    @property
    def breakdown(self) -> CostPerMillion | None:
        if self.output is None or self.total is None or self.input is None:
            return None
        return CostPerMillion(
            total=self.total.usd_per_million, input=self.input.usd_per_million, output=self.output.usd_per_million
        )


def _join(*parts: str) -> str:
    return "; ".join(part for part in parts if part)


def cost_of(read: ConfigurationRead, registry: Mapping[str, Hardware], rate: GpuHourRate) -> CostRead:
    """What `read`'s tokens cost at `rate`; no figures when the read is out of range or the rate unknown."""
    usd, missing = rate.usd_per_gpu_hour(read.hardware, registry)
    spec = registry.get(read.hardware)
    kw = spec.all_in_kw.value if spec is not None and spec.all_in_kw is not None else None

    def per_mw(throughput: Interval | None) -> float | None:
        return tokens_per_all_in_mw(throughput.mean, kw) if throughput is not None and kw else None

    priced = usd is not None and read.covered
    return CostRead(
        read=read,
        rate_label=rate.label,
        usd_per_gpu_hour=usd,
        output=cost_figure(usd, read.output) if priced else None,  # type: ignore[arg-type]  # priced means usd is not None
        total=cost_figure(usd, read.total) if priced else None,  # type: ignore[arg-type]  # priced means usd is not None
        input=cost_figure(usd, read.input) if priced else None,  # type: ignore[arg-type]  # priced means usd is not None
        output_tokens_per_all_in_mw=per_mw(read.output),
        total_tokens_per_all_in_mw=per_mw(read.total),
        reason=_join(read.reason, missing),
    )


def costs_at(
    rows: Iterable[Any], target: float, registry: Mapping[str, Hardware], rate: GpuHourRate | None = None,
    per_sweep: bool = True,
) -> list[CostRead]:  # fmt: skip
    """Every configuration's cost per million tokens at `target` tok/s/user (uncovered ones with their reason)."""
    rate = rate or GpuHourRate()
    return [cost_of(read, registry, rate) for read in read_configurations(rows, target, per_sweep)]


def chip_costs_at(
    rows: Iterable[Any], target: float, registry: Mapping[str, Hardware], rate: GpuHourRate | None = None,
    history: History | None = None,
) -> list[CostRead]:  # fmt: skip
    """Each chip's cost per million tokens at `target` tok/s/user, read along its envelope (`read_chips`)."""
    rate = rate or GpuHourRate()
    return [cost_of(read, registry, rate) for read in read_chips(rows, target, history=history)]


ReadKey = str | Callable[[ConfigurationRead], Hashable]


def _group_of(read: ConfigurationRead, key: ReadKey) -> Hashable:
    return key(read) if callable(key) else str(getattr(read, key))


def best_per(
    costs: Iterable[CostRead], key: ReadKey = "hardware", kind: TokenKind = "output"
) -> tuple[dict[Hashable, CostRead], list[CostRead]]:
    """The cheapest configuration per `key` (a ConfigurationRead field, or a function of the read) by $/M
    `kind` tokens.

    Returns ({group: cheapest}, configurations without a cost). A group whose configurations all lack a
    cost is absent from the mapping; its configurations are in the list, with their reasons.
    """
    best: dict[Hashable, CostRead] = {}
    unpriced = []
    for item in costs:
        figure = item.per_million(kind)
        if figure is None:
            unpriced.append(item)
            continue
        group = _group_of(item.read, key)
        current = best.get(group)
        if current is None or figure.usd_per_million < current.per_million(kind).usd_per_million:  # type: ignore[union-attr]  # items in `best` were priced for kind
            best[group] = item
    return best, unpriced


# --- profit --------------------------------------------------------------------------------------


def model_price(
    model: str, models: Mapping[str, RegistryModel], price_table: Mapping[str, ModelPrice]
) -> ModelPrice | None:
    """The token prices of `model`: a recipe's model name (a registry key, e.g. 'deepseek-r1', whose hub id
    keys recipes/prices.yaml) or the hub id itself. None when the table has no entry for it."""
    if model in price_table:
        return price_table[model]
    entry = models.get(model)
    if entry is not None and entry.hf_id is not None:
        return price_table.get(entry.hf_id)
    return None


@dataclass(frozen=True)
class ProfitRead:
    """A configuration's revenue, cost, profit and margin per GPU-hour at the target interactivity."""

    read: ConfigurationRead
    rate_label: str
    prices: TokenPrices | None
    price_source: str  # 'recipes/prices.yaml: <model id> (<source>, <as_of>)' or 'custom'
    usd_per_gpu_hour: float | None
    profit: Profit | None
    reason: str


def profit_of(
    read: ConfigurationRead, registry: Mapping[str, Hardware], rate: GpuHourRate,
    prices: TokenPrices | None, price_source: str, utilisation: float = DEFAULT_UTILISATION,
    licence_fee: float = DEFAULT_LICENCE_FEE,
) -> ProfitRead:  # fmt: skip
    """Profit per GPU-hour of `read` (cost.profit), selling its measured token mix at `prices`."""
    usd, missing = rate.usd_per_gpu_hour(read.hardware, registry)
    reasons = [read.reason, missing]
    if prices is None:
        reasons.append(f"no token prices for model {read.model or '?'}: add it to recipes/prices.yaml or use custom")
    result = None
    if read.covered and usd is not None and prices is not None:
        output, total, input_ = read.output.mean, read.total.mean, read.input.mean  # type: ignore[union-attr]  # a covered read has all three figures
        if total > 0 and output >= 0 and input_ >= 0:
            mix = TokenMix(input_tokens=input_, cached_input_tokens=read.cache_hit * input_, output_tokens=output)
            result = profit(
                ProfitInputs(
                    total_tokens_per_s_per_gpu=total, prices=prices, mix=mix, tco_usd_per_gpu_hour=usd,
                    utilisation=utilisation, licence_fee=licence_fee,
                )
            )  # fmt: skip
        else:
            reasons.append("total, input or output throughput read is not positive")
    return ProfitRead(
        read=read, rate_label=rate.label, prices=prices, price_source=price_source if prices is not None else "",
        usd_per_gpu_hour=usd, profit=result, reason=_join(*reasons),
    )  # fmt: skip


def profits_at(
    rows: Iterable[Any], target: float, registry: Mapping[str, Hardware], rate: GpuHourRate | None = None,
    utilisation: float = DEFAULT_UTILISATION, licence_fee: float = DEFAULT_LICENCE_FEE,
    custom_prices: TokenPrices | None = None, models: Mapping[str, RegistryModel] | None = None,
    price_table: Mapping[str, ModelPrice] | None = None, per_sweep: bool = True, per_chip: bool = False,
    history: History | None = None,
) -> list[ProfitRead]:  # fmt: skip
    """Every configuration's profit at `target` tok/s/user; with `per_chip`, each chip's along its envelope, its runs
    counted in `history` as the Overview and the TCO calculator count them (`read_chips`).

    Prices are `custom_prices` for every model when given, else each model's entry of `price_table`
    (found by `model_price` through `models`).
    """
    rate = rate or GpuHourRate()
    table = []
    reads = read_chips(rows, target, history=history) if per_chip else read_configurations(rows, target, per_sweep)
    for read in reads:
        prices: TokenPrices | None
        if custom_prices is not None:
            prices, source = custom_prices, "custom"
        else:
            entry = model_price(read.model, models or {}, price_table or {})
            prices = TokenPrices.from_price(entry) if entry is not None else None
            source = f"recipes/prices.yaml: {entry.model} ({entry.source}, {entry.as_of})" if entry else ""
        table.append(profit_of(read, registry, rate, prices, source, utilisation, licence_fee))
    return table


def best_profit_per(
    profits: Iterable[ProfitRead], key: ReadKey = "hardware"
) -> tuple[dict[Hashable, ProfitRead], list[ProfitRead]]:
    """The most profitable configuration per `key` (as in `best_per`), and those without a profit figure."""
    best: dict[Hashable, ProfitRead] = {}
    without = []
    for item in profits:
        if item.profit is None:
            without.append(item)
            continue
        group = _group_of(item.read, key)
        current = best.get(group)
        if current is None or item.profit.profit_usd_per_gpu_hour > current.profit.profit_usd_per_gpu_hour:  # type: ignore[union-attr]  # only items with a profit are ranked
            best[group] = item
    return best, without


# --- scorecard -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScorecardCell:
    """The cheapest configuration of one hardware for one model × precision × workload at one interactivity."""

    model: str
    precision: str
    workload: str
    hardware: str
    interactivity: float
    best: CostRead | None  # None when no configuration of this hardware covers the interactivity
    configurations: int  # configurations of this hardware in the row (covered or not)
    origins: tuple[str, ...]  # origins of those configurations (so a non-measurement is labelled even unpriced)
    reason: str  # why there is no figure
    reference: str | None  # the reference hardware the change is measured against
    vs_reference: float | None  # $/M output relative to the reference's cell − 1; None when not comparable
    unpriced: bool = False  # no configuration of the cell has a $/GPU-hr at the tier (the chip has no TCO figure)

    @property
    def row(self) -> tuple[str, str, str]:
        return (self.model, self.precision, self.workload)

    @property
    def empty_because(self) -> str:
        """Why the cell has no cost, in a reader's words ('' when it has one): the chip has no TCO figure at the
        tier, or none of its configurations was measured around this speed (nothing is extrapolated)."""
        if self.best is not None and self.best.output is not None:
            return ""
        if self.unpriced:
            return "no TCO figure"
        return "outside the measured range"


def cell_cost_band(cell: ScorecardCell) -> tuple[float, float] | None:
    """The $/M output tokens a cell's figure may be: the span of its figure, its repeats' 95 % interval and each of its
    runs' read at the tier (the run spread); None without a cost."""
    best = cell.best
    if best is None or best.output is None or best.usd_per_gpu_hour is None:
        return None
    costs = [value for value in (best.output.usd_per_million, best.output.low, best.output.high) if value is not None]
    costs += [cost for cost in cost_band(best.usd_per_gpu_hour, best.read.run_spread) if cost is not None]
    return min(costs), max(costs)


def cheapest_and_ties(row: Iterable[ScorecardCell]) -> list[ScorecardCell]:
    """The cheapest priced cell of a scorecard row, then every other cell whose cost band (`cell_cost_band`) overlaps
    the cheapest's: chips the runs and repeats measured cannot tell apart. GB200 at $0.0860/M against B200 at
    $0.0865/M, inside B200's ±3 % run spread, is a tie, not a winner. Empty when no cell is priced."""
    priced = sorted(((band, cell) for cell in row if (band := cell_cost_band(cell)) is not None),
                    key=lambda item: item[1].best.output.usd_per_million)  # type: ignore[union-attr]  # fmt: skip
    if not priced:
        return []
    (_, high), cheapest = priced[0]
    return [cheapest, *(cell for (other_low, _), cell in priced[1:] if other_low <= high)]


def default_reference(rows: Iterable[Any]) -> str | None:
    """The hardware measured in the most model × precision × workload rows (ties: first by name)."""
    cells = {(str(row.hardware), str(getattr(row, "model", "")), str(getattr(row, "precision", "")), workload_of(row))
             for row in rows}  # fmt: skip
    counts = Counter(hardware for hardware, *_ in cells)
    if not counts:
        return None
    return min(counts, key=lambda hardware: (-counts[hardware], hardware))


def scorecard(
    rows: Iterable[Any], registry: Mapping[str, Hardware], rate: GpuHourRate | None = None,
    interactivity_tiers: Sequence[float] = INTERACTIVITY_TIERS, reference: str | None = None,
    history: History | None = None, memo: ReadMemo | None = None,
) -> list[ScorecardCell]:  # fmt: skip
    """Models × hardware (per precision and workload) at each interactivity tier: each chip's $/M output tokens
    read along its envelope (`read_chips`: the best of its configurations at the tier or faster).

    The change vs `reference` is (cell $/M output) / (reference's cell $/M output) − 1, given only when
    the reference hardware has a figure for the same model, precision, workload and interactivity.
    `history` (default: the rows) gives each cell's runs and their spread; `memo` as `read_chips` takes it.
    """
    rate = rate or GpuHourRate()
    groups = list(envelope.chip_groups(rows, chip_key).values())
    cells = []
    tiers = list(interactivity_tiers)
    for target, reads in zip(tiers, _read_groups(groups, tiers, _grouped(history), memo), strict=True):
        chips = {chip_key(read): cost_of(read, registry, rate) for read in reads}
        for key, item in chips.items():
            model, precision, workload, hardware = key
            chosen = item if item.output is not None else None
            reference_cell = chips.get((model, precision, workload, reference)) if reference else None
            change = None
            if chosen is not None and reference_cell is not None and reference_cell.output is not None:
                change = chosen.output.usd_per_million / reference_cell.output.usd_per_million - 1.0  # type: ignore[union-attr]  # a chosen cell is a priced one
            cells.append(
                ScorecardCell(
                    model=model, precision=precision, workload=workload, hardware=hardware, interactivity=target,
                    best=chosen, configurations=item.read.configurations_in_envelope,
                    origins=item.read.origins_in_envelope,
                    reason="" if chosen is not None else item.reason,
                    reference=reference if change is not None else None, vs_reference=change,
                    unpriced=item.usd_per_gpu_hour is None,
                )
            )  # fmt: skip
    cells.sort(key=lambda cell: (cell.model, cell.precision, cell.workload, cell.interactivity, cell.hardware))
    return cells


__all__ = [
    "DEFAULT_TIER",
    "DEFAULT_UTILISATION",
    "INTERACTIVITY_TIERS",
    "TOKEN_KINDS",
    "ChipRatio",
    "ConfigurationRead",
    "CostFigure",
    "CostRead",
    "GpuHourRate",
    "ProfitRead",
    "ReadMemo",
    "ScorecardCell",
    "best_per",
    "best_profit_per",
    "cell_cost_band",
    "cheapest_and_ties",
    "chip_costs_at",
    "chip_key",
    "chip_ratios",
    "cost_figure",
    "cost_of",
    "costs_at",
    "default_reference",
    "model_price",
    "profit_of",
    "profits_at",
    "read_chip_envelope",
    "read_chips",
    "read_configuration",
    "read_configurations",
    "row_identity",
    "scorecard",
    "workload_of",
]
