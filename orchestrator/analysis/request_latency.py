"""Per-request latencies from stored request records, for distributions (histograms) of one Point.

The records are the Point's Parquet artifact (`runners.loadgen.records.records_frame`), one mapping per
request, with times in seconds on the client's clock. Definitions as in docs/METRICS.md:

- TTFT = first token chunk − sent;
- TPOT = (last token chunk − first token chunk) / (output tokens − 1), only with at least 2 output tokens;
- E2EL = end − sent.

Output tokens: server usage (`completion_tokens`) when present, else the tokenizer's count, else the sum of
`chunk_tokens`. Warmup and failed requests are left out, as they are from the published aggregates. Pure
Python: the records may come from pandas (missing numbers as NaN, lists as arrays) or from plain dicts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MS_PER_S = 1000.0


@dataclass(frozen=True)
class RequestLatency:
    index: int
    output_tokens: int
    ttft_ms: float | None
    tpot_ms: float | None
    e2el_ms: float


def _present(value: Any) -> bool:
    if value is None:
        return False
    try:
        return not math.isnan(value)
    except TypeError:
        return True


def _sequence(value: Any) -> Sequence[Any]:
    return [] if value is None or (isinstance(value, float) and math.isnan(value)) else list(value)


def output_tokens(record: Mapping[str, Any]) -> int:
    for field in ("completion_tokens", "tokenizer_tokens"):
        if _present(record.get(field)):
            return int(record[field])
    return int(sum(_sequence(record.get("chunk_tokens"))))


def request_latencies(records: Iterable[Mapping[str, Any]]) -> list[RequestLatency]:
    """TTFT, TPOT and E2EL (ms) of every measured request that succeeded, in record order."""
    latencies = []
    for record in records:
        if record.get("warmup") or _present(record.get("error")):
            continue
        sent, end = record.get("sent"), record.get("end")
        if not (_present(sent) and _present(end)):
            continue
        chunks = _sequence(record.get("chunk_times"))
        tokens = output_tokens(record)
        ttft = tpot = None
        if chunks:
            ttft = (chunks[0] - sent) * MS_PER_S
            if tokens > 1:
                tpot = (chunks[-1] - chunks[0]) * MS_PER_S / (tokens - 1)
        latencies.append(
            RequestLatency(
                index=int(record.get("index", len(latencies))), output_tokens=tokens, ttft_ms=ttft, tpot_ms=tpot,
                e2el_ms=(end - sent) * MS_PER_S,
            )
        )  # fmt: skip
    return latencies
