"""Which replay Points may be read as one curve: the same trace version and the same cache isolation.

A replay's figures follow its trace: a revision of the trace alone moved InferenceX's theoretical prefix hit rate
from 96.8 % to 85.8 % (their issue 1632), and an unsalted repeat of the same prompts hits what an earlier Point left
in the engine's cache (a fixed seed with prefix caching silently inflated vLLM's sweep results, vLLM issue 54227).
So Points of one configuration that replayed two versions of a trace, or salted and unsalted prompts, are never one
frontier: a comparison refuses to read them together and says why, and the Pareto explorer draws them as separate
curves with a note. Fixed-length Points have no basis and are never split.

Each replay Point records its basis (runners/loadgen/records.py, ReplayStats): `trace_version` (the sha256 of
the trace file) and `prompt_salt` (the salt its copies' prompts were made with). Results stored before the
Point recorded them have neither, and are their own basis: "not recorded", never assumed equal to another.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

NOT_RECORDED = "not recorded"


@dataclass(frozen=True)
class ReplayBasis:
    """What a replay Point's figures depend on beyond its configuration."""

    trace_version: str  # the trace's sha256, or NOT_RECORDED
    salted: str  # "salted" (prompts salted per Point), or NOT_RECORDED

    @property
    def label(self) -> str:
        version = self.trace_version[:12] if self.trace_version != NOT_RECORDED else "version not recorded"
        return f"trace {version}" + ("" if self.salted == "salted" else ", salting not recorded")


def _text(value: Any) -> str | None:
    """A stored text figure: None, NaN (a DataFrame's missing value) and '' read as absent."""
    return value if isinstance(value, str) and value else None


def basis_of(row: Any) -> ReplayBasis | None:
    """A result row's replay basis; None for a row that is not a replay."""
    if getattr(row, "workload_kind", None) != "agentic-replay":
        return None
    version = _text(getattr(row, "replay_trace_version", None))
    salt = _text(getattr(row, "replay_prompt_salt", None))
    return ReplayBasis(version or NOT_RECORDED, "salted" if salt else NOT_RECORDED)


def mixed_bases(rows: Iterable[Any]) -> str | None:
    """Why `rows` cannot be read as one curve (the trace versions or salting they mix), or None when they agree."""
    bases = {basis for basis in map(basis_of, rows) if basis is not None}
    if len(bases) < 2:
        return None
    reasons = []
    versions = sorted({basis.trace_version for basis in bases})
    if len(versions) > 1:
        shown = ", ".join(version[:12] if version != NOT_RECORDED else version for version in versions)
        reasons.append(f"replay Points of different trace versions ({shown}): a trace revision moves the hit rate")
    if len({basis.salted for basis in bases}) > 1:
        reasons.append("replay Points whose prompts were salted per Point beside Points whose salting was not recorded")
    return "; ".join(reasons)


def split_by_basis(series: Sequence[str], rows: Sequence[Any]) -> tuple[list[str], list[str]]:
    """Each row's series name, with the replay basis added where one series holds several, and a note per split
    series: the Pareto explorer's curves, never one line through Points of two trace versions."""
    bases = [basis_of(row) for row in rows]
    by_series: dict[str, set[ReplayBasis]] = {}
    for name, basis in zip(series, bases, strict=True):
        if basis is not None:
            by_series.setdefault(name, set()).add(basis)
    mixed = {name for name, found in by_series.items() if len(found) > 1}
    names = [
        f"{name} · {basis.label}" if name in mixed and basis is not None else name
        for name, basis in zip(series, bases, strict=True)
    ]
    notes = [
        f"{name}: {mixed_bases(row for row, of in zip(rows, series, strict=True) if of == name)}; drawn as "
        f"{len(by_series[name])} curves, not one"
        for name in sorted(mixed)
    ]
    return names, notes
