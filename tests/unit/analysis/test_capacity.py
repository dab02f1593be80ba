"""Agents served at an SLO tier, read from a sweep over concurrency against hand calculations."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from analysis.capacity import capacities, capacity_at, load_levels
from recipes.hardware import load_hardware_registry
from recipes.slo import SloTier, load_slo_tiers

REGISTRY = load_hardware_registry()
TIER = SloTier(name="t", ttft_p90_ms=1000.0, interactivity_p50=50.0, source="test")


def point(concurrency: int, ttft_p90: float | None, speed: float | None, *, repeat: int = 0, valid: bool = True,
          hardware: str = "b200", accelerators: int = 8) -> Any:  # fmt: skip
    return SimpleNamespace(
        fingerprint="fp", sweep="s1", recipe="r", hardware=hardware, concurrency=concurrency, repeat_index=repeat,
        valid=valid, ttft_p90_ms=ttft_p90, interactivity_p50=speed, accelerators=accelerators,
    )  # fmt: skip


def model(concurrency: int) -> Any:
    """A service model: TTFT p90 = 100 ms + 10 ms per agent, speed = 100 tok/s/user ÷ (1 + agents / 64)."""
    return point(concurrency, 100.0 + 10.0 * concurrency, 100.0 / (1 + concurrency / 64))


def test_the_crossing_between_two_measured_levels_is_a_hand_calculation() -> None:
    # By hand: speed reaches 50 at 1 + c/64 = 2, c = 64 (measured: 64 serves, speed exactly 50, TTFT 740 ms);
    # TTFT reaches 1000 ms at c = 90. At 128 speed is 33.3 and TTFT 1380: both fail. Linear between 64 and 128:
    # speed 50 is reached at 64 itself (its own value), so the capacity is 64, read as measured.
    levels = load_levels([model(c) for c in (16, 32, 64, 128)])
    assert capacity_at(levels, TIER)[:2] == (64, "measured")
    # A looser speed floor (40): speed crosses 40 at 64 + 64 × (50 − 40) / (50 − 33.33) = 102.4; TTFT crosses
    # 1000 ms at 64 + 64 × (1000 − 740) / (1380 − 740) = 90.0: the lower, 90 agents, interpolated.
    loose = SloTier(name="l", ttft_p90_ms=1000.0, interactivity_p50=40.0, source="test")
    agents, basis, why = capacity_at(levels, loose)
    assert (agents, basis) == (90, "interpolated") and "crossing at 90.00" in why


def test_ends_of_the_measured_range_are_never_extrapolated() -> None:
    assert capacity_at(load_levels([model(c) for c in (4, 8, 16)]), TIER)[:2] == (16, "at least")
    agents, basis, why = capacity_at(load_levels([model(c) for c in (128, 256)]), TIER)
    assert (agents, basis) == (0, "below the smallest measured") and why.startswith("128 already misses")


def test_repeats_are_read_at_their_median_invalid_ones_left_out_and_a_dip_stops_the_count() -> None:
    rows = [point(8, 500.0, 60.0), point(8, 700.0, 60.0, repeat=1), point(8, 5000.0, 60.0, repeat=2),
            point(16, 9000.0, 10.0, valid=False), point(16, 900.0, 55.0), point(32, 1200.0, 55.0),
            point(64, 800.0, 60.0)]  # fmt: skip
    levels = load_levels(rows)
    assert [(level.concurrency, level.ttft_p90_ms, level.repeats) for level in levels] == [
        (8, 700.0, 3), (16, 900.0, 1), (32, 1200.0, 1), (64, 800.0, 1)]  # fmt: skip
    # 32 misses, so 64 serving again does not count: the capacity is below the first miss (16 + 16 × 100/300 = 21).
    assert capacity_at(levels, TIER)[:2] == (21, "interpolated")
    assert capacity_at(load_levels([point(8, None, 60.0)]), TIER)[:2] == (0, "below the smallest measured")


def test_per_accelerator_per_kw_and_per_dollar_hour_from_the_registry() -> None:
    (read,) = capacities([model(c) for c in (16, 32, 64, 128)], [TIER], REGISTRY, "owning_hyperscaler")
    b200 = REGISTRY["b200"]
    assert read.per_accelerator == pytest.approx(64 / 8)
    assert b200.all_in_kw is not None and read.per_all_in_mw == pytest.approx(64_000 / (8 * b200.all_in_kw.value))
    assert read.per_usd_hour == pytest.approx(64 / (8 * b200.tco("owning_hyperscaler")))
    (unknown,) = capacities([point(8, 1.0, 99.0, hardware="nope")], [TIER], REGISTRY, "owning_hyperscaler")
    assert (unknown.agents, unknown.per_all_in_mw, unknown.per_usd_hour) == (8, None, None)


def test_the_shipped_tiers_name_their_source() -> None:
    tiers = load_slo_tiers()
    assert {"interactive", "standard", "background"} <= set(tiers)
    assert all(tier.source for tier in tiers.values())
    assert tiers["interactive"].interactivity_p50 > tiers["standard"].interactivity_p50
    # AA-AgentPerf-style: a minimum output speed plus a maximum TTFT, each saying at which percentiles it is read.
    agentperf = {
        name: (tier.ttft_p90_ms, tier.interactivity_p50) for name, tier in tiers.items() if "agentperf" in name
    }
    assert agentperf == {"agentperf-30": (15000, 30), "agentperf-100": (15000, 100), "agentperf-300": (15000, 300)}
    assert all(tiers[name].note and "AgentPerf" in tiers[name].source for name in agentperf)
