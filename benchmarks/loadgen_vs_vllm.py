"""Client efficiency: `infersweep bench` vs vLLM's client against one zero-delay streaming server, on two shapes.

Targets: on both shapes our requests/s >= 1.2x vLLM's client's at concurrency 128, and our
client CPU-seconds per request <= 0.5x its. The shapes, each at fixed lengths (range ratio 1.0 for ours, 0 for
vLLM's: both fixed):
- short: 1,280 requests of 128 in / 32 out tokens;
- long: 2,000 requests of 128 in / 256 out tokens (long streams: the per-chunk cost dominates).
The clients run back to back, each against a fresh simulated server with no injected delay, in an order that
alternates between rounds; the figures are the median over the rounds.

Each row also gives the server's CPU share over the run (its CPU-seconds / wall seconds): a server near 1.0 is the
bound, and then neither client can go faster. `--workers N` splits our client's lanes over N processes (`infersweep
bench --workers`), for when one process is the bound.

Run: .venv/bin/python -m benchmarks.loadgen_vs_vllm [--concurrency 128] [--rounds 3] [--shapes short long] [--workers 1]
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from benchmarks.peers import process_cpu, run_vllm_client, simulated_server_process
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
    server_cpu_share: float  # the server's CPU-seconds per wall second over the client's run (1.0 = one core)


def ours(isl: int, osl: int, concurrency: int, requests: int, workers: int) -> Run:
    with simulated_server_process(*SERVER_ARGS) as (url, pid):
        settings = BenchSettings(base_url=url, model="sim", isl=isl, osl=osl, concurrency=concurrency,
                                 num_prompts=requests, workers=workers)  # fmt: skip
        server_before = process_cpu(pid)
        result, records = run_bench(settings)
        server_cpu = process_cpu(pid) - server_before
    span = max(r.end for r in records if r.end) - min(r.sent for r in records if r.sent)
    # Over the requests' span, as vLLM's duration: the server idles while our processes start (about 3 s).
    server_share = server_cpu / span
    return Run(result.completed, result.failed, result.completed / span, result.client.cpu_seconds_per_request,
               server_share)  # fmt: skip


def vllms(isl: int, osl: int, concurrency: int, requests: int) -> Run:
    with simulated_server_process(*SERVER_ARGS) as (url, pid):
        server_before = process_cpu(pid)
        peer = run_vllm_client(url, isl, osl, concurrency, requests, extra=["--report-cpu"])
        # vLLM's wall time includes importing vLLM (the server idles then): its share is over the requests' duration.
        server_share = (process_cpu(pid) - server_before) / float(peer["duration"])
    completed = int(peer["completed"])
    cpu = peer["infersweep_client_cpu_seconds"] / max(completed, 1)
    return Run(completed, int(peer.get("failed", 0)), float(peer["request_throughput"]), cpu, server_share)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=["short", "long"])
    parser.add_argument("--workers", type=int, default=1, help="our client's processes (vLLM's client has one)")
    args = parser.parse_args()
    console = Console()
    console.print(f"load average at start: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")
    for shape in args.shapes:
        isl, osl, requests = SHAPES[shape]
        runs: dict[str, list[Run]] = {"ours": [], "vllm": []}
        for round_index in range(args.rounds):
            order: list[tuple[str, Callable[[], Run]]] = [
                ("ours", functools.partial(ours, isl, osl, args.concurrency, requests, args.workers)),
                ("vllm", functools.partial(vllms, isl, osl, args.concurrency, requests)),
            ]
            for name, client in order if round_index % 2 == 0 else reversed(order):
                runs[name].append(client())
        table = Table(title=f"{shape}: concurrency {args.concurrency}, {requests} requests {isl}/{osl}, "
                      f"{args.rounds} rounds")  # fmt: skip
        for column in ("client", "round", "completed", "failed", "requests/s", "CPU-s per request", "server CPU"):
            table.add_column(column, justify="right")
        for name, label in (("ours", f"infersweep bench ({args.workers} process{'es' if args.workers > 1 else ''})"),
                            ("vllm", "vllm bench serve (1 process)")):  # fmt: skip
            for index, run in enumerate(runs[name], 1):
                table.add_row(label, str(index), str(run.completed), str(run.failed), f"{run.requests_per_s:.1f}",
                              f"{run.cpu_per_request_s * 1000:.3f} ms", f"{run.server_cpu_share:.2f}")  # fmt: skip
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
        f"The clients share {os.cpu_count()} cores with the server. Server CPU (1.0 = one core) says who set the pace:"
        " near 1.0 the server, below it the client. CPU-s is each client's own."
    )


if __name__ == "__main__":
    main()
