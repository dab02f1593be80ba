"""A trace served at a chip's operating points, worked by hand."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from analysis.fast_tokens import (
    chip_session_times,
    nearest_per_chip,
    operating_points,
    serving_latency,
    takeaway,
    uncached_tokens,
)
from runners.traces.formats import parse_trace


@dataclass
class View:  # the fields of db.reads.ResultView the analysis reads
    hardware: str
    interactivity_p50: float | None
    output_throughput_per_gpu: float
    ttft_p50_ms: float | None
    concurrency: int
    engine: str = "vllm"
    origin: str = "measured"
    model: str = "m"
    precision: str = "fp8"
    isl: int | None = 1000
    osl: int | None = 100
    valid: bool = True


def _trace():  # type: ignore[no-untyped-def]
    # Two turns of 100-token blocks: turn 0 has 2 blocks (200 + 50 tokens, none cached), turn 1 has 3 blocks
    # (350 tokens; the first 2 blocks are turn 0's). Output 10 and 20 tokens; 30 s of think time between.
    requests = [
        {"t": 0.0, "type": "s", "in": 250, "out": 10, "hash_ids": [1, 2], "api_time": 1.0},
        {"t": 31.0, "type": "s", "in": 350, "out": 20, "hash_ids": [1, 2, 3], "api_time": 1.0, "think_time": 30.0},
    ]
    return parse_trace(json.dumps({"id": "hand", "block_size": 100, "requests": requests}).encode(), "hand.json")


def test_operating_points_are_each_chips_frontier_of_valid_points() -> None:
    views = [
        View("b200", 100.0, 500.0, 200.0, 4),
        View("b200", 50.0, 1500.0, 400.0, 32),
        View("b200", 40.0, 1000.0, 500.0, 64),  # dominated by the c=32 point: slower and less throughput
        View("b200", 20.0, 3000.0, 900.0, 256, valid=False),  # invalid: never an operating point
        View("mi355x", 60.0, 1200.0, 250.0, 16, engine="sglang", origin="imported"),
        View("mi355x", 70.0, 900.0, None, 8, engine="sglang", origin="imported"),  # no TTFT: cannot be served
    ]
    points = operating_points(views)
    assert [(p.hardware, p.concurrency) for p in points] == [("b200", 32), ("b200", 4), ("mi355x", 16)]
    b200 = points[0]
    assert b200.prefill_tokens_per_s == pytest.approx(1000 / 0.4)  # ISL 1000 tokens in a 400 ms TTFT


def test_a_request_takes_its_uncached_prefill_and_its_decode_at_the_point() -> None:
    trace = _trace()
    uncached = uncached_tokens(trace)
    assert uncached == {"0:0": 250, "0:1": 150}  # turn 1 finds 200 of its 350 tokens cached
    (point,) = operating_points([View("b200", 50.0, 1500.0, 400.0, 32)])
    latency = serving_latency(point, uncached)
    first, second = trace.sessions[0].requests
    # 250 / 2500 tok/s + 10 / 50 tok/s = 0.1 + 0.2 s; 150 / 2500 + 20 / 50 = 0.06 + 0.4 s.
    assert latency(first) == pytest.approx(0.3) and latency(second) == pytest.approx(0.46)
    assert serving_latency(point, uncached, 2.0)(second) == pytest.approx(0.06 + 0.2)
    (row,) = chip_session_times([trace], [point], [2.0], idle_cap_s=None)
    assert row.wall_s == pytest.approx(0.3 + 30 + 0.46)
    assert row.model_share == pytest.approx(0.76 / 30.76)
    assert row.savings[2.0] == pytest.approx(0.3 / 30.76)  # 0.1 + 0.2 s of decode saved
    assert takeaway(row, 2.0) == (
        "2× faster decode saves 1.0% of this agent's session time on b200 at 50 tok/s/user (concurrency 32, vllm)."
    )


def test_the_takeaway_point_of_each_chip_is_the_one_nearest_the_asked_speed() -> None:
    points = operating_points([View("b200", 100.0, 500.0, 200.0, 4), View("b200", 45.0, 1500.0, 400.0, 32)])
    rows = chip_session_times([_trace()], points, [2.0], idle_cap_s=300)
    (nearest,) = nearest_per_chip(rows, 50.0)
    assert nearest.point.concurrency == 32
