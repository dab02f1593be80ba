"""Two clients' replays of one Weka trace, matched request by request from what a recording simulated engine logged
(`runners/engines/simulated_server.py --record-file`): each session of the trace is recognised in the log by its
sequence of `max_tokens`, and each request is placed by its gap from its anchor: the end of the request before it in
its stream; for a subagent's first request the end (or, overlapping, the start) of the parent request it follows;
for a request that joins subagents still running, the end of the last of them. Used by
`tests/integration/loadgen/test_aiperf_schedule.py` (AIPerf) and `benchmarks/agentx_harness.py` (the AgentX harness).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from runners.traces.models import Session


@dataclass(frozen=True)
class Served:
    """One request as the engine logged it: when it arrived, when its last token went out, its max_tokens."""

    arrived: float
    ended: float
    max_tokens: int


@dataclass(frozen=True)
class Anchored:
    """A request's gap (seconds) from its anchor, and the anchor's kind: gap, spawn or join."""

    stream: str
    turn: int
    kind: str
    gap: float


def served_streams(record: Path) -> dict[str, list[Served]]:
    """The engine's log as one list of requests per session header, in arrival order."""
    streams: dict[str, list[Served]] = {}
    for line in record.read_text().splitlines():
        row = json.loads(line)
        streams.setdefault(row["session"], []).append(Served(row["arrived"], row["last_token"], row["tokens"]))
    return streams


def first_tree(trace_root: Session, streams: dict[str, list[Served]]) -> dict[str, list[Served]]:
    """Each session of the trace (by path) matched to the first logged stream with its sequence of answer lengths; a
    one-token request stands for any turn (a warm-up turn: the AgentX harness sends its lane's first turn so)."""
    matched: dict[str, list[Served]] = {}
    for session in trace_root.walk():
        whole = len(session.requests)
        candidates = [rows for rows in streams.values() if len(rows) == whole and replays(rows, session)]
        assert candidates, f"no logged stream replays session {session.path} ({whole} requests)"
        matched[session.path] = min(candidates, key=lambda rows: rows[0].arrived)
    return matched


def replays(rows: list[Served], session: Session) -> bool:
    """Whether a logged stream sent `session`'s first turns, by their answer lengths (a one-token request stands for
    any turn: a warm-up turn); a stream the window cut short is a prefix of the session's turns."""
    return len(rows) <= len(session.requests) and all(
        row.max_tokens in (request.output_tokens, 1) for row, request in zip(rows, session.requests, strict=False)
    )


def anchored(root: Session, served: dict[str, list[Served]]) -> list[Anchored]:
    """Every request but the root's first, with its gap from its anchor (see the module's docstring)."""
    result: list[Anchored] = []
    for session in root.walk():
        rows = served[session.path]
        joins = {group.join: group for group in session.spawn_groups() if group.join is not None}
        for group in session.spawn_groups():
            if group.after < 0:
                continue
            parent = rows[group.after]
            origin = parent.arrived if group.overlaps else parent.ended
            for child in group.children:
                result.append(Anchored(child.path, 0, "spawn", served[child.path][0].arrived - origin))
        for turn in range(1, len(rows)):
            kind, anchor = "gap", rows[turn - 1].ended
            joined = joins.get(turn)
            if joined is not None:
                last = max(served[child.path][-1].ended for child in joined.children)
                if last > anchor:
                    kind, anchor = "join", last
            result.append(Anchored(session.path, turn, kind, rows[turn].arrived - anchor))
    return result
