"""Prompt-token shares by cache tier, worked by hand."""

from __future__ import annotations

import math

import pytest

from analysis.cache_tiers import prompt_tier_shares


def test_shares_of_each_tier_and_headroom_to_the_ceiling() -> None:
    # 550k HBM hits, 350k loaded from DRAM, 100k recomputed: 55 % / 35 % / 10 %, 90 % hit, 7 points below 97 %.
    shares = prompt_tier_shares(550_000, 350_000, 100_000)
    assert shares is not None
    assert (shares.hbm, shares.offload, shares.recomputed) == pytest.approx((0.55, 0.35, 0.10))
    assert shares.prompt_tokens == 1_000_000
    assert shares.hit == pytest.approx(0.90)
    assert shares.headroom(0.97) == pytest.approx(0.07)
    assert shares.headroom(None) is None and shares.headroom(math.nan) is None


def test_missing_external_series_counts_as_zero_but_missing_split_is_none() -> None:
    shares = prompt_tier_shares(300.0, None, 100.0)
    assert shares is not None and (shares.hbm, shares.offload, shares.recomputed) == (0.75, 0.0, 0.25)
    assert prompt_tier_shares(None, 5.0, 100.0) is None
    assert prompt_tier_shares(300.0, 5.0, math.nan) is None
    assert prompt_tier_shares(0.0, 0.0, 0.0) is None  # no prompt tokens: no split to show


def test_negative_counter_delta_is_refused() -> None:
    with pytest.raises(ValueError, match="local_compute"):
        prompt_tier_shares(10.0, 0.0, -1.0)
