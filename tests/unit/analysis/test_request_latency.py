"""Per-request TTFT, TPOT and E2EL from stored records, worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.request_latency import request_latencies
from recipes.schema import ValidityThresholds
from runners.loadgen.metrics import compute_point_metrics, summarize
from runners.loadgen.records import RequestRecord, records_frame


def output_tokens(row: dict[str, object]) -> int:
    return RequestRecord.from_stored(row).output_tokens


def _record(index: int, **fields: object) -> dict[str, object]:
    base: dict[str, object] = {
        "index": index,
        "warmup": False,
        "prompt_tokens_sent": 16,
        "max_tokens": 5,
        "scheduled": 10.0,
        "sent": 10.0,
        "end": 12.0,
        "chunk_times": [10.5, 11.0, 11.5],
        "chunk_tokens": [1, 1, 1],
        "completion_tokens": 5,
        "tokenizer_tokens": None,
        "error": None,
    }
    base.update(fields)
    return base


def test_definitions_on_one_request() -> None:
    (latency,) = request_latencies([_record(0)])
    # TTFT 10.5 − 10 = 500 ms; TPOT (11.5 − 10.5) / (5 − 1) = 250 ms (usage says 5 tokens); E2EL 2 s.
    assert latency.ttft_ms == pytest.approx(500.0)
    assert latency.tpot_ms == pytest.approx(250.0)
    assert latency.e2el_ms == pytest.approx(2000.0)
    assert latency.output_tokens == 5


def test_warmup_failed_and_unsent_requests_are_left_out() -> None:
    records = [
        _record(0, warmup=True), _record(1, error="HTTP 500"), _record(2, sent=None), _record(3),
    ]  # fmt: skip
    assert [latency.index for latency in request_latencies(records)] == [3]


def test_single_token_and_no_chunks() -> None:
    one_token = _record(0, chunk_times=[10.2], chunk_tokens=[1], completion_tokens=1)
    no_chunks = _record(1, chunk_times=[], chunk_tokens=[], completion_tokens=None)
    first, second = request_latencies([one_token, no_chunks])
    assert first.ttft_ms == pytest.approx(200.0) and first.tpot_ms is None
    assert second.ttft_ms is None and second.tpot_ms is None and second.e2el_ms == pytest.approx(2000.0)
    assert second.output_tokens == 0


def test_output_token_fallbacks() -> None:
    assert output_tokens(_record(0, completion_tokens=None, tokenizer_tokens=7)) == 7
    assert output_tokens(_record(0, completion_tokens=math.nan, tokenizer_tokens=math.nan, chunk_tokens=[2, 3])) == 5


def test_records_read_back_from_parquet(tmp_path) -> None:
    frame = pd.DataFrame([_record(0), _record(1, warmup=True), _record(2, completion_tokens=None)])
    path = tmp_path / "records.parquet"
    frame.to_parquet(path, index=False)
    back = pd.read_parquet(path)
    assert isinstance(back["chunk_times"][0], np.ndarray)  # lists come back as arrays, None ints as NaN
    latencies = request_latencies(back.to_dict("records"))
    assert [latency.index for latency in latencies] == [0, 2]
    # Record 2 has no usage count: 3 streamed tokens, so TPOT = 1 s / 2 = 500 ms.
    assert latencies[1].output_tokens == 3 and latencies[1].tpot_ms == pytest.approx(500.0)


def test_the_hub_measures_requests_as_the_load_generator_did() -> None:
    """The same records, aggregated by the load generator and read back from their Parquet artifact by the hub:
    every per-request TTFT, TPOT and E2EL the hub draws is one the Point's percentiles were computed from."""
    rng = np.random.default_rng(3)
    records = []
    for index in range(40):
        sent = index * 0.05
        chunks = list(np.cumsum(rng.uniform(0.001, 0.03, size=int(rng.integers(1, 9)))) + sent + 0.02)
        tokens = [int(t) for t in rng.integers(1, 3, size=len(chunks))]
        records.append(RequestRecord(
            index=index, warmup=index < 4, prompt_tokens_sent=32, max_tokens=sum(tokens), scheduled=sent, sent=sent,
            chunk_times=chunks, chunk_tokens=tokens, end=chunks[-1] + 0.001,
            completion_tokens=sum(tokens) if index % 3 else None, error="HTTP 500" if index == 7 else None,
        ))  # fmt: skip
    metrics = compute_point_metrics(records, 4, 1, ValidityThresholds(), open_loop=True)
    stored = records_frame(records).to_dict("records")
    hub = request_latencies(stored)
    assert len(hub) == 40 - 4 - 1
    for name in ("ttft_ms", "tpot_ms", "e2el_ms"):
        values = [getattr(latency, name) for latency in hub if getattr(latency, name) is not None]
        assert summarize(values) == getattr(metrics, name), name
