"""Agents served at an SLO tier: the most live agents a configuration serves while it keeps the tier's latency.

A sweep over concurrency measures one Point per load level: for a replay, the live agent sessions; for a
fixed-length sweep, the requests in flight (each its own "agent"). A Point serves at a tier (recipes/slo_tiers.yaml)
when its TTFT p90 is at most the tier's and its median output speed per user (interactivity p50) at least the
tier's; repeats at one load level are read at their median.

The capacity at a tier is read from the measured load levels only:
- the largest level such that it and every level below it serve at the tier ("measured");
- where the next level up fails, the crossing between the two, linear in each figure that failed, and the lowest of
  those crossings, rounded down to whole agents ("interpolated", only when it adds an agent beyond the level);
- when the largest measured level serves, that level and "at least": nothing above it was measured;
- when the smallest level fails, no capacity ("below the smallest measured"): nothing below it was measured.
Never extrapolated. Per accelerator, per all-in MW (AgentPerf's lead unit) and per TCO dollar-hour divide it by the
configuration's accelerators and their registry figures (recipes/hardware.yaml), when the registry has them.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from analysis.envelope import configuration_label
from recipes.hardware import Hardware
from recipes.slo import SloTier

Basis = Literal["measured", "interpolated", "at least", "below the smallest measured"]


@dataclass(frozen=True)
class LoadLevel:
    """One measured load level of a configuration: the median of its valid repeats' figures."""

    concurrency: int
    ttft_p90_ms: float | None
    interactivity_p50: float | None
    repeats: int
    accelerators: int
    # Per tier name: (its TTFT ms, its tok/s/user, the median share of requests that met them) as the Points stored
    # them (`PointMetrics.slo_goodput`); empty for Points measured before they stored it, and imported ones.
    goodput_shares: tuple[tuple[str, float, float, float], ...] = ()

    def goodput(self, tier: SloTier) -> float | None:
        """The share of this level's requests that met `tier` on their own (goodput), where its Points stored it for
        the same thresholds; else None."""
        for name, ttft_ms, interactivity, share in self.goodput_shares:
            if name == tier.name and (ttft_ms, interactivity) == (tier.ttft_p90_ms, tier.interactivity_p50):
                return share
        return None

    def serves(self, tier: SloTier) -> bool:
        return (
            self.ttft_p90_ms is not None
            and self.interactivity_p50 is not None
            and self.ttft_p90_ms <= tier.ttft_p90_ms
            and self.interactivity_p50 >= tier.interactivity_p50
        )


@dataclass(frozen=True)
class Capacity:
    """The agents one configuration serves at one tier, how that was read, and per accelerator, kW and $/hr."""

    recipe: str
    configuration: str  # readable label (the results' `configuration` column, else the recipe name)
    hardware: str
    sweep: str
    tier: str
    fingerprint: str
    agents: int
    basis: Basis
    explanation: str
    accelerators: int
    per_accelerator: float
    per_all_in_mw: float | None  # agents per MW of all-in (facility) power: AA-AgentPerf's "agents per MW"
    per_usd_hour: float | None
    levels: tuple[LoadLevel, ...]


def _median(values: Sequence[float | None]) -> float | None:
    present = [value for value in values if value is not None and math.isfinite(value)]
    return statistics.median(present) if present else None


def load_levels(rows: Sequence[Any]) -> list[LoadLevel]:
    """The valid rows of one configuration as load levels, by concurrency."""
    by_level: dict[int, list[Any]] = defaultdict(list)
    for row in rows:
        if row.valid:
            by_level[int(row.concurrency)].append(row)
    return [
        LoadLevel(
            concurrency=level,
            ttft_p90_ms=_median([getattr(row, "ttft_p90_ms", None) for row in members]),
            interactivity_p50=_median([row.interactivity_p50 for row in members]),
            repeats=len(members),
            accelerators=int(members[0].accelerators or 1),
            goodput_shares=_goodput_shares(members),
        )
        for level, members in sorted(by_level.items())
    ]


def _goodput_shares(members: Sequence[Any]) -> tuple[tuple[str, float, float, float], ...]:
    """The repeats' stored goodput per tier (`ResultView.slo_goodput`, JSON text), the median share per tier and
    thresholds."""
    shares: dict[tuple[str, float, float], list[float]] = defaultdict(list)
    for row in members:
        text = getattr(row, "slo_goodput", None)
        stored = json.loads(text) if isinstance(text, str) and text else {}
        for name, figure in stored.items():
            shares[(name, float(figure["ttft_ms"]), float(figure["interactivity"]))].append(float(figure["share"]))
    return tuple((*key, statistics.median(values)) for key, values in sorted(shares.items()))


def _crossing(low: LoadLevel, high: LoadLevel, tier: SloTier) -> float:
    """Where between `low` (serves) and `high` (fails) the first failing figure reaches the tier's threshold."""
    crossings = []
    span = high.concurrency - low.concurrency
    if high.ttft_p90_ms is None or high.interactivity_p50 is None:
        return float(low.concurrency)  # a figure missing above: nothing to interpolate on
    assert low.ttft_p90_ms is not None and low.interactivity_p50 is not None  # `low` serves, so it has both
    if high.ttft_p90_ms > tier.ttft_p90_ms:
        share = (tier.ttft_p90_ms - low.ttft_p90_ms) / (high.ttft_p90_ms - low.ttft_p90_ms)
        crossings.append(low.concurrency + span * share)
    if high.interactivity_p50 < tier.interactivity_p50:
        share = (low.interactivity_p50 - tier.interactivity_p50) / (low.interactivity_p50 - high.interactivity_p50)
        crossings.append(low.concurrency + span * share)
    return min(crossings)


def capacity_at(levels: Sequence[LoadLevel], tier: SloTier) -> tuple[int, Basis, str]:
    """(agents, basis, explanation) of one configuration's load levels at `tier` (see the module's docstring)."""
    if not levels:
        return 0, "below the smallest measured", "no valid Point"
    served = None
    for index, level in enumerate(levels):
        if not level.serves(tier):
            break
        served = index
    if served is None:
        first = levels[0]
        return 0, "below the smallest measured", f"{first.concurrency} already misses the tier ({_figures(first)})"
    level = levels[served]
    if served == len(levels) - 1:
        return level.concurrency, "at least", f"the largest measured level, {level.concurrency}, serves at the tier"
    above = levels[served + 1]
    crossing = _crossing(level, above, tier)
    agents = max(level.concurrency, math.floor(crossing + 1e-9))
    why = f"{level.concurrency} serves ({_figures(level)}); {above.concurrency} misses ({_figures(above)})"
    if agents > level.concurrency:
        return agents, "interpolated", f"{why}; crossing at {crossing:.2f}, linear between the two"
    return agents, "measured", why


def _figures(level: LoadLevel) -> str:
    ttft = "no TTFT p90" if level.ttft_p90_ms is None else f"TTFT p90 {level.ttft_p90_ms:,.0f} ms"
    speed = "no interactivity" if level.interactivity_p50 is None else f"{level.interactivity_p50:,.1f} tok/s/user"
    return f"{ttft}, {speed}"


def split_readable(rows: Sequence[Any]) -> tuple[list[Any], int]:
    """The rows of the configurations (fingerprint, sweep) whose results state a TTFT p90 somewhere, which every tier
    reads, and how many configurations state none (imported InferenceX rows publish p50 and p99 only): those are left
    out of a view of many configurations rather than shown as serving no agent."""
    groups: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for row in rows:
        groups[(row.fingerprint, row.sweep)].append(row)
    readable = [members for members in groups.values() if _median([row.ttft_p90_ms for row in members]) is not None]
    return [row for members in readable for row in members], len(groups) - len(readable)


def capacities(
    rows: Sequence[Any], tiers: Sequence[SloTier], hardware: dict[str, Hardware], tco_tier: str
) -> list[Capacity]:
    """Every configuration (recipe fingerprint, sweep) of `rows` at every tier."""
    groups: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for row in rows:
        groups[(row.fingerprint, row.sweep)].append(row)
    result = []
    for (fingerprint, sweep), members in groups.items():
        levels = load_levels(members)
        first = members[0]
        spec = hardware.get(first.hardware)
        accelerators = levels[0].accelerators if levels else int(first.accelerators or 1)
        all_in_kw = spec.all_in_kw.value if spec is not None and spec.all_in_kw is not None else None
        usd_hour = spec.tco(tco_tier) if spec is not None else None
        for tier in tiers:
            agents, basis, why = capacity_at(levels, tier)
            result.append(
                Capacity(
                    recipe=first.recipe,
                    configuration=configuration_label(first),
                    hardware=first.hardware,
                    sweep=str(sweep),
                    tier=tier.name,
                    fingerprint=str(fingerprint),
                    agents=agents,
                    basis=basis,
                    explanation=why,
                    accelerators=accelerators,
                    per_accelerator=agents / accelerators,
                    per_all_in_mw=1000 * agents / (accelerators * all_in_kw) if all_in_kw else None,
                    per_usd_hour=agents / (accelerators * usd_hour) if usd_hour else None,
                    levels=tuple(levels),
                )
            )
    return result
