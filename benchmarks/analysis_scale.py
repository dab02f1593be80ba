"""Analysis and ingest at scale, against their targets.

1. Frontier + interpolation + cost over 100,000 points (1,000 configurations x 100 points): target 1 s.
2. Ingest of 1,000,000 per-request records to Parquet, the path the recorder uses
   (RequestRecord models -> columns -> Parquet, `records_frame`): target 10 s.

Run: .venv/bin/python -m benchmarks.analysis_scale
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from analysis import cost_per_million_tokens, interpolate_at, pareto_frontier
from runners.loadgen.records import RequestRecord, records_frame


def analysis(configurations: int = 1000, points_each: int = 100) -> tuple[float, int]:
    rng = np.random.default_rng(0)
    interactivity = rng.uniform(5, 500, size=(configurations, points_each))
    throughput = 50_000 / (interactivity + rng.uniform(1, 50, size=(configurations, points_each)))
    started = time.perf_counter()
    read = 0
    for config in range(configurations):
        pairs = list(zip(interactivity[config].tolist(), throughput[config].tolist(), strict=True))
        frontier = pareto_frontier(pairs)
        xs = [pairs[i][0] for i in frontier]
        ys = [pairs[i][1] for i in frontier]
        value = interpolate_at(xs, ys, 100.0).value
        if value is not None:
            cost_per_million_tokens(2.0, value)
            read += 1
    return time.perf_counter() - started, read


def ingest(count: int = 1_000_000) -> float:
    rng = np.random.default_rng(1)
    sent = np.cumsum(rng.uniform(0, 0.01, size=count))
    records = [
        RequestRecord(index=i, warmup=False, prompt_tokens_sent=1024, max_tokens=8, scheduled=float(s), sent=float(s),
                      first_byte=float(s) + 0.05, chunk_times=[float(s) + 0.05 + 0.01 * k for k in range(8)],
                      chunk_tokens=[1] * 8, end=float(s) + 0.13, prompt_tokens=1024, completion_tokens=8,
                      http_status=200)
        for i, s in enumerate(sent)
    ]  # fmt: skip
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as directory:
        records_frame(records).to_parquet(Path(directory) / "records.parquet", index=False)
    return time.perf_counter() - started


def main() -> None:
    seconds, read = analysis()
    print(f"frontier + interpolation + cost over 100,000 points: {seconds:.2f} s (target 1 s): "
          f"{'MET' if seconds <= 1 else 'NOT MET'} ({read} of 1000 configurations read at 100 tok/s/user)")  # fmt: skip
    seconds = ingest()
    print(f"ingest of 1,000,000 request records to Parquet: {seconds:.2f} s (target 10 s): "
          f"{'MET' if seconds <= 10 else 'NOT MET'}")  # fmt: skip


if __name__ == "__main__":
    main()
