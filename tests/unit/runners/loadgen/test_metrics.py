"""Point metrics from hand-built request records, checked against the definitions of docs/ARCHITECTURE.md §4."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from recipes.schema import ValidityThresholds
from recipes.slo import load_slo_tiers
from runners.loadgen.metrics import compute_point_metrics, measured_window, summarize
from runners.loadgen.records import RequestRecord

pytestmark = pytest.mark.timeout(30)


def linear_percentile(values: list[float], q: float) -> float:
    """Percentile by linear interpolation between closest ranks (numpy's default), written out by hand."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def make_record(
    index: int,
    sent: float,
    end: float,
    *,
    chunks: list[float] | None = None,
    tokens: list[int] | None = None,
    completion: int | None = None,
    max_tokens: int | None = None,
    prompt: int = 100,
    scheduled: float | None = None,
    warmup: bool = False,
    error: str | None = None,
) -> RequestRecord:
    """A record; by default one token per chunk, usage agreeing with the chunks and max_tokens met."""
    chunks = list(chunks or [])
    tokens = list(tokens) if tokens is not None else [1] * len(chunks)
    if completion is None and error is None:
        completion = sum(tokens)
    return RequestRecord(
        index=index,
        warmup=warmup,
        prompt_tokens_sent=prompt,
        max_tokens=max_tokens if max_tokens is not None else (completion or 1),
        scheduled=sent if scheduled is None else scheduled,
        sent=sent,
        first_byte=chunks[0] if chunks else None,
        chunk_times=chunks,
        chunk_tokens=tokens,
        end=end,
        prompt_tokens=prompt if error is None else None,
        completion_tokens=completion,
        http_status=200 if error is None else 500,
        error=error,
    )


def sequential_records(count: int, *, tokens_per_request: int = 4, start_index: int = 0) -> list[RequestRecord]:
    """`count` requests one after the other (concurrency 1), strictly separated in time."""
    records = []
    for i in range(count):
        sent = 1.0 * i + 0.01
        chunks = [sent + 0.1 + 0.05 * k for k in range(tokens_per_request)]
        records.append(make_record(start_index + i, sent, chunks[-1] + 0.05, chunks=chunks))
    return records


DEFAULTS = ValidityThresholds()


# --- summarize ---------------------------------------------------------------------------------------


def test_summarize_uses_linear_percentiles_mean_and_population_std() -> None:
    rng = np.random.default_rng(7)
    values = [float(v) for v in rng.exponential(50.0, size=37)]
    stats = summarize(values)
    assert stats.n == len(values)
    assert stats.mean == pytest.approx(statistics.fmean(values))
    assert stats.p50 == pytest.approx(linear_percentile(values, 50))
    assert stats.p90 == pytest.approx(linear_percentile(values, 90))
    assert stats.p99 == pytest.approx(linear_percentile(values, 99))
    assert stats.std == pytest.approx(statistics.pstdev(values))
    assert stats.p999 is None


def test_summarize_small_known_interpolation() -> None:
    values = [4.0, 1.0, 3.0, 2.0]  # unsorted on purpose
    stats = summarize(values)
    # Sorted 1..4: rank position (n-1)*q, interpolated linearly.
    assert stats.p50 == pytest.approx(1 + 3 * 0.5)
    assert stats.p90 == pytest.approx(1 + 3 * 0.9)
    assert stats.p99 == pytest.approx(1 + 3 * 0.99)


def test_summarize_p999_only_from_1000_samples() -> None:
    below = [float(i) for i in range(999)]
    assert summarize(below).p999 is None
    values = [float((i * 37) % 1000) for i in range(1000)]  # a permutation of 0..999
    stats = summarize(values)
    assert stats.n == 1000
    assert stats.p999 == pytest.approx(linear_percentile(values, 99.9))


def test_summarize_single_value() -> None:
    stats = summarize([12.5])
    assert (stats.n, stats.mean, stats.p50, stats.p90, stats.p99, stats.std) == (1, 12.5, 12.5, 12.5, 12.5, 0.0)


def test_summarize_empty() -> None:
    stats = summarize([])
    assert stats.n == 0
    assert [stats.mean, stats.p50, stats.p90, stats.p99, stats.p999, stats.std] == [None] * 6


# --- measured_window ---------------------------------------------------------------------------------


def test_window_closed_loop_concurrency_two() -> None:
    # Two lanes; every refill is sent a little after the slot freed (as the real client does).
    a = make_record(0, sent=0.00, end=1.00)
    b = make_record(1, sent=0.10, end=1.50)  # second in flight: the window starts here
    c = make_record(2, sent=1.01, end=2.50)  # refills a's slot
    d = make_record(3, sent=1.51, end=2.00)  # refills b's slot: the last send
    window = measured_window([a, b, c, d], target=2)
    last_send = max(r.sent for r in (a, b, c, d))
    # After the last send (1.51) in-flight first drops to 1 when d ends (2.00).
    first_drop_after_last_send = min(r.end for r in (a, b, c, d) if r.end > last_send)
    assert window.reached_target is True
    assert window.start == b.sent
    assert window.end == first_drop_after_last_send
    assert window.ramp_down_s == pytest.approx(max(r.end for r in (a, b, c, d)) - first_drop_after_last_send)
    assert window.duration_s == pytest.approx(window.end - window.start)


def test_window_ignores_dips_before_the_last_send() -> None:
    # In-flight dips to 1 at 1.0 (before the last send): the window must not end there.
    a = make_record(0, sent=0.0, end=1.0)
    b = make_record(1, sent=0.0, end=3.0)
    c = make_record(2, sent=1.2, end=4.0)  # the last send
    window = measured_window([a, b, c], target=2)
    assert window.start == 0.0
    assert window.end == b.end
    assert window.ramp_down_s == pytest.approx(c.end - b.end)


def test_window_refill_at_the_same_instant_does_not_end_the_window() -> None:
    # Closed loop at 2 with the refill sent at exactly the end time of the request it replaces.
    a = make_record(0, sent=0.0, end=1.0)
    b = make_record(1, sent=0.0, end=1.5)
    c = make_record(2, sent=1.0, end=2.5)
    d = make_record(3, sent=1.5, end=2.0)  # last send, at the instant b ended: in-flight stays 2
    window = measured_window([a, b, c, d], target=2)
    assert window.start == 0.0
    assert window.end == d.end  # in-flight first falls to 1 *after* the last send when d ends
    assert window.ramp_down_s == pytest.approx(c.end - d.end)


def test_window_never_reaching_target() -> None:
    records = sequential_records(3)  # never more than one in flight
    window = measured_window(records, target=2)
    assert window.reached_target is False


def test_window_skips_unsent_records_and_handles_empty() -> None:
    empty = measured_window([], target=1)
    assert empty.reached_target is False
    assert empty.duration_s == 0
    unsent = RequestRecord(index=0, warmup=False, prompt_tokens_sent=1, max_tokens=1, scheduled=0.0)
    assert measured_window([unsent], target=1).reached_target is False


# --- compute_point_metrics: latencies ----------------------------------------------------------------


def test_latencies_from_hand_made_timestamps() -> None:
    scheduled, sent = 9.9, 10.0
    chunks = [10.2, 10.3, 10.75, 10.8]
    tokens = [1, 1, 3, 1]  # the third chunk carries 3 tokens (speculative decoding)
    end = 10.85
    output = sum(tokens)
    record = make_record(0, sent, end, chunks=chunks, tokens=tokens, scheduled=scheduled)
    metrics = compute_point_metrics([record], concurrency=1, accelerators=1, thresholds=DEFAULTS)

    assert metrics.ttft_ms.n == 1
    assert metrics.ttft_ms.mean == pytest.approx((chunks[0] - sent) * 1000)
    assert metrics.tpot_ms.mean == pytest.approx((chunks[-1] - chunks[0]) * 1000 / (output - 1))
    assert metrics.e2el_ms.mean == pytest.approx((end - sent) * 1000)
    assert metrics.client_queue_ms.mean == pytest.approx((sent - scheduled) * 1000)

    expected_itl = [
        (chunks[1] - chunks[0]) * 1000,
        *[(chunks[2] - chunks[1]) * 1000 / 3] * 3,  # k=3: three gaps of gap/3
        (chunks[3] - chunks[2]) * 1000,
    ]
    assert metrics.itl_ms.n == len(expected_itl) == output - 1
    assert metrics.itl_ms.mean == pytest.approx(statistics.fmean(expected_itl))
    assert metrics.itl_ms.p50 == pytest.approx(linear_percentile(expected_itl, 50))
    assert metrics.itl_ms.p90 == pytest.approx(linear_percentile(expected_itl, 90))
    assert metrics.itl_ms.std == pytest.approx(statistics.pstdev(expected_itl))


def test_tpot_uses_server_usage_for_the_output_count() -> None:
    # Client saw 3 chunks but the server reports 7 tokens: TPOT divides by 7 - 1.
    chunks = [1.1, 1.2, 1.5]
    record = make_record(0, 1.0, 1.6, chunks=chunks, tokens=[1, 1, 1], completion=7, max_tokens=7)
    metrics = compute_point_metrics([record], concurrency=1, accelerators=1, thresholds=DEFAULTS)
    assert metrics.tpot_ms.mean == pytest.approx((chunks[-1] - chunks[0]) * 1000 / (7 - 1))


def test_single_token_request_has_ttft_but_no_tpot() -> None:
    record = make_record(0, 1.0, 1.3, chunks=[1.2])
    metrics = compute_point_metrics([record], concurrency=1, accelerators=1, thresholds=DEFAULTS)
    assert metrics.ttft_ms.n == 1
    assert metrics.tpot_ms.n == 0
    assert metrics.itl_ms.n == 0


def test_failed_and_warmup_requests_are_not_measured() -> None:
    good = sequential_records(3, start_index=2)
    warmup = make_record(0, -5.0, -1.0, chunks=[-4.0, -2.0], warmup=True)
    failed = make_record(1, -0.5, -0.4, error="HTTP 500: boom")
    metrics = compute_point_metrics([warmup, failed, *good], concurrency=1, accelerators=1, thresholds=DEFAULTS)
    assert metrics.completed == len(good)
    assert metrics.failed == 1
    assert metrics.e2el_ms.n == len(good)
    expected_e2el = [(r.end - r.sent) * 1000 for r in good]
    assert metrics.e2el_ms.mean == pytest.approx(statistics.fmean(expected_e2el))
    assert metrics.total_output_tokens == sum(r.completion_tokens for r in good)


def test_interactivity_is_inverse_tpot_at_the_same_percentile() -> None:
    records = []
    for i, step in enumerate([0.010, 0.012, 0.015, 0.020, 0.030, 0.050, 0.011, 0.013, 0.016, 0.025, 0.040]):
        sent = 10.0 * i
        chunks = [sent + 0.1 + step * k for k in range(6)]
        records.append(make_record(i, sent, chunks[-1] + 0.01, chunks=chunks))
    metrics = compute_point_metrics(records, concurrency=1, accelerators=1, thresholds=DEFAULTS)
    tpots = [(r.chunk_times[-1] - r.chunk_times[0]) * 1000 / (r.output_tokens - 1) for r in records]
    assert metrics.tpot_ms.p90 == pytest.approx(linear_percentile(tpots, 90))
    assert metrics.interactivity.p90 == pytest.approx(1000 / linear_percentile(tpots, 90))
    assert metrics.interactivity.p99 == pytest.approx(1000 / linear_percentile(tpots, 99))
    assert metrics.interactivity.p50 == pytest.approx(1000 / linear_percentile(tpots, 50))
    # p90 is the slow tail: fewer tokens/s per user than the median.
    assert metrics.interactivity.p90 < metrics.interactivity.p50
    assert metrics.interactivity.std is None
    assert metrics.interactivity.n == metrics.tpot_ms.n == len(records)


# --- compute_point_metrics: throughput ---------------------------------------------------------------


def test_throughput_over_the_window_and_per_gpu() -> None:
    records = sequential_records(12, tokens_per_request=5)
    accelerators = 4
    metrics = compute_point_metrics(records, concurrency=1, accelerators=accelerators, thresholds=DEFAULTS)
    # Concurrency 1, strictly sequential: window = first send .. last end; everything is inside it.
    start, end = records[0].sent, records[-1].end
    duration = end - start
    output = sum(r.completion_tokens for r in records)
    prompt = sum(r.prompt_tokens for r in records)
    assert metrics.window.start == start
    assert metrics.window.end == end
    assert metrics.duration_s == pytest.approx(duration)
    assert metrics.request_throughput == pytest.approx(len(records) / duration)
    assert metrics.output_throughput == pytest.approx(output / duration)
    assert metrics.total_token_throughput == pytest.approx((output + prompt) / duration)
    assert metrics.accelerators == accelerators
    assert metrics.output_throughput_per_gpu == pytest.approx(metrics.output_throughput / accelerators)
    assert metrics.total_token_throughput_per_gpu == pytest.approx(metrics.total_token_throughput / accelerators)
    assert metrics.total_input_tokens == prompt
    assert metrics.total_output_tokens == output
    assert metrics.validity.valid, metrics.validity.reasons
    assert metrics.validity.reasons == []


# --- compute_point_metrics: validity -----------------------------------------------------------------


def reasons_about(metrics_reasons: list[str], word: str) -> list[str]:
    return [reason for reason in metrics_reasons if word in reason]


@pytest.mark.parametrize(("count", "concurrency"), [(5, 1), (9, 1), (12, 8)])
def test_too_few_measured_requests(count: int, concurrency: int) -> None:
    records = sequential_records(count)
    metrics = compute_point_metrics(records, concurrency=concurrency, accelerators=1, thresholds=DEFAULTS)
    needed = max(10, 2 * concurrency)
    assert count < needed
    assert not metrics.validity.valid
    found = reasons_about(metrics.validity.reasons, "measured requests")
    assert len(found) == 1
    assert str(count) in found[0]
    assert str(needed) in found[0]


def test_enough_measured_requests_and_configurable_floor() -> None:
    ten = compute_point_metrics(sequential_records(10), concurrency=1, accelerators=1, thresholds=DEFAULTS)
    assert not reasons_about(ten.validity.reasons, "measured requests")
    relaxed = ValidityThresholds(min_requests_floor=3, min_requests_per_concurrency=1.0)
    three = compute_point_metrics(sequential_records(3), concurrency=1, accelerators=1, thresholds=relaxed)
    assert three.validity.valid, three.validity.reasons


def with_failures(total: int, failures: int) -> list[RequestRecord]:
    records = sequential_records(total)
    for i in range(failures):
        r = records[i]
        records[i] = make_record(r.index, r.sent, r.end, error="HTTP 500: injected")
    return records


def test_error_rate_above_ten_percent_is_invalid() -> None:
    metrics = compute_point_metrics(with_failures(10, 2), concurrency=1, accelerators=1, thresholds=DEFAULTS)
    assert metrics.failed == 2
    assert metrics.completed == 8
    assert not metrics.validity.valid
    assert len(reasons_about(metrics.validity.reasons, "error rate")) == 1


def test_error_rate_of_exactly_ten_percent_is_allowed() -> None:
    metrics = compute_point_metrics(with_failures(10, 1), concurrency=1, accelerators=1, thresholds=DEFAULTS)
    assert metrics.failed == 1
    assert not reasons_about(metrics.validity.reasons, "error rate")
    assert metrics.validity.valid, metrics.validity.reasons


def with_client_counts(server: int, client: int, count: int = 10) -> list[RequestRecord]:
    records = []
    for i in range(count):
        sent = 1.0 * i + 0.01
        chunks = [sent + 0.1 + 0.05 * k for k in range(client)]
        records.append(make_record(i, sent, chunks[-1] + 0.05, chunks=chunks, completion=server, max_tokens=server))
    return records


def test_server_client_token_disagreement_above_ten_percent() -> None:
    server, client = 10, 8
    metrics = compute_point_metrics(with_client_counts(server, client), 1, 1, DEFAULTS)
    assert metrics.token_disagreement == pytest.approx(abs(server - client) / server)
    assert not metrics.validity.valid
    assert len(reasons_about(metrics.validity.reasons, "output-token counts differ")) == 1


def test_small_token_disagreement_is_allowed() -> None:
    server, client = 20, 19
    metrics = compute_point_metrics(with_client_counts(server, client), 1, 1, DEFAULTS)
    assert metrics.token_disagreement == pytest.approx(abs(server - client) / server)
    assert metrics.validity.valid, metrics.validity.reasons


def test_fewer_output_tokens_than_requested() -> None:
    records = sequential_records(10, tokens_per_request=4)
    short = 3
    for i in range(short):
        r = records[i]
        records[i] = make_record(r.index, r.sent, r.end, chunks=r.chunk_times, max_tokens=r.completion_tokens + 4)
    metrics = compute_point_metrics(records, concurrency=1, accelerators=1, thresholds=DEFAULTS)
    assert not metrics.validity.valid
    found = reasons_about(metrics.validity.reasons, "fewer output tokens than requested")
    assert len(found) == 1
    assert found[0].startswith(f"{short} requests")


def test_never_reaching_concurrency_is_a_reason() -> None:
    metrics = compute_point_metrics(sequential_records(20), concurrency=2, accelerators=1, thresholds=DEFAULTS)
    assert not metrics.window.reached_target
    assert len(reasons_about(metrics.validity.reasons, "never reached the target concurrency")) == 1


# --- usage evidence: what the stream itself says of the server's counts ------------------------------


@pytest.mark.parametrize(
    ("tokens", "completion", "max_tokens", "reason"),
    [
        ([1, 1, 1, 1], 12, 4, "more output tokens than max_tokens for 1 requests (e.g. 12 > 4)"),
        ([1, 1, 1, 1], -4, 4, "negative or decreasing output-token usage"),
        ([2, -1, 2, 1], 4, 4, "negative or decreasing output-token usage"),
        ([1, 1, 1, 1], 3, 4, "fewer output tokens than content chunks streamed for 1 requests (e.g. 3 tokens in 4"),
    ],
)
def test_usage_that_the_stream_contradicts_is_a_reason(
    tokens: list[int], completion: int, max_tokens: int, reason: str
) -> None:
    records = [
        make_record(i, sent=float(i), end=float(i) + 1, chunks=[i + 0.2, i + 0.4, i + 0.6, i + 0.8], tokens=tokens,
                    completion=completion if i == 0 else 4, max_tokens=max_tokens)
        for i in range(12)
    ]  # fmt: skip
    metrics = compute_point_metrics(records, concurrency=1, accelerators=1, thresholds=DEFAULTS)
    assert any(reason in text for text in metrics.validity.reasons), metrics.validity.reasons


def test_batched_chunks_carrying_several_tokens_are_honest_usage() -> None:
    # Speculative decoding and stream intervals send several tokens per chunk: 8 tokens in 4 chunks is fine.
    records = [
        make_record(i, sent=float(i), end=float(i) + 1, chunks=[i + 0.2, i + 0.4, i + 0.6, i + 0.8], tokens=[2] * 4)
        for i in range(12)
    ]
    metrics = compute_point_metrics(records, concurrency=1, accelerators=1, thresholds=DEFAULTS)
    assert metrics.validity.valid, metrics.validity.reasons


def test_a_request_counts_for_the_share_of_its_output_inside_the_window() -> None:
    # Concurrency 2, four requests of 4 tokens: the window closes at the first end of the final pair (t = 2.0);
    # request 3 has streamed 3 of its 4 tokens by then. Counting ends would give 3 requests for 15 tokens.
    def request(index: int, sent: float, end: float) -> RequestRecord:
        return make_record(index, sent=sent, end=end, chunks=[sent + 0.25 * k for k in range(1, 5)])

    records = [request(0, 0.0, 1.0), request(1, 0.0, 1.0), request(2, 1.0, 2.0), request(3, 1.0, 2.1)]
    records[3] = make_record(3, sent=1.0, end=2.1, chunks=[1.25, 1.5, 1.75, 2.1])
    metrics = compute_point_metrics(records, concurrency=2, accelerators=1, thresholds=ValidityThresholds(
        min_requests_floor=1))  # fmt: skip
    assert metrics.window.start == 0.0 and metrics.window.end == 2.0
    assert metrics.request_throughput * metrics.duration_s == pytest.approx(3.75)
    assert metrics.output_throughput / metrics.request_throughput == pytest.approx(4.0)


def test_e2e_interactivity_p90_is_the_linear_percentile_like_every_other() -> None:
    from runners.loadgen.replay import e2e_interactivity_p90

    # Seconds per token 1..10 (one token each): linear p90 = 9.1 (nearest rank would say 9).
    records = [make_record(i, sent=0.0, end=float(i), chunks=[float(i)]) for i in range(1, 11)]
    assert e2e_interactivity_p90(records) == pytest.approx(1 / float(np.percentile(range(1, 11), 90)))
    assert e2e_interactivity_p90(records) == pytest.approx(1 / 9.1)
    assert e2e_interactivity_p90([]) is None


def test_slo_goodput_is_the_share_of_requests_that_met_each_tier_on_their_own() -> None:
    """Four measured requests of 3 tokens against two tiers, by hand. Per request (TTFT ms, 1000 / TPOT):
    A (100, 100) B (100, 20) C (3000, 100) and D failed. Tier 'fast' (TTFT <= 2000 ms, >= 60 tok/s/user): A only, 1/4.
    Tier 'slow' (TTFT <= 5000 ms, >= 15 tok/s/user): A, B and C, 3/4. A warm-up request never counts."""
    from recipes.slo import SloTier

    def three_tokens(index: int, ttft_s: float, gap_s: float, **kwargs: object) -> RequestRecord:
        chunks = [ttft_s, ttft_s + gap_s, ttft_s + 2 * gap_s]
        return make_record(index, 0.0, chunks[-1], chunks=chunks, **kwargs)  # type: ignore[arg-type]

    records = [three_tokens(0, 0.1, 0.01), three_tokens(1, 0.1, 0.05), three_tokens(2, 3.0, 0.01),
               make_record(3, 0.0, 1.0, error="HTTP 500"), three_tokens(4, 0.1, 0.01, warmup=True)]  # fmt: skip
    tiers = [SloTier(name="fast", ttft_p90_ms=2000, interactivity_p50=60, source="test"),
             SloTier(name="slow", ttft_p90_ms=5000, interactivity_p50=15, source="test")]  # fmt: skip
    metrics = compute_point_metrics(records, 1, 1, ValidityThresholds(), tiers=tiers)
    assert metrics.slo_goodput is not None
    assert {name: figure.share for name, figure in metrics.slo_goodput.items()} == {"fast": 0.25, "slow": 0.75}
    assert (metrics.slo_goodput["fast"].ttft_ms, metrics.slo_goodput["fast"].interactivity) == (2000, 60)
    # By default the tiers of recipes/slo_tiers.yaml, each by its name.
    default = compute_point_metrics(records, 1, 1, ValidityThresholds())
    assert default.slo_goodput is not None and set(default.slo_goodput) == set(load_slo_tiers())


def test_a_one_token_output_has_one_tpot_answer_on_every_path() -> None:
    """One definition of a request's TPOT (`request_latency`): a one-token output has none, so the Point's TPOT
    series, the per-request latencies the hub draws and goodput (a TPOT bound it cannot exceed) agree. Goodput used
    to compute its own TPOT (0.0) beside the Point's (None)."""
    from runners.loadgen.metrics import meets_slo, request_latency
    from runners.loadgen.records import GoodputSlo

    one = make_record(0, 0.0, 0.2, chunks=[0.1], completion=1)
    two = make_record(1, 0.0, 0.5, chunks=[0.1, 0.4], completion=2)
    assert request_latency(one).tpot_ms is None  # type: ignore[union-attr]
    assert request_latency(two).tpot_ms == pytest.approx(300.0)  # type: ignore[union-attr]
    tight = GoodputSlo(tpot_ms=100.0)
    assert meets_slo(request_latency(one), tight) and not meets_slo(request_latency(two), tight)
    metrics = compute_point_metrics([one, two], concurrency=1, accelerators=1, thresholds=DEFAULTS)
    # The Point's TPOT is the two-token request's alone: the one-token request adds nothing to the series.
    assert (metrics.tpot_ms.n, metrics.tpot_ms.p50) == (1, pytest.approx(300.0))
    # A request with no content chunk has no TTFT: it meets no SLO, whatever the bounds.
    silent = make_record(2, 0.0, 0.2, chunks=[], completion=0)
    assert request_latency(silent).ttft_ms is None  # type: ignore[union-attr]
    assert not meets_slo(request_latency(silent), GoodputSlo(e2el_ms=1000.0))
