"""Peers in the loop: our client, vLLM's, AIPerf and GuideLLM against one known-truth server, interleaved.

Each round runs every client (in a rotated order) twice against its own simulated engine, which injects TTFT
50 ms and a 10 ms gap between tokens and writes, per request, when it received it and sent each token: the
truth. Each peer's own file is read by our importers (`orchestrator/importers/`), so every figure is in our
definitions (AIPerf's inter-token latency and GuideLLM's are our TPOT; GuideLLM's TPOT counts the first token).

- Timing error = the client's median - the server's median, for TTFT and TPOT, on the larger run.
- CPU per request = the client's CPU time (user + system) of the larger run minus the smaller, over the extra
  requests: the cost of importing the tool and starting up cancels out.
- The server is pinned to core 0 and the clients to core 1 where there are two cores, and the server's CPU
  share is reported; a throughput ratio counts only when the server was below 80 % of its core.

The issue sets no target for the errors (ours should be the smallest) nor for the ratios; the figures, with the
machine's load, go to docs/BENCHMARKS.md. AIPerf and GuideLLM run from virtual environments of their own
(default: under ~/.cache/infersweep/peer-venvs/, created with `pip install aiperf==0.13.0` and
`pip install guidellm==0.8.1` when missing; GuideLLM's pulls in PyTorch, several GB).

Run: .venv/bin/python -m benchmarks.peer_agreement [--rounds 3] [--concurrency 32] [--aiperf DIR] [--guidellm DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from benchmarks.loadgen_timing import server_medians
from benchmarks.peers import ROOT, run_vllm_client, simulated_server_process
from orchestrator.importers.peer_formats import PEER_FORMATS
from recipes.schema import ValidityThresholds
from runners.host.generated_model import ensure_generated_model
from runners.host.paths import cache_dir
from runners.loadgen.bench import BenchResult
from runners.loadgen.records import PointMetrics

TTFT_MS, ITL_MS, ISL, OSL = 50.0, 10.0, 64, 16
PEER_RELEASES = {"aiperf": "aiperf==0.13.0", "guidellm": "guidellm==0.8.1"}
SATURATED = 0.8  # share of one core above which the server, not the client, limits throughput
CLIENT_CORES = {1}
SERVER_CORES = {0}


@dataclass(frozen=True)
class Run:
    client: str
    requests: int
    metrics: PointMetrics
    client_cpu_s: float
    server_cpu_share: float
    ttft_error_ms: float
    tpot_error_ms: float


def peer_venv(tool: str, given: Path | None) -> Path:
    """The tool's own virtual environment: the one given, else ours under the cache (created when missing)."""
    venv = given or cache_dir() / "peer-venvs" / tool
    if not (venv / "bin" / tool).exists():
        print(f"installing {PEER_RELEASES[tool]} into {venv} (once)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", PEER_RELEASES[tool]], check=True)
    return venv


def _pinned() -> None:
    if len(os.sched_getaffinity(0)) > 1:
        os.sched_setaffinity(0, CLIENT_CORES)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _run(argv: list[str], env: dict[str, str] | None = None) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, preexec_fn=_pinned,
                          env={**os.environ, **(env or {})})  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")


def ours(url: str, concurrency: int, requests: int, work: Path) -> PointMetrics:
    output = work / "ours.json"
    _run([sys.executable, "-m", "orchestrator.cli", "bench", "--base-url", url, "--model", "sim", "--isl", str(ISL),
          "--osl", str(OSL), "--concurrency", str(concurrency), "--num-prompts", str(requests),
          "--output", str(output)])  # fmt: skip
    return BenchResult.model_validate_json(output.read_text())


def vllm_client(url: str, concurrency: int, requests: int, work: Path) -> PointMetrics:
    raw = run_vllm_client(url, ISL, OSL, concurrency, requests, pin=_pinned)
    (work / "vllm.json").write_text(json.dumps(raw))
    return PEER_FORMATS["vllm-bench"].read(work / "vllm.json", 1, ValidityThresholds()).levels[0].metrics


def aiperf(venv: Path) -> Callable[[str, int, int, Path], PointMetrics]:
    def run(url: str, concurrency: int, requests: int, work: Path) -> PointMetrics:
        tokenizer = ensure_generated_model("tiny-llama")
        _run([str(venv / "bin" / "aiperf"), "profile", "--model", "sim", "--url", url, "--endpoint-type",
              "completions", "--streaming", "--tokenizer", str(tokenizer), "--concurrency", str(concurrency),
              "--request-count", str(requests), "--synthetic-input-tokens-mean", str(ISL),
              "--synthetic-input-tokens-stddev", "0", "--output-tokens-mean", str(OSL), "--output-tokens-stddev", "0",
              "--extra-inputs", "ignore_eos:true", "--use-server-token-count", "--artifact-dir", str(work / "aiperf"),
              "--ui-type", "none"])  # fmt: skip
        return PEER_FORMATS["aiperf"].read(work / "aiperf", 1, ValidityThresholds()).levels[0].metrics

    return run


def guidellm(venv: Path) -> Callable[[str, int, int, Path], PointMetrics]:
    def run(url: str, concurrency: int, requests: int, work: Path) -> PointMetrics:
        report = work / "guidellm.json"
        scenario = {
            "metadata": {"name": "peer-agreement"},
            "spec": {
                "backend": {"kind": "openai_http", "target": url, "model": "sim", "request_format": "/v1/completions"},
                "profile": {"kind": "concurrent", "streams": [concurrency]},
                "tokenizer": {"kind": "hf_auto", "model": str(ensure_generated_model("tiny-llama"))},
                "data": [{"kind": "synthetic_text", "prompt_tokens": ISL, "output_tokens": OSL}],
                "constraints": [{"kind": "max_requests", "count": requests}],
                "outputs": [{"kind": "json", "path": str(report)}],
                "metrics": {"kind": "generative", "sample_size": 0},
            },
        }  # fmt: skip
        (work / "scenario.json").write_text(json.dumps(scenario))
        _run([str(venv / "bin" / "guidellm"), "run", "--scenario", str(work / "scenario.json"),
              "--disable-console-interactive"])  # fmt: skip
        return PEER_FORMATS["guidellm"].read(report, 1, ValidityThresholds()).levels[0].metrics

    return run


def measure(client: str, runner: Callable[[str, int, int, Path], PointMetrics], concurrency: int,
            requests: int) -> Run:  # fmt: skip
    server_args = ("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--max-batch", "100000")
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        record = work / "sent.jsonl"
        server = simulated_server_process(*server_args, "--record-file", str(record), pin=SERVER_CORES)
        with server as (url, server_pid):
            cpu_before, server_before = _children_cpu(), _process_cpu(server_pid)
            metrics = runner(url, concurrency, requests, work)
            client_cpu, server_cpu = _children_cpu() - cpu_before, _process_cpu(server_pid) - server_before
        truth_ttft, truth_tpot = server_medians(record)
    # The server is idle while the client starts up: its share is over the client's measured duration.
    return Run(client, requests, metrics, client_cpu, server_cpu / metrics.duration_s,
               metrics.ttft_ms.p50 - truth_ttft, metrics.tpot_ms.p50 - truth_tpot)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--requests", type=int, default=2000, help="Requests of the larger run (the smaller: 1/8).")
    parser.add_argument("--aiperf", type=Path, default=None, help="AIPerf's virtual environment.")
    parser.add_argument("--guidellm", type=Path, default=None, help="GuideLLM's virtual environment.")
    args = parser.parse_args()
    clients: dict[str, Callable[[str, int, int, Path], PointMetrics]] = {
        "infersweep": ours, "vllm": vllm_client, "aiperf": aiperf(peer_venv("aiperf", args.aiperf)),
        "guidellm": guidellm(peer_venv("guidellm", args.guidellm)),
    }  # fmt: skip
    console = Console(width=150)
    big, small = args.requests, max(args.requests // 8, args.concurrency)
    runs: dict[str, list[tuple[Run, Run]]] = {name: [] for name in clients}
    names = list(clients)
    for round_index in range(args.rounds):
        order = names[round_index % len(names) :] + names[: round_index % len(names)]  # rotated each round
        for name in order:
            pair = (measure(name, clients[name], args.concurrency, small),
                    measure(name, clients[name], args.concurrency, big))  # fmt: skip
            runs[name].append(pair)
            console.print(f"round {round_index + 1} {name}: TTFT error {pair[1].ttft_error_ms:+.2f} ms, TPOT error "
                          f"{pair[1].tpot_error_ms:+.3f} ms, server CPU {pair[1].server_cpu_share:.0%}")  # fmt: skip
    load = os.getloadavg()
    title = (f"peer agreement: TTFT {TTFT_MS:g} ms, ITL {ITL_MS:g} ms, {ISL}/{OSL} tokens, concurrency "
             f"{args.concurrency}, {args.rounds} rounds (median), load {load[0]:.2f}/{load[1]:.2f}")  # fmt: skip
    table = Table(title=title)
    for column in ("client", "TTFT error ms", "TPOT error ms", "req/s", "CPU ms/request", "server CPU",
                   "our req/s ratio", "our CPU ratio"):  # fmt: skip
        table.add_column(column, justify="right")

    def cpu_per_request(pair: tuple[Run, Run]) -> float:
        return (pair[1].client_cpu_s - pair[0].client_cpu_s) / (pair[1].requests - pair[0].requests) * 1000

    summary = {}
    for name, pairs in runs.items():
        larger = [pair[1] for pair in pairs]
        counted = [run.metrics.request_throughput for run in larger if run.server_cpu_share < SATURATED]
        summary[name] = {
            "ttft": statistics.median(run.ttft_error_ms for run in larger),
            "tpot": statistics.median(run.tpot_error_ms for run in larger),
            "rps": statistics.median(counted) if counted else None,
            "cpu": statistics.median(cpu_per_request(pair) for pair in pairs),
            "server": statistics.median(run.server_cpu_share for run in larger),
        }
    mine = summary["infersweep"]
    for name, figures in summary.items():
        ratio = f"{mine['rps'] / figures['rps']:.2f}" if mine["rps"] and figures["rps"] else "server saturated"
        table.add_row(name, f"{figures['ttft']:+.2f}", f"{figures['tpot']:+.3f}",
                      f"{figures['rps']:.1f}" if figures["rps"] else "-", f"{figures['cpu']:.2f}",
                      f"{figures['server']:.0%}", ratio, f"{mine['cpu'] / figures['cpu']:.2f}")  # fmt: skip
    console.print(table)
    smallest = min(summary, key=lambda name: abs(summary[name]["ttft"]))
    console.print(f"smallest |TTFT error|: {smallest} (target: infersweep) -> "
                  f"{'met' if smallest == 'infersweep' else 'not met'}")  # fmt: skip
    print(json.dumps({"load": load, "summary": summary}, default=str))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
