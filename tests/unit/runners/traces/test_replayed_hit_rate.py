"""The theoretical hit rate a replay publishes is what its synthesised prompts allow an engine to hit.

Second method: synthesise every prompt of the trace as the replayer does (blocks of round(block x scale) tokens,
prompts of ceil(in x scale) tokens), then run an ideal prefix cache of the engine's B-token blocks over the token
ids themselves (a block hits when it and every block before it were seen; at most (len - 1) // B blocks, as vLLM
recomputes the last token). No trace bookkeeping is shared with `replayed_hit_rate`.
"""

from __future__ import annotations

import pytest

from runners.traces.formats import load_trace
from runners.traces.hit_rate import replayed_hit_rate, theoretical_hit_rate
from runners.traces.planner import scaled_lengths
from runners.traces.synthesis import BlockCache, scope_key, synthesize
from tests.conftest import TRACES

WEKA = TRACES / "claude-code-weka" / "sample_trace_with_subagent.json"


def _engine_hit_rate(path, engine_block: int, scale: float) -> float:  # type: ignore[no-untyped-def]
    trace = load_trace(path)
    blocks = BlockCache()
    seen: set[tuple[int, ...]] = set()
    hits = total = 0
    for item in trace.timeline():
        length, _, block = scaled_lengths(item.request.input_tokens, 1, trace.block_size, scale, None)
        scaled = type(item.request)(item.request.key, item.request.t, length, 1, item.request.hash_ids)
        prompt = synthesize(scaled, block, scope_key(trace, "0-0", item.root), (10, 1000), cache=blocks)
        chain: tuple[int, ...] = ()
        hit_blocks, counting = 0, True
        for start in range(0, len(prompt) - len(prompt) % engine_block, engine_block):
            chain = (*chain, hash(tuple(prompt[start : start + engine_block])))
            if counting and chain in seen:
                hit_blocks += 1
            else:
                counting = False
            seen.add(chain)
        hits += min(hit_blocks, (len(prompt) - 1) // engine_block) * engine_block
        total += len(prompt)
    return hits / total


@pytest.mark.parametrize(("engine_block", "scale"), [(16, 0.1), (16, 0.25), (128, 1 / 32), (32, 0.3), (128, 0.5)])
def test_the_published_rate_is_what_the_synthesised_prompts_allow(engine_block: int, scale: float) -> None:
    published = replayed_hit_rate(load_trace(WEKA), engine_block, scale).rate
    assert published == pytest.approx(_engine_hit_rate(WEKA, engine_block, scale), abs=1e-9)


def test_rebasing_the_unscaled_trace_overstated_it_when_block_times_scale_is_fractional() -> None:
    # 64 x 0.1 = 6.4: the synthesiser makes 6-token blocks, so engine blocks of 16 cover fewer trace blocks
    # than 16 / 0.1 = 160 trace tokens would suggest.
    trace = load_trace(WEKA)
    old = theoretical_hit_rate(trace).rebase(round(16 / 0.1)).rate
    assert old > replayed_hit_rate(trace, 16, 0.1).rate + 0.005
