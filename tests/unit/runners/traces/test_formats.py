"""Trace loading: the four public traces, kind detection, and malformed traces naming file, record and field."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from recipes.errors import MISSING, ConfigurationError, RecipeError
from runners.traces import formats
from runners.traces.formats import TraceFormat, detect_trace_kind, load_trace, parse_trace, register_trace_format
from runners.traces.models import Session, Trace, TraceRequest
from tests.conftest import TRACES

pytestmark = pytest.mark.timeout(60)

WEKA = TRACES / "claude-code-weka" / "sample_trace.json"
WEKA_SUB = TRACES / "claude-code-weka" / "sample_trace_with_subagent.json"
MOONCAKE_CONV = TRACES / "mooncake" / "conversation_trace.jsonl"
MOONCAKE_SYN = TRACES / "mooncake" / "synthetic_trace.jsonl"


def tiny_weka(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "tiny",
        "block_size": 4,
        "requests": [
            {"t": 0.0, "type": "n", "in": 10, "out": 3, "hash_ids": [1, 2]},
            {
                "t": 5.0,
                "type": "subagent",
                "agent_id": "sub0",
                "requests": [{"t": 0.0, "type": "s", "in": 8, "out": 2, "hash_ids": [10, 11]}],
            },
            {"t": 9.0, "type": "n", "in": 14, "out": 3, "hash_ids": [1, 2, 3], "think_time": 2.0},
        ],
    }
    data.update(overrides)
    return data


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def problems_of(path: Path, kind: str | None = None) -> list[tuple[str, Any, str]]:
    with pytest.raises(RecipeError) as caught:
        load_trace(path, kind)
    error = caught.value
    assert error.file == str(path)
    assert str(path) in str(error) and "invalid trace" in str(error)
    return error.problems


# --- real traces -------------------------------------------------------------------------------------


def test_weka_sample_loads() -> None:
    trace = load_trace(WEKA)
    assert (trace.kind, trace.id, trace.block_size, trace.hash_id_scope) == ("weka", "02f3098e-6bc", 64, "global")
    assert trace.content_hash == hashlib.sha256(WEKA.read_bytes()).hexdigest()
    (root,) = trace.sessions
    assert len(root.requests) == 6 and root.subagents == ()
    first = root.requests[0]
    assert (first.key, first.t, first.input_tokens, first.output_tokens) == ("0:0", 0.0, 21477, 205)
    assert first.hash_ids[:3] == (1, 2, 3) and len(first.hash_ids) == 335
    assert root.requests[1].think_time == 12.0 and first.model == "claude-opus-4-6"
    assert trace.meta["tool_tokens"] == 14901 and trace.meta["start_ts"] == "2026-03-25T15:42:12-04:00"


def test_weka_sample_with_subagents_nests_them_at_their_offsets() -> None:
    trace = load_trace(WEKA_SUB)
    (root,) = trace.sessions
    assert len(root.requests) == 6 and len(root.subagents) == 4
    assert trace.num_requests == 90
    assert trace.input_tokens == trace.meta["totals"]["combined_tokens"]["input"] == 3674563
    child = root.subagents[0]
    assert (child.path, child.id, child.start, child.spawned_after) == ("0/0", "a44c06181169aa067", 185.091, 2)
    assert child.meta["status"] == "completed" and child.is_subagent and not root.is_subagent
    assert root.subagents_after(2) == root.subagents and root.subagents_after(3) == ()
    assert root.spawn_delay(child) == pytest.approx(185.091 - 35.0)
    assert child.requests[1].key == "0/0:1"
    timeline = trace.timeline()
    assert len(timeline) == 90
    assert [item.time for item in timeline] == sorted(item.time for item in timeline)
    # The subagent's second request is at spawn + its own t; subagents interleave with the parent.
    item = next(i for i in timeline if i.request.key == "0/0:1")
    assert item.time == pytest.approx(185.091 + 3.0) and item.root == 0 and item.session is child
    parent_after = next(i for i in timeline if i.request.key == "0:3")
    assert any(i.time > parent_after.time for i in timeline if i.session.is_subagent)


def test_the_shipped_subagents_form_agentx_groups_by_spawn_and_join() -> None:
    # Recorded ends (spawn + duration_ms): 317.0 and 332.2 s join the root's request at t = 337 (index 3); 352.1
    # and 381.4 s join the one at t = 470 (index 4), as AIPerf 0.13.0's loader groups them. All four were spawned
    # 133-165 s after request 2 ended (t = 35 + 17.45 s): no overlap, so each group starts as request 2 ends, its
    # later member at its recorded offset from the earliest.
    (root,) = load_trace(WEKA_SUB).sessions
    first, second = root.spawn_groups()
    assert [child.path for child in first.children] == ["0/0", "0/1"] and (first.after, first.join) == (2, 3)
    assert [child.path for child in second.children] == ["0/2", "0/3"] and (second.after, second.join) == (2, 4)
    assert not first.overlaps and not second.overlaps
    assert root.subagents[1].recorded_end() == pytest.approx(192.676 + 139.494)
    assert [first.offset(root, child) for child in first.children] == pytest.approx([0.0, 192.676 - 185.091])
    assert [second.offset(root, child) for child in second.children] == pytest.approx([0.0, 217.311 - 202.643])
    # The idle gap before a request is from the recorded end of the one before it (t and api_time): 12.13 s where
    # the whole-second think_time says 12.0.
    assert root.think_before(1) == pytest.approx(17.0 - 4.87) and root.requests[1].think_time == 12.0


@pytest.mark.parametrize(
    ("path", "count", "last_time"), [(MOONCAKE_CONV, 12031, 3536.999), (MOONCAKE_SYN, 3993, 1022.025)]
)
def test_mooncake_traces_load(path: Path, count: int, last_time: float) -> None:
    # How fast: benchmarks/trace_load.py (speed is measured there, not asserted in a test on a loaded machine).
    trace = load_trace(path)
    assert (trace.kind, trace.block_size, trace.hash_id_scope, trace.id) == ("mooncake", 512, "global", path.stem)
    assert len(trace.sessions) == count == trace.num_requests
    first = trace.sessions[0]
    assert (first.id, first.start, first.requests[0].key, first.requests[0].t) == ("line 1", 0.0, "0:0", 0.0)
    assert trace.sessions[-1].start == pytest.approx(last_time)
    raw = json.loads(path.read_text().splitlines()[1])
    second = trace.sessions[1].requests[0]
    assert (second.input_tokens, second.output_tokens, list(second.hash_ids)) == (
        raw["input_length"],
        raw["output_length"],
        raw["hash_ids"],
    )


def test_kind_detection_and_explicit_kind() -> None:
    assert detect_trace_kind(WEKA.read_bytes()) == "weka"
    assert detect_trace_kind(MOONCAKE_SYN.read_bytes()) == "mooncake"
    assert load_trace(WEKA, "weka").kind == "weka"
    with pytest.raises(RecipeError):
        load_trace(WEKA, "mooncake")


# --- detection, registry -----------------------------------------------------------------------------


def test_detection_from_content(tmp_path: Path) -> None:
    weka = write(tmp_path, "trace.txt", json.dumps(tiny_weka()))  # the extension plays no part
    moon = write(tmp_path, "trace.json", '{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": [0]}\n')
    assert load_trace(weka).kind == "weka"
    trace = load_trace(moon)
    assert trace.kind == "mooncake" and trace.sessions[0].start == 0.005


def test_unrecognised_content(tmp_path: Path) -> None:
    for name, content in [("empty.json", ""), ("list.json", "[1, 2]"), ("other.json", '{"requests": []}')]:
        (problem,) = problems_of(write(tmp_path, name, content))
        assert problem[0] == "<root>" and problem[1] is MISSING and "unrecognised trace format" in problem[2]


def test_unknown_kind_is_a_configuration_error(tmp_path: Path) -> None:
    path = write(tmp_path, "t.json", json.dumps(tiny_weka()))
    with pytest.raises(ConfigurationError, match="no trace format registered"):
        load_trace(path, "sharegpt")


def test_missing_file(tmp_path: Path) -> None:
    (problem,) = problems_of(tmp_path / "absent.json")
    assert problem[0] == "<file>" and "readable file" in problem[2]


def test_registering_a_format(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(formats, "TRACE_FORMATS", formats.TRACE_FORMATS.copy())

    def parse(content: bytes, path: str, content_hash: str) -> Trace:
        lengths = [int(x) for x in content.split()[1:]]
        requests = tuple(TraceRequest(f"0:{i}", float(i), n, 1, ()) for i, n in enumerate(lengths))
        return Trace("lengths", "lengths", 16, "session", content_hash, (Session("0", "0", 0.0, requests),), path)

    register_trace_format(TraceFormat("lengths", "LENGTHS then integers", lambda c: c.startswith(b"LENGTHS"), parse))
    trace = load_trace(write(tmp_path, "l.txt", "LENGTHS 5 7"))
    assert trace.kind == "lengths" and [r.input_tokens for r in trace.sessions[0].requests] == [5, 7]


# --- malformed Weka ----------------------------------------------------------------------------------


def test_tiny_weka_normalizes() -> None:
    trace = parse_trace(json.dumps(tiny_weka()).encode(), "tiny.json")
    assert trace.hash_id_scope == "session"  # absent: ids are per conversation (TRACE_FORMAT.md)
    (root,) = trace.sessions
    assert [r.key for r in root.requests] == ["0:0", "0:1"]
    (child,) = root.subagents
    assert (child.path, child.start, child.spawned_after, child.requests[0].key) == ("0/0", 5.0, 0, "0/0:0")
    assert [i.request.key for i in trace.timeline()] == ["0:0", "0/0:0", "0:1"]


def test_the_agentx_harness_local_scope_is_one_namespace_per_file() -> None:
    # agentx-harness 1.0.12 spells the scope "local" (weka_metric_prepass.py: "one hash namespace per trace FILE"):
    # a Weka file is one conversation, so its ids are that conversation's; a JSON Lines corpus is one file of many.
    local = {**tiny_weka(), "hash_id_scope": "local"}
    assert parse_trace(json.dumps(local).encode(), "tiny.json").hash_id_scope == "session"
    lines = json.dumps(local) + "\n" + json.dumps({**local, "id": "other"}) + "\n"
    assert parse_trace(lines.encode(), "corpus.jsonl").hash_id_scope == "global"


@pytest.mark.parametrize(
    ("edit", "field", "value", "expected"),
    [
        (lambda d: d["requests"][2]["hash_ids"].__setitem__(2, "x"), "requests[2].hash_ids[2]", "x", "valid integer"),
        (
            lambda d: d["requests"][1]["requests"][0].__setitem__("in", -3),
            "requests[1].requests[0].in",
            -3,
            "greater than or equal to 1",
        ),
        (lambda d: d["requests"][0].__setitem__("think_tim", 1.0), "requests[0].think_tim", 1.0, "unknown key"),
        (lambda d: d["requests"][0].__setitem__("type", "x"), "requests[0].type", "x", '"s", "n" or "subagent"'),
        (lambda d: d["requests"][0].pop("out"), "requests[0].out", MISSING, "missing"),
        (lambda d: d["requests"][0].__setitem__("t", "0"), "requests[0].t", "0", "valid number"),
        (lambda d: d["requests"][0].__setitem__("in", True), "requests[0].in", True, "valid integer"),
        (lambda d: d.__setitem__("hash_id_scope", "world"), "hash_id_scope", "world", "'global', 'session' or 'local'"),
        (lambda d: d.__setitem__("_analysis", {"indexd": 1}), "_analysis.indexd", 1, "unknown key"),
        (lambda d: d.__setitem__("block_size", 0), "block_size", 0, "greater than 0"),
        (
            lambda d: d["requests"][0].__setitem__("hash_ids", [1, 2, 3, 4]),
            "requests[0].hash_ids",
            "4 ids",
            "= 3 blocks",
        ),
    ],
)
def test_malformed_weka_names_record_and_field(
    tmp_path: Path, edit: Any, field: str, value: Any, expected: str
) -> None:
    data = copy.deepcopy(tiny_weka())
    edit(data)
    path = write(tmp_path, "broken.json", json.dumps(data, indent=1))
    (problem,) = problems_of(path)
    assert problem[0] == field
    assert problem[1] == value if value is not MISSING else problem[1] is MISSING
    assert expected in problem[2]


def test_broken_copy_of_the_real_subagent_trace(tmp_path: Path) -> None:
    data = json.loads(WEKA_SUB.read_text())
    data["requests"][3]["requests"][5]["hash_ids"][7] = -1
    data["requests"][8]["stop_reason"] = "end_turn"
    path = write(tmp_path, "sample_trace_with_subagent.json", json.dumps(data))
    problems = problems_of(path)
    assert [(f, v) for f, v, _ in problems] == [
        ("requests[3].requests[5].hash_ids[7]", -1),
        ("requests[8].stop_reason", "end_turn"),
    ]


def test_weka_missing_block_size_with_explicit_kind(tmp_path: Path) -> None:
    data = tiny_weka()
    del data["block_size"]
    path = write(tmp_path, "t.json", json.dumps(data))
    assert "unrecognised" in problems_of(path)[0][2]  # not detectable without it
    assert problems_of(path, "weka") == [("block_size", MISSING, "missing (required)")]


def test_weka_invalid_json_and_duplicate_keys(tmp_path: Path) -> None:
    (problem,) = problems_of(write(tmp_path, "cut.json", json.dumps(tiny_weka(), indent=1)[:-40]))
    assert problem[0].startswith("line ") and "column" in problem[0] and "valid JSON" in problem[2]
    text = json.dumps(tiny_weka()).replace('"id": "tiny"', '"id": "tiny", "id": "other"')
    (problem,) = problems_of(write(tmp_path, "dup.json", text))
    assert "duplicate key 'id'" in problem[2]


# --- malformed Mooncake ------------------------------------------------------------------------------


def mooncake_lines(count: int = 20) -> list[str]:
    return [
        json.dumps({"timestamp": 100 * i, "input_length": 600, "output_length": 5, "hash_ids": [0, 100 + i]})
        for i in range(count)
    ]


def test_malformed_mooncake_names_line_and_field(tmp_path: Path) -> None:
    lines = mooncake_lines()
    broken = {
        17: {"timestamp": 1, "input_length": "12", "output_length": 5, "hash_ids": [0]},
        5: {"timestamp": 1, "input_length": 600, "output_length": 5, "hash_ids": [0, 1, -1]},
        9: {"timestamp": 1, "input_length": 600, "hash_ids": [0], "extra": 1},
        13: {"timestamp": True, "input_length": 600, "output_length": 5, "hash_ids": [0]},
        14: {"timestamp": 1, "input_length": 600, "output_length": 5, "hash_ids": [0, 1, 2]},
    }
    for line, record in broken.items():
        lines[line - 1] = json.dumps(record)
    lines[2] = lines[2][:-3]  # line 3: truncated JSON
    lines[11] = "[1, 2]"  # line 12: not an object
    path = write(tmp_path, "conversation_trace.jsonl", "\n".join(lines) + "\n")
    problems = problems_of(path)
    fields = [field for field, _, _ in problems]
    assert fields == [
        "line 3",
        "line 5.hash_ids[2]",
        "line 9.output_length",
        "line 9.extra",
        "line 12",
        "line 13.timestamp",
        "line 14.hash_ids",
        "line 17.input_length",
    ]
    by_field = {field: (value, expected) for field, value, expected in problems}
    assert by_field["line 17.input_length"] == ("12", "expected: Input should be a valid integer")
    assert by_field["line 14.hash_ids"][1] == "at most ceil(600 input tokens / 512) = 2 blocks"
    assert "one JSON object per line" in by_field["line 3"][1]
    assert by_field["line 12"] == ([1, 2], "expected a JSON object")


def test_mooncake_blank_lines_are_skipped_and_errors_are_capped(tmp_path: Path) -> None:
    lines = mooncake_lines(3)
    trace = load_trace(write(tmp_path, "ok.jsonl", "\n" + "\n\n".join(lines) + "\n\n"))
    assert [s.id for s in trace.sessions] == ["line 2", "line 4", "line 6"]
    bad = [json.dumps({"timestamp": 1, "input_length": 0, "output_length": 1, "hash_ids": []})] * 100
    problems = problems_of(write(tmp_path, "bad.jsonl", "\n".join(mooncake_lines(1) + bad)))
    assert len(problems) == formats.MAX_PROBLEMS and problems[0][0] == "line 2.input_length"


def test_broken_copy_of_the_real_mooncake_trace(tmp_path: Path) -> None:
    lines = MOONCAKE_CONV.read_text().splitlines()
    record = json.loads(lines[11999])
    record["hash_ids"][1] = 2.5
    lines[11999] = json.dumps(record)
    path = write(tmp_path, "conversation_trace.jsonl", "\n".join(lines))
    assert [(f, v) for f, v, _ in problems_of(path)] == [("line 12000.hash_ids[1]", 2.5)]


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({"timestamp": 0, "input_length": 10**30, "output_length": 1, "hash_ids": [1]}, "line 1.input_length"),
        ({"timestamp": 0, "input_length": 10, "output_length": 10**30, "hash_ids": [1]}, "line 1.output_length"),
        ({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [10**30]}, "line 1.hash_ids[0]"),
    ],
)
def test_a_number_beyond_any_trace_is_refused_naming_it(line: dict[str, Any], field: str) -> None:
    """A length or hash id of 1e30 overflowed the statistics' arrays (OverflowError, a traceback)."""
    with pytest.raises(RecipeError) as refused:
        parse_trace((json.dumps(line) + "\n").encode(), "huge.jsonl")
    assert refused.value.problems[0][0] == field
