"""A replay Point's requests by turn and by prompt length, each range with its realised and theoretical hit rate."""

from __future__ import annotations

import numpy as np

from runners.loadgen.breakdown import by_context, by_turn
from runners.loadgen.records import RequestRecord
from runners.traces.hit_rate import HitRate


def record(session: str, turn: int, prompt: int, cached: int | None, ttft_s: float, *, warmup: bool = False,
           error: str | None = None) -> RequestRecord:  # fmt: skip
    return RequestRecord(
        index=turn, warmup=warmup, prompt_tokens_sent=prompt, max_tokens=2, scheduled=0.0, sent=0.0,
        first_byte=ttft_s, chunk_times=[ttft_s, ttft_s + 0.01], chunk_tokens=[1, 1], end=ttft_s + 0.01,
        prompt_tokens=prompt, completion_tokens=2, cached_tokens=cached, session=session, turn=turn, error=error,
    )  # fmt: skip


# The walk: session "0" turns 0-5, the hits the trace allows each (turn 0 none; then most of the growing context).
WALK = HitRate(
    block_size=16, trace_block_size=16, engine_accounting=True,
    keys=tuple(f"0:{turn}" for turn in range(6)),
    input_tokens=np.array([500, 1500, 2500, 3000, 5000, 9000]),
    runs=np.zeros(6, dtype=int), hit_tokens=np.array([0, 480, 1488, 2496, 2992, 4992]),
)  # fmt: skip
RECORDS = [
    record("s-0", 0, 500, 0, 0.10),
    record("s-0", 1, 1500, 400, 0.05),
    record("s-0", 2, 2500, 1400, 0.04),
    record("s-0", 3, 3000, None, 0.06),  # no usage detail: in the TTFT, not in the realised rate
    record("s-0", 4, 5000, 2900, 0.08),
    record("s-0", 5, 9000, 4900, 0.20),
    record("s-0", 5, 9000, 9000, 0.01, warmup=True),  # never measured
    record("s-0", 4, 5000, 0, 0.01, error="HTTP 500"),  # failed: left out
]


def test_by_turn_in_powers_of_two_against_the_same_requests_ceiling() -> None:
    buckets = by_turn(RECORDS, WALK, lambda session: "0")
    assert [(b.label, b.requests) for b in buckets] == [
        ("turn 0", 1), ("turn 1", 1), ("turn 2-3", 2), ("turn 4-7", 2)]  # fmt: skip
    later = buckets[2]
    assert (later.low, later.high, later.prompt_tokens_p50, later.ttft_p50_ms) == (2, 3, 2750, 50.0)
    assert later.realized_hit_rate == 1400 / 2500  # turn 3 reports no cached tokens
    assert later.theoretical_hit_rate == (1488 + 2496) / (2500 + 3000)
    assert buckets[0].realized_hit_rate == 0 and buckets[0].theoretical_hit_rate == 0


def test_by_context_length_and_requests_the_walk_does_not_know() -> None:
    stray = record("s-1", 9, 700, 100, 0.3)  # a session the walk has no key for: counted, no theoretical share
    buckets = by_context([*RECORDS, stray], WALK, lambda session: session.removeprefix("s-"))
    assert [(b.label, b.requests) for b in buckets] == [
        ("below 1k tokens", 2), ("1k-2k tokens", 1), ("2k-4k tokens", 2), ("4k-8k tokens", 1), ("8k-16k tokens", 1)]  # fmt: skip
    assert buckets[0].theoretical_hit_rate == 0 and buckets[0].realized_hit_rate == 100 / 1200
    assert (buckets[-1].low, buckets[-1].high) == (8192, 16383)
