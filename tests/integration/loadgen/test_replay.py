"""Agentic trace replay against the simulated engine with a real (block-level) prefix cache."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from recipes.errors import ConfigurationError, InfrastructureError
from recipes.schema import ReplaySettings
from runners.host.generated_model import ensure_generated_model
from runners.loadgen import loop
from runners.loadgen.chat_text import PromptText
from runners.loadgen.client import Endpoint
from runners.loadgen.fixed_length import Vocabulary
from runners.loadgen.records import RequestRecord
from runners.loadgen.replay import Replayer, SessionId, replay
from runners.traces.formats import load_trace, parse_trace
from runners.traces.hit_rate import theoretical_hit_rate
from runners.traces.models import Trace
from tests.agentx_example import agentx_example_corpus
from tests.conftest import TRACES, run_cli
from tests.integration.loadgen.test_bench import start_simulated

WEKA = TRACES / "claude-code-weka" / "sample_trace_with_subagent.json"
MOONCAKE = TRACES / "mooncake" / "conversation_trace.jsonl"
BLOCK = 16  # the simulated engine's cache block


@pytest.fixture(scope="module")
def caching_server() -> Iterator[str]:
    process, url = start_simulated("--ttft-ms", "5", "--itl-ms", "0.5", "--prefix-caching", "--block-size", str(BLOCK))
    yield url
    process.terminate()
    process.wait(timeout=10)


def test_cold_replay_realizes_the_theoretical_hit_rate(caching_server: str) -> None:
    trace = load_trace(WEKA)
    # length_scale 1/4 turns the trace's 64-token blocks into 16-token blocks, the engine's block size.
    settings = ReplaySettings(duration_s=4, warmup=False, time_scale=0.005, length_scale=0.25,
                              max_output_tokens=8)  # fmt: skip
    stats, records = replay(trace, Endpoint(base_url=caching_server, model="sim"), settings, 1)
    assert stats.requests_measured >= trace.num_requests  # at least one whole tree, subagents included
    assert all(item.record.ok for item in records), [item.record.error for item in records if not item.record.ok]
    assert stats.sessions_completed >= 1
    theoretical = theoretical_hit_rate(trace).rate
    assert stats.realized_hit_rate == pytest.approx(theoretical, abs=0.03)
    assert {SessionId.parse(item.session).path for item in records} >= {"0", "0/0", "0/3"}  # subagents replayed


def test_parallel_copies_do_not_share_cache(caching_server: str) -> None:
    trace = load_trace(WEKA)
    settings = ReplaySettings(duration_s=3, warmup=False, time_scale=0.005, length_scale=0.25,
                              max_output_tokens=8, seed=7)  # fmt: skip
    stats, records = replay(trace, Endpoint(base_url=caching_server, model="sim"), settings, 3)
    # Three lanes replay three salted copies at once: if copies shared blocks, the realized rate would
    # exceed what one copy can reach on its own.
    assert len({SessionId.parse(item.session).copy for item in records}) >= 3
    assert stats.realized_hit_rate is not None
    assert stats.realized_hit_rate <= theoretical_hit_rate(trace).rate + 0.02


def test_a_later_point_on_the_same_engine_hits_nothing_an_earlier_point_left(caching_server: str) -> None:
    # A job's Points run one after another on one engine, with the same seed for the same repeat. The second
    # Point's priming requests are the first requests of its copies: anything cached for them came from the
    # earlier Point (they used to be the same salted copies, and hit it whole).
    trace = load_trace(WEKA)
    settings = ReplaySettings(duration_s=2, warmup=True, time_scale=0.005, length_scale=0.25,
                              max_output_tokens=8, seed=11)  # fmt: skip
    endpoint = Endpoint(base_url=caching_server, model="sim")
    _stats, earlier = replay(trace, endpoint, settings, 1)
    _stats, records = replay(trace, endpoint, settings, 2)
    primers = [item.record for item in records if item.record.warmup and item.record.max_tokens == 1]
    assert len(primers) == 2
    assert [record.cached_tokens for record in primers] == [0, 0], [record.prompt_tokens_sent for record in primers]
    # Nor do they share a session id, which a router binds to the worker holding the session's prefix (Dynamo's
    # X-Dynamo-Session-ID): the earlier Point's worker holds nothing of the later Point's sessions.
    assert {item.session for item in earlier}.isdisjoint({item.session for item in records})


def test_warm_start_primes_history(caching_server: str) -> None:
    trace = load_trace(WEKA)
    settings = ReplaySettings(duration_s=2, warmup=True, time_scale=0.005, length_scale=0.25,
                              max_output_tokens=8, seed=3)  # fmt: skip
    _stats, records = replay(trace, Endpoint(base_url=caching_server, model="sim"), settings, 1)
    primer = records[0].record
    assert primer.warmup and primer.max_tokens == 1
    first_measured = next(item.record for item in records if not item.record.warmup)
    # The primed history is already cached when the first measured request of the lane arrives.
    assert first_measured.cached_tokens and first_measured.cached_tokens > 0.5 * first_measured.prompt_tokens_sent


def test_agentx_warmup_turns_are_sent_back_to_back_with_one_token_before_the_window(caching_server: str) -> None:
    # AgentX's --warmup-requests-per-lane 2: the primer and the two turns after it go as one-token requests, each as
    # soon as the one before ended, then the window opens and the lane measures from the turn after them.
    trace = load_trace(WEKA)
    settings = ReplaySettings(duration_s=1.5, warmup=True, time_scale=0.005, length_scale=0.25, max_output_tokens=8,
                              seed=3, warmup_requests_per_lane=2)  # fmt: skip
    replayer = Replayer(trace, Endpoint(base_url=caching_server, model="sim"), settings, 1)
    loop.run(replayer.run_sessions())
    warm = [item for item in replayer.records if item.record.warmup]
    start = next(item for item in replayer.records if not item.record.warmup).turn
    assert [item.turn for item in warm] == [start - 3, start - 2, start - 1]
    assert all(item.record.max_tokens == 1 and item.session == warm[0].session for item in warm)
    for before, after in itertools.pairwise(warm):
        assert before.record.end is not None and after.record.sent is not None
        assert after.record.sent - before.record.end < 0.05  # no idle gap between warm-up turns
    assert all(item.record.sent is not None and item.record.sent < replayer.window_start for item in warm)
    # The warm-up turns' history is cached when the first measured turn arrives.
    first = next(item.record for item in replayer.records if not item.record.warmup)
    assert first.cached_tokens and first.cached_tokens > 0.5 * first.prompt_tokens_sent


def _thinks_trace(thinks: list[float]) -> Trace:
    requests = [{"t": sum(thinks[: i + 1]), "type": "s", "in": 8 * (i + 1), "out": 2, "hash_ids": list(range(i + 1)),
                 "think_time": think} for i, think in enumerate(thinks)]  # fmt: skip
    return parse_trace(json.dumps({"id": "thinks", "block_size": 8, "requests": requests}).encode(), "thinks.json")


def test_the_harness_phase_start_sends_the_earliest_first_turn_when_the_window_opens(caching_server: str) -> None:
    # agentx-harness 1.0.12's default: every lane's first measured turn keeps its think time less the smallest of
    # them, so one lane's goes as the window opens and the others keep their spacing from it.
    thinks = [0.0, 0.05, 0.15, 0.25, 0.35]
    settings = ReplaySettings(duration_s=1.0, warmup=True, seed=5, phase_start="less-phase-minimum")
    replayer = Replayer(_thinks_trace(thinks), Endpoint(base_url=caching_server, model="sim"), settings, 3)
    loop.run(replayer.run_sessions())
    firsts = [next(item for item in replayer.records if item.lane == lane and not item.record.warmup)
              for lane in range(3)]  # fmt: skip
    assert len({item.turn for item in firsts}) > 1  # lanes warm-started at different turns: the rule shows
    earliest = min(thinks[item.turn] for item in firsts)
    for item in firsts:
        assert item.record.scheduled is not None
        assert item.record.scheduled - replayer.window_start == pytest.approx(thinks[item.turn] - earliest, abs=1e-6)


def test_each_request_is_due_its_think_time_after_the_answer_before_it(caching_server: str) -> None:
    # One session, think times all different; two lanes start primed at random turns.
    thinks = [0.0, 0.05, 0.15, 0.25, 0.35]
    trace = _thinks_trace(thinks)
    settings = ReplaySettings(duration_s=1.5, warmup=True, seed=5)
    replayer = Replayer(trace, Endpoint(base_url=caching_server, model="sim"), settings, 2)
    loop.run(replayer.run_sessions())
    for lane in (0, 1):
        sent = [item for item in replayer.records if item.lane == lane and not item.record.warmup]
        # The first measured turn follows the primed history by its own think time, not when the window opens.
        first = sent[0]
        assert first.record.scheduled - replayer.window_start == pytest.approx(thinks[first.turn], abs=1e-6)
        for before, after in itertools.pairwise(sent):
            if after.turn == before.turn + 1:  # the same session's next turn: due think time after the answer
                assert after.record.scheduled - before.record.end == pytest.approx(thinks[after.turn], abs=1e-6)
    assert replayer.stats().schedule_lag_ms.p99 is not None
    # When the window closes on a tree, its lane stops: it does not start copy after copy of which only
    # the first request fits. So, per lane, every copy but the last ran to its session's last turn.
    for lane in (0, 1):
        copies: dict[str, list[int]] = {}
        for item in replayer.records:
            if item.lane == lane:
                copies.setdefault(item.session, []).append(item.turn)
        *finished, _last = copies.values()
        assert all(turns[-1] == len(thinks) - 1 for turns in finished), copies


def test_mooncake_timeline_replay_reports_schedule_lag(caching_server: str) -> None:
    trace = load_trace(MOONCAKE)
    settings = ReplaySettings(mode="timeline", duration_s=1.5, time_scale=0.002,
                              length_scale=1 / 32, max_output_tokens=4)  # fmt: skip
    stats, _records = replay(trace, Endpoint(base_url=caching_server, model="sim"), settings, 32)
    assert stats.requests_measured > 50
    assert stats.schedule_lag_ms.n == stats.requests_measured
    assert stats.realized_hit_rate is not None and 0 < stats.realized_hit_rate < 1


def test_cli_replay_writes_result(caching_server: str, tmp_path: Path) -> None:
    output = tmp_path / "replay.json"
    result = run_cli("replay", str(WEKA), "--base-url", caching_server, "--model", "sim", "--duration-s", "2",
                     "--time-scale", "0.005", "--length-scale", "0.25", "--max-output-tokens", "8",
                     "--engine-block-size", str(BLOCK), "--output", str(output))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "prefix-cache hit rate: realized" in result.stdout
    # A 2 s window, time- and length-scaled: labelled with each way it departs from AgentX.
    assert "not comparable with AgentX: window 2 s (AgentX: 3,600 s); time_scale 0.005" in result.stdout
    document = json.loads(output.read_text())
    assert document["trace"]["kind"] == "weka" and len(document["trace"]["version"]) == 64
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"block_size": 64, "requests": [{"t": 0, "type": "n", "in": "lots"}]}))
    bad = run_cli("replay", str(broken), "--base-url", caching_server, "--model", "sim")
    assert bad.returncode == 2 and str(broken) in bad.stderr and "requests[0]" in bad.stderr


def _spawn_replay(parent_api_time: float) -> tuple[RequestRecord, RequestRecord]:
    """A parent request whose answer takes 0.2 s here (TTFT 100 ms, then 4 more tokens 25 ms apart) and took
    `parent_api_time` when recorded, with a subagent recorded 0.15 s after the parent's send; (parent, child)."""
    process, url = start_simulated("--ttft-ms", "100", "--itl-ms", "25")
    try:
        trace = parse_trace(json.dumps({"id": "spawn", "block_size": 4, "requests": [
            {"t": 0.0, "type": "s", "in": 8, "out": 5, "hash_ids": [1, 2], "api_time": parent_api_time},
            {"t": 0.15, "type": "subagent", "requests": [{"t": 0.0, "type": "s", "in": 8, "out": 1, "hash_ids": [7]}]},
        ]}).encode(), "spawn.json")  # fmt: skip
        settings = ReplaySettings(duration_s=1.5, warmup=False)
        replayer = Replayer(trace, Endpoint(base_url=url, model="sim"), settings, 1)
        loop.run(replayer.run_sessions())
    finally:
        process.terminate()
        process.wait(timeout=10)
    parent = next(item.record for item in replayer.records if item.session.endswith("-0") and item.turn == 0)
    child = next(item.record for item in replayer.records if item.session.endswith("-0/0"))
    assert parent.sent is not None and child.sent is not None and parent.end is not None
    return parent, child


def test_a_subagent_starts_its_recorded_offset_after_its_parent_request_was_sent() -> None:
    # Recorded, the subagent was spawned while its parent was still answering (0.15 s into a 0.3 s answer): AgentX
    # counts its offset from the parent's send. It must leave 0.15 s after the parent's send, while the parent still
    # streams, not 0.15 s after the parent's answer ended (0.35 s).
    parent, child = _spawn_replay(parent_api_time=0.3)
    assert parent.end is not None and child.sent is not None and parent.sent is not None
    assert parent.end - parent.sent > 0.19  # the parent was still answering when its subagent left
    assert child.sent - parent.sent == pytest.approx(0.15, abs=0.04), child.sent - parent.sent


def test_a_subagent_spawned_after_its_parent_answered_starts_as_the_answer_ends() -> None:
    # Recorded, the parent's answer took 0.1 s and the subagent came 0.05 s after it: AgentX (AIPerf's agentic replay)
    # dispatches such a group when the parent's request completes, its first member at once. Here the parent's answer
    # takes 0.2 s, so the subagent leaves at its end (0.2 s after the send), neither at 0.15 s nor at 0.25 s.
    parent, child = _spawn_replay(parent_api_time=0.1)
    assert parent.end is not None and child.sent is not None
    assert child.sent - parent.end == pytest.approx(0.0, abs=0.03), child.sent - parent.end


@pytest.mark.parametrize("join", ["when-subagents-end", "after-recorded-gap"])
def test_a_join_goes_when_its_subagent_ends_or_also_after_its_recorded_gap(join: str) -> None:
    """Recorded: the root's answer took 0.05 s, a subagent left 0.1 s after the root's send and took 0.05 s, and the
    root's next request came at 0.9 s: it joins the subagent, 0.85 s after the answer before it ended. Here the
    subagent answers 20 tokens 10 ms apart (about 0.2 s). AIPerf 0.13.0 sends the join as the subagent ends;
    agentx-harness 1.0.12 at the later of that and the join's recorded gap: 0.85 s after the root's first answer."""
    process, url = start_simulated("--ttft-ms", "5", "--itl-ms", "10")
    try:
        trace = parse_trace(json.dumps({"id": "join", "block_size": 4, "requests": [
            {"t": 0.0, "type": "s", "in": 8, "out": 1, "hash_ids": [1, 2], "api_time": 0.05},
            {"t": 0.1, "type": "subagent", "requests": [{"t": 0.0, "type": "s", "in": 8, "out": 20, "hash_ids": [7],
                                                           "api_time": 0.05}]},
            {"t": 0.9, "type": "s", "in": 12, "out": 1, "hash_ids": [1, 2, 3]},
        ]}).encode(), "join.json")  # fmt: skip
        assert [group.join for group in trace.sessions[0].spawn_groups()] == [1]
        replayer = Replayer(trace, Endpoint(base_url=url, model="sim"), ReplaySettings(duration_s=2, warmup=False,
                                                                                          join=join), 1)  # fmt: skip
        loop.run(replayer.run_sessions())
    finally:
        process.terminate()
        process.wait(timeout=10)
    first_copy = [(SessionId.parse(item.session).path, item) for item in replayer.records
                  if SessionId.parse(item.session).copy == 0]  # fmt: skip
    root = {item.turn: item.record for path, item in first_copy if path == "0"}
    (child,) = [item.record for path, item in first_copy if path == "0/0"]
    assert root[0].end is not None and root[1].sent is not None and child.end is not None
    assert child.end - root[0].end < 0.5  # the subagent ended long before the recorded gap did
    if join == "when-subagents-end":
        assert root[1].sent - child.end == pytest.approx(0.0, abs=0.04), root[1].sent - child.end
    else:
        assert root[1].sent - root[0].end == pytest.approx(0.85, abs=0.06), root[1].sent - root[0].end


def test_the_whole_system_idle_cap_sends_a_at_71_s_as_agentx_does(tmp_path: Path) -> None:
    # AgentX's example, at time scale 0.05 (1 recorded second = 50 ms): lane A's first answer ends at 0 and it
    # thinks 200 s; lane B is busy from 1 s to 61 s (a 300-token answer at 10 ms a token), then thinks long. With
    # AgentX's caps (10 s whole-system idle, 300 s per tree) A is sent at 71 s: 61 s + 10 s of whole-system idle.
    # The old rule (shorten a gap when nothing is in flight at the moment it is scheduled) sent it at 10 s.
    corpus = tmp_path / "example.jsonl"
    corpus.write_text(agentx_example_corpus(b_answer_tokens=300))
    process, url = start_simulated("--ttft-ms", "5", "--itl-ms", "10")
    try:
        settings = ReplaySettings(duration_s=5, warmup=False, time_scale=0.05)
        replayer = Replayer(load_trace(corpus), Endpoint(base_url=url, model="sim"), settings, 2)
        loop.run(replayer.run_sessions())
    finally:
        process.terminate()
        process.wait(timeout=10)
    # Lane A's first tree (copy 0 of conversation a); after it the lane starts its next copy.
    lane_a = sorted((item for item in replayer.records if item.session == "0.2-0-0"), key=lambda item: item.turn)
    assert [item.turn for item in lane_a] == [0, 1], [(item.session, item.turn) for item in replayer.records]
    first, second = lane_a[0].record, lane_a[1].record
    assert first.end is not None and second.sent is not None
    assert (second.sent - first.end) / 0.05 == pytest.approx(71.0, abs=1.0)


def test_a_think_time_past_the_window_is_not_waited_out(caching_server: str) -> None:
    # Each lane's second turn is due 1,000 s after its first answer: when the 1 s window closes, the replay ends
    # (a pending timer is dropped, not waited for, nor advanced lane after lane by the idle caps).
    requests = [{"t": 0.0, "type": "s", "in": 8, "out": 1, "hash_ids": [1]},
                {"t": 1000.0, "type": "s", "in": 12, "out": 1, "hash_ids": [1, 2], "think_time": 1000.0}]  # fmt: skip
    trace = parse_trace(json.dumps({"id": "long-think", "block_size": 4, "requests": requests}).encode(), "t.json")
    started = time.perf_counter()
    stats, records = replay(trace, Endpoint(base_url=caching_server, model="sim"), ReplaySettings(duration_s=1.0,
                            warmup=False), 4)  # fmt: skip
    # Generous for a loaded machine; waiting out the caps alone would take 4 lanes x 10 s.
    assert time.perf_counter() - started < 8.0
    assert {item.record.turn for item in records} == {0} and stats.requests_measured == 4


def test_the_session_headers_the_router_reads_carry_each_session_and_its_parent(tmp_path: Path) -> None:
    # Dynamo's KV router (LaunchPlan.session_headers): every request carries its session id in X-Dynamo-Session-ID,
    # and a subagent's also its parent's in X-Dynamo-Parent-Session-ID; the engine logs what arrived.
    record = tmp_path / "served.jsonl"
    process, url = start_simulated("--ttft-ms", "1", "--itl-ms", "0.1", "--record-file", str(record))
    endpoint = Endpoint(base_url=url, model="sim", session_headers=("X-Session-ID", "X-Dynamo-Session-ID"),
                        parent_session_headers=("X-Dynamo-Parent-Session-ID",))  # fmt: skip
    try:
        settings = ReplaySettings(duration_s=3, warmup=False, time_scale=0.001, length_scale=0.05,
                                  max_output_tokens=4)  # fmt: skip
        replay(load_trace(WEKA), endpoint, settings, 1)
    finally:
        process.terminate()
        process.wait(timeout=10)
    served = [json.loads(line) for line in record.read_text().splitlines()]
    roots = [row for row in served if "/" not in row["session"]]
    children = [row for row in served if "/" in row["session"]]
    assert roots and children
    assert all(row["routing"] == {"X-Dynamo-Session-ID": row["session"]} for row in roots)
    assert all(row["routing"] == {"X-Dynamo-Session-ID": row["session"],
                                  "X-Dynamo-Parent-Session-ID": row["session"].rsplit("/", 1)[0]}
               for row in children)  # fmt: skip


@pytest.mark.parametrize("kind", ["words", "corpus"])
def test_a_chat_replay_sends_text_counts_server_tokens_and_keeps_prefixes_shared(tmp_path: Path, kind: str) -> None:
    # AgentX's way (workload.api 'chat'): the synthesised blocks go out as text made with the model's tokenizer, one
    # user message to /v1/chat/completions; the server tokenises it again, and its usage counts are the ones used.
    model_dir = ensure_generated_model("tiny-llama")
    vocabulary = Vocabulary.from_model_dir(model_dir)
    record = tmp_path / "served.jsonl"
    process, url = start_simulated("--ttft-ms", "2", "--itl-ms", "0.2", "--prefix-caching", "--block-size", str(BLOCK),
                                   "--tokenizer", str(model_dir), "--record-file", str(record))  # fmt: skip
    settings = ReplaySettings(duration_s=3, warmup=False, time_scale=0.005, length_scale=0.25, max_output_tokens=8,
                              api="chat", chat_text=kind)  # fmt: skip
    low = max(vocabulary.excluded, default=-1) + 1
    trace = load_trace(WEKA)
    try:
        stats, items = replay(trace, Endpoint(base_url=url, model="sim"), settings, 1, (low, vocabulary.size),
                              text=PromptText(vocabulary.text_tokenizer(), settings.chat_text))  # fmt: skip
    finally:
        process.terminate()
        process.wait(timeout=10)
    served = [json.loads(line) for line in record.read_text().splitlines()]
    assert served and {row["api"] for row in served} == {"chat"}
    measured = [item.record for item in items if not item.record.warmup]
    assert measured and all(r.ok for r in measured), [r.error for r in measured if not r.ok]
    # Lengths are the server's count of the text it received. Words: the trace's, token for token (`text_decoder`: the
    # ids decoded as they were tokenised into 6.8 % more here, and vLLM's count into 9.1-9.9 % more). Natural text cut
    # at token boundaries (the AgentX harness's kind): within 1 % of it.
    assert all(r.prompt_tokens is not None for r in measured)
    sent, counted = sum(r.prompt_tokens_sent for r in measured), sum(r.prompt_tokens for r in measured)
    assert counted == sum(row["prompt_tokens"] for row in served[-len(measured) :])
    if kind == "words":
        assert [r.prompt_tokens for r in measured] == [r.prompt_tokens_sent for r in measured], (counted, sent)
    else:
        assert counted == pytest.approx(sent, rel=0.01), (counted, sent)
    # Equal blocks decode to equal text, so a later turn still hits the prefix its session cached.
    assert stats.realized_hit_rate is not None
    assert stats.realized_hit_rate == pytest.approx(theoretical_hit_rate(trace).rate, abs=0.1)


def test_a_chat_replay_without_a_tokenizer_is_refused_naming_the_setting() -> None:
    settings = ReplaySettings(duration_s=1, warmup=False, api="chat")
    with pytest.raises(ConfigurationError, match=r"workload\.api: got 'chat'.*tokenizer"):
        replay(load_trace(WEKA), Endpoint(base_url="http://127.0.0.1:9", model="sim"), settings, 1)


def test_lanes_split_among_processes_replay_what_one_process_replays_in_one_window(caching_server: str) -> None:
    # `processes 2`: lanes 0 and 2 in one process, 1 and 3 in the other. Each lane's trees are its own plan, so the
    # copies the lanes prime are the ones a single process primes; the merged records are numbered once; and the
    # window opens for every process at one instant, after all of them primed (AgentX's warm-up turns included).
    trace = load_trace(WEKA)
    settings = ReplaySettings(duration_s=2, warmup=True, warmup_requests_per_lane=1, time_scale=0.005,
                              length_scale=0.25, max_output_tokens=8, seed=5)  # fmt: skip
    endpoint = Endpoint(base_url=caching_server, model="sim")
    one_stats, one = replay(trace, endpoint, settings.model_copy(update={"processes": 1}), 4)
    stats, split = replay(trace, endpoint, settings.model_copy(update={"processes": 2}), 4)
    assert (one_stats.client_processes, stats.client_processes) == (1, 2)  # the split each ran with, stored

    def primed(items: list) -> dict[int, set[str]]:  # lane -> the sessions its priming requests were for
        lanes: dict[int, set[str]] = {}
        for item in items:
            if item.record.warmup:
                lanes.setdefault(item.lane, set()).add(item.session)
        return lanes

    assert primed(split) == primed(one) and set(primed(split)) == {0, 1, 2, 3}
    assert all(item.record.ok for item in split), [item.record.error for item in split if not item.record.ok]
    assert sorted(item.record.index for item in split) == list(range(len(split)))
    measured = [item.record for item in split if not item.record.warmup]
    assert {item.lane for item in split if not item.record.warmup} == {0, 1, 2, 3}  # both processes measured
    assert stats.requests_measured == len(measured)
    last_primer_end = max(item.record.end or 0.0 for item in split if item.record.warmup)
    assert last_primer_end <= min(record.scheduled for record in measured)
    assert stats.client_cpu_share is not None and stats.schedule_lag_ms.p99 is not None
    lanes_of_copy: dict[int, set[int]] = {}
    for item in split:  # a copy's number is its cache salt: no two lanes, in either process, replay the same copy
        lanes_of_copy.setdefault(SessionId.parse(item.session).copy, set()).add(item.lane)
    assert all(len(lanes) == 1 for lanes in lanes_of_copy.values()), lanes_of_copy


def test_a_dead_replay_process_ends_the_point_at_once_and_the_survivor_stops_quietly(
    caching_server: str, capfd: pytest.CaptureFixture[str]
) -> None:
    # kill -9 of one process of a split replay: its pipe's end of file is seen at once (the parent used to wait on
    # the processes in turn, and learnt of it when the window ended, 30 s later), the survivor is stopped without
    # a BrokenPipeError traceback, and nothing is returned as if the replay had run whole.
    import multiprocessing
    import os
    import signal
    import threading

    trace = load_trace(WEKA)
    settings = ReplaySettings(duration_s=30, warmup=True, warmup_requests_per_lane=1, time_scale=0.005,
                              length_scale=0.25, max_output_tokens=8, seed=9, processes=2)  # fmt: skip
    killed: list[int] = []

    def kill_one_soon() -> None:  # once every process primed: inside the measured window
        def kill() -> None:
            victim = sorted(multiprocessing.active_children(), key=lambda child: child.name)[1]
            killed.append(victim.pid or 0)
            os.kill(victim.pid or 0, signal.SIGKILL)

        threading.Timer(1.0, kill).start()

    started = time.monotonic()
    with pytest.raises(
        InfrastructureError, match=r"replay-process-1 ended before it sent its results \(exit code -9\)"
    ):
        replay(trace, Endpoint(base_url=caching_server, model="sim"), settings, 4, window_opened=kill_one_soon)
    assert killed and time.monotonic() - started < 15  # not the 30 s window
    assert multiprocessing.active_children() == []
    assert "Traceback" not in capfd.readouterr().err
