"""Prompt synthesis: deterministic, exact lengths, sharing exactly what the trace shares, salted per copy."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from runners.engines.simulated_server import PrefixCache
from runners.traces.formats import load_trace, parse_trace
from runners.traces.models import Trace, TraceRequest
from runners.traces.synthesis import BlockCache, TokenPrompt, scope_key, synthesize, synthesize_prompt
from tests.conftest import TRACES

pytestmark = pytest.mark.timeout(60)

WEKA_SUB = TRACES / "claude-code-weka" / "sample_trace_with_subagent.json"

VOCAB = (100, 5000)


def request(key: str, input_tokens: int, hash_ids: tuple[int, ...]) -> TraceRequest:
    return TraceRequest(key=key, t=0.0, input_tokens=input_tokens, output_tokens=1, hash_ids=hash_ids)


def mooncake(lines: list[dict[str, object]]) -> Trace:
    return parse_trace("\n".join(json.dumps(line) for line in lines).encode(), "tiny.jsonl")


def test_deterministic_and_independent_of_cache_state() -> None:
    r = request("0:3", 300, (7, 8, 9))
    first = synthesize(r, 64, "g|x|0", VOCAB, cache=BlockCache())
    warm = BlockCache()
    synthesize(request("0:1", 200, (9, 8, 7)), 64, "g|x|0", VOCAB, cache=warm)  # other order, other request
    assert synthesize(r, 64, "g|x|0", VOCAB, cache=warm) == first
    assert synthesize(r, 64, "g|x|0", VOCAB) == first  # module-wide cache
    tiny = BlockCache(max_tokens=64)  # evicts all the time
    assert synthesize(r, 64, "g|x|0", VOCAB, cache=tiny) == first
    assert tiny.tokens <= 3 * 64
    assert all(isinstance(token, int) and VOCAB[0] <= token < VOCAB[1] for token in first)
    assert len(set(first)) > 200  # random-looking, not constant


@pytest.mark.parametrize(
    ("input_tokens", "hash_ids"),
    [(300, (1, 2, 3)), (192, (1, 2, 3)), (150, (1, 2, 3)), (130, (1, 2, 3)), (50, ()), (1, (1,)), (64, (1,))],
)
def test_exact_lengths(input_tokens: int, hash_ids: tuple[int, ...]) -> None:
    prompt = synthesize(request("0:0", input_tokens, hash_ids), 64, "s", VOCAB, cache=BlockCache())
    assert len(prompt) == input_tokens


def test_blocks_then_truncation_then_filler() -> None:
    cache = BlockCache()
    full = synthesize(request("0:0", 192, (1, 2, 3)), 64, "s", VOCAB, cache=cache)  # exactly three blocks
    partial = synthesize(request("0:1", 150, (1, 2, 3)), 64, "s", VOCAB, cache=cache)  # Mooncake: last block cut
    longer = synthesize(request("0:2", 230, (1, 2, 3)), 64, "s", VOCAB, cache=cache)  # Weka: 38 tokens of filler
    other = synthesize(request("0:3", 230, (1, 2, 3)), 64, "s", VOCAB, cache=cache)
    assert partial == full[:150]
    assert longer[:192] == full and other[:192] == full
    assert longer[192:] != other[192:]  # filler is private to each request
    assert synthesize(request("0:2", 230, (1, 2, 3)), 64, "s", VOCAB, cache=BlockCache()) == longer


def test_equal_ids_at_other_positions_give_equal_blocks() -> None:
    a = synthesize(request("0:0", 192, (0, 5, 6)), 64, "s|x|0", VOCAB)
    b = synthesize(request("0:1", 192, (0, 6, 5)), 64, "s|x|0", VOCAB)
    assert a[:64] == b[:64] and a[64:128] == b[128:] and a[128:] == b[64:128] and a[64:128] != a[128:]
    # A prompt's first block carries the copy's salt, so an id there is not the same block as at other positions:
    # in a prefix-chained cache a first block is only ever found as a first block.
    assert synthesize(request("0:2", 64, (5,)), 64, "s|x|0", VOCAB) != a[64:128]


def test_global_scope_shares_across_sessions_within_a_copy_only() -> None:
    trace = mooncake(
        [
            {"timestamp": 0, "input_length": 1000, "output_length": 1, "hash_ids": [0, 1]},
            {"timestamp": 5, "input_length": 1200, "output_length": 1, "hash_ids": [0, 2, 3]},
        ]
    )
    assert trace.hash_id_scope == "global"
    one, two = (s.requests[0] for s in trace.sessions)
    key_a, key_b = scope_key(trace, "copy-a", 0), scope_key(trace, "copy-a", 1)
    assert key_a == key_b  # the root session plays no part under the global scope
    a1, a2 = synthesize(one, 512, key_a, VOCAB), synthesize(two, 512, key_b, VOCAB)
    assert a1[:512] == a2[:512]  # block 0 shared by every request of the copy
    assert a1[512:1000] != a2[512:1000]
    b1 = synthesize(one, 512, scope_key(trace, "copy-b", 0), VOCAB)
    assert len(b1) == 1000 and np.mean(np.asarray(b1[:512]) == np.asarray(a1[:512])) < 0.01  # another copy: nothing
    # A corpus replayed as one id space passes a namespace shared by its files.
    other = dataclasses.replace(trace, content_hash="f" * 64)
    assert scope_key(other, "copy-a") != key_a
    assert scope_key(other, "copy-a", namespace="corpus") == scope_key(trace, "copy-a", namespace="corpus")


def test_session_scope_keeps_root_sessions_apart() -> None:
    trace = dataclasses.replace(
        mooncake(
            [
                {"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [0, 1]},
                {"timestamp": 5, "input_length": 600, "output_length": 1, "hash_ids": [0, 1]},
            ]
        ),
        hash_id_scope="session",
    )
    one, two = (s.requests[0] for s in trace.sessions)
    p1 = synthesize(one, 512, scope_key(trace, 0, 0), VOCAB)
    p2 = synthesize(two, 512, scope_key(trace, 0, 1), VOCAB)
    assert p1[:512] != p2[:512]
    assert synthesize(two, 512, scope_key(trace, 0, 0), VOCAB)[:512] == p1[:512]


def test_real_subagent_trace_shares_within_session_and_with_subagents() -> None:
    trace = load_trace(WEKA_SUB)
    (root,) = trace.sessions
    cache = BlockCache()

    def prompt(r: TraceRequest, salt: str) -> list[int]:
        return synthesize(r, trace.block_size, scope_key(trace, salt, 0), VOCAB, cache=cache)

    timeline = trace.timeline()
    prompts = [prompt(item.request, "copy-0") for item in timeline]
    assert [len(p) for p in prompts] == [item.request.input_tokens for item in timeline]

    def shared_prefix_tokens(a: list[int], b: list[int]) -> int:
        n = min(len(a), len(b))
        diff = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
        return int(diff[0]) if len(diff) else n

    def common_ids(a: TraceRequest, b: TraceRequest) -> int:
        run = 0
        for x, y in zip(a.hash_ids, b.hash_ids, strict=False):
            if x != y:
                break
            run += 1
        return run

    # Within the root session: consecutive requests share exactly their common hash-id prefix.
    first, second = root.requests[0], root.requests[1]
    run = common_ids(first, second)
    assert run > 300
    assert run * 64 <= shared_prefix_tokens(prompt(first, "copy-0"), prompt(second, "copy-0")) < run * 64 + 64
    # Sibling subagents share their tools+system prefix (164 blocks), not the parent's.
    sub_a, sub_b = root.subagents[0].requests[0], root.subagents[1].requests[0]
    run = common_ids(sub_a, sub_b)
    assert run == 164
    assert run * 64 <= shared_prefix_tokens(prompt(sub_a, "copy-0"), prompt(sub_b, "copy-0")) < run * 64 + 64
    assert shared_prefix_tokens(prompt(sub_a, "copy-0"), prompt(first, "copy-0")) < 64
    # Another copy differs in its first block (only chance coincidences of single tokens), so it shares no prefix
    # with this one; the blocks after it are drawn once for both (the filler after the blocks is each request's own).
    other = prompt(first, "copy-1")
    mine = prompt(first, "copy-0")
    blocks_end = min(len(first.hash_ids) * 64, first.input_tokens)
    assert (np.asarray(other[:64]) == np.asarray(mine[:64])).mean() < 0.1
    assert shared_prefix_tokens(other, mine) < 64 and other[64:blocks_end] == mine[64:blocks_end]


def test_rejects_bad_arguments() -> None:
    r = request("0:0", 10, ())
    with pytest.raises(ValueError, match="vocabulary_range"):
        synthesize(r, 64, "s", (5, 5))
    with pytest.raises(ValueError, match="block_size"):
        synthesize(r, 0, "s", VOCAB)


@pytest.mark.parametrize(
    ("input_tokens", "hash_ids"),
    [(300, (7, 8, 9)), (130, (7, 8, 9)), (64, (7,)), (10, ()), (0, ()), (200, (7, 7, 8))],
    ids=["filler", "partial-last-block", "one-block", "filler-only", "empty", "repeated-block"],
)
def test_a_prompts_json_array_is_its_ids(input_tokens: int, hash_ids: tuple[int, ...]) -> None:
    cache = BlockCache()
    synthesize(request("0:0", 500, (9, 8, 7)), 64, "g|x|0", VOCAB, cache=cache)  # blocks already cached
    prompt = synthesize_prompt(request("0:3", input_tokens, hash_ids), 64, "g|x|0", VOCAB, cache=cache)
    ids = synthesize(request("0:3", input_tokens, hash_ids), 64, "g|x|0", VOCAB, cache=BlockCache())
    assert prompt.ids() == ids and len(prompt) == input_tokens
    assert json.loads(prompt.json_array()) == ids


def test_a_prompt_made_elsewhere_keeps_its_ids() -> None:
    assert json.loads(TokenPrompt.of([5, 0, 17]).json_array()) == [5, 0, 17]
    assert TokenPrompt.of(np.array([3, 4])).ids() == [3, 4]
    assert TokenPrompt.of([]).json_array() == b"[]" and len(TokenPrompt.of([])) == 0


def test_padded_json_of_any_ids_reads_back_as_the_ids() -> None:
    for ids in (np.array([0, 5, 255, 256, 99_999]), np.array([1 << 21, 3]), np.array([7], dtype=np.int32)):
        assert json.loads(TokenPrompt.of(ids).json_array()) == ids.tolist()


def test_a_growing_session_reuses_its_last_prompt_and_still_sees_a_rewritten_one() -> None:
    cache = BlockCache()
    first = synthesize(request("0:0", 128, (1, 2)), 64, "s|x|0", VOCAB, cache=cache)
    grown = synthesize(request("0:1", 256, (1, 2, 3, 4)), 64, "s|x|0", VOCAB, cache=cache)
    compacted = synthesize(request("0:2", 192, (1, 5, 6)), 64, "s|x|0", VOCAB, cache=cache)
    fresh = BlockCache()
    assert grown[:128] == first and grown == synthesize(request("0:1", 256, (1, 2, 3, 4)), 64, "s|x|0", VOCAB,
                                                        cache=fresh)  # fmt: skip
    assert compacted[:64] == first[:64] and compacted[64:128] != grown[64:128]
    assert compacted == synthesize(request("0:2", 192, (1, 5, 6)), 64, "s|x|0", VOCAB, cache=BlockCache())


def test_two_copies_differ_in_their_first_block_and_hit_nothing_of_each_other_in_a_chained_cache() -> None:
    """Only a prompt's first block carries the copy's salt (the module's docstring): the later blocks are drawn once
    for every copy, and a prefix-chained cache (the simulated engine's, as vLLM's and SGLang's) still finds nothing
    of one copy in the other."""
    trace = mooncake([{"timestamp": 0, "input_length": 2048, "output_length": 1, "hash_ids": [0, 1, 2, 3]}])
    (session,) = trace.sessions
    cache = BlockCache()
    a, b = (synthesize(session.requests[0], 512, scope_key(trace, salt, 0), VOCAB, cache=cache)
            for salt in ("copy-a", "copy-b"))  # fmt: skip
    assert np.mean(np.asarray(a[:512]) == np.asarray(b[:512])) < 0.01 and a[512:] == b[512:]
    assert cache.generated == 5  # the shared three blocks drawn once, a first block per copy
    engine = PrefixCache(block_size=16, capacity_blocks=10_000)
    assert engine.lookup_and_insert(a) == (0, 0)
    assert engine.lookup_and_insert(b) == (0, 0)  # another copy: no hit, although three quarters of it are equal
    assert engine.lookup_and_insert(a)[0] == 2032  # the same copy again: all but the last (partial) block
