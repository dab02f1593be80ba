"""The hub's corpora: a synthetic profile generated in memory is the same trace `infersweep trace synth` writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.corpora import (
    SYNTHETIC_PREFIX,
    corpus_file_name,
    corpus_names,
    load_corpus,
    shipped_trace_names,
)
from runners.traces.formats import load_trace
from runners.traces.synthetic import PROFILES, write_corpus


def test_a_synthetic_corpus_in_memory_is_the_written_one(tmp_path: Path) -> None:
    name = next(iter(PROFILES))
    written = load_trace(write_corpus(PROFILES[name], tmp_path / f"{name}.jsonl", seed=0))
    generated = load_corpus(SYNTHETIC_PREFIX + name)
    assert generated.content_hash == written.content_hash
    assert len(generated.sessions) == len(written.sessions) == PROFILES[name].sessions
    assert corpus_file_name(SYNTHETIC_PREFIX + name) == f"{name}.jsonl"


def test_every_listed_corpus_loads_by_its_name() -> None:
    names = corpus_names()
    assert shipped_trace_names() and names[: len(shipped_trace_names())] == shipped_trace_names()
    shipped = load_corpus(names[0])
    assert shipped.sessions and corpus_file_name(names[0]) == names[0]
    with pytest.raises(ValueError, match="corpus: got 'synthetic: nope'"):
        load_corpus(SYNTHETIC_PREFIX + "nope")
