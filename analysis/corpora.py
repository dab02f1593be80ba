"""The agent corpora the hub's trace pages read, and the capacity they are planned against.

A corpus is one of the Claude Code sessions shipped in `traces/claude-code-weka/` (their LICENSE beside them), or
a synthetic corpus generated from one of `runners/traces/synthetic.py`'s profiles (seed 0), built in memory: a page
load writes nothing. The hub reaches traces only through this module and `fast_tokens`/`offload`, so that `site/`
imports the analysis, never the runners (site/README.md).
"""

from __future__ import annotations

import json
from pathlib import Path

from runners.traces.formats import load_trace, parse_trace
from runners.traces.models import Trace
from runners.traces.planner import BYTES_PER_PARAMETER, KvCapacity, kv_capacity
from runners.traces.synthetic import PROFILES, generate

SHIPPED_TRACES = Path(__file__).resolve().parents[1] / "traces" / "claude-code-weka"
SYNTHETIC_PREFIX = "synthetic: "  # a corpus name that is a synthetic profile's, not a shipped file's
WEIGHT_PRECISIONS = tuple(sorted(BYTES_PER_PARAMETER))  # what the capacity planner can weigh the weights at

__all__ = ["SHIPPED_TRACES", "SYNTHETIC_PREFIX", "WEIGHT_PRECISIONS", "KvCapacity", "Trace", "corpus_file_name",
           "corpus_names", "kv_capacity", "load_corpus", "shipped_trace_names"]  # fmt: skip


def shipped_trace_names() -> list[str]:
    """The shipped session files, by file name."""
    return sorted(path.name for path in SHIPPED_TRACES.glob("*.json"))


def corpus_names() -> list[str]:
    """Every corpus a page can offer: the shipped files, then each synthetic profile."""
    return shipped_trace_names() + [SYNTHETIC_PREFIX + name for name in PROFILES]


def corpus_file_name(name: str) -> str:
    """The file name a replay of the corpus carries: the shipped file's, or `<profile>.jsonl` as `infersweep trace
    synth` writes a profile's corpus."""
    return f"{name.removeprefix(SYNTHETIC_PREFIX)}.jsonl" if name.startswith(SYNTHETIC_PREFIX) else Path(name).name


def load_corpus(name: str) -> Trace:
    """The corpus called `name` (as `corpus_names` lists it); a shipped file is parsed, a profile generated."""
    if not name.startswith(SYNTHETIC_PREFIX):
        return load_trace(SHIPPED_TRACES / Path(name).name)
    profile = name.removeprefix(SYNTHETIC_PREFIX)
    if profile not in PROFILES:
        raise ValueError(f"corpus: got {name!r}; expected one of {', '.join(corpus_names())}")
    lines = [json.dumps(conversation, separators=(",", ":")) for conversation in generate(PROFILES[profile], seed=0)]
    return parse_trace(("\n".join(lines) + "\n").encode(), corpus_file_name(name))
