"""From request records to Point aggregates: latencies, measured window, throughput, validity.

Definitions (docs/ARCHITECTURE.md §4, docs/METRICS.md):
- TTFT = first chunk carrying generated text - sent.
- TPOT = (last content chunk - first content chunk) / (output tokens - 1), per request.
- ITL  = gaps between content chunks; a chunk of k tokens contributes k gaps of gap/k.
- E2EL = end - sent; client queue = sent - scheduled.
- Interactivity at percentile p = 1000 / TPOT at p (so p90 is the slow tail).
- Window: from when in-flight requests first reach the target concurrency until they first fall
  below it after the last request was sent. Throughput counts what happened inside the window.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from recipes.schema import ValidityThresholds
from recipes.slo import SloTier, load_slo_tiers
from recipes.validity import Evidence, Origin, judge
from runners.loadgen.records import (
    GoodputSlo,
    MeasuredWindow,
    PointMetrics,
    RequestRecord,
    Stats,
    TierGoodput,
    Validity,
)


def failure_reasons(records: Sequence[RequestRecord], limit: int = 5) -> list[tuple[str, int]]:
    """The commonest reasons measured requests failed, with their counts (most frequent first)."""
    counts: dict[str, int] = {}
    for record in records:
        if not record.ok and not record.warmup:
            reason = (record.error or "failed without a reason")[:160]
            counts[reason] = counts.get(reason, 0) + 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]


def summarize(samples: Sequence[float]) -> Stats:
    if len(samples) == 0:
        return Stats(n=0, mean=None, p50=None, p90=None, p99=None, std=None)
    values = np.asarray(samples, dtype=float)
    p50, p90, p99 = (float(v) for v in np.percentile(values, [50, 90, 99]))
    return Stats(
        n=len(values),
        mean=float(values.mean()),
        p50=p50,
        p90=p90,
        p99=p99,
        p999=float(np.percentile(values, 99.9)) if len(values) >= 1000 else None,
        std=float(values.std()),
    )


def interactivity_from(tpot: Stats) -> Stats:
    def inverse(value: float | None) -> float | None:
        return 1000.0 / value if value else None

    return Stats(
        n=tpot.n,
        mean=inverse(tpot.mean),
        p50=inverse(tpot.p50),
        p90=inverse(tpot.p90),
        p99=inverse(tpot.p99),
        p999=inverse(tpot.p999),
        std=None,
    )


def measured_window(records: Sequence[RequestRecord], target: int) -> MeasuredWindow:
    """Steady-state window of a closed-loop run at `target` concurrency (see module docstring)."""
    events: list[tuple[float, int]] = []
    for record in records:
        if record.sent is None or record.end is None:
            continue
        events.append((record.sent, +1))
        events.append((record.end, -1))
    if not events:
        return MeasuredWindow(start=0.0, end=0.0, ramp_down_s=0.0, reached_target=False)
    # Ends sort before sends at the same instant: a freed slot is refilled, not double-counted.
    events.sort(key=lambda event: (event[0], event[1]))
    total_sends = sum(1 for _, delta in events if delta > 0)
    last_end = max(time for time, delta in events if delta < 0)
    in_flight = 0
    sends_seen = 0
    start: float | None = None
    end: float | None = None
    for time, delta in events:
        in_flight += delta
        sends_seen += delta > 0
        if start is None and in_flight >= target:
            start = time
        # The window closes at the first drop below target once every request has been sent.
        if start is not None and sends_seen == total_sends and in_flight < target and delta < 0:
            end = time
            break
    if start is None:
        first_send = min(time for time, delta in events if delta > 0)
        return MeasuredWindow(start=first_send, end=last_end, ramp_down_s=0.0, reached_target=False)
    end = last_end if end is None else end
    return MeasuredWindow(start=start, end=end, ramp_down_s=last_end - end, reached_target=True)


@dataclass(frozen=True)
class RequestLatency:
    """One request's latencies in ms, by the definitions above: what a Point aggregates and the hub draws."""

    index: int
    output_tokens: int
    ttft_ms: float | None  # None: no content chunk arrived
    tpot_ms: float | None  # None: fewer than 2 output tokens
    e2el_ms: float
    queue_ms: float
    itl_ms: tuple[float, ...]


def request_latency(record: RequestRecord) -> RequestLatency | None:
    """The latencies of one request that succeeded (None for a failed or unsent one)."""
    if not record.ok or record.sent is None or record.end is None:
        return None
    ttft = tpot = None
    gaps: list[float] = []
    if record.chunk_times:
        first, last = record.chunk_times[0], record.chunk_times[-1]
        ttft = (first - record.sent) * 1000
        if record.output_tokens > 1:
            tpot = (last - first) * 1000 / (record.output_tokens - 1)
        times = record.chunk_times[: len(record.chunk_tokens)]
        if max(record.chunk_tokens[1:], default=1) <= 1:  # a token a chunk (most streams): one gap each
            gaps = [(current - previous) * 1000 for previous, current in itertools.pairwise(times)]
        else:
            for previous, current, tokens in zip(
                record.chunk_times, record.chunk_times[1:], record.chunk_tokens[1:], strict=False
            ):
                share = max(tokens, 1)
                gaps.extend([(current - previous) * 1000 / share] * share)
    return RequestLatency(
        index=record.index, output_tokens=record.output_tokens, ttft_ms=ttft, tpot_ms=tpot,
        e2el_ms=(record.end - record.sent) * 1000, queue_ms=(record.sent - record.scheduled) * 1000,
        itl_ms=tuple(gaps),
    )  # fmt: skip


def _latencies(latencies: Iterable[RequestLatency | None]) -> dict[str, list[float]]:
    series: dict[str, list[float]] = {"ttft": [], "tpot": [], "itl": [], "e2el": [], "queue": []}
    for latency in latencies:
        if latency is None:
            continue
        series["e2el"].append(latency.e2el_ms)
        series["queue"].append(latency.queue_ms)
        if latency.ttft_ms is not None:
            series["ttft"].append(latency.ttft_ms)
        if latency.tpot_ms is not None:
            series["tpot"].append(latency.tpot_ms)
        series["itl"].extend(latency.itl_ms)
    return series


def _in_window(time: float | None, window: MeasuredWindow) -> bool:
    return time is not None and window.start <= time <= window.end


def open_loop_window(records: Sequence[RequestRecord]) -> MeasuredWindow:
    """Open loop has no target concurrency: the window runs from the first send to the last end."""
    sent = [r.sent for r in records if r.sent is not None]
    ended = [r.end for r in records if r.end is not None]
    if not sent or not ended:
        return MeasuredWindow(start=0.0, end=0.0, ramp_down_s=0.0, reached_target=False)
    return MeasuredWindow(start=min(sent), end=max(ended), ramp_down_s=0.0, reached_target=True)


def usage_evidence(succeeded: Sequence[RequestRecord]) -> list[str]:
    """What the streams themselves say of the server's usage counts, independent of the usage they came with:
    a count is never negative, never below the content chunks streamed (a chunk carries one token or more:
    speculative decoding and stream intervals batch tokens), and never above max_tokens."""
    reported = [(r, r.completion_tokens) for r in succeeded if r.completion_tokens is not None]
    negative = [r for r, usage in reported if usage < 0 or min(r.chunk_tokens, default=0) < 0]
    over = [(usage, r.max_tokens) for r, usage in reported if usage > r.max_tokens]
    under = [(usage, len(r.chunk_times)) for r, usage in reported if 0 <= usage < len(r.chunk_times)]
    reasons = []
    if negative:
        reasons.append(f"the server reported negative or decreasing output-token usage for {len(negative)} requests")
    if over:
        usage, asked = max(over)
        reasons.append(
            f"the server reported more output tokens than max_tokens for {len(over)} requests "
            f"(e.g. {usage} > {asked}): its usage cannot be trusted"
        )
    if under:
        usage, chunks = min(under, key=lambda pair: pair[0] - pair[1])
        reasons.append(
            f"the server reported fewer output tokens than content chunks streamed for {len(under)} requests "
            f"(e.g. {usage} tokens in {chunks} chunks)"
        )
    return reasons


def meets_slo(latency: RequestLatency | None, slo: GoodputSlo) -> bool:
    """Whether a request kept every bound of `slo`, judged on its latencies as the Point reports them
    (`request_latency`, the one definition, worked out once per request; None: it failed): a request with no content
    chunk has no TTFT and fails; one with a single output token has no time per output token to exceed, and keeps a
    TPOT bound (vLLM's goodput counts its TPOT as 0)."""
    if latency is None or latency.ttft_ms is None:
        return False
    return (
        (slo.ttft_ms is None or latency.ttft_ms <= slo.ttft_ms)
        and (slo.tpot_ms is None or latency.tpot_ms is None or latency.tpot_ms <= slo.tpot_ms)
        and (slo.e2el_ms is None or latency.e2el_ms <= slo.e2el_ms)
    )


def tier_goodput(measured: Sequence[RequestLatency | None], tiers: Sequence[SloTier]) -> dict[str, TierGoodput] | None:
    """For each SLO tier, the share of the measured requests (their latencies; None: failed) that met it on their
    own: first token within the tier's TTFT and their own output speed (1000 / TPOT) at least the tier's tok/s/user;
    a failed request met none. (The tier judges a Point by its TTFT p90 and median speed; this says how many requests
    that leaves behind.)"""
    if not measured:
        return None
    shares = {}
    for tier in tiers:
        slo = GoodputSlo(ttft_ms=tier.ttft_p90_ms, tpot_ms=1000.0 / tier.interactivity_p50)
        met = sum(1 for latency in measured if meets_slo(latency, slo))
        shares[tier.name] = TierGoodput(ttft_ms=tier.ttft_p90_ms, interactivity=tier.interactivity_p50,
                                        share=met / len(measured))  # fmt: skip
    return shares


def compute_point_metrics(
    records: Sequence[RequestRecord],
    concurrency: int,
    accelerators: int,
    thresholds: ValidityThresholds,
    open_loop: bool = False,
    slo: GoodputSlo | None = None,
    *,
    origin: Origin = "measured",
    evidence: Mapping[str, Any] | None = None,
    tiers: Sequence[SloTier] | None = None,
) -> PointMetrics:
    """Aggregates of one Point. `concurrency` is the closed-loop target (the cap, for open loop). The verdict is
    recipes/validity.py's checks for `origin`, on what the records show plus the caller's `evidence` (a replay's
    live sessions and schedule lag). `tiers`: the SLO tiers whose goodput share is stored (default: the tiers of
    recipes/slo_tiers.yaml)."""
    measured = [record for record in records if not record.warmup]
    succeeded = [record for record in measured if record.ok]
    failed = len(measured) - len(succeeded)
    window = open_loop_window(measured) if open_loop else measured_window(measured, concurrency)
    duration = window.duration_s

    output_in_window = 0.0
    input_in_window = 0
    # Requests counted for the share of their output streamed inside the window, not by whether they ended in
    # it: a closed-loop window closes at the first end of the final wave, so counting ends would keep that
    # wave's whole lifetime in the window but only one of its completions (-11.6 % at 256 equal requests), and
    # request and token throughput would disagree. Shares make tokens per request exactly the workload's.
    shares: dict[int, float] = {}
    for record in succeeded:
        chunks = record.chunk_tokens
        tokens = chunks if min(chunks, default=0) >= 0 else [max(t, 0) for t in chunks]
        streamed = sum(tokens)
        times = record.chunk_times
        if streamed and len(times) >= len(tokens) and window.start <= min(times) and max(times) <= window.end:
            share = 1.0  # streamed wholly inside (most requests): no chunk to weigh one by one
        else:
            inside = sum(t for t, at in zip(tokens, record.chunk_times, strict=False) if _in_window(at, window))
            share = inside / streamed if streamed else (1.0 if _in_window(record.end, window) else 0.0)
        shares[record.index] = share
        # Streamed counts scaled to the server's usage, so throughput agrees with usage totals.
        output_in_window += share * record.output_tokens
        if record.chunk_times and _in_window(record.chunk_times[0], window):
            input_in_window += record.prompt_tokens or record.prompt_tokens_sent
    finished_in_window = sum(shares.values())

    def rate(amount: float) -> float:
        return amount / duration if duration > 0 else 0.0

    latency_of = {record.index: request_latency(record) for record in measured}  # once per request, for every figure
    measured_latencies = [latency_of[record.index] for record in measured]
    series = _latencies(latency_of[record.index] for record in succeeded)
    tpot = summarize(series["tpot"])
    server_tokens = sum(r.completion_tokens for r in succeeded if r.completion_tokens is not None)
    client_tokens = sum(r.client_tokens for r in succeeded if r.completion_tokens is not None)
    disagreement = abs(server_tokens - client_tokens) / server_tokens if server_tokens else 0.0

    shown = Evidence(
        measured_requests=len(measured), failed_requests=failed, load=0 if open_loop else concurrency,
        token_disagreement=disagreement, token_counts=(server_tokens, client_tokens),
        usage_problems=tuple(usage_evidence(succeeded)), reached_target=window.reached_target, window_s=duration,
        short_outputs=sum(1 for r in succeeded if r.output_tokens < r.max_tokens),
        e2el_p50_ms=summarize(series["e2el"]).p50, finished=True,
    )  # fmt: skip
    verdict = judge(origin, dataclasses.replace(shown, **(evidence or {})), thresholds)

    good = sum(shares[r.index] for r in succeeded if meets_slo(latency_of[r.index], slo)) if slo else None
    output_throughput = rate(output_in_window)
    total_throughput = rate(output_in_window + input_in_window)
    return PointMetrics(
        completed=len(succeeded),
        failed=failed,
        duration_s=duration,
        total_input_tokens=sum(r.prompt_tokens or r.prompt_tokens_sent for r in succeeded),
        total_output_tokens=sum(r.output_tokens for r in succeeded),
        request_throughput=rate(finished_in_window),
        output_throughput=output_throughput,
        total_token_throughput=total_throughput,
        accelerators=accelerators,
        output_throughput_per_gpu=output_throughput / accelerators,
        total_token_throughput_per_gpu=total_throughput / accelerators,
        ttft_ms=summarize(series["ttft"]),
        tpot_ms=tpot,
        itl_ms=summarize(series["itl"]),
        e2el_ms=summarize(series["e2el"]),
        client_queue_ms=summarize(series["queue"]),
        interactivity=interactivity_from(tpot),
        goodput=rate(good) if good is not None else None,
        slo_goodput=tier_goodput(measured_latencies, list(load_slo_tiers().values()) if tiers is None else tiers),
        token_disagreement=disagreement,
        window=window,
        validity=Validity.of(verdict),
    )
