"""Replay at AgentX scale: the `agentx` synthetic profile at 64, 256 and 512 live sessions, ours against AIPerf.

The corpus is `infersweep trace synth --profile agentx` (32 root sessions of 80-240 turns, ~20k-token shared
prefix, contexts growing to 190k tokens before compaction; median prompt and theoretical hit rate printed). A
lane that finishes a session takes the next copy with a new salt, so 512 lanes need no bigger corpus. The same
sessions are exported as a directory of Weka JSON files in the schema AIPerf 0.13.0's `weka_trace` loader
accepts (it takes only `hash_id_scope: local`, so the prefix every session shares in ours is private to each
session there: the prompt sizes and the growth inside a session are the same).

Both clients replay against the zero-delay simulated engine (first token and every gap 0 ms), pinned to core 0
where there are two cores, for the same measured window. AIPerf runs its AgentX scenario as InferenceX does
(`--scenario inferencex-agentx-mvp`: chat completions, streaming, cache-bust on the first turn's prefix, 10 s
system idle cap, start positions in [25 %, 75 %]), with `--unsafe-override` for the window: the scenario asks for
at least 900 s, which would take hours here.

Figures, per lane count:
- schedule lag p50/p99 (ours; target: p99 < 50 ms at 256 sessions): how late requests were sent against
  their schedule (their last bytes written), and the dispatch lag p99: how late the client began writing them. The
  difference is the engine's: a busy engine reads a 600 KB body slowly (its CPU share is printed beside).
  With `--processes N` the replayer splits its lanes among N processes (the setting `processes`) and merges them.
- client CPU per replayed prompt token: target ours <= 1/2 of AIPerf's. Each client runs twice per lane count, with
  the window and with a quarter of it; the figure is the difference of their CPU time (user + system of the
  client's processes) over the difference of the prompt tokens they sent in the window. Start-up, loading the
  corpus and warm-up (AIPerf's 10 requests per lane, our priming requests) are the same in both runs and cancel;
  each client's first run on a machine (which fills caches) is an untimed warm-up before both.

Run: .venv/bin/python -m benchmarks.replay_scale [--lanes 64 256 512] [--duration 60] [--processes 1]
     [--no-aiperf | --no-ours] [--aiperf DIR] [--aiperf-timeout 900] [--peer aiperf|agentx]

`--peer agentx` runs SemiAnalysis' AgentX harness (`agentx profile`, its own AIPerf fork, its default scenario) in
AIPerf's place, with the same flags (issue 61, acceptance 1's 256-lane half).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.peer_agreement import SERVER_CORES, peer_venv
from benchmarks.peers import children_cpu, process_cpu, simulated_server_process, weka_for_aiperf
from runners.host.generated_model import ensure_generated_model
from runners.traces.formats import load_trace
from runners.traces.hit_rate import replayed_hit_rate
from runners.traces.synthetic import PROFILES, generate, write_corpus

LAG_TARGET_MS = 50.0
LAG_TARGET_LANES = 256
CPU_RATIO_TARGET = 0.5
MODEL = "sim"
ZERO_DELAY = ("--ttft-ms", "0", "--itl-ms", "0", "--max-batch", "100000", "--max-model-len", "262144")


def export_for_aiperf(conversations: list[dict[str, Any]], directory: Path) -> Path:
    """One Weka JSON file per root session, in the schema of AIPerf's `weka_trace` loader (benchmarks.peers)."""
    directory.mkdir(parents=True, exist_ok=True)
    for conversation in conversations:
        exported = weka_for_aiperf(conversation, MODEL)
        (directory / f"{conversation['id']}.json").write_text(json.dumps(exported, separators=(",", ":")))
    return directory


# Our replay, in a process of its own (its CPU is counted when it is reaped, with the replay processes it split its
# lanes among: `--processes`, the replayer's own setting): prints its figures as JSON.
_REPLAY = """
import json, sys
from recipes.schema import ReplaySettings
from runners.loadgen.client import Endpoint
from runners.loadgen.replay import replay
from runners.traces.formats import load_trace
corpus, url = sys.argv[1], sys.argv[2]
lanes, duration, processes = int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
settings = ReplaySettings(duration_s=duration, request_timeout_s=600, processes=processes)
stats, items = replay(load_trace(corpus), Endpoint(base_url=url, model="sim"), settings, lanes)
print(json.dumps({
    "lag_p50": stats.schedule_lag_ms.p50, "lag_p99": stats.schedule_lag_ms.p99, "requests": len(items),
    "dispatch_lag_p99": stats.dispatch_lag_ms.p99, "client_cpu_share": stats.client_cpu_share,
    "tokens": sum(item.record.prompt_tokens_sent for item in items if not item.record.warmup),
    "failed": sum(1 for item in items if not item.record.ok),
}))
"""


def ours(corpus: Path, url: str, lanes: int, duration: float, processes: int) -> dict[str, Any]:
    cpu_before, started = children_cpu(), time.perf_counter()
    root = Path(__file__).resolve().parents[1]
    argv = [sys.executable, "-c", _REPLAY, str(corpus), url, str(lanes), str(duration), str(processes)]
    done = subprocess.run(argv, stdout=subprocess.PIPE, text=True, cwd=root, check=True)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return {**figures, "cpu_s": children_cpu() - cpu_before, "wall_s": time.perf_counter() - started}


def aiperf(
    venv: Path, traces: Path, url: str, lanes: int, duration: float, work: Path, timeout_s: float, tool: str = "aiperf"
) -> dict[str, Any]:
    """One run of the peer: AIPerf with its AgentX scenario, or the AgentX harness (`tool` 'agentx', whose default
    scenario is AgentX's; it looks a tokenizer path up in the hub cache when HF_HUB_OFFLINE is set: unset for it)."""
    artifacts = work / f"{tool}-{lanes}"
    scenario = ["--scenario", "inferencex-agentx-mvp"] if tool == "aiperf" else []
    argv = [
        str(venv / "bin" / tool), "profile", *scenario, "--unsafe-override",
        "--url", url, "--endpoint", "/v1/chat/completions", "--endpoint-type", "chat", "--streaming",
        "--model", MODEL, "--tokenizer", str(ensure_generated_model("tiny-llama")),
        "--custom-dataset-type", "weka_trace", "--input-file", str(traces), "--allow-dataset-wrap",
        "--concurrency", str(lanes), "--benchmark-duration", str(duration), "--random-seed", "42",
        "--trajectory-start-min-ratio", "0.25", "--trajectory-start-max-ratio", "0.75",
        "--cache-bust", "first_turn_prefix", "--extra-inputs", "ignore_eos:true", "--use-server-token-count",
        "--artifact-dir", str(artifacts), "--ui-type", "none",
    ]  # fmt: skip
    cpu_before, started = children_cpu(), time.perf_counter()
    try:
        env = {name: value for name, value in os.environ.items() if tool == "aiperf" or name != "HF_HUB_OFFLINE"}
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish within {timeout_s:g} s"}
    cpu, wall = children_cpu() - cpu_before, time.perf_counter() - started
    if done.returncode != 0:
        return {"error": f"{tool} exited {done.returncode}: {(done.stderr or done.stdout)[-1500:]}"}
    summary = json.loads(next(artifacts.rglob("profile_export_aiperf.json")).read_text())
    count = summary["request_count"]["avg"]
    tokens = summary["input_sequence_length"]["avg"] * count
    return {"requests": count, "tokens": tokens, "cpu_s": cpu, "wall_s": wall}


def _per_token(runs: dict[float, dict[str, Any]]) -> float | None:
    """CPU µs per prompt token from a short and a long run: what the longer window added, over what it sent."""
    if len(runs) != 2 or any("error" in run for run in runs.values()):
        return None
    short, long = (runs[window] for window in sorted(runs))
    tokens, cpu = long["tokens"] - short["tokens"], long["cpu_s"] - short["cpu_s"]
    # The longer run used no more CPU than the shorter one: the fixed costs (start-up, warm-up) varied more than
    # the window added, and the difference says nothing about a token (AIPerf at 64 sessions, 2026-12-04).
    return cpu / tokens * 1e6 if tokens > 0 and cpu > 0 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--lanes", type=int, nargs="+", default=[64, 256, 512])
    parser.add_argument("--duration", type=float, default=60.0, help="Measured window per run, seconds.")
    parser.add_argument("--processes", type=int, default=1, help="Processes our replay's lanes are split among.")
    parser.add_argument("--no-aiperf", action="store_true", help="Ours only.")
    parser.add_argument("--no-ours", action="store_true", help="AIPerf only.")
    parser.add_argument("--aiperf", type=Path, default=None, help="The peer's virtual environment.")
    parser.add_argument("--peer", choices=["aiperf", "agentx"], default="aiperf",
                        help="AIPerf 0.13.0, or SemiAnalysis' AgentX harness (agentx-harness 1.0.12).")  # fmt: skip
    parser.add_argument("--aiperf-timeout", type=float, default=900.0, help="Longest AIPerf run, seconds.")
    args = parser.parse_args()
    venv = None if args.no_aiperf else peer_venv(args.peer, args.aiperf)
    # The model's tokenizer counts the chat text AIPerf sends as a real server would (whitespace words undercount it
    # several times), so both clients' prompt tokens are in one unit: the tiny model's tokens, which ours are made of.
    server = (*ZERO_DELAY, "--tokenizer", str(ensure_generated_model("tiny-llama")))
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        profile = PROFILES["agentx"]
        corpus = write_corpus(profile, work / "agentx.jsonl")
        trace = load_trace(corpus)
        prompts = [request.input_tokens for _, session in trace.walk_sessions() for request in session.requests]
        hit = replayed_hit_rate(trace, profile.block_size, 1.0).rate
        traces = export_for_aiperf(generate(profile), work / "aiperf-traces")
        print(f"corpus: {len(trace.sessions)} root sessions, {len(prompts):,} requests, median prompt "
              f"{statistics.median(prompts):,.0f} tokens, theoretical hit {hit:.1%}; zero-delay simulated engine; "
              f"{args.duration:g} s window; our replay in {args.processes} process(es)", flush=True)  # fmt: skip
        # A client's first run on a machine fills caches (AIPerf's: 41.8 s of CPU against 21.0 s for the same 40 s
        # window run again, 2026-12-05, which made its longer window look cheaper than the shorter; ours: compiled
        # modules, 1.6 s). Its figure is a difference of two runs, so each client first runs once, untimed.
        if not args.no_ours:
            with simulated_server_process(*server, pin=SERVER_CORES) as (url, _):
                warm = ours(corpus, url, min(args.lanes), 10, args.processes)
            print(f"our warm-up (not counted): {warm}", flush=True)
        if venv is not None:
            with simulated_server_process(*server, pin=SERVER_CORES) as (url, _):
                warm = aiperf(venv, traces, url, min(args.lanes), 10, work / "warm-up", args.aiperf_timeout, args.peer)
            print(f"{args.peer} warm-up (not counted): {warm}", flush=True)
        rows = []
        for lanes in args.lanes:
            mine = {}
            for window in (args.duration / 4, args.duration) if not args.no_ours else ():
                with simulated_server_process(*server, pin=SERVER_CORES) as (url, pid):
                    started, before = time.perf_counter(), process_cpu(pid)
                    mine[window] = ours(corpus, url, lanes, window, args.processes)
                    mine[window]["server_cpu_share"] = (process_cpu(pid) - before) / (time.perf_counter() - started)
                print(f"{lanes} lanes, {window:g} s, ours: {mine[window]}", flush=True)
            theirs: dict[float, dict[str, Any]] = {}
            for window in (args.duration / 4, args.duration) if venv is not None else ():
                assert venv is not None  # the loop runs only with a peer venv
                with simulated_server_process(*server, pin=SERVER_CORES) as (url, pid):
                    started, before = time.perf_counter(), process_cpu(pid)
                    theirs[window] = aiperf(venv, traces, url, lanes, window, work / f"{window:g}", args.aiperf_timeout,
                                            args.peer)  # fmt: skip
                    # Over the whole run, start-up included: a share near 1 means the server limited the client.
                    theirs[window]["server_cpu_share"] = (process_cpu(pid) - before) / (time.perf_counter() - started)
                print(f"{lanes} lanes, {window:g} s, {args.peer}: {theirs[window]}", flush=True)
            rows.append((lanes, mine.get(args.duration), _per_token(mine), _per_token(theirs), os.getloadavg()[0]))
    print()
    print("| live sessions | our lag p50 / p99 ms | lag target | our dispatch lag p99 ms | our CPU µs/prompt token "
          "| the peer's | ratio (target <= 0.5) | engine CPU share | load |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for lanes, measured, own, peer, load in rows:
        if measured is None:
            print(f"| {lanes} | – | – | – | – | {'–' if peer is None else f'{peer:.3f}'} | – | – | {load:.2f} |")
            continue
        target = ("met" if measured["lag_p99"] < LAG_TARGET_MS else "not met") if lanes == LAG_TARGET_LANES else "–"
        ratio = own / peer if own and peer else None
        verdict = "–" if ratio is None else f"{ratio:.2f} ({'met' if ratio <= CPU_RATIO_TARGET else 'not met'})"
        own_text = "–" if own is None else f"{own:.3f}"
        peer_text = "–" if peer is None else f"{peer:.3f}"
        lag = f"{measured['lag_p50']:.1f} / {measured['lag_p99']:.1f}"
        dispatch, engine = measured["dispatch_lag_p99"], measured["server_cpu_share"]
        print(f"| {lanes} | {lag} | {target} | {dispatch:.1f} | {own_text} | {peer_text} | {verdict} | {engine:.2f} "
              f"| {load:.2f} |")  # fmt: skip


if __name__ == "__main__":
    main()
