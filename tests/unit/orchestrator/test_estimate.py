"""The GPU-hour estimate behind budgets and plan costs, checked by hand."""

from __future__ import annotations

import pytest

from orchestrator.estimate import ENGINE_START_S, estimate_job
from orchestrator.plan import expand_points
from recipes.loader import parse_recipe
from tests.conftest import SIMULATED_RECIPE, deep_update


def test_fixed_length_estimate_by_hand() -> None:
    data = deep_update(
        SIMULATED_RECIPE,
        {
            "engine": {"startup_timeout_s": 900, "max_model_len": 8192},
            "parallelism": {"tp": 4},
            "workload": {"sequences": [{"isl": 5000, "osl": 300}], "concurrency": [2],
                         "prompts_per_concurrency": 10, "warmup_per_concurrency": 2},
        },
    )  # fmt: skip
    loaded = parse_recipe(data, "<test>")
    estimate = estimate_job(loaded, expand_points(loaded))
    # (20 + 4) requests over 2 lanes = 12 waves of (5000/5000 + 300/30) = 11 s; start capped at 600 s.
    assert estimate.hours == pytest.approx((ENGINE_START_S + 12 * 11.0) / 3600)
    assert estimate.accelerators == 4
    assert estimate.accelerator_hours == pytest.approx(4 * (600 + 132) / 3600)
