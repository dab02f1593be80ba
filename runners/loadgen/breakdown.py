"""A replay Point's figures by turn and by context length: how the cache behaves as an agent's session grows.

Mooncake's and SGLang HiCache's reports give TTFT and hit rate per conversation round and context length; a Point's
one hit rate hides that the first turns of a session miss and the long contexts hit. The measured requests that
succeeded are grouped by their turn in their session (0, 1, 2-3, 4-7, ...: powers of two) and by the prompt
length they sent (below 1k tokens, 1k-2k, 2k-4k, ...). Each group gives its requests, TTFT p50, prompt length p50,
the realised hit rate (Σ usage cached_tokens / Σ prompt tokens, over requests whose usage says it) and the trace's
theoretical hit rate of the very same requests (their hits in the replayed walk, runners/traces/hit_rate.py), so
the realised curve is read against its own ceiling.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence

from runners.loadgen.metrics import request_latency
from runners.loadgen.records import ReplayBucket, RequestRecord
from runners.traces.hit_rate import HitRate


def _power_of_two_range(value: int) -> tuple[int, int]:
    """[0, 0], [1, 1], [2, 3], [4, 7], ...: the range of `value`."""
    if value < 2:
        return value, value
    low = 1 << (value.bit_length() - 1)
    return low, 2 * low - 1


def _kilo(tokens: int) -> str:
    return f"{tokens // 1024}k" if tokens >= 1024 else str(tokens)


def _context_range(tokens: int) -> tuple[int, int]:
    """Below 1k tokens, then [1k, 2k), [2k, 4k), ...: the range of a prompt of `tokens` tokens."""
    if tokens < 1024:
        return 0, 1023
    low = 1 << (tokens.bit_length() - 1)
    return low, 2 * low - 1


def _bucket(
    label: str, low: int, high: int, members: list[tuple[RequestRecord, int | None]], walk: HitRate
) -> ReplayBucket:
    ttfts = [latency.ttft_ms for record, _ in members if (latency := request_latency(record)) and latency.ttft_ms]
    with_usage = [record for record, _ in members if record.cached_tokens is not None]
    prompt = sum(record.prompt_tokens or record.prompt_tokens_sent for record in with_usage)
    placed = [position for _, position in members if position is not None]
    walked = sum(int(walk.input_tokens[position]) for position in placed)
    return ReplayBucket(
        label=label, low=low, high=high, requests=len(members),
        ttft_p50_ms=statistics.median(ttfts) if ttfts else None,
        prompt_tokens_p50=statistics.median(record.prompt_tokens_sent for record, _ in members),
        realized_hit_rate=sum(record.cached_tokens or 0 for record in with_usage) / prompt if prompt else None,
        theoretical_hit_rate=sum(int(walk.hit_tokens[position]) for position in placed) / walked if walked else None,
    )  # fmt: skip


def _placed(
    records: Sequence[RequestRecord], walk: HitRate, path_of: Callable[[str], str]
) -> list[tuple[RequestRecord, int | None]]:
    """Each measured request that succeeded, with where in `walk` it lies (the walk's keys are '<path>:<turn>')."""
    position = {key: index for index, key in enumerate(walk.keys)}
    return [
        (record, position.get(f"{path_of(record.session)}:{record.turn}"))
        for record in records
        if not record.warmup and record.ok and record.session is not None and record.turn is not None
    ]


def measured_positions(records: Sequence[RequestRecord], walk: HitRate, path_of: Callable[[str], str]) -> list[int]:
    """Where in `walk` each measured request that succeeded lies."""
    return [index for _, index in _placed(records, walk, path_of) if index is not None]


def _grouped(
    records: Sequence[RequestRecord], walk: HitRate, path_of: Callable[[str], str],
    range_of: Callable[[RequestRecord], tuple[int, int]], label_of: Callable[[int, int], str],
) -> list[ReplayBucket]:  # fmt: skip
    groups: dict[tuple[int, int], list[tuple[RequestRecord, int | None]]] = defaultdict(list)
    for record, index in _placed(records, walk, path_of):
        groups[range_of(record)].append((record, index))
    return [_bucket(label_of(low, high), low, high, members, walk) for (low, high), members in sorted(groups.items())]


def by_turn(records: Sequence[RequestRecord], walk: HitRate, path_of: Callable[[str], str]) -> list[ReplayBucket]:
    """The measured requests grouped by their turn in their session; `path_of` maps a record's session id to the
    trace session's path (the walk's keys are '<path>:<turn>')."""

    def label(low: int, high: int) -> str:
        return f"turn {low}" if low == high else f"turn {low}-{high}"

    return _grouped(records, walk, path_of, lambda record: _power_of_two_range(record.turn or 0), label)


def by_context(records: Sequence[RequestRecord], walk: HitRate, path_of: Callable[[str], str]) -> list[ReplayBucket]:
    """The measured requests grouped by the prompt length they sent."""

    def label(low: int, high: int) -> str:
        return f"below {_kilo(high + 1)} tokens" if low == 0 else f"{_kilo(low)}-{_kilo(high + 1)} tokens"

    return _grouped(records, walk, path_of, lambda record: _context_range(record.prompt_tokens_sent), label)
