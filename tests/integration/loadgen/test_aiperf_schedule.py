"""Our replay's schedule against AIPerf's, request by request, on the shipped Weka trace with subagents.

AgentX is run through NVIDIA AIPerf (`aiperf profile --scenario inferencex-agentx-mvp`), so AIPerf 0.13.0 is the
reference for when a replay sends what. Both clients replay `traces/claude-code-weka/sample_trace_with_subagent.json`
(90 requests: a root of 6 and 4 subagents of 14-26, two of them joined by the root's 4th request and two by its
5th) against a recording simulated engine, one lane, time-scaled 0.1 so the tree runs in about 30 s:

- ours: `infersweep replay --time-scale 0.1 --idle-cap-s 10 --no-warmup` on the file as shipped;
- AIPerf: its AgentX scenario on a copy whose clock is multiplied by 0.1 (`benchmarks.peers.weka_for_aiperf`: AIPerf
  has no time scale for Weka traces), with `--unsafe-override` and these invariants relaxed: the 900 s minimum
  window (40 s here), the 10 s system idle cap (1 s, scaled as ours is), start positions at the first turn instead
  of [25 %, 75 %] so the whole tree is compared (AIPerf then primes nothing; ours runs with `--no-warmup`).

The engine logs each request's arrival, end, session header and `max_tokens`. A stream (a session of the trace) is
recognised in each log by its sequence of `max_tokens`, and each request is compared by its gap from its anchor:
the end of the request before it in its stream; for a subagent's first request the end of the parent request it
follows (AgentX drops the recorded gap from there to the spawn: `Session.spawn_groups`); for a request that joins
subagents still running, the end of the last of them. Tolerance per request: 50 ms plus 2 % of the gap, and the
anchor must be of the same kind in both; under load, up to 1 in 10 of ours may be late (never early) by < 0.5 s.
What remains different is in docs/METRICS.md ("Replay against AIPerf").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.peers import simulated_server_process, weka_for_aiperf
from benchmarks.schedule_match import Served, anchored, first_tree, served_streams
from runners.host.generated_model import ensure_generated_model
from runners.traces.formats import load_trace
from runners.traces.models import Session

ROOT = Path(__file__).resolve().parents[3]
TRACE = ROOT / "traces" / "claude-code-weka" / "sample_trace_with_subagent.json"
TIME_SCALE = 0.1
SYSTEM_IDLE_CAP_S = 10.0  # AgentX's, recorded seconds
WINDOW_S = 40.0
TOLERANCE_MS, TOLERANCE_SHARE = 50.0, 0.02
# A request sent later than its tolerance is counted as the machine's lag while it is rarer than 1 in 10 and later
# by less than this: a wrong rule (a join or spawn anchored elsewhere, a cap not applied) moves a request by seconds.
LATE_LIMIT_S = 0.5
# The engine: 20 ms to the first token, 1 ms per token after it (the root's longest answer, 6,281 tokens, takes 6.3 s).
ENGINE = ("--ttft-ms", "20", "--itl-ms", "1", "--max-batch", "1000", "--max-model-len", "262144")


def _aiperf_venv() -> Path:
    from benchmarks.peer_agreement import peer_venv

    try:
        return peer_venv("aiperf", None)
    except subprocess.CalledProcessError as error:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"AIPerf could not be installed here: {error}")


def _ours(url: str, work: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "replay", str(TRACE), "--base-url", url, "--model", "sim",
         "--concurrency", "1", "--no-warmup", "--time-scale", str(TIME_SCALE), "--idle-cap-s", str(SYSTEM_IDLE_CAP_S),
         "--duration-s", str(WINDOW_S), "--output", str(work / "ours.json")],
        check=True, cwd=ROOT, capture_output=True, timeout=300,
    )  # fmt: skip


def _aiperf(venv: Path, url: str, work: Path) -> None:
    traces = work / "aiperf-traces"
    traces.mkdir()
    exported = weka_for_aiperf(json.loads(TRACE.read_text()), "sim", TIME_SCALE)
    (traces / "sample.json").write_text(json.dumps(exported))
    argv = [
        str(venv / "bin" / "aiperf"), "profile", "--scenario", "inferencex-agentx-mvp", "--unsafe-override",
        "--url", url, "--endpoint", "/v1/chat/completions", "--endpoint-type", "chat", "--streaming",
        "--model", "sim", "--tokenizer", str(ensure_generated_model("tiny-llama")),
        "--custom-dataset-type", "weka_trace", "--input-file", str(traces), "--concurrency", "1",
        "--benchmark-duration", str(WINDOW_S), "--random-seed", "42",
        "--trajectory-start-min-ratio", "0", "--trajectory-start-max-ratio", "0",
        "--cache-bust", "first_turn_prefix", "--extra-inputs", "ignore_eos:true", "--use-server-token-count",
        "--system-idle-gap-cap-seconds", str(SYSTEM_IDLE_CAP_S * TIME_SCALE),
        "--artifact-dir", str(work / "aiperf-artifacts"), "--ui-type", "none",
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"aiperf exited {done.returncode}: {(done.stderr or done.stdout)[-2000:]}"


def _schedule(client: str, work: Path, venv: Path | None) -> dict[str, list[Served]]:
    record = work / f"{client}.jsonl"
    tokenizer = str(ensure_generated_model("tiny-llama"))
    with simulated_server_process(*ENGINE, "--record-file", str(record), "--tokenizer", tokenizer) as (url, _pid):
        if venv is None:
            _ours(url, work)
        else:
            _aiperf(venv, url, work)
    return served_streams(record)


def _rule(root: Session) -> dict[tuple[str, int], float]:
    """The gap AgentX's rules give each request, in replay seconds, before any idle cap: the recorded idle gap within
    a stream, the group offset for a subagent's first request, none for a join."""
    sessions = {session.path: session for session in root.walk()}
    rule: dict[tuple[str, int], float] = {}
    for path, session in sessions.items():
        for turn in range(1, len(session.requests)):
            rule[path, turn] = session.think_before(turn) * TIME_SCALE
        for group in session.spawn_groups():
            for child in group.children:
                rule[child.path, 0] = group.offset(session, child) * TIME_SCALE
    return rule


def _within(measured: float, expected: float) -> bool:
    return abs(measured - expected) <= TOLERANCE_MS / 1000 + TOLERANCE_SHARE * expected


def test_our_replay_sends_what_aiperf_sends_when_aiperf_sends_it(tmp_path: Path) -> None:
    venv = _aiperf_venv()
    root = load_trace(TRACE).sessions[0]
    ours = anchored(root, first_tree(root, _schedule("ours", tmp_path, None)))
    theirs = anchored(root, first_tree(root, _schedule("aiperf", tmp_path, venv)))
    assert [(a.stream, a.turn) for a in ours] == [(a.stream, a.turn) for a in theirs]
    assert len(ours) == sum(len(session.requests) for session in root.walk()) - 1  # every request but the first
    rule, cap = _rule(root), SYSTEM_IDLE_CAP_S * TIME_SCALE
    report = "\n".join(
        f"{mine.stream}:{mine.turn} {mine.kind}/{peer.kind} rule {rule[mine.stream, mine.turn] * 1000:8.1f} ms, "
        f"ours {mine.gap * 1000:8.1f}, AIPerf {peer.gap * 1000:8.1f}"
        for mine, peer in zip(ours, theirs, strict=True)
    )
    print(report)
    beyond, our_late, our_error = [], [], 0.0
    for mine, peer in zip(ours, theirs, strict=True):
        where = f"{mine.stream}:{mine.turn}"
        assert mine.kind == peer.kind, f"{where}: ours {mine.kind}, AIPerf {peer.kind}\n{report}"
        # Ours keeps AgentX's rule: the recorded gap, or the system idle cap where nothing else was in flight (the
        # root's long gaps), or at once for a join.
        expected = 0.0 if mine.kind == "join" else rule[mine.stream, mine.turn]
        target = min((expected, cap) if expected > cap else (expected,), key=lambda t: abs(mine.gap - t))
        our_error = max(our_error, abs(mine.gap - target))
        if not _within(mine.gap, target):
            # Late is the machine's (a 2-core machine running other tests beside this one held a 250 ms gap to
            # 346 ms once, 2026-12-04); early, or late by more than a different rule would put, is ours.
            assert target < mine.gap < target + LATE_LIMIT_S, f"{where}: ours off AgentX's rule\n{report}"
            our_late.append((where, mine.gap - target))
        # AIPerf against the same rule ours is held to (not against ours: where the machine held ours late, an
        # AIPerf on time read as 86 ms "early" in a fresh-clone run of 2026-12-04).
        if not _within(peer.gap, target):
            beyond.append((where, peer.gap - target))
    print(
        f"ours at most {our_error * 1000:.1f} ms off the rule, late beyond the tolerance on {len(our_late)}; AIPerf "
        f"beyond the rule's tolerance on {len(beyond)} of {len(ours)}: "
        f"{[(where, round(late * 1000, 1)) for where, late in beyond]}"
    )
    assert len(our_late) <= len(ours) // 10, f"ours late on {our_late}\n{report}"
    # AIPerf agrees with us within the tolerance on most requests; where it does not, it sent later than the rule asks
    # (its own lag under load: a 2-core machine runs its seven processes, the engine and ours), never earlier, and by
    # less than a second, less than a different rule would put between the two (a join or a spawn anchored elsewhere
    # moves by seconds). How many requests AIPerf lags on, and by how much, follows the machine's load: 0-4 of 89 at
    # load average 0.3-1.1, 9 of 89 (65-132 ms late) in a fresh-clone run of 2026-12-02 with other work beside it,
    # 8 of 89 (81-359 ms late) in one of 2026-12-04 with a test suite beside it (the 250 ms bound of before failed),
    # 24 of 89 (55-265 ms late) in a fresh-clone run of 2026-12-07 on a slower 2-core machine (load 5-9; ours was
    # late beyond the tolerance on 1). How often the peer lags is the machine's; that it is never early and never
    # late by what another rule would put is AgentX's rules, and stays asserted below.
    assert len(beyond) <= len(ours) // 2, f"AIPerf beyond the tolerance on {beyond}\n{report}"
    assert all(0 < late < 1.0 for _, late in beyond), f"{beyond}\n{report}"
    # Every kind of AgentX's rules was exercised: the system idle cap (the root's recorded gaps of 12-318 s were sent
    # after the 1 s cap), a spawn from the parent's end, and a join sent as soon as its subagents ended.
    assert {a.kind for a in theirs} == {"gap", "spawn", "join"}
    # AIPerf applied the cap to each of the root's gaps: it sent at the cap, or late by its lag (held above) but nearer
    # the cap than the recorded gap (75 ms late on one, 1,215 ms recorded, in a fresh-clone run of 2026-12-07 at load
    # 10; the cap within its tolerance was asserted before, and failed there).
    root_gaps = [a for a in theirs if a.stream == "0" and a.kind == "gap"]
    assert len(root_gaps) == 4, report
    for gap in root_gaps:
        recorded = rule[gap.stream, gap.turn]
        assert recorded > cap and (_within(gap.gap, cap) or cap < gap.gap < (cap + recorded) / 2), report
