"""Trace formats by `kind`, detection from content, and loading into the normalized `Trace`.

`load_trace(path)` reads the file once, hashes its bytes (the trace version), detects the format when no
`kind` is given (first matching registered detector wins) and parses it. Any malformed trace raises
`RecipeError(str(path), [(field, value, expected), ...], what="trace")` whose field names the record and
the key: `requests[3].hash_ids[2]` (Weka, sub-agent requests nest as `requests[3].requests[5].in`) or
`line 17.input_length` (Mooncake; lines are numbered from 1 as in an editor).

Mooncake files have ~12k lines: each line is validated straight from its bytes by `MooncakeRequest`
(pydantic's JSON parser, ~5 µs a line: 12k lines load in ~0.1 s); only a rejected line is parsed again
with `json.loads`, to word the error against the data.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from recipes.errors import MISSING, ConfigurationError, RecipeError
from recipes.registry import Registry
from recipes.yamlio import field_path
from runners.traces.models import (
    MooncakeRequest,
    Session,
    Trace,
    TraceRequest,
    WekaSubagent,
    WekaTrace,
)

Problem = tuple[str, Any, str]
MAX_PROBLEMS = 20  # a badly broken 12k-line file reports its first problems, not thousands


@dataclass(frozen=True)
class TraceFormat:
    """A trace format: `detect(content)` says whether bytes look like it; `parse` builds the `Trace`.

    `parse(content, path, content_hash)` raises `RecipeError(path, problems, what="trace")`.
    """

    kind: str
    description: str  # what the content looks like, quoted when nothing matches
    detect: Callable[[bytes], bool]
    parse: Callable[[bytes, str, str], Trace]


TRACE_FORMATS: Registry[TraceFormat] = Registry("trace format")


def register_trace_format(trace_format: TraceFormat) -> TraceFormat:
    """Register the format for `trace_format.kind` (a taken kind is refused); detection tries formats in
    registration order."""
    return TRACE_FORMATS.register(trace_format.kind, trace_format)


def load_trace(path: str | Path, kind: str | None = None) -> Trace:
    """Load a trace file; `kind` is detected from the content when not given."""
    path = Path(path)
    try:
        content = path.read_bytes()
    except OSError as error:
        raise RecipeError(
            str(path), [("<file>", str(path), f"expected a readable file ({error.strerror})")], what="trace"
        ) from error
    return parse_trace(content, str(path), kind)


def parse_trace(content: bytes, path: str, kind: str | None = None) -> Trace:
    """Parse trace bytes (`path` is only used in errors and as the trace's `source`)."""
    content_hash = hashlib.sha256(content).hexdigest()
    if kind is None:
        kind = detect_trace_kind(content, path)
    elif kind not in TRACE_FORMATS:
        raise ConfigurationError(
            f"trace kind: got {kind!r}; no trace format registered (available: {', '.join(sorted(TRACE_FORMATS))})"
        )
    return TRACE_FORMATS[kind].parse(content, path, content_hash)


def detect_trace_kind(content: bytes, path: str = "<trace>") -> str:
    for trace_format in TRACE_FORMATS.values():
        if trace_format.detect(content):
            return trace_format.kind
    expected = "; ".join(f"{f.kind}: {f.description}" for f in TRACE_FORMATS.values())
    raise RecipeError(path, [("<root>", MISSING, f"unrecognised trace format, expected one of: {expected}")], "trace")


# --- error locations ----------------------------------------------------------------------------------


def _problems(error: ValidationError, data: Any, prefix: str = "") -> list[Problem]:
    problems: list[Problem] = []
    for item in error.errors(include_url=False):
        field = field_path(tuple(item["loc"]), data, tag_key="type")  # Weka entries are tagged by `type`
        kind = item["type"]
        value = item.get("input", MISSING)
        if kind in ("union_tag_invalid", "union_tag_not_found"):
            field = f"{field}.type" if field else "type"
            value = value.get("type", MISSING) if isinstance(value, dict) else value
            expected = 'expected "s", "n" or "subagent"'
        elif kind == "extra_forbidden":
            expected = "unknown key (not in the trace format; check the spelling)"
        elif kind == "missing":
            expected, value = "missing (required)", MISSING
        else:
            expected = f"expected: {item['msg']}"
        full = f"{prefix}.{field}" if prefix and field else (prefix or field or "<root>")
        problems.append((full, value, expected))
    return problems


def _blocks_fit(hash_ids: list[int], input_tokens: int, block_size: int) -> bool:
    """A prompt of `input_tokens` has at most ceil(input / block) blocks (a partial last one included)."""
    return len(hash_ids) <= -(-input_tokens // block_size)


def _too_many_blocks(field: str, hash_ids: list[int], input_tokens: int, block_size: int) -> Problem:
    limit = -(-input_tokens // block_size)
    return (
        field,
        f"{len(hash_ids)} ids",
        f"at most ceil({input_tokens} input tokens / {block_size}) = {limit} blocks",
    )


# --- Weka ---------------------------------------------------------------------------------------------


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _loads(text: bytes | str, **options: Any) -> Any:
    """`json.loads`, with a document nested too deeply to read (JSON 200,000 arrays deep) a ValueError like any
    other malformed JSON, not a RecursionError that escapes every reader."""
    try:
        return json.loads(text, **options)
    except RecursionError:
        raise ValueError("nested too deeply to read") from None


def _detect_weka(content: bytes) -> bool:
    head = content.lstrip()
    return head.startswith(b"{") and b'"requests"' in content and b'"block_size"' in content


def _json_object(content: bytes, path: str, where: str = "") -> dict[str, Any]:
    prefix = f"{where}, " if where else ""
    try:
        data = _loads(content, object_pairs_hook=_reject_duplicate_keys)
    except json.JSONDecodeError as error:
        location = (
            f"{prefix}line {error.lineno}, column {error.colno}" if not where else f"{where}, column {error.colno}"
        )
        raise RecipeError(path, [(location, MISSING, f"expected valid JSON ({error.msg})")], "trace") from error
    except (ValueError, UnicodeDecodeError) as error:
        raise RecipeError(path, [(where or "<root>", MISSING, f"expected valid JSON ({error})")], "trace") from error
    if not isinstance(data, dict):
        raise RecipeError(path, [(where or "<root>", type(data).__name__, "expected a JSON object")], "trace")
    return data


def _weka_conversation(data: dict[str, Any], path: str, where: str = "") -> WekaTrace:
    """One validated Weka conversation; `where` prefixes field names (e.g. 'line 3' in a JSON Lines corpus)."""
    try:
        model = WekaTrace.model_validate(data)
    except ValidationError as error:
        raise RecipeError(path, _problems(error, data, where)[:MAX_PROBLEMS], "trace") from error
    problems: list[Problem] = []

    def check(entries: list[Any], field: str) -> None:
        for index, entry in enumerate(entries):
            if isinstance(entry, WekaSubagent):
                check(entry.requests, f"{field}[{index}].requests")
            elif not _blocks_fit(entry.hash_ids, entry.input_tokens, model.block_size):
                problems.append(
                    _too_many_blocks(f"{field}[{index}].hash_ids", entry.hash_ids, entry.input_tokens, model.block_size)
                )

    check(model.requests, f"{where}.requests" if where else "requests")
    if problems:
        raise RecipeError(path, problems[:MAX_PROBLEMS], "trace")
    return model


def _weka_session(model: WekaTrace, root: int) -> Session:
    """The conversation as root session number `root` (its path), with its subagents."""

    def session(
        entries: list[Any], session_path: str, session_id: str, start: float, after: int | None, meta: dict[str, Any]
    ) -> Session:
        requests: list[TraceRequest] = []
        children: list[Session] = []
        for entry in entries:
            if isinstance(entry, WekaSubagent):
                number = len(children)
                child_meta = entry.model_dump(exclude={"requests", "type", "t"}, exclude_none=True)
                child_id = entry.agent_id or f"{session_id}/{number}"
                child_path = f"{session_path}/{number}"
                children.append(session(entry.requests, child_path, child_id, entry.t, len(requests) - 1, child_meta))
            else:
                requests.append(
                    TraceRequest(
                        key=f"{session_path}:{len(requests)}",
                        t=entry.t,
                        input_tokens=entry.input_tokens,
                        output_tokens=entry.output_tokens,
                        hash_ids=tuple(entry.hash_ids),
                        think_time=entry.think_time,
                        api_time=entry.api_time,
                        ttft=entry.ttft,
                        model=entry.model,
                    )
                )
        return Session(session_path, session_id, start, tuple(requests), tuple(children), after, meta)

    return session(model.requests, str(root), model.id, 0.0, None, {})


def _parse_weka(content: bytes, path: str, content_hash: str) -> Trace:
    model = _weka_conversation(_json_object(content, path), path)
    meta = model.model_dump(exclude={"id", "block_size", "hash_id_scope", "requests"}, exclude_none=True)
    return Trace(
        id=model.id,
        kind="weka",
        block_size=model.block_size,
        hash_id_scope="global" if model.hash_id_scope == "global" else "session",  # "local": its one conversation
        content_hash=content_hash,
        sessions=(_weka_session(model, 0),),
        source=path,
        meta=meta,
    )


def _lines(content: bytes) -> list[tuple[int, bytes]]:
    return [(number, raw) for number, raw in enumerate(content.split(b"\n"), start=1) if raw.strip()]


def _detect_weka_jsonl(content: bytes) -> bool:
    body = content.strip()
    first_line = body.split(b"\n", 1)[0]
    # One line is a (minified) single Weka conversation; a corpus has a second object on a later line.
    return (
        first_line.startswith(b"{")
        and b'"requests"' in first_line
        and b'"block_size"' in first_line
        and (b"\n{" in body)
    )


def _parse_weka_jsonl(content: bytes, path: str, content_hash: str) -> Trace:
    """A corpus: one Weka conversation per line, each a root session; all share one block size and scope."""
    sessions: list[Session] = []
    first: WekaTrace | None = None
    for number, raw in _lines(content):
        where = f"line {number}"
        model = _weka_conversation(_json_object(raw, path, where), path, where)
        if first is None:
            first = model
        for field in ("block_size", "hash_id_scope"):
            if getattr(model, field) != getattr(first, field):
                raise RecipeError(
                    path, [(f"{where}.{field}", getattr(model, field), f"expected {getattr(first, field)!r} as on the "
                            "first line (one corpus has one block size and one hash id scope)")], "trace",
                )  # fmt: skip
        sessions.append(_weka_session(model, len(sessions)))
    if first is None:
        raise RecipeError(path, [("<root>", MISSING, "expected at least one conversation line")], "trace")
    return Trace(
        id=Path(path).stem,
        kind="weka-jsonl",
        block_size=first.block_size,
        hash_id_scope="global" if first.hash_id_scope in ("global", "local") else "session",  # "local": the file's
        content_hash=content_hash,
        sessions=tuple(sessions),
        source=path,
    )


# --- Mooncake -----------------------------------------------------------------------------------------

MOONCAKE_BLOCK_SIZE = 512


def _mooncake_line_problems(raw: bytes, error: ValidationError, line: int) -> list[Problem]:
    """Word a line `MooncakeRequest` rejected: bad JSON, not an object, or fields (`line 17.input_length`)."""
    where = f"line {line}"
    try:
        record = _loads(raw)
    except ValueError as json_error:
        message = json_error.msg if isinstance(json_error, json.JSONDecodeError) else str(json_error)
        return [(where, MISSING, f"expected one JSON object per line ({message})")]
    if not isinstance(record, dict):
        return [(where, record, "expected a JSON object")]
    return _problems(error, record, prefix=where)


def _detect_mooncake(content: bytes) -> bool:
    for raw in content.split(b"\n", 64)[:64]:
        if raw.strip():
            try:
                first = _loads(raw)
            except ValueError:
                return False
            return isinstance(first, dict) and "timestamp" in first
    return False


def _parse_mooncake(content: bytes, path: str, content_hash: str) -> Trace:
    problems: list[Problem] = []
    sessions: list[Session] = []
    validate = MooncakeRequest.model_validate_json
    for line, raw in enumerate(content.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            record = validate(raw)
        except ValidationError as error:
            problems.extend(_mooncake_line_problems(raw, error, line))
            if len(problems) >= MAX_PROBLEMS:
                break
            continue
        if not _blocks_fit(record.hash_ids, record.input_length, MOONCAKE_BLOCK_SIZE):
            field = f"line {line}.hash_ids"
            problems.append(_too_many_blocks(field, record.hash_ids, record.input_length, MOONCAKE_BLOCK_SIZE))
        elif not problems:
            index = len(sessions)
            request = TraceRequest(
                key=f"{index}:0",
                t=0.0,
                input_tokens=record.input_length,
                output_tokens=record.output_length,
                hash_ids=tuple(record.hash_ids),
            )
            sessions.append(Session(str(index), f"line {line}", record.timestamp / 1000.0, (request,)))
    if not problems and not sessions:
        problems.append(("<root>", MISSING, "expected at least one request line"))
    if problems:
        raise RecipeError(path, problems[:MAX_PROBLEMS], "trace")
    return Trace(
        id=Path(path).stem,
        kind="mooncake",
        block_size=MOONCAKE_BLOCK_SIZE,
        hash_id_scope="global",
        content_hash=content_hash,
        sessions=tuple(sessions),
        source=path,
    )


register_trace_format(
    TraceFormat(
        kind="mooncake",
        description="JSON Lines, one object per request with `timestamp` (ms), `input_length`, `output_length`, "
        "`hash_ids`",
        detect=_detect_mooncake,
        parse=_parse_mooncake,
    )
)
register_trace_format(
    TraceFormat(
        kind="weka-jsonl",
        description="JSON Lines, one Weka conversation object (`block_size`, `requests`) per line: a corpus, e.g. "
        "from `infersweep trace synth`",
        detect=_detect_weka_jsonl,
        parse=_parse_weka_jsonl,
    )
)
register_trace_format(
    TraceFormat(
        kind="weka",
        description="one JSON object with `block_size` and `requests` (Claude Code trace)",
        detect=_detect_weka,
        parse=_parse_weka,
    )
)
