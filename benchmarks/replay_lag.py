"""Replay fidelity under load: schedule lag at 200 live synthetic sessions against the simulated engine.

Schedule lag is how late each request was sent against its schedule (the end of the previous answer plus
the recorded think time): the replayer's own delay, from its event loop and prompt synthesis. Target:
p99 under 50 ms on this machine at 200 concurrent sessions. The corpus is the CI-sized synthetic
AgentX-like profile with 200 sessions (`infersweep trace synth --profile ci --sessions 200`); think times are
replayed at full length (time scale 1), as AgentX does. No peer replays session traces, so no ratio.

Run: .venv/bin/python -m benchmarks.replay_lag [--sessions 200] [--duration 30]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks.peers import simulated_server
from recipes.schema import ReplaySettings
from runners.loadgen.client import Endpoint
from runners.loadgen.replay import replay
from runners.traces.formats import load_trace
from runners.traces.synthetic import PROFILES, write_corpus

TARGET_P99_MS = 50.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200, help="Live session trees (replay concurrency).")
    parser.add_argument("--duration", type=float, default=30.0, help="Measured window, seconds.")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        corpus = Path(directory) / "ci-200.jsonl"
        write_corpus(PROFILES["ci"].model_copy(update={"sessions": args.sessions}), corpus)
        trace = load_trace(corpus)
        server_args = ("--ttft-ms", "20", "--itl-ms", "2", "--max-batch", "100000", "--prefix-caching")
        print(f"{args.sessions} live sessions, {args.duration:g} s window, simulated engine (TTFT 20 ms, ITL 2 ms)")
        for run in range(1, args.runs + 1):
            with simulated_server(*server_args) as url:
                settings = ReplaySettings(duration_s=args.duration, seed=run, request_timeout_s=120)
                started = time.perf_counter()
                stats, records = replay(trace, Endpoint(base_url=url, model="sim"), settings, args.sessions)
                elapsed = time.perf_counter() - started
            lag = stats.schedule_lag_ms
            failed = sum(1 for item in records if not item.record.ok)
            verdict = "met" if lag.p99 is not None and lag.p99 < TARGET_P99_MS else "NOT met"
            print(f"run {run}: {stats.requests_measured} requests measured ({failed} failed) in {elapsed:.1f} s; "
                  f"schedule lag p50 {lag.p50:.2f} ms, p99 {lag.p99:.2f} ms "
                  f"(target < {TARGET_P99_MS:g}: {verdict})")  # fmt: skip


if __name__ == "__main__":
    main()
