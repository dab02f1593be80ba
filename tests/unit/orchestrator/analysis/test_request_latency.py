"""Per-request TTFT, TPOT and E2EL from stored records, worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from orchestrator.analysis.request_latency import output_tokens, request_latencies


def _record(index: int, **fields: object) -> dict[str, object]:
    base: dict[str, object] = {
        "index": index,
        "warmup": False,
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
