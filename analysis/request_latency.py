"""Per-request latencies from stored request records, for distributions (histograms) of one Point.

The records are the Point's Parquet artifact (`runners.loadgen.records.records_frame`), one mapping per request.
Each is read back as the load generator's own `RequestRecord` and measured by its own `request_latency`
(runners/loadgen/metrics.py), so the hub's per-request figures are the ones the Point's aggregates were made from
(docs/METRICS.md). Warmup and failed requests are left out, as they are from the published aggregates.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from runners.loadgen.metrics import RequestLatency, request_latency
from runners.loadgen.records import RequestRecord

__all__ = ["RequestLatency", "request_latencies"]


def request_latencies(records: Iterable[Mapping[str, Any]]) -> list[RequestLatency]:
    """TTFT, TPOT and E2EL (ms) of every measured request that succeeded, in record order."""
    measured = (RequestRecord.from_stored(row) for row in records)
    return [latency for record in measured if not record.warmup if (latency := request_latency(record)) is not None]
