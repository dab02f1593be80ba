"""Synthetic AgentX-like coding-agent traces: many sessions, written as a Weka JSON Lines corpus.

The shipped Claude Code samples are two conversations; a capacity study needs many sessions with the
statistics of agentic coding (docs/ARCHITECTURE.md §6): every tool call appends to an ever-longer context, so
each request re-sends its predecessor's prompt and answer and adds a tool result; contexts grow to ~100k+
tokens and the theoretical prefix-cache hit rate is above 98 %. The generator draws such sessions:

- Context = the shared prefix (tools + system prompt, `system_tokens`, identical in every session: its hash
  ids are global) + the user's task + for each turn the previous answer and a tool result (log-normal sizes).
- A request's hash ids are the chained ids of its prompt's full blocks: the blocks it shares with the previous
  request keep their ids; the previous partial tail block and everything after it get new ids (Weka drops the
  partial tail block, whose content changes every turn). The corpus uses `hash_id_scope: global`.
- Compaction: when the next prompt would exceed `max_context_tokens`, the agent summarises; the context
  restarts from the shared prefix plus a summary of `summary_tokens` (what Claude Code's auto-compact does).
- Subagents: after a turn, with probability `subagent_probability`, a subagent starts with its own shared
  prefix (`subagent_system_tokens`, global ids shared by all subagents) and a task, runs a few growing turns,
  and its final answer arrives in the parent's next tool result.
- Think time (tool execution + client) is log-normal; `api_time` is modelled as a fixed overhead plus the
  output at a nominal decode speed, so that `t` advances like a recorded trace's.

Everything is drawn from `random.Random(seed)`: the same profile and seed give byte-identical files (so the
same trace version, i.e. content hash).
"""

from __future__ import annotations

import itertools
import json
import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from recipes.strict import StrictModel


class SyntheticProfile(StrictModel):
    """The statistics of a synthetic agentic corpus (token counts in tokens, times in seconds)."""

    sessions: int = Field(ge=1, description="Root sessions (conversations) in the corpus.")
    turns: tuple[int, int] = Field(description="Range [min, max] of requests per root session (uniform).")
    block_size: int = Field(64, ge=1, description="Tokens per hash block (Weka's 64).")
    system_tokens: int = Field(ge=0, description="Shared prefix of every session: tool definitions + system prompt.")
    task_tokens: int = Field(ge=1, description="The user's first message (median; log-normal).")
    tool_result_tokens: int = Field(ge=1, description="Median tool result appended per turn (log-normal).")
    tool_result_sigma: float = Field(1.0, ge=0, description="Log-normal sigma of tool result sizes.")
    output_tokens: int = Field(ge=1, description="Median answer length (log-normal, sigma 0.8).")
    max_output_tokens: int = Field(ge=1, description="Cap on one answer.")
    max_context_tokens: int = Field(ge=1, description="Prompt length that triggers compaction.")
    summary_tokens: int = Field(ge=1, description="Summary that replaces the history at compaction.")
    think_time_s: float = Field(ge=0, description="Median gap between an answer and the next request.")
    subagent_probability: float = Field(0.0, ge=0, le=1, description="Chance a turn spawns a subagent.")
    subagent_turns: tuple[int, int] = Field((3, 8), description="Range of requests per subagent.")
    subagent_system_tokens: int = Field(0, ge=0, description="Shared prefix of every subagent.")
    decode_tokens_per_s: float = Field(60.0, gt=0, description="Nominal decode speed used for `api_time`.")

    @model_validator(mode="after")
    def _consistent(self) -> SyntheticProfile:
        for name in ("turns", "subagent_turns"):
            low, high = getattr(self, name)
            if not 1 <= low <= high:
                raise ValueError(f"{name}: got [{low}, {high}]; expected 1 <= min <= max")
        floor = self.system_tokens + self.summary_tokens + self.tool_result_tokens + self.max_output_tokens
        if self.max_context_tokens <= floor:
            raise ValueError(
                f"max_context_tokens: got {self.max_context_tokens}; expected more than system + summary + one tool "
                f"result + one answer = {floor}, or compaction could not make room"
            )
        return self


PROFILES: dict[str, SyntheticProfile] = {
    # Claude-Code-like sizes (AgentX's regime): ~20k shared prefix, contexts growing past 100k tokens.
    "agentx": SyntheticProfile(
        sessions=32, turns=(80, 240), system_tokens=20_000, task_tokens=1_500, tool_result_tokens=900,
        tool_result_sigma=0.9, output_tokens=300, max_output_tokens=4_000, max_context_tokens=190_000,
        summary_tokens=15_000, think_time_s=3.0, subagent_probability=0.03, subagent_turns=(4, 15),
        subagent_system_tokens=12_000,
    ),
    # The same shape at the size of the tiny local model (max_model_len 4096): replays on vLLM-CPU in CI.
    "ci": SyntheticProfile(
        sessions=8, turns=(10, 24), system_tokens=1_024, task_tokens=120, tool_result_tokens=110,
        output_tokens=24, max_output_tokens=48, max_context_tokens=3_600, summary_tokens=300,
        think_time_s=1.0, subagent_probability=0.1, subagent_turns=(2, 4), subagent_system_tokens=512,
    ),
}  # fmt: skip


class _Context:
    """A growing prompt: its length and the ids of its full blocks (chained: an id fixes all before it)."""

    def __init__(self, block_size: int, prefix_ids: list[int], prefix_tokens: int, fresh: Iterator[int]) -> None:
        self.block_size = block_size
        self.fresh = fresh
        self.ids = list(prefix_ids)
        self.tokens = prefix_tokens

    def append(self, tokens: int) -> None:
        """New content: the partial tail block changes (new id) and new full blocks get new ids."""
        self.tokens += tokens
        kept = len(self.ids)
        self.ids += [next(self.fresh) for _ in range(self.tokens // self.block_size - kept)]


class _Generator:
    def __init__(self, profile: SyntheticProfile, seed: int) -> None:
        self.profile = profile
        self.random = random.Random(seed)
        self.fresh = itertools.count(1_000_000)  # session-private ids; shared prefixes use 0.. and 500_000..
        size = profile.block_size
        self.system_ids = list(range(profile.system_tokens // size))
        self.subagent_ids = list(range(500_000, 500_000 + profile.subagent_system_tokens // size))

    def _lognormal(self, median: float, sigma: float, cap: int | None = None) -> int:
        value = max(1, round(median * math.exp(self.random.gauss(0.0, sigma))))
        return min(value, cap) if cap is not None else value

    def _answer(self) -> int:
        return self._lognormal(self.profile.output_tokens, 0.8, self.profile.max_output_tokens)

    def _tool_result(self) -> int:
        return self._lognormal(self.profile.tool_result_tokens, self.profile.tool_result_sigma)

    def _compacted(self, shared_ids: list[int], shared_tokens: int) -> _Context:
        context = _Context(self.profile.block_size, shared_ids, shared_tokens, self.fresh)
        context.append(self.profile.summary_tokens)
        return context

    def _requests(self, turns: int, shared_ids: list[int], shared_tokens: int, depth: int) -> list[dict[str, Any]]:
        """One (sub)conversation's entries; a subagent's entry follows the request that spawned it."""
        profile = self.profile
        context = _Context(profile.block_size, shared_ids, shared_tokens, self.fresh)
        context.append(self._lognormal(profile.task_tokens, 0.5))
        entries: list[dict[str, Any]] = []
        clock = 0.0
        carried = 0  # a finished subagent's answer, delivered in the next tool result
        for turn in range(turns):
            answer = self._answer()
            if context.tokens + answer > profile.max_context_tokens:
                context = self._compacted(shared_ids, shared_tokens)
            think = 0.0 if turn == 0 else round(self._lognormal(profile.think_time_s * 1000, 1.0) / 1000, 3)
            clock += think
            api_time = round(0.5 + answer / profile.decode_tokens_per_s, 3)
            entries.append({
                "t": round(clock, 3), "type": "s", "in": context.tokens, "out": answer,
                "hash_ids": list(context.ids), "think_time": think, "api_time": api_time,
                "stop": "end_turn" if turn == turns - 1 else "tool_use",
            })  # fmt: skip
            clock += api_time
            if depth == 0 and turn < turns - 1 and self.random.random() < profile.subagent_probability:
                child_turns = self.random.randint(*profile.subagent_turns)
                child = self._requests(child_turns, self.subagent_ids, profile.subagent_system_tokens, depth + 1)
                entries.append({"type": "subagent", "t": round(clock, 3), "subagent_type": "general-purpose",
                                "requests": child})  # fmt: skip
                carried = child[-1]["out"]
            context.append(answer + self._tool_result() + carried)
            carried = 0
        return entries

    def conversation(self, index: int) -> dict[str, Any]:
        profile = self.profile
        turns = self.random.randint(*profile.turns)
        return {
            "id": f"synthetic-{index:04d}", "block_size": profile.block_size, "hash_id_scope": "global",
            "system_tokens": profile.system_tokens,
            "requests": self._requests(turns, self.system_ids, profile.system_tokens, 0),
        }  # fmt: skip


def generate(profile: SyntheticProfile, seed: int = 0) -> list[dict[str, Any]]:
    """The corpus as Weka conversation objects (one per root session)."""
    generator = _Generator(profile, seed)
    return [generator.conversation(index) for index in range(profile.sessions)]


def write_corpus(profile: SyntheticProfile, path: Path, seed: int = 0) -> Path:
    """Write the corpus as Weka JSON Lines (loadable with `load_trace`, kind 'weka-jsonl')."""
    lines = [json.dumps(conversation, separators=(",", ":")) for conversation in generate(profile, seed)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
