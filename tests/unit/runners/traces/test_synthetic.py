"""Synthetic AgentX-like corpora and the Weka JSON Lines format they are written in."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from recipes.errors import RecipeError
from runners.traces.formats import load_trace, parse_trace
from runners.traces.hit_rate import theoretical_hit_rate
from runners.traces.synthetic import PROFILES, SyntheticProfile, generate, write_corpus


def test_same_profile_and_seed_give_the_same_file_and_another_seed_does_not(tmp_path: Path) -> None:
    first = write_corpus(PROFILES["ci"], tmp_path / "a.jsonl", seed=1)
    again = write_corpus(PROFILES["ci"], tmp_path / "b.jsonl", seed=1)
    other = write_corpus(PROFILES["ci"], tmp_path / "c.jsonl", seed=2)
    assert first.read_bytes() == again.read_bytes() != other.read_bytes()
    trace = load_trace(first)
    assert trace.kind == "weka-jsonl" and len(trace.sessions) == 8 and trace.hash_id_scope == "global"
    assert load_trace(again).content_hash == trace.content_hash


def test_contexts_grow_by_appending_until_compaction() -> None:
    profile = PROFILES["ci"]
    size = profile.block_size
    shared = profile.system_tokens // size
    compactions = 0
    for conversation in generate(profile, seed=0):
        requests = [entry for entry in conversation["requests"] if entry["type"] == "s"]
        assert profile.turns[0] <= len(requests) <= profile.turns[1]
        for before, after in itertools.pairwise(requests):
            assert after["in"] <= profile.max_context_tokens
            assert len(after["hash_ids"]) == after["in"] // size  # full blocks only, as Weka
            kept = before["in"] // size
            if after["in"] > before["in"]:  # appended: every full block of the previous prompt is kept
                assert after["hash_ids"][:kept] == before["hash_ids"][:kept]
                assert not set(after["hash_ids"][kept:]) & set(before["hash_ids"])
            else:  # compacted: only the shared tools + system prefix survives
                compactions += 1
                assert after["hash_ids"][:shared] == list(range(shared))
                assert after["hash_ids"][shared] not in before["hash_ids"]
    assert compactions > 0  # the CI profile's 3,600-token cap is reached


def test_sessions_share_the_system_prefix_and_nothing_else() -> None:
    conversations = generate(PROFILES["ci"], seed=0)
    shared = PROFILES["ci"].system_tokens // PROFILES["ci"].block_size
    firsts = [conversation["requests"][0]["hash_ids"] for conversation in conversations]
    assert all(ids[:shared] == list(range(shared)) for ids in firsts)
    private = [set(ids[shared:]) for ids in firsts]
    assert all(not a & b for i, a in enumerate(private) for b in private[i + 1 :])
    assert any(entry["type"] == "subagent" for conversation in conversations for entry in conversation["requests"])


def test_agentx_profile_is_in_agentx_regime(tmp_path: Path) -> None:
    # Four sessions keep the test fast; the whole profile (32) is measured in docs/BENCHMARKS.md.
    profile = PROFILES["agentx"].model_copy(update={"sessions": 4})
    trace = load_trace(write_corpus(profile, tmp_path / "agentx.jsonl"))
    inputs = sorted(item.request.input_tokens for item in trace.timeline())
    assert inputs[len(inputs) // 2] > 40_000 and inputs[-1] <= profile.max_context_tokens
    assert theoretical_hit_rate(trace).rate > 0.95


def test_profile_rejects_settings_that_cannot_work() -> None:
    with pytest.raises(ValueError, match="max_context_tokens: got 1000"):
        SyntheticProfile(**{**PROFILES["ci"].model_dump(), "max_context_tokens": 1000})
    with pytest.raises(ValueError, match=r"turns: got \[5, 2\]"):
        SyntheticProfile(**{**PROFILES["ci"].model_dump(), "turns": (5, 2)})


def _line(identifier: str, block_size: int = 4, **request: object) -> str:
    entry = {"t": 0.0, "type": "s", "in": 9, "out": 1, "hash_ids": [1, 2], **request}
    return json.dumps({"id": identifier, "block_size": block_size, "hash_id_scope": "global", "requests": [entry]})


def test_weka_json_lines_errors_name_the_line_and_field() -> None:
    good = _line("a")
    trace = parse_trace(f"{good}\n{_line('b')}\n".encode(), "corpus.jsonl")
    assert trace.kind == "weka-jsonl" and [s.path for s in trace.sessions] == ["0", "1"]
    assert trace.sessions[1].requests[0].key == "1:0"
    with pytest.raises(RecipeError) as error:
        parse_trace(f"{good}\n{_line('b', out=-1)}\n".encode(), "corpus.jsonl")
    assert "corpus.jsonl" in str(error.value) and "line 2.requests[0].out" in str(error.value)
    with pytest.raises(RecipeError) as error:
        parse_trace(f"{good}\n{_line('b', block_size=8)}\n".encode(), "corpus.jsonl")
    assert "line 2.block_size" in str(error.value) and "first line" in str(error.value)
    with pytest.raises(RecipeError) as error:
        parse_trace(f"{good}\n{{not json\n".encode(), "corpus.jsonl")
    assert "line 2" in str(error.value) and "expected valid JSON" in str(error.value)
