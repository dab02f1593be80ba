"""The KV capacity planner: replay order, tiers and capacities, against hand-worked and independent figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recipes.hardware import load_hardware_registry
from recipes.model_registry import load_model_registry
from runners.traces.formats import load_trace, parse_trace
from runners.traces.hit_rate import theoretical_hit_rate
from runners.traces.planner import (
    ReplayShape,
    ReplayTraffic,
    kv_capacity,
    lane_trees,
    phase_start_delays,
    predict_replay_hit_rate,
    replay_order,
    sent_order,
)

ROOT = Path(__file__).resolve().parents[4]
SAMPLE = ROOT / "traces" / "claude-code-weka" / "sample_trace.json"


def _conversation(ids_per_turn: list[list[int]], block: int = 4) -> bytes:
    requests = [{"t": float(turn), "type": "s", "in": len(ids) * block + 1, "out": 1, "hash_ids": ids}
                for turn, ids in enumerate(ids_per_turn)]  # fmt: skip
    return json.dumps({"id": "hand", "block_size": block, "requests": requests}).encode()


def test_one_lane_without_warmup_and_unbounded_cache_is_the_theoretical_rate() -> None:
    trace = load_trace(SAMPLE)
    shape = ReplayShape(concurrency=1, warmup=False)
    predicted = predict_replay_hit_rate(trace, shape, 128, None, requests_per_lane=len(trace.sessions[0].requests))
    assert predicted.rate == pytest.approx(theoretical_hit_rate(trace).rebase(128).rate, abs=1e-12)


def test_hand_worked_lru_with_two_lanes() -> None:
    # Engine block = trace block = 4 tokens; prompts of 4k+1 tokens, so all k blocks are hittable.
    trace = parse_trace(_conversation([[1], [1, 2], [1, 2, 3]]), "hand.json")
    shape = ReplayShape(concurrency=2, warmup=False)
    order = replay_order(trace, shape, requests_per_lane=3)
    # Lanes alternate; lane 0 replays copy 0, lane 1 copy 1 (salted apart: nothing shared between them).
    assert [(step.copy, step.turn) for step in order] == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
    traffic = ReplayTraffic(trace, shape, 4, requests_per_lane=3)
    # Unbounded: per copy, hits 0 + 4 + 8 tokens of 5 + 9 + 13 input tokens.
    assert traffic.hit_rate(None).rate == pytest.approx(2 * 12 / (2 * 27))
    # 4 blocks of HBM; the output token never fills a block here (in + out = 4k + 2). Each request touches its
    # blocks tail first, so inserting a new tail can evict the request's own older prefix (A: copy 0, B: copy 1):
    #   A1 miss | B1 miss | A1 hit (4) -> [B1 A2 A1] | B1 hit (4) -> [A2 A1 B2 B1]
    #   A1 A2 hit (8); inserting A3, A2, A1 evicts A2, A1, B2 -> [B1 A3 A2 A1] | B1 hit, B2 gone (4)
    assert traffic.hit_rate(4).rate == pytest.approx(20 / 54)
    # 3 blocks: ... -> [A1 B2 B1] | A1 hit, A2 gone (4) -> [A3 A2 A1] | B1 gone (0): 0 + 0 + 4 + 4 + 4 + 0.
    assert traffic.hit_rate(3).rate == pytest.approx(12 / 54)
    tiered = traffic.hit_rate(3, dram_blocks=10)
    assert tiered.rate == pytest.approx(traffic.hit_rate(13).rate) and tiered.dram_rate > 0
    assert tiered.hbm_rate == pytest.approx(traffic.hit_rate(3).rate)


def test_the_order_requests_were_sent_is_the_order_the_cache_sees() -> None:
    trace = parse_trace(_conversation([[1], [1, 2], [1, 2, 3]]), "hand.json")
    shape = ReplayShape(concurrency=2, warmup=False)
    as_planned = [(step.copy, step.session.path, step.turn, step.primer) for step in replay_order(trace, shape, 3)]
    assert ReplayTraffic(trace, shape, 4, order=sent_order(trace, as_planned)).hit_rate(3).rate == pytest.approx(
        12 / 54
    )
    # Copy 0's lane answered fast and sent its three turns before copy 1 sent its first: with 3 blocks,
    #   A1 miss | A1 hit (4) -> [A2 A1] | A1 A2 hit (8) -> [A3 A2 A1] | B1 miss -> [A2 A1 B1] evicts A3 |
    #   B1 hit (4), inserting B2 evicts A2 -> [A1 B2 B1] | B1 B2 hit (8): 0 + 4 + 8 + 0 + 4 + 8 = 24 of 54.
    lane_by_lane = [(0, "0", 0, False), (0, "0", 1, False), (0, "0", 2, False),
                    (1, "0", 0, False), (1, "0", 1, False), (1, "0", 2, False)]  # fmt: skip
    traffic = ReplayTraffic(trace, shape, 4, order=sent_order(trace, lane_by_lane))
    assert traffic.hit_rate(3).rate == pytest.approx(24 / 54)
    # A warm-up request (the last field) primes the cache and is not counted: copy 0's turn 1 alone then hits 4 of 9.
    primed = sent_order(trace, [(0, "0", 0, True), (0, "0", 1, False)])
    assert ReplayTraffic(trace, shape, 4, order=primed).hit_rate(3).rate == pytest.approx(4 / 9)


def test_warm_start_primes_history_without_counting_it() -> None:
    trace = parse_trace(_conversation([[1], [1, 2], [1, 2, 3], [1, 2, 3, 4], [1, 2, 3, 4, 5]]), "hand.json")
    order = replay_order(trace, ReplayShape(concurrency=1, seed=7), requests_per_lane=2)
    primer, *counted = order
    assert primer.primer and not any(step.primer for step in counted)
    assert [step.turn for step in counted] == [primer.turn + 1, primer.turn + 2]
    assert 1 <= primer.turn + 1 <= 3  # warm start in [25 %, 75 %] of 5 turns: int(1.25)=1 .. int(3.75)=3
    traffic = ReplayTraffic(trace, ReplayShape(concurrency=1, seed=7), 4, requests_per_lane=2)
    assert traffic.requests == 2 and traffic.hit_rate(None).rate > 0.5  # the primed history is hit


def test_agentx_warmup_turns_follow_the_primer_and_leave_a_turn_to_measure() -> None:
    # AgentX's --warmup-requests-per-lane: after the priming request (the turn before the drawn start), the lane sends
    # its next turns as one-token warm-up requests, and measuring starts after them. Same seed, same drawn start.
    trace = parse_trace(_conversation([[1], [1, 2], [1, 2, 3], [1, 2, 3, 4], [1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 6]]),
                        "hand.json")  # fmt: skip
    (plain,) = [next(lane) for lane in lane_trees(trace, ReplayShape(concurrency=1, seed=7))]
    (warmed,) = [next(lane) for lane in lane_trees(trace, ReplayShape(concurrency=1, seed=7,
                                                                       warmup_requests_per_lane=1))]  # fmt: skip
    start = plain.first_turn
    assert plain.primers == (start - 1,) and warmed.primers == (start - 1, start) and warmed.first_turn == start + 1
    order = replay_order(trace, ReplayShape(concurrency=1, seed=7, warmup_requests_per_lane=1), requests_per_lane=1)
    assert [(step.turn, step.primer) for step in order] == [(start - 1, True), (start, True), (start + 1, False)]
    # Ten asked for, fewer turns left: the lane keeps its last turn to measure.
    (clamped,) = [next(lane) for lane in lane_trees(trace, ReplayShape(concurrency=1, seed=7,
                                                                        warmup_requests_per_lane=10))]  # fmt: skip
    assert clamped.first_turn == 5 and clamped.primers == tuple(range(start - 1, 5))


def test_without_a_warm_start_the_warmup_turns_are_the_first_ones() -> None:
    # The harness with trajectory start ratio 0 and --warmup-requests-per-lane 1: turn 0 goes as a one-token warm-up
    # request and measuring starts at turn 1; no history before turn 0 to prime.
    trace = parse_trace(_conversation([[1], [1, 2], [1, 2, 3], [1, 2, 3, 4]]), "hand.json")
    (plain,) = [next(lane) for lane in lane_trees(trace, ReplayShape(concurrency=1, warmup=False))]
    assert plain.first_turn == 0 and plain.primers == ()
    shape = ReplayShape(concurrency=1, warmup=False, warmup_requests_per_lane=1)
    (warmed,) = [next(lane) for lane in lane_trees(trace, shape)]
    assert warmed.first_turn == 1 and warmed.primers == (0,)
    order = replay_order(trace, shape, requests_per_lane=1)
    assert [(step.turn, step.primer) for step in order] == [(0, True), (1, False)]
    (clamped,) = [next(lane) for lane in lane_trees(trace, ReplayShape(concurrency=1, warmup=False,
                                                                        warmup_requests_per_lane=10))]  # fmt: skip
    assert clamped.first_turn == 3 and clamped.primers == (0, 1, 2)


@pytest.mark.parametrize("seed", [0, 3, 11])
def test_phase_start_delays_follow_each_lanes_think_time_as_asked(seed: int) -> None:
    # Recorded gaps of 1, 2, 3, 4 and 5 s before turns 1-5 (no response times): a lane warm-started at turn k waits
    # k s under 'own-think-time'; the harness subtracts the smallest of them; 'at-once' waits nothing.
    times = [0.0, 1.0, 3.0, 6.0, 10.0, 15.0]
    requests = [{"t": t, "type": "s", "in": 5 * (turn + 1), "out": 1, "hash_ids": list(range(turn + 1))}
                for turn, t in enumerate(times)]  # fmt: skip
    trace = parse_trace(json.dumps({"id": "gaps", "block_size": 4, "requests": requests}).encode(), "gaps.json")
    firsts = [next(lane).first_turn for lane in lane_trees(trace, ReplayShape(concurrency=4, seed=seed))]
    own = [times[turn] - times[turn - 1] for turn in firsts]
    delays = {rule: phase_start_delays(trace, ReplayShape(concurrency=4, seed=seed, phase_start=rule))
              for rule in ("own-think-time", "less-phase-minimum", "at-once")}  # fmt: skip
    assert delays["own-think-time"] == own
    assert delays["less-phase-minimum"] == [delay - min(own) for delay in own] and 0.0 in delays["less-phase-minimum"]
    assert delays["at-once"] == [0.0] * 4
    # A lane started at its first turn has no think time to keep, whatever the rule.
    assert phase_start_delays(trace, ReplayShape(concurrency=2, warmup=False, phase_start="own-think-time")) == [0, 0]


def test_capacity_from_the_registries_worked_by_hand() -> None:
    model = load_model_registry()["llama-3.3-70b"]
    b200 = load_hardware_registry()["b200"]
    capacity = kv_capacity(model, b200, gpus=8, precision="fp8", block_size=16, memory_utilization=0.9, dram_gib=64)
    # By hand from config.json and the registry: 80 layers x 8 KV heads x 128 dims x (K, V) x 2 bytes (bf16 KV);
    # 70e9 parameters at one byte (fp8); 8 x 180 GB of HBM at 90 %, the vendor's GB being binary (GiB: nvidia-smi
    # shows a B200 as 183,359 MiB).
    per_token = 80 * 8 * 128 * 2 * 2
    weights = 70e9
    kv_bytes = 180 * 2**30 * 8 * 0.9 - weights
    assert capacity.block_bytes == per_token * 16
    assert capacity.hbm_blocks == int(kv_bytes // (per_token * 16))
    assert capacity.dram_blocks == int(64 * 2**30 // (per_token * 16))
    with pytest.raises(ValueError, match="precision: got 'fp3'"):
        kv_capacity(model, b200, gpus=8, precision="fp3", block_size=16)
