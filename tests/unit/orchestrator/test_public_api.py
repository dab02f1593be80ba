"""The read-only API's views, on hand-made results (tests/integration/orchestrator/test_public_api.py reads the real
InferenceX sample through the CLI)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from openapi_spec_validator import validate as validate_openapi

from orchestrator.public_api import VIEWS, _capacity, _number, openapi_document
from recipes.hardware import load_hardware_registry


def test_the_openapi_description_is_valid_and_names_every_view() -> None:
    document = openapi_document()
    validate_openapi(document)
    assert set(document["paths"]) == {f"/{name}.json" for name in VIEWS}
    assert json.loads(json.dumps(document, allow_nan=False)) == document  # strict JSON


def test_a_missing_or_non_finite_figure_is_null() -> None:
    assert [_number(value) for value in (None, math.nan, math.inf, 2, 0.5)] == [None, None, None, 2.0, 0.5]


def test_capacity_view_by_hand() -> None:
    """B200 (8 GPUs) at 4, 8 and 16 live agents: TTFT p90 500 / 1,500 / 3,000 ms and 80 / 70 / 50 tok/s/user.
    'interactive' (TTFT p90 <= 2 s, >= 60 tok/s/user): 8 serves, 16 misses both; TTFT crosses at
    8 + 8 x (2000 - 1500) / (3000 - 1500) = 10.67, speed at 8 + 8 x (70 - 60) / (70 - 50) = 12: the lower, 10 agents,
    interpolated, 1.25 per GPU. 'standard' (5 s, 40) and 'background' (20 s, 15): all serve, at least 16. AgentPerf-style
    'agentperf-30' (TTFT p90 <= 15 s, >= 30 tok/s/user): all serve, at least 16, 2 per GPU, 2,000 / 1.71 = 1,169.6 per
    all-in MW (B200 1.71 kW all-in per GPU, recipes/hardware.yaml) and 2 / 1.73 = 1.16 per owning TCO $/hr; 'agentperf-100'
    and 'agentperf-300': already 4 agents stream at 80 tok/s/user, none served. The imported configuration states no
    TTFT p90: left out."""
    rows = [
        {"origin": "measured", "hardware": "b200", "latest": True, "fingerprint": "f1", "sweep": "s1", "recipe": "r1",
         "configuration": "b200 · vllm · m fp8 · tp8", "valid": True, "concurrency": level, "ttft_p90_ms": ttft,
         "interactivity_p50": speed, "accelerators": 8, "slo_goodput": None}
        for level, ttft, speed in ((4, 500.0, 80.0), (8, 1500.0, 70.0), (16, 3000.0, 50.0))
    ] + [{"origin": "imported", "hardware": "mi355x", "latest": True, "fingerprint": "f2", "sweep": "s2",
          "recipe": "r2", "configuration": "mi355x · sglang · m fp8 · tp8", "valid": True, "concurrency": 4,
          "ttft_p90_ms": None, "interactivity_p50": 60.0, "accelerators": 8, "slo_goodput": None}]  # fmt: skip
    items = {item.tier: item for item in _capacity(pd.DataFrame(rows), load_hardware_registry(), frozenset())}
    assert set(items) == {"interactive", "standard", "background", "agentperf-30", "agentperf-100", "agentperf-300"}
    assert (items["interactive"].agents, items["interactive"].basis) == (10, "interpolated")
    assert items["interactive"].per_accelerator == 1.25
    assert (items["standard"].agents, items["standard"].basis) == (16, "at least")
    agentperf = items["agentperf-30"]
    assert (agentperf.agents, agentperf.basis, agentperf.per_accelerator) == (16, "at least", 2.0)
    assert agentperf.per_all_in_mw == pytest.approx(2_000 / 1.71) and agentperf.per_all_in_kw == pytest.approx(2 / 1.71)
    assert agentperf.per_usd_hour == pytest.approx(2 / 1.73)
    assert [(items[name].agents, items[name].basis) for name in ("agentperf-100", "agentperf-300")] == [
        (0, "below the smallest measured")] * 2  # fmt: skip
    assert all(item.configuration == "b200 · vllm · m fp8 · tp8" for item in items.values())
