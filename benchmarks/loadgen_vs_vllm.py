"""Client efficiency: `infersweep bench` vs vLLM's client against one zero-delay streaming server, on two shapes.

Targets (issue 20, item 8): on both shapes our requests/s >= 1.2x vLLM's client's at concurrency 128, and our
client CPU-seconds per request <= 0.5x its. The shapes, each at fixed lengths (range ratio 1.0 for ours, 0 for
vLLM's: both fixed):
- short: 1,280 requests of 128 in / 32 out tokens;
- long: 2,000 requests of 128 in / 256 out tokens (long streams: the per-chunk cost dominates).
The clients run back to back, each against a fresh simulated server with no injected delay, in an order that
alternates between rounds; the figures are the median over the rounds.

Run: .venv/bin/python -m benchmarks.loadgen_vs_vllm [--concurrency 128] [--rounds 3] [--shapes short long]
"""

from __future__ import annotations

import argparse
import os
import statistics
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from benchmarks.peers import run_vllm_client, simulated_server
from runners.loadgen.bench import BenchSettings, run_bench

SHAPES = {"short": (128, 32, 1280), "long": (128, 256, 2000)}  # isl, osl, requests
THROUGHPUT_TARGET = 1.2  # ours / vLLM's requests per second, at least
CPU_TARGET = 0.5  # ours / vLLM's client CPU-seconds per request, at most
SERVER_ARGS = ("--ttft-ms", "0", "--itl-ms", "0", "--max-batch", "100000")


@dataclass(frozen=True)
class Run:
    completed: int
    failed: int
    requests_per_s: float
    cpu_per_request_s: float


def ours(isl: int, osl: int, concurrency: int, requests: int) -> Run:
    with simulated_server(*SERVER_ARGS) as url:
        settings = BenchSettings(base_url=url, model="sim", isl=isl, osl=osl, concurrency=concurrency,
                                 num_prompts=requests)  # fmt: skip
        result, records = run_bench(settings)
    span = max(r.end for r in records if r.end) - min(r.sent for r in records if r.sent)
    return Run(result.completed, result.failed, result.completed / span, result.client.cpu_seconds_per_request)


def vllms(isl: int, osl: int, concurrency: int, requests: int) -> Run:
    with simulated_server(*SERVER_ARGS) as url:
        peer = run_vllm_client(url, isl, osl, concurrency, requests, extra=["--report-cpu"])
    completed = int(peer["completed"])
    cpu = peer["infersweep_client_cpu_seconds"] / max(completed, 1)
    return Run(completed, int(peer.get("failed", 0)), float(peer["request_throughput"]), cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=["short", "long"])
    args = parser.parse_args()
    console = Console()
    console.print(f"load average at start: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")
    for shape in args.shapes:
        isl, osl, requests = SHAPES[shape]
        runs: dict[str, list[Run]] = {"ours": [], "vllm": []}
        for round_index in range(args.rounds):
            order = [("ours", ours), ("vllm", vllms)]
            for name, client in order if round_index % 2 == 0 else reversed(order):
                runs[name].append(client(isl, osl, args.concurrency, requests))
        table = Table(title=f"{shape}: concurrency {args.concurrency}, {requests} requests {isl}/{osl}, "
                      f"{args.rounds} rounds")  # fmt: skip
        for column in ("client", "round", "completed", "failed", "requests/s", "CPU-s per request"):
            table.add_column(column, justify="right")
        for name, label in (("ours", "infersweep bench"), ("vllm", "vllm bench serve")):
            for index, run in enumerate(runs[name], 1):
                table.add_row(label, str(index), str(run.completed), str(run.failed), f"{run.requests_per_s:.1f}",
                              f"{run.cpu_per_request_s * 1000:.3f} ms")  # fmt: skip
        console.print(table)
        throughput = statistics.median(r.requests_per_s for r in runs["ours"]) / statistics.median(
            r.requests_per_s for r in runs["vllm"]
        )
        cpu = statistics.median(r.cpu_per_request_s for r in runs["ours"]) / statistics.median(
            r.cpu_per_request_s for r in runs["vllm"]
        )
        met = "MET" if throughput >= THROUGHPUT_TARGET else "NOT MET"
        console.print(f"{shape}: requests/s ours/vLLM = {throughput:.2f} (target >= {THROUGHPUT_TARGET}): {met}")
        met = "MET" if cpu <= CPU_TARGET else "NOT MET"
        console.print(f"{shape}: CPU per request ours/vLLM = {cpu:.2f} (target <= {CPU_TARGET}): {met}")
    console.print(f"load average at end: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")
    console.print(
        "Both clients share 2 cores with the server: requests/s is bounded by the server, CPU-s is each client's own."
    )


if __name__ == "__main__":
    main()
