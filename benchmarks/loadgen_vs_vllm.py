"""Client efficiency: `infersweep bench` vs vLLM's client against one zero-delay streaming server.

Targets (issue 3): request throughput ratio ours/vLLM >= 1.0 at concurrency 128, and our client
CPU-seconds per request <= vLLM client's. Both clients run back to back against a fresh simulated
server with no injected delay, fixed lengths (range ratio 1.0 for ours, 0 for vLLM's: both fixed).

Run: .venv/bin/python -m benchmarks.loadgen_vs_vllm [--concurrency 128] [--num-prompts 1280]
"""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from benchmarks.peers import run_vllm_client, simulated_server
from runners.loadgen.bench import BenchSettings, run_bench


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--num-prompts", type=int, default=1280)
    parser.add_argument("--isl", type=int, default=128)
    parser.add_argument("--osl", type=int, default=32)
    args = parser.parse_args()
    server_args = ("--ttft-ms", "0", "--itl-ms", "0", "--max-batch", "100000")

    with simulated_server(*server_args) as url:
        settings = BenchSettings(base_url=url, model="sim", isl=args.isl, osl=args.osl, concurrency=args.concurrency,
                                 num_prompts=args.num_prompts)  # fmt: skip
        ours, records = run_bench(settings)
    span = max(r.end for r in records if r.end) - min(r.sent for r in records if r.sent)
    ours_rps = ours.completed / span
    ours_cpu = ours.client.cpu_seconds_per_request

    with simulated_server(*server_args) as url:
        peer = run_vllm_client(url, args.isl, args.osl, args.concurrency, args.num_prompts, extra=["--report-cpu"])
    peer_rps = peer["request_throughput"]
    peer_cpu = peer["infersweep_client_cpu_seconds"] / max(peer["completed"], 1)

    table = Table(
        title=f"client efficiency, concurrency {args.concurrency}, {args.num_prompts} requests {args.isl}/{args.osl}"
    )
    for column in ("client", "completed", "failed", "requests/s", "CPU-s per request"):
        table.add_column(column, justify="right")
    table.add_row(
        "infersweep bench", str(ours.completed), str(ours.failed), f"{ours_rps:.1f}", f"{ours_cpu * 1000:.2f} ms"
    )
    table.add_row(
        "vllm bench serve",
        str(peer["completed"]),
        str(peer.get("failed", 0)),
        f"{peer_rps:.1f}",
        f"{peer_cpu * 1000:.2f} ms",
    )
    console = Console()
    console.print(table)
    ratio = ours_rps / peer_rps
    console.print(f"throughput ratio ours/vLLM = {ratio:.2f} (target >= 1.00): {'MET' if ratio >= 1.0 else 'NOT MET'}")
    cpu_ratio = ours_cpu / peer_cpu
    console.print(
        f"CPU per request ours/vLLM = {cpu_ratio:.2f} (target <= 1.00): {'MET' if cpu_ratio <= 1.0 else 'NOT MET'}"
    )
    console.print(
        "Both clients share 2 cores with the server: requests/s is bounded by the server, CPU-s is each client's own."
    )


if __name__ == "__main__":
    main()
