"""AgentX as the field runs it: SemiAnalysis' own harness (`agentx profile`, agentx-harness 1.0.12) beside
`infersweep replay` on the same Weka-format trace against the same simulated engine (issue 61, acceptance 1).

Each round runs both clients, in a rotated order, each against its own recording simulated engine (TTFT 20 ms, 1 ms a
token; `--record-file`: the engine's own log of when each request arrived and ended), on
`traces/claude-code-weka/sample_trace_with_subagent.json` (90 requests: a root of 6 and 4 subagents), one lane,
time-scaled 0.1 (the tree runs in about 30 s), window 40 s, the whole-system idle cap 10 s (1 s scaled), chat
completions counted by the server. The harness gets the trace in the schema its `weka_trace` loader accepts, its clock
multiplied by 0.1 (`benchmarks.peers.weka_for_aiperf`: it has no time scale for Weka traces), and the flags its
scenario allows only with `--unsafe-override`: a window under its 900 s minimum, the idle cap scaled, lanes started
at the first turn (start ratio 0, not 0.25-0.75: so that both replay the same requests) with one warm-up request per
lane (the root's turn 0, one token out, unmeasured). Ours is run the same way: `--no-warmup` (from the first turn),
`--warmup-requests-per-lane 1`, the harness's phase start (`--phase-start less-phase-minimum`: the earliest first
request at once, every other keeping its spacing) and its kind of text (`--chat-text corpus`: natural text cut per
block; `--chat-text words` sends ours of one word a token instead).

Figures, each against its target (acceptance 1), from the engine's logs matched request by request
(`benchmarks/schedule_match.py`) and from each client's own report:
- the requests both sent, over those either sent (target >= 99 %);
- the send-time difference: |our gap from the request's anchor - the harness's| over the requests both sent, p99
  (target <= 50 ms);
- the theoretical prefix hit: the harness's "Theoretical Prefix Cache Hit" against the same definition computed by
  `infersweep replay` over the requests it measured (`agentx_theoretical_hit_rate`: blocks before the first unseen
  one over blocks, `HitRate.block_rate`); target: equal within 0.1 pp. Ours by tokens at 128-token blocks (the
  replay's `theoretical_hit_rate`, another definition: docs/METRICS.md) is printed beside it. The two windows need
  not hold the same requests (each lane starts the tree again when it ends), so the same definition is also computed
  by ours over the very requests the harness measured (its `profile_export.jsonl`) and set beside its own figure;
- TTFT p50 as each client reports it (target: within 5 %).
With `--lanes N` (acceptance 1 asks 256) both run N lanes instead and each run prints its client's CPU per prompt
token: the CPU seconds of the client's whole process tree (`getrusage(RUSAGE_CHILDREN)` across it, start-up and
prompt building included) over the prompt tokens the engine counted for it; ours its schedule lag p99 (`infersweep
replay`'s). The harness reports no send lag for an agentic replay (its `replay_sched_lag_*` metrics are for fixed
schedules only: `aiperf/metrics/types/replay_sched_lag_metrics.py`), so both are also read the same way from the
engine's log (`engine_send_lags`: a request's arrival against the end of the one before it plus its think time).
The request-by-request figures are for one lane only.

Run: .venv/bin/python -m benchmarks.agentx_harness [--rounds 2] [--lanes N] [--harness DIR]
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
from dataclasses import dataclass
from pathlib import Path

from benchmarks.peer_agreement import peer_venv
from benchmarks.peers import ROOT, simulated_server_process, weka_for_aiperf
from benchmarks.schedule_match import Anchored, anchored, first_tree, replays, served_streams
from orchestrator.importers.agentx import hit_over_records
from runners.host.generated_model import ensure_generated_model
from runners.traces.formats import load_trace

TRACE = ROOT / "traces" / "claude-code-weka" / "sample_trace_with_subagent.json"
TIME_SCALE, WINDOW_S, SYSTEM_IDLE_CAP_S = 0.1, 40.0, 10.0
ENGINE = ("--ttft-ms", "20", "--itl-ms", "1", "--max-batch", "1000", "--max-model-len", "262144")
TARGETS = {"same requests": 0.99, "send-time difference p99 (ms)": 50.0, "theoretical hit gap (pp)": 0.1,
           "theoretical hit gap over the same requests (pp)": 0.1, "TTFT p50 gap": 0.05}  # fmt: skip


@dataclass(frozen=True)
class Run:
    """One client's run: its requests placed from the engine's log, and what the client itself reported."""

    placed: list[Anchored]
    ttft_p50_ms: float | None
    theoretical_hit: float | None  # a share, 0-1
    engine_ttft_p50_ms: float | None = None  # the engine's own: its first token's time less the request's arrival
    engine_prompt_tokens_p50: float | None = None  # the prompts as the engine counted them (the model's tokenizer)
    token_weighted_hit: float | None = None  # ours only: `infersweep replay`'s theoretical hit (tokens, engine blocks)
    # The harness's only: our computation of its definition over the very requests it measured (its per-request export).
    hit_on_its_requests: float | None = None
    client_cpu_s: float | None = None  # the client's process tree, start to end
    engine_prompt_tokens: int | None = None  # every prompt the engine counted for this client, warm-up included
    lag_p99_ms: float | None = None  # ours only: its schedule lag p99
    engine_lags_ms: tuple[float, ...] = ()  # `engine_send_lags`, sorted


def ours(url: str, work: Path, tokenizer: Path, lanes: int, chat_text: str) -> Run:
    output = work / "ours.json"
    subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "replay", str(TRACE), "--base-url", url, "--model", "sim",
         "--concurrency", str(lanes), "--no-warmup", "--warmup-requests-per-lane", "1",
         "--phase-start", "less-phase-minimum", "--chat-text", chat_text,
         "--time-scale", str(TIME_SCALE), "--idle-cap-s", str(SYSTEM_IDLE_CAP_S),
         "--duration-s", str(WINDOW_S), "--api", "chat", "--join", "after-recorded-gap", "--tokenizer", str(tokenizer),
         "--output", str(output)],
        check=True, cwd=ROOT, capture_output=True, timeout=600,
    )  # fmt: skip
    document = json.loads(output.read_text())
    # The harness's definition of the theoretical hit over the requests ours measured (HitRate.block_rate); ours by
    # tokens at the engine's blocks is printed beside it.
    return Run([], document["ttft_ms"]["p50"], document["agentx_theoretical_hit_rate"],
               token_weighted_hit=document["theoretical_hit_rate"],
               lag_p99_ms=document["stats"]["schedule_lag_ms"]["p99"])  # fmt: skip


def harness(venv: Path, url: str, work: Path, tokenizer: Path, lanes: int) -> Run:
    traces = work / "harness-traces"
    traces.mkdir()
    (traces / "sample.json").write_text(json.dumps(weka_for_aiperf(json.loads(TRACE.read_text()), "sim", TIME_SCALE)))
    argv = [
        str(venv / "bin" / "agentx"), "profile", "--unsafe-override", "--url", url, "--endpoint-type", "chat",
        "--streaming", "--model", "sim", "--tokenizer", str(tokenizer), "--custom-dataset-type", "weka_trace",
        "--input-file", str(traces), "--concurrency", str(lanes), "--benchmark-duration", str(WINDOW_S),
        "--random-seed", "42", "--trajectory-start-min-ratio", "0", "--trajectory-start-max-ratio", "0",
        "--warmup-requests-per-lane", "1", "--use-server-token-count",
        "--system-idle-gap-cap-seconds", str(SYSTEM_IDLE_CAP_S * TIME_SCALE),
        "--output-artifact-dir", str(work / "harness"), "--ui-type", "none",
    ]  # fmt: skip
    # The harness looks a tokenizer path up in the hub cache when HF_HUB_OFFLINE is set (../shared/reference).
    env = {name: value for name, value in os.environ.items() if name != "HF_HUB_OFFLINE"}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"agentx exited {done.returncode}: {(done.stderr or done.stdout)[-3000:]}")
    export = json.loads((work / "harness" / "profile_export_aiperf.json").read_text())
    hit = (export.get("theoretical_prefix_cache_hit") or {}).get("avg")
    # Its definition as we compute it over the very requests it measured (the importer's rule, its per-request records).
    measured_by_it = hit_over_records(work / "harness" / "profile_export.jsonl", traces / "sample.json")
    return Run([], export["time_to_first_token"]["p50"], None if hit is None else hit / 100,
               hit_on_its_requests=measured_by_it)  # fmt: skip


def one(client: str, venv: Path, work: Path, lanes: int, chat_text: str, engine_tokenizes: bool = True) -> Run:
    record, tokenizer = work / f"{client}.jsonl", ensure_generated_model("tiny-llama")
    counting = ("--tokenizer", str(tokenizer)) if engine_tokenizes else ()  # else it counts whitespace words
    with simulated_server_process(*ENGINE, "--record-file", str(record), *counting) as (url, _):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)  # the engine is not reaped until the block ends
        if client == "ours":
            run = ours(url, work, tokenizer, lanes, chat_text)
        else:
            run = harness(venv, url, work, tokenizer, lanes)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    root = load_trace(TRACE).sessions[0]
    logged = [json.loads(line) for line in record.read_text().splitlines()]
    engine_ttft = statistics.median((row["first_token"] - row["arrived"]) * 1000 for row in logged if row["tokens"] > 1)
    prompts = statistics.median(row["prompt_tokens"] for row in logged if row["tokens"] > 1)
    placed = anchored(root, first_tree(root, served_streams(record))) if lanes == 1 else []
    return Run(placed, run.ttft_p50_ms, run.theoretical_hit, engine_ttft, prompts, run.token_weighted_hit,
               run.hit_on_its_requests, cpu, sum(row["prompt_tokens"] for row in logged), run.lag_p99_ms,
               tuple(engine_send_lags(record)))  # fmt: skip


def engine_send_lags(record: Path, time_scale: float = TIME_SCALE) -> list[float]:
    """Each client's send lateness as the engine saw it, the same for both (the harness states none for an agentic
    replay): for every request that follows the one before it in its stream after a recorded think time (not a join,
    nor a one-token warm-up turn on either side), ms between its arrival and the end of the one before it plus that
    think time scaled. Each logged stream is a session of the trace, recognised by its answer lengths (a one-token
    request stands for any turn); a stream that more than one session could be is left out. An idle cap that advanced
    a timer shows as a negative lag; an engine too busy to stamp arrivals at once, as a larger one."""
    sessions = list(load_trace(TRACE).sessions[0].walk())
    lags = []
    for rows in served_streams(record).values():
        could_be = [session for session in sessions if replays(rows, session)]
        if len(could_be) != 1:
            continue
        (session,) = could_be
        joins = {group.join for group in session.spawn_groups() if group.join is not None}
        for turn in range(1, len(rows)):
            if turn in joins or 1 in (rows[turn].max_tokens, rows[turn - 1].max_tokens):
                continue
            due = rows[turn - 1].ended + session.think_before(turn) * time_scale
            lags.append((rows[turn].arrived - due) * 1000)
    return sorted(lags)


def compare(mine: Run, theirs: Run) -> dict[str, float | None]:
    both = {(a.stream, a.turn): a for a in mine.placed}.keys() & {(a.stream, a.turn): a for a in theirs.placed}.keys()
    either = {(a.stream, a.turn) for a in [*mine.placed, *theirs.placed]}
    gaps = {(a.stream, a.turn): a.gap for a in theirs.placed}
    differences = sorted(abs(a.gap - gaps[a.stream, a.turn]) * 1000 for a in mine.placed if (a.stream, a.turn) in both)
    p99 = differences[min(len(differences) - 1, round(0.99 * (len(differences) - 1)))] if differences else None
    hit = (abs(mine.theoretical_hit - theirs.theoretical_hit) * 100
           if mine.theoretical_hit is not None and theirs.theoretical_hit is not None else None)  # fmt: skip
    same = (abs(theirs.hit_on_its_requests - theirs.theoretical_hit) * 100
            if theirs.hit_on_its_requests is not None and theirs.theoretical_hit is not None else None)  # fmt: skip
    ttft = (abs(mine.ttft_p50_ms - theirs.ttft_p50_ms) / theirs.ttft_p50_ms
            if mine.ttft_p50_ms and theirs.ttft_p50_ms else None)  # fmt: skip
    return {"same requests": len(both) / len(either) if either else None, "send-time difference p99 (ms)": p99,
            "theoretical hit gap (pp)": hit, "theoretical hit gap over the same requests (pp)": same,
            "TTFT p50 gap": ttft}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--harness", type=Path, default=None, help="The harness's venv (default: installed once).")
    parser.add_argument("--keep", type=Path, default=None, help="Keep each run's engine log and outputs here.")
    parser.add_argument("--lanes", type=int, default=1, help="Lanes each client runs (acceptance 1: 1, then 256).")
    parser.add_argument("--chat-text", choices=("corpus", "words"), default="corpus",
                        help="Our prompts' text: AgentX's kind (corpus) or one word a token (words).")  # fmt: skip
    parser.add_argument("--engine-counts-words", action="store_true",
                        help="The engine counts whitespace words instead of tokenising (so many lanes do not saturate "
                        "it; 'prompt tokens' are then its word counts).")  # fmt: skip
    args = parser.parse_args()
    venv = peer_venv("agentx", args.harness)
    print(f"load average before: {os.getloadavg()}", flush=True)
    results: list[dict[str, float | None]] = []
    for round_index in range(args.rounds):
        runs: dict[str, Run] = {}
        for client in ("ours", "harness") if round_index % 2 == 0 else ("harness", "ours"):
            if args.keep is not None:  # each run's engine log and client output, to read afterwards
                kept = args.keep / f"round{round_index + 1}-{client}"
                kept.mkdir(parents=True, exist_ok=True)
                runs[client] = one(client, venv, kept, args.lanes, args.chat_text, not args.engine_counts_words)
                continue
            with tempfile.TemporaryDirectory() as directory:
                runs[client] = one(
                    client, venv, Path(directory), args.lanes, args.chat_text, not args.engine_counts_words
                )
        if args.lanes == 1:  # the request-by-request figures (acceptance 1's targets) are for one lane
            results.append(compare(runs["ours"], runs["harness"]))
        for client, run in runs.items():
            print(f"round {round_index + 1}, {client}: TTFT p50 {run.ttft_p50_ms:.1f} ms (the engine's for the same "
                  f"client's requests: {run.engine_ttft_p50_ms:.1f} ms; their prompts' median as it counted them: "
                  f"{run.engine_prompt_tokens_p50:,.0f} tokens), theoretical hit {run.theoretical_hit:.4f} (the "
                  f"harness's definition"
                  f"{'' if run.token_weighted_hit is None else f'; ours by tokens {run.token_weighted_hit:.4f}'}), "
                  f"{len(run.placed)} requests placed", flush=True)  # fmt: skip
            if run.client_cpu_s is not None and run.engine_prompt_tokens:
                lag = "none reported" if run.lag_p99_ms is None else f"{run.lag_p99_ms:.1f} ms"
                lags = run.engine_lags_ms
                at_engine = (f"p50 {statistics.median(lags):.1f} ms, p99 {lags[round(0.99 * (len(lags) - 1))]:.1f} ms "
                             f"over {len(lags):,}" if lags else "none placed")  # fmt: skip
                print(f"  {client} at {args.lanes} lane(s): client CPU {run.client_cpu_s:.1f} s over "
                      f"{run.engine_prompt_tokens:,} prompt tokens the engine counted, "
                      f"{run.client_cpu_s / run.engine_prompt_tokens * 1e6:.3f} µs a token; schedule lag p99 {lag} "
                      f"(its own); send lateness at the engine {at_engine}", flush=True)  # fmt: skip
        if args.lanes > 1:
            continue
        gaps = {(a.stream, a.turn): a.gap for a in runs["harness"].placed}
        farthest = sorted(runs["ours"].placed, key=lambda a: -abs(a.gap - gaps.get((a.stream, a.turn), a.gap)))[:4]
        differing = [f"{a.stream}:{a.turn} ({a.kind}) ours {a.gap * 1e3:.0f}, harness {gaps[key] * 1e3:.0f}"
                     for a in farthest if (key := (a.stream, a.turn)) in gaps]  # fmt: skip
        print("  largest send-time differences (ms from the anchor): " + ", ".join(differing), flush=True)
    print(f"load average after: {os.getloadavg()}")
    for name, target in TARGETS.items() if results else ():
        values = [value for figures in results if (value := figures[name]) is not None]
        shown = ", ".join(f"{value:.4g}" for value in values) or "n/a"
        worst = (min(values) if name == "same requests" else max(values)) if values else None
        met = worst is not None and (worst >= target if name == "same requests" else worst <= target)
        median = statistics.median(values) if values else None
        print(f"{name}: {shown} (median {median if median is None else f'{median:.4g}'}; target "
              f"{'>=' if name == 'same requests' else '<='} {target:g}: {'met' if met else 'NOT met'})")  # fmt: skip


if __name__ == "__main__":
    main()
