"""Timing accuracy: our median TTFT/TPOT vs the server's own record, next to vLLM's client's error.

The simulated server injects TTFT 50 ms and a 10 ms inter-token gap and writes, per request, when it
received it and when it sent each token. Error = client median - server median. Targets: our
TTFT error <= half of vLLM's client's at concurrency 32; our TPOT error < 0.2 ms.

Run: .venv/bin/python -m benchmarks.loadgen_timing [--concurrency 1 32 128]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from benchmarks.peers import run_vllm_client, simulated_server
from runners.loadgen.bench import BenchSettings, run_bench

TTFT_MS, ITL_MS, OSL, ISL = 50.0, 10.0, 16, 64


def server_medians(record_file: Path) -> tuple[float, float]:
    entries = [json.loads(line) for line in record_file.read_text().splitlines()]
    ttft = statistics.median((e["first_token"] - e["arrived"]) * 1000 for e in entries)
    tpot = statistics.median((e["last_token"] - e["first_token"]) * 1000 / (e["tokens"] - 1) for e in entries)
    return ttft, tpot


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 32, 128])
    args = parser.parse_args()
    table = Table(title=f"timing error vs the server's record (TTFT {TTFT_MS:g} ms, ITL {ITL_MS:g} ms, {ISL}/{OSL})")
    for column in ("concurrency", "client", "server TTFT p50", "TTFT error ms", "server TPOT p50", "TPOT error ms"):
        table.add_column(column, justify="right")
    verdicts = []
    server_args = ("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--max-batch", "100000")
    for concurrency in args.concurrency:
        prompts = max(20, 5 * concurrency)
        errors = {}
        for client in ("infersweep", "vllm"):
            with tempfile.TemporaryDirectory() as directory:
                record = Path(directory) / "sent.jsonl"
                with simulated_server(*server_args, "--record-file", str(record)) as url:
                    if client == "infersweep":
                        result, _ = run_bench(BenchSettings(base_url=url, model="sim", isl=ISL, osl=OSL,
                                                            concurrency=concurrency, num_prompts=prompts))  # fmt: skip
                        ttft, tpot = result.ttft_ms.p50, result.tpot_ms.p50
                    else:
                        peer = run_vllm_client(url, ISL, OSL, concurrency, prompts)
                        ttft, tpot = peer["median_ttft_ms"], peer["median_tpot_ms"]
                server_ttft, server_tpot = server_medians(record)
            if ttft is None or tpot is None:
                raise SystemExit(f"{client} at concurrency {concurrency}: no TTFT or TPOT median (no request finished)")
            errors[client] = (ttft - server_ttft, tpot - server_tpot)
            table.add_row(str(concurrency), client, f"{server_ttft:.2f}", f"{ttft - server_ttft:+.3f}",
                          f"{server_tpot:.3f}", f"{tpot - server_tpot:+.3f}")  # fmt: skip
        ours, theirs = errors["infersweep"], errors["vllm"]
        if concurrency == 32:
            met = abs(ours[0]) <= abs(theirs[0]) / 2
            verdicts.append(
                f"c=32 TTFT error |{ours[0]:.3f}| <= half of vLLM's |{theirs[0]:.3f}|: {'MET' if met else 'NOT MET'}"
            )
        verdicts.append(
            f"c={concurrency} TPOT error |{ours[1]:.3f}| ms < 0.2 ms: {'MET' if abs(ours[1]) < 0.2 else 'NOT MET'}"
        )
    console = Console()
    console.print(table)
    for line in verdicts:
        console.print(line)


if __name__ == "__main__":
    main()
