"""The scheduler model of the planner: pinned blocks, first-come admission, preemption, worked by hand."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runners.traces.formats import load_trace, parse_trace
from runners.traces.planner import ReplayShape, ReplayTraffic
from runners.traces.scheduler_sim import StepTiming, scheduled_hit_rate
from tests.agentx_example import agentx_example_corpus
from tests.unit.runners.traces.test_planner import SAMPLE, _conversation

# One step a second, prefill free, a budget no prompt here exceeds: each request (one output token) is
# admitted, prefilled and finished within one step, and the session's next turn arrives for the next step.
ONE_PER_STEP = StepTiming(step_s=1.0, prefill_s_per_token=0.0, token_budget=100)


def _hand_trace():  # type: ignore[no-untyped-def]
    # Engine block = trace block = 4 tokens; prompts of 5, 9, 13 tokens: blocks [1, u], [1, 2, u], [1, 2, 3, u]
    # (u: the partly filled last block, never hit).
    return parse_trace(_conversation([[1], [1, 2], [1, 2, 3]]), "hand.json")


def test_ample_cache_realises_what_the_lru_predicts() -> None:
    shape = ReplayShape(concurrency=2, warmup=False)
    result = scheduled_hit_rate(_hand_trace(), shape, 4, 100, ONE_PER_STEP, 6.0, time_scale=0.0)
    # Six steps: each lane runs two whole copies (turns at t = 0, 1, 2 and 3, 4, 5), hits 0 + 4 + 8 each.
    assert (result.requests, result.input_tokens, result.hit_tokens, result.preemptions) == (12, 108, 48, 0)
    assert result.rate == pytest.approx(ReplayTraffic(_hand_trace(), shape, 4, requests_per_lane=3).hit_rate(None).rate)


def test_running_requests_pin_their_blocks_and_the_next_turn_finds_its_history_evicted() -> None:
    # 4 blocks; lanes A (copy 0) and B (copy 1).
    #   t0: A1, B1 admitted (2 blocks each: the cache is full); both end, freed tail first: [uA A1 uB B1].
    #   t1: A2 hits A1 (4), takes 2 new blocks (evicting uA, uB); B2 would need 6 blocks: it waits.
    #   t2: B2 hits B1 (4), evicts uA2 and A2; A3 (hit A1, needs 7) waits.
    #   t3: A3 hits A1 (4), evicts B's blocks; B3 waits. t4: B3 admitted cold (0); lane A's next copy C waits.
    #   t5: C1 and D1 cold. Counted: 5+5+9+9+13+13+5+5 = 64 prompt tokens, 0+0+4+4+4+0+0+0 = 12 hit.
    result = scheduled_hit_rate(_hand_trace(), ReplayShape(concurrency=2, warmup=False), 4, 4, ONE_PER_STEP, 6.0,
                                time_scale=0.0)  # fmt: skip
    assert (result.requests, result.input_tokens, result.hit_tokens, result.preemptions) == (8, 64, 12, 0)
    # The LRU, which never pins, sees the same cache as far roomier (20/54, tests/unit/.../test_planner.py).
    lru = ReplayTraffic(_hand_trace(), ReplayShape(concurrency=2, warmup=False), 4, requests_per_lane=3)
    assert result.rate < lru.hit_rate(4).rate - 0.15


def test_a_request_that_cannot_grow_preempts_the_latest_admitted() -> None:
    # Two lanes whose prompts fit together but whose 8-token answers do not: the second admitted is preempted.
    long_answers = parse_trace(
        json.dumps({"id": "one", "block_size": 4, "requests": [{"t": 0.0, "type": "s", "in": 5, "out": 8,
                                                               "hash_ids": [1]}]}).encode(),
        "one.json",
    )  # fmt: skip
    result = scheduled_hit_rate(long_answers, ReplayShape(concurrency=2, warmup=False), 4, 5, ONE_PER_STEP, 20.0,
                                time_scale=0.0)  # fmt: skip
    assert result.preemptions > 0 and result.requests >= 2


def test_a_real_trace_loses_hits_only_when_the_cache_is_tight() -> None:
    trace = load_trace(SAMPLE)  # a Claude Code session: 21k-88k-token prompts, scaled by 1/8
    shape = ReplayShape(concurrency=4, seed=1, length_scale=0.125)
    timing = StepTiming(step_s=0.02, prefill_s_per_token=0.0002, token_budget=2048)
    roomy = scheduled_hit_rate(trace, shape, 16, 100_000, timing, 60.0, time_scale=0.01)
    assert roomy.requests > 20 and roomy.preemptions == 0
    # Prompts of 2.7k-11k tokens (170-690 blocks of 16) for each of the four live sessions: 1,750 blocks still
    # keep their histories between turns, 1,000 barely hold what runs. (Each warm-started lane's first turn waits its
    # think time, as the replayer's does, so the lanes' long prompts overlap as they do in the replay, not in step.)
    assert scheduled_hit_rate(trace, shape, 16, 1_750, timing, 60.0, time_scale=0.01).rate > roomy.rate - 0.05
    tight = scheduled_hit_rate(trace, shape, 16, 1_000, timing, 60.0, time_scale=0.01)
    assert tight.rate < roomy.rate - 0.2 and tight.preemptions > 0


def test_with_a_request_count_the_model_serves_that_many_however_slow_its_steps() -> None:
    # A Point measured 12 requests; a model ten times slower than that engine still predicts for those 12 (in
    # 6 s it would have served 1 step, 2 requests, all first turns: a 0 % hit rate for a trace that reaches 44 %).
    slow = StepTiming(step_s=10.0, prefill_s_per_token=0.0, token_budget=100)
    shape = ReplayShape(concurrency=2, warmup=False)
    by_time = scheduled_hit_rate(_hand_trace(), shape, 4, 100, slow, 6.0, time_scale=0.0)
    by_count = scheduled_hit_rate(_hand_trace(), shape, 4, 100, slow, 6.0, time_scale=0.0, requests=12)
    assert (by_time.requests, by_time.hit_tokens) == (2, 0)
    assert (by_count.requests, by_count.input_tokens, by_count.hit_tokens) == (12, 108, 48)


def test_a_request_count_the_cache_can_never_serve_still_ends() -> None:
    # A one-block cache and prompts that need two: none is ever admitted, and the model stops at its horizon.
    result = scheduled_hit_rate(_hand_trace(), ReplayShape(concurrency=1, warmup=False), 4, 1, ONE_PER_STEP, 1.0,
                                time_scale=0.0, requests=10)  # fmt: skip
    assert result.requests < 10


def _agentx_example() -> Any:  # type: ignore[no-untyped-def]
    # One step a second, one token each: A's first answer ends at t = 1 and it thinks 200 s; B's 60-token answer
    # runs from 2 to 62, then B thinks 1,000 s.
    return parse_trace(agentx_example_corpus(b_answer_tokens=60).encode(), "example.jsonl")


def test_the_scheduler_model_applies_agentx_idle_caps_as_the_replayer_does() -> None:
    # With AgentX's caps A's second request arrives at 72 s (B idle from 62, plus 10 s of whole-system idle), so
    # by t = 73 four requests were served and by t = 71.5 three; without caps it would wait until 201 s.
    shape = ReplayShape(concurrency=2, warmup=False)
    capped = [scheduled_hit_rate(_agentx_example(), shape, 4, 100, ONE_PER_STEP, until, time_scale=1.0).requests
              for until in (71.5, 73.0)]  # fmt: skip
    assert capped == [3, 4]
    uncapped = scheduled_hit_rate(_agentx_example(), shape, 4, 100, ONE_PER_STEP, 73.0, time_scale=1.0,
                                  tree_cap_s=None, system_cap_s=None)  # fmt: skip
    assert uncapped.requests == 3


def _join_trace():  # type: ignore[no-untyped-def]
    # The parent's request 0 (t = 0, answered in 1 s) spawns a subagent recorded at t = 20, after that answer ended;
    # its three requests are 2 s apart and it ends at t = 26 (duration_ms), so the parent's request at t = 30 joins it.
    def request(t: float, ids: list[int]) -> dict[str, Any]:
        return {"t": t, "type": "s", "in": 4 * len(ids), "out": 1, "hash_ids": ids, "api_time": 1.0}

    return parse_trace(json.dumps({"id": "join", "block_size": 4, "requests": [
        request(0.0, [1]),
        {"t": 20.0, "type": "subagent", "duration_ms": 6000,
         "requests": [request(0.0, [5]), request(2.0, [5, 6]), request(4.0, [5, 6, 7])]},
        request(30.0, [1, 2]),
    ]}).encode(), "join.json")  # fmt: skip


def test_the_scheduler_model_spawns_and_joins_subagents_as_agentx_does() -> None:
    # As the replayer (and AIPerf) does: the subagent starts as the parent's request 0 ends (t = 1; its recorded 19 s
    # from that end is dropped), its requests follow 1 s of idle gap each (t = 1, 3, 5), and the parent's request
    # joining it is sent as the subagent's last ends (t = 6), not at its own recorded gap (t = 30). No idle caps.
    shape = ReplayShape(concurrency=1, warmup=False)
    served = [scheduled_hit_rate(_join_trace(), shape, 4, 100, ONE_PER_STEP, until, time_scale=1.0, tree_cap_s=None,
                                 system_cap_s=None).requests for until in (2.5, 4.5, 6.5)]  # fmt: skip
    assert served == [2, 3, 5]


def test_the_scheduler_model_sends_a_join_after_its_recorded_gap_as_the_agentx_harness_does() -> None:
    # `join: after-recorded-gap` (agentx-harness 1.0.12), as the replayer: the same trace, the parent's join waits for
    # the subagent (ended at t = 6) and for its own recorded gap after its request 0 ended at t = 1: 30 - 0 - 1 = 29 s,
    # so it is sent at t = 30, not 6.
    shape = ReplayShape(concurrency=1, warmup=False)
    served = [scheduled_hit_rate(_join_trace(), shape, 4, 100, ONE_PER_STEP, until, time_scale=1.0, tree_cap_s=None,
                                 system_cap_s=None, join="after-recorded-gap").requests
              for until in (6.5, 29.5, 30.5)]  # fmt: skip
    assert served == [4, 4, 5]
