"""Replay Points of two trace versions, or salted beside unsalted, are never read or drawn as one curve."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from analysis.comparability import basis_of, mixed_bases, split_by_basis
from analysis.compare import compare_at_interactivity
from recipes.hardware import load_hardware_registry

REGISTRY = load_hardware_registry()
OLD, NEW = "a" * 64, "b" * 64


def replay(interactivity: float, output: float, version: str | None, *, repeat: int = 0, salt: Any = "0-c8",
           fingerprint: str = "fp-replay", sweep: str = "s1") -> Any:  # fmt: skip
    return SimpleNamespace(
        concurrency=int(interactivity), sweep=sweep, recipe="replay-recipe", fingerprint=fingerprint,
        hardware="b200", engine="vllm", origin="measured", workload_kind="agentic-replay", isl=None, osl=None,
        repeat_index=repeat, valid=True, interactivity_p50=interactivity, output_throughput_per_gpu=output,
        total_token_throughput_per_gpu=output, replay_trace_version=version, replay_prompt_salt=salt,
    )  # fmt: skip


def curve(version: str | None, scale: float = 1.0, **overrides: Any) -> list[Any]:
    return [replay(100.0, 500.0 * scale, version, **overrides), replay(20.0, 3000.0 * scale, version, **overrides)]


def test_a_comparison_mixing_two_trace_versions_in_one_configuration_refuses_to_read_it() -> None:
    # Pooled sweeps of one recipe whose trace file changed in between: one configuration, two versions.
    rows = curve(OLD, sweep="night-1") + curve(NEW, 2.0, sweep="night-2")
    (pooled,) = compare_at_interactivity(rows, 50.0, REGISTRY, per_sweep=False)
    assert pooled.throughput is None and pooled.usd_per_million_output is None
    assert pooled.note.startswith("not read: replay Points of different trace versions (aaaaaaaaaaaa, bbbbbbbbbbbb)")
    # Read sweep by sweep, each is one version: both are read, and each says the other replays another version.
    apart = compare_at_interactivity(rows, 50.0, REGISTRY)
    assert all(item.throughput is not None for item in apart) and len(apart) == 2
    assert {item.note for item in apart} == {
        "replayed trace aaaaaaaaaaaa; other rows here replay another",
        "replayed trace bbbbbbbbbbbb; other rows here replay another",
    }


def test_one_version_reads_as_before_and_unrecorded_bases_are_never_assumed_equal() -> None:
    (read,) = compare_at_interactivity(curve(NEW) + curve(NEW, repeat=1), 50.0, REGISTRY, per_sweep=False)
    assert read.throughput is not None and read.throughput.n == 2 and read.note == ""
    assert mixed_bases(curve(NEW) + curve(None)) == (
        "replay Points of different trace versions (bbbbbbbbbbbb, not recorded): a trace revision moves the hit rate"
    )
    assert mixed_bases(curve(NEW) + curve(NEW, salt=float("nan"))) == (
        "replay Points whose prompts were salted per Point beside Points whose salting was not recorded"
    )
    fixed = SimpleNamespace(workload_kind="fixed-length")
    assert basis_of(fixed) is None and mixed_bases([fixed, *curve(NEW)]) is None


def test_the_pareto_explorer_draws_two_versions_as_two_named_curves() -> None:
    rows = curve(OLD) + curve(NEW) + [SimpleNamespace(workload_kind="fixed-length")]
    names, notes = split_by_basis(["b200 vllm"] * 4 + ["h200 vllm"], rows)
    assert names == ["b200 vllm · trace aaaaaaaaaaaa"] * 2 + ["b200 vllm · trace bbbbbbbbbbbb"] * 2 + ["h200 vllm"]
    assert notes == [
        "b200 vllm: replay Points of different trace versions (aaaaaaaaaaaa, bbbbbbbbbbbb): a trace revision moves "
        "the hit rate; drawn as 2 curves, not one"
    ]
    assert split_by_basis(["b200 vllm"] * 2, curve(NEW)) == (["b200 vllm"] * 2, [])
