"""Trace file models (strict, one per on-disk format) and the normalized in-memory `Trace` replay works on.

File models mirror the formats exactly and reject unknown keys (`extra="forbid"`), so a typo in a
hand-edited trace is an error rather than a silently ignored field:

- `WekaTrace` / `WekaRequest` / `WekaSubagent`: the Claude Code trace format of
  callanjfox/agentic-coding-analysis (`traces/claude-code-weka/TRACE_FORMAT.md`). Every
  documented field is modelled, including the build metadata (`_analysis`, `totals`) and two fields the
  published samples carry beyond the document (`hash_id_scope`, `_start_ts`).
- `MooncakeRequest`: one line of a Mooncake FAST'25 trace (`timestamp` ms, `input_length`,
  `output_length`, `hash_ids` of 512-token blocks). Large files are checked line by line without building
  this model per line (see `formats.py`); the model is the reference for what a valid line is and
  produces the error messages when a line fails the fast check.

The normalized form (`Trace` -> `Session` -> `TraceRequest`) is what synthesis, hit-rate analysis and the
replayer use. It is made of frozen slotted dataclasses (cheap to build for 12k-line Mooncake files):

- A `Trace` is a tuple of root `Session`s. A Weka file is one root session (the conversation); a Mooncake
  file has one root session per line (Mooncake requests are independent: the format links no turns), whose
  `start` is the line's timestamp in seconds.
- A `Session` is an ordered tuple of `TraceRequest`s plus its subagents, which are sessions themselves
  (nested to any depth). A subagent's `start` is its spawn offset on its parent's clock (seconds from the
  parent session's start, as recorded) and `spawned_after` is the index of the parent request it follows in
  the file, so a closed-loop replayer can spawn it `spawn_delay` seconds after sending that request.
- A `TraceRequest`'s `t` is seconds from its own session's start; `Trace.timeline()` turns those into
  absolute trace times and orders every request of every session (subagents at their offsets): that is the
  order hit-rate analysis walks and open-loop replay sends in.
- Cache scope: `hash_id_scope == "global"` means equal hash ids are the same content in every session of
  the trace; `"session"` means ids only mean something within one root session and its subagents (the
  Weka document's default: ids are assigned per conversation). A root session and its subagents always
  share one id space (one conversation's ids), whichever the scope.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from recipes.limits import MAX_INPUT_TOKENS, MAX_OUTPUT_TOKENS
from recipes.strict import StrictModel

# A block's hash id: any 64-bit value (a larger one overflowed the arrays the trace statistics are computed in).
HashId = Annotated[int, Field(ge=0, le=2**63 - 1)]

TraceKind = Literal["weka", "weka-jsonl", "mooncake"]  # built-in kinds; formats.register_trace_format may add others
HashIdScope = Literal["global", "session"]


class _StrictFile(StrictModel):
    """A record of a trace file: exact types (no "12" for 12), unknown keys rejected, immutable."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False)


# --- Weka (Claude Code) ------------------------------------------------------------------------------


class WekaRequest(_StrictFile):
    """One API request of a Claude Code conversation (`type` "s" streaming or "n" non-streaming)."""

    t: float = Field(ge=0, description="Seconds from the start of the (sub)conversation when it was sent.")
    type: Literal["s", "n"] = Field(
        description='"s" = streaming (fixed proxy), "n" = non-streaming (older proxy, complete metadata).'
    )
    model: str | None = Field(None, description="Model id that served this request.")
    input_tokens: int = Field(
        alias="in", ge=1, le=MAX_INPUT_TOKENS, description="Input (prompt) token count, from the API usage."
    )
    output_tokens: int = Field(
        alias="out", ge=0, le=MAX_OUTPUT_TOKENS, description="Output token count, from the API usage."
    )
    hash_ids: list[HashId] = Field(
        description="Chained hash ids of the prompt's full `block_size`-token blocks, in order (partial tail "
        "block discarded); equal ids at the same position = reusable prefix."
    )
    input_types: list[str] | None = Field(
        None, description='Content types the client added this turn, e.g. ["text"] or ["tool_result"].'
    )
    output_types: list[str] | None = Field(
        None, description='Content types of the response: "text", "thinking", "tool_use".'
    )
    stop: str | None = Field(None, description='Stop reason: "", "tool_use", "end_turn", ...')
    api_time: float | None = Field(None, ge=0, description="Total response time in seconds (proxy responseTime).")
    ttft: float | None = Field(None, ge=0, description="Time to first token in seconds (Server-Timing header).")
    think_time: float | None = Field(
        None, ge=0, description="Client delay before this request: seconds since the previous response completed."
    )


class WekaSubagent(_StrictFile):
    """A nested sub-agent conversation (`type` "subagent") spawned by the enclosing conversation."""

    type: Literal["subagent"] = Field(description='Always "subagent".')
    t: float = Field(ge=0, description="Spawn time: seconds from the parent conversation's start.")
    agent_id: str | None = Field(None, description="Sub-agent identifier.")
    subagent_type: str | None = Field(None, description='"Explore", "general-purpose", "Plan", ... (may be null).')
    duration_ms: float | None = Field(None, ge=0, description="Total execution time in milliseconds.")
    total_tokens: int | None = Field(None, ge=0, description="Total tokens the sub-agent consumed.")
    tool_use_count: int | None = Field(None, ge=0, description="Number of tool calls it made.")
    status: str | None = Field(None, description='"completed", "failed" or "timeout".')
    models: list[str] | None = Field(None, description="Models the sub-agent used.")
    tool_tokens: int | None = Field(None, ge=0, description="Token count of the sub-agent's tool definitions.")
    system_tokens: int | None = Field(None, ge=0, description="Token count of the sub-agent's system prompt.")
    requests: list[WekaEntry] = Field(description="The sub-agent's own requests (same schema as the parent's).")


WekaEntry = Annotated[WekaRequest | WekaSubagent, Field(discriminator="type")]
WekaSubagent.model_rebuild()


class WekaAnalysis(_StrictFile):
    """`_analysis`: build metadata of the trace generator (not used by replay)."""

    indexed: int | None = Field(None, ge=0, description="Requests indexed by the generator.")
    total: int | None = Field(None, ge=0, description="Total requests in the source conversation.")
    unique_blocks: int | None = Field(None, ge=0, description="Distinct hash ids in the trace.")


class WekaTokenPair(_StrictFile):
    """Input and output token totals."""

    input: int = Field(ge=0, description="Input tokens.")
    output: int = Field(ge=0, description="Output tokens.")


class WekaTotals(_StrictFile):
    """`totals`: aggregate token counts, present in traces generated with sub-agents."""

    parent_tokens: WekaTokenPair = Field(description="Tokens of the parent conversation's own requests.")
    subagent_tokens: WekaTokenPair = Field(description="Tokens of all sub-agent requests.")
    combined_tokens: WekaTokenPair = Field(description="Parent plus sub-agents.")
    subagent_count: int = Field(ge=0, description="Number of sub-agents.")


class WekaTrace(_StrictFile):
    """A Weka-format trace file: one Claude Code conversation (or a `_sN` segment of one)."""

    id: str = Field(description="First 12 chars of the conversation UUID (+ `_s1`, `_s2` if split).")
    models: list[str] | None = Field(None, description="All model ids used in the conversation.")
    block_size: int = Field(gt=0, description="Tokens per hash block (64 recommended).")
    hash_id_scope: Literal["global", "session", "local"] | None = Field(
        None,
        description='Where equal hash ids mean equal content: "global" (across conversations) or "session" '
        "(one conversation). Not in TRACE_FORMAT.md, which assigns ids per conversation: absent = session. "
        '"local" is the AgentX harness\'s spelling (agentx-harness 1.0.12, weka_metric_prepass.py: "one hash '
        'namespace per trace file"): one conversation\'s file is read as "session", a file of several as "global".',
    )
    tool_tokens: int | None = Field(None, ge=0, description="Token count of the tools section (shared prefix).")
    system_tokens: int | None = Field(None, ge=0, description="Token count of the system prompt (shared prefix).")
    requests: list[WekaEntry] = Field(min_length=1, description="Requests and sub-agents, in conversation order.")
    analysis: WekaAnalysis | None = Field(None, alias="_analysis", description="Build metadata.")
    start_ts: str | None = Field(
        None, alias="_start_ts", description="Wall-clock start of the conversation (ISO 8601; metadata)."
    )
    totals: WekaTotals | None = Field(None, description="Aggregate token counts (traces with sub-agents).")


# --- Mooncake ----------------------------------------------------------------------------------------


class MooncakeRequest(_StrictFile):
    """One line of a Mooncake trace (JSON Lines)."""

    timestamp: float = Field(ge=0, description="Arrival time in milliseconds from the trace start.")
    input_length: int = Field(ge=1, le=MAX_INPUT_TOKENS, description="Input (prompt) token count.")
    output_length: int = Field(ge=0, le=MAX_OUTPUT_TOKENS, description="Output token count.")
    hash_ids: list[HashId] = Field(
        description="Prefix hash ids of the prompt's 512-token blocks (the last one may be partial); equal ids = "
        "reusable prefix, ids are global across the trace."
    )


# --- Normalized in-memory form -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TraceRequest:
    """One request to replay.

    `key` identifies it within its trace (`"<session path>:<index>"`, e.g. `"0/2:5"`); synthesis derives
    the request's private filler tokens from it.
    """

    key: str
    t: float  # seconds from its session's start (as recorded)
    input_tokens: int
    output_tokens: int
    hash_ids: tuple[int, ...]
    think_time: float | None = None  # recorded client delay before it (Weka); None when the format has none
    api_time: float | None = None  # recorded response time (Weka): the replay's think times follow it
    model: str | None = None
    ttft: float | None = None  # recorded time to first token (Weka, when the proxy had it)


# A parent request recorded this close after a subagent's end still joins it (AIPerf's tolerance).
JOIN_EPSILON_S = 1e-6


@dataclass(frozen=True, slots=True)
class SpawnGroup:
    """Subagents a session spawned after one of its requests and joined at a later one, replayed as one branch.

    `after` is the parent request they follow (-1: before the first), `join` the parent request that waits for all
    of them (None: background), `start` the group's recorded spawn (its earliest member's, parent's clock).
    """

    after: int
    join: int | None
    start: float
    children: tuple[Session, ...]
    overlaps: bool  # spawned while the request it follows was still answering (recorded)

    def offset(self, parent: Session, child: Session) -> float:
        """Seconds from the group's dispatch origin to `child`'s spawn: the send of the request it follows when the
        group overlapped that request, else that request's end (the gap from its end to the spawn is dropped, as
        AgentX does: the first member starts as the answer ends, the others at their recorded offsets from it)."""
        if self.overlaps or self.after < 0:
            return max(0.0, parent.spawn_delay(child))
        return max(0.0, child.first_send() - self.start)


@dataclass(frozen=True, slots=True)
class Session:
    """An ordered run of requests by one agent, with the subagents it spawned.

    `path` is unique within the trace: root sessions are `"0"`, `"1"`, ...; the k-th subagent of a
    session with path p is `"p/k"`. `start` is seconds from the trace start for a root session, and the
    spawn offset on the parent's clock (seconds from the parent session's start) for a subagent.
    `spawned_after` (subagents only) is the index of the parent request that precedes the spawn in the
    file, -1 when it precedes them all.
    """

    path: str
    id: str
    start: float
    requests: tuple[TraceRequest, ...]
    subagents: tuple[Session, ...] = ()
    spawned_after: int | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    # Worked out once, when the session is made: the replayer and the scheduler model ask at every request.
    _spawn_groups: tuple[SpawnGroup, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.subagents:
            object.__setattr__(self, "_spawn_groups", self._group_subagents())

    @property
    def is_subagent(self) -> bool:
        return self.spawned_after is not None

    def subagents_after(self, index: int) -> tuple[Session, ...]:
        """Subagents spawned between request `index` and request `index + 1` (index -1: before the first)."""
        return tuple(child for child in self.subagents if child.spawned_after == index)

    def recorded_end(self) -> float:
        """When this session ended on its parent's clock, as recorded: a subagent's `duration_ms` after its spawn, else
        its last request's end (start + t + api_time); AgentX joins a subagent at this time."""
        duration_ms = self.meta.get("duration_ms")
        if isinstance(duration_ms, int | float) and duration_ms >= 0:
            return self.start + duration_ms / 1000
        ends = [self.start + request.t + max(0.0, request.api_time or 0.0) for request in self.requests]
        return max(ends, default=self.start)

    def spawn_groups(self) -> tuple[SpawnGroup, ...]:
        """This session's subagents as AgentX replays them (AIPerf's agentic replay: one branch per group)."""
        return self._spawn_groups

    def _group_subagents(self) -> tuple[SpawnGroup, ...]:
        """The spawn groups of `spawn_groups`.

        Subagents spawned after the same request and joined by the same later request form one group: the join is
        the first later request recorded at or after the subagent's recorded end (none: a background subagent,
        nobody waits for it). A group recorded while the request it follows was still answering `overlaps` it.
        """
        groups: dict[tuple[int, int | None], list[Session]] = {}
        for child in self.subagents:
            after = child.spawned_after if child.spawned_after is not None else -1
            end = child.recorded_end()
            join = next(
                (index for index in range(after + 1, len(self.requests))
                 if self.requests[index].t + JOIN_EPSILON_S >= end),
                None,
            )  # fmt: skip
            groups.setdefault((after, join), []).append(child)
        result = []
        for (after, join), children in groups.items():
            start = min(child.start for child in children)
            spawning = self.requests[after] if after >= 0 else None
            overlaps = (
                spawning is not None
                and spawning.api_time is not None
                and spawning.api_time > 0
                and start < spawning.t + spawning.api_time
            )
            result.append(SpawnGroup(after, join, start, tuple(children), overlaps))
        return tuple(result)

    def groups_spawned(self, after: int, at_send: bool) -> list[SpawnGroup]:
        """The spawn groups that start with request `after` (-1: with the session): at its send (`at_send`, groups
        recorded while it answered, and those before any request) or at its end (the others)."""
        return [
            group for group in self.spawn_groups()
            if group.after == after and (after < 0 or group.overlaps == at_send)
        ]  # fmt: skip

    def spawn_delay(self, child: Session) -> float:
        """Seconds from sending the parent request a subagent follows to the subagent's spawn (recorded).

        For a subagent spawned before any parent request this is its offset from the parent's start.
        """
        after = child.spawned_after
        if after is None or after < 0:
            return child.first_send()
        return child.first_send() - self.requests[after].t

    def first_send(self) -> float:
        """When this session's first request was sent, on its parent's clock (its start plus that request's t)."""
        return self.start + (self.requests[0].t if self.requests else 0.0)

    def think_before(self, turn: int) -> float:
        """The recorded idle gap before request `turn`: from the end of the request before it (t + api_time) to
        its own t, as AgentX replays it; the recorded `think_time` only where the trace has no response time.

        AgentX's rule: Claude Code traces round `think_time` to whole seconds (12.0 where t and api_time give 12.13).
        """
        upcoming, previous = self.requests[turn], self.requests[turn - 1]
        if previous.api_time is None and upcoming.think_time is not None:
            return upcoming.think_time
        return max(0.0, upcoming.t - previous.t - max(0.0, previous.api_time or 0.0))

    def walk(self) -> Iterator[Session]:
        """This session and every subagent below it, depth first."""
        yield self
        for child in self.subagents:
            yield from child.walk()


@dataclass(frozen=True, slots=True)
class TimedRequest:
    """A request placed on the trace's clock, as yielded by `Trace.timeline()`."""

    time: float  # seconds from the trace start (recorded): root start + subagent offsets + request t
    root: int  # index of the root session (the cache scope when hash ids are session-scoped)
    session: Session
    index: int  # position in session.requests
    request: TraceRequest


@dataclass(frozen=True, slots=True)
class Trace:
    """A loaded trace, normalized.

    `content_hash` is the sha256 of the file's bytes: the trace's version, recorded with every result and
    part of the synthesis namespace. `block_size` is the token size of one hash id's block.
    """

    id: str
    kind: str  # "weka" | "mooncake" (or a registered format's kind)
    block_size: int
    hash_id_scope: HashIdScope
    content_hash: str
    sessions: tuple[Session, ...]
    source: str = ""  # the file it came from
    meta: Mapping[str, Any] = field(default_factory=dict)  # format metadata (models, tool_tokens, totals, ...)

    def walk_sessions(self) -> Iterator[tuple[int, Session]]:
        """(root index, session) for every session, subagents included, depth first."""
        for root, session in enumerate(self.sessions):
            for node in session.walk():
                yield root, node

    @property
    def num_requests(self) -> int:
        return sum(len(session.requests) for _, session in self.walk_sessions())

    @property
    def input_tokens(self) -> int:
        return sum(r.input_tokens for _, session in self.walk_sessions() for r in session.requests)

    def timeline(self) -> list[TimedRequest]:
        """Every request with its absolute recorded time, in time order (file order breaks ties)."""
        items: list[TimedRequest] = []

        def add(root: int, session: Session, origin: float) -> None:
            for index, request in enumerate(session.requests):
                items.append(TimedRequest(origin + request.t, root, session, index, request))
            for child in session.subagents:
                add(root, child, origin + child.start)

        for root, session in enumerate(self.sessions):
            add(root, session, session.start)
        ordered = sorted(range(len(items)), key=lambda i: items[i].time)  # stable: file order on ties
        return [items[i] for i in ordered]
