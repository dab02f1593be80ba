"""`infersweep trace stats|synth|plan`: what a trace is, synthetic corpora, and the KV capacity planner.

`stats` prints a trace's shape and theoretical prefix-cache hit rates (at its own block size and at an
engine's); `synth` writes a synthetic AgentX-like corpus (runners/traces/synthetic.py); `plan` predicts the
hit rate per tier a replay realises on given hardware, from the model's KV bytes per token and the HBM and
DRAM sizes of the registries (runners/traces/planner.py) — what offload buys, before spending GPU hours.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from orchestrator.cli.output import console, fail
from recipes.agentx import AGENTX_TREE_IDLE_CAP_S
from recipes.errors import ConfigurationError, InferSweepError
from recipes.limits import MAX_CONCURRENCY

trace_app = typer.Typer(help="Agentic traces: statistics, synthetic corpora, and the KV capacity planner.",
                        no_args_is_help=True)  # fmt: skip
TraceFile = Annotated[Path, typer.Argument(help="Trace file: Weka JSON, Weka JSON Lines corpus, or Mooncake JSONL.")]


@trace_app.command("stats")
def stats(
    traces: Annotated[list[Path], typer.Argument(help="One or more trace files.")],
    engine_block_size: Annotated[
        list[int], typer.Option("--engine-block-size", help="Also count hits in these engine block sizes (tokens).")
    ] = [128],  # noqa: B006 - typer reads the default, it is never mutated
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Shape of each trace and its theoretical prefix-cache hit rate (docs/ARCHITECTURE.md §6), unbounded cache."""
    from runners.traces.formats import load_trace
    from runners.traces.hit_rate import theoretical_hit_rate

    rows: list[dict[str, Any]] = []
    for path in traces:
        try:
            trace = load_trace(path)
        except InferSweepError as error:
            fail(error)
        timeline = trace.timeline()
        inputs = [item.request.input_tokens for item in timeline]
        walk = theoretical_hit_rate(trace)
        rows.append({
            "file": str(path), "kind": trace.kind, "version": trace.content_hash, "block_size": trace.block_size,
            "hash_id_scope": trace.hash_id_scope, "root_sessions": len(trace.sessions),
            "sessions": sum(1 for _ in trace.walk_sessions()), "requests": len(timeline),
            "input_tokens": sum(inputs), "median_input_tokens": statistics.median(inputs) if inputs else 0,
            "max_input_tokens": max(inputs, default=0), "theoretical_hit_rate": walk.rate,
            "agentx_cache_hit_rate": walk.request_mean_rate,
            "engine_hit_rates": {str(size): walk.rebase(size).rate for size in engine_block_size},
        })  # fmt: skip
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title="Theoretical prefix-cache hit rate (unbounded cache, trace order)")
    for column in ("trace", "kind", "sessions", "requests", "median in", "max in", "block", "hit rate (tokens)",
                   "AgentX hit rate (per request)"):  # fmt: skip
        table.add_column(column, justify="left" if column in ("trace", "kind") else "right")
    for size in engine_block_size:
        table.add_column(f"at {size}-token blocks", justify="right")
    for row in rows:
        table.add_row(
            Path(row["file"]).name, row["kind"], f"{row['root_sessions']} ({row['sessions']})", str(row["requests"]),
            f"{row['median_input_tokens']:,.0f}", f"{row['max_input_tokens']:,}", str(row["block_size"]),
            f"{row['theoretical_hit_rate']:.4f}",
            "–" if row["agentx_cache_hit_rate"] is None else f"{row['agentx_cache_hit_rate']:.4f}",
            *(f"{rate:.4f}" for rate in row["engine_hit_rates"].values()),
        )  # fmt: skip
    console.print(table)
    console.print(
        "sessions: roots (with subagents). hit rate (tokens): Σ hit tokens / Σ prompt tokens (ours). AgentX hit rate: "
        "the mean over requests of the share of each request's blocks before its first unseen one, as `agentx "
        "analyze-trace` reports cache_hit_rate (a short request counts as much as a long one). Engine columns: "
        "whole engine blocks only, last token recomputed."
    )


@trace_app.command("synth")
def synth(
    output: Annotated[Path, typer.Argument(help="Where to write the corpus (Weka JSON Lines).")],
    profile: Annotated[str, typer.Option(help="Profile: 'agentx' (Claude-Code sizes) or 'ci' (tiny model).")] = "ci",
    seed: Annotated[int, typer.Option(help="Seed: the same profile and seed give the same file.")] = 0,
    sessions: Annotated[
        int | None, typer.Option(min=1, max=MAX_CONCURRENCY, help="Override the profile's number of sessions.")
    ] = None,
) -> None:
    """Write a synthetic AgentX-like coding-agent corpus: growing contexts, think times, subagents."""
    from runners.traces.synthetic import PROFILES, write_corpus

    if profile not in PROFILES:
        fail(ConfigurationError(f"--profile: got {profile!r}; expected one of {', '.join(sorted(PROFILES))}"))
    chosen = PROFILES[profile]
    if sessions is not None:  # typer holds it within 1..MAX_CONCURRENCY
        chosen = chosen.model_copy(update={"sessions": sessions})
    write_corpus(chosen, output, seed)
    console.print(f"wrote {output} ({output.stat().st_size / 1e6:.1f} MB): profile {profile}, seed {seed}; "
                  f"`infersweep trace stats {output}` shows its shape")  # fmt: skip


@trace_app.command("plan")
def plan(
    trace_file: TraceFile,
    model: Annotated[str, typer.Option(help="Model registry key, e.g. deepseek-r1 (recipes/models.yaml).")],
    hardware: Annotated[
        list[str], typer.Option(help="Hardware registry key(s), e.g. --hardware b200 --hardware gb300-nvl72.")
    ],
    gpus: Annotated[int, typer.Option(help="Accelerators serving one engine instance.")] = 8,
    precision: Annotated[str, typer.Option(help="Weight precision: fp4, fp8, bf16...")] = "fp8",
    concurrency: Annotated[list[int], typer.Option(help="Live session trees (repeatable).")] = [16],  # noqa: B006
    dram_gib: Annotated[list[float], typer.Option(help="DRAM offload budget(s) in GiB; 0 = none.")] = [0.0],  # noqa: B006
    block_size: Annotated[int, typer.Option(help="Engine KV block size in tokens.")] = 64,
    memory_utilization: Annotated[float, typer.Option(help="Share of HBM the engine may use.")] = 0.9,
    requests_per_lane: Annotated[int, typer.Option(help="Replayed requests per session lane.")] = 100,
    seed: Annotated[int, typer.Option(help="Replay seed (warm starts, salts).")] = 0,
) -> None:
    """Predict the hit rate per tier (HBM, DRAM) of a replay on each hardware, with and without offload."""
    from recipes.hardware import load_hardware_registry
    from recipes.model_registry import load_model_registry
    from runners.traces.formats import load_trace
    from runners.traces.planner import ReplayShape, ReplayTraffic, kv_capacity

    models, machines = load_model_registry(), load_hardware_registry()
    if model not in models:
        fail(ConfigurationError(f"--model: got {model!r}; expected a registry key: {', '.join(sorted(models))}"))
    unknown = [key for key in hardware if key not in machines]
    if unknown:
        fail(
            ConfigurationError(
                f"--hardware: got {unknown[0]!r}; expected a registry key: {', '.join(sorted(machines))}"
            )
        )
    try:
        trace = load_trace(trace_file)
    except InferSweepError as error:
        fail(error)
    table = Table(title=f"KV capacity planner: {model} {precision} on {gpus} accelerators, {trace.id} "
                        f"({block_size}-token blocks, {requests_per_lane} requests per lane)")  # fmt: skip
    for column in (
        "hardware",
        "DRAM GiB",
        "HBM blocks",
        "DRAM blocks",
        "concurrency",
        "HBM hits",
        "DRAM hits",
        "total",
    ):
        table.add_column(column, justify="left" if column == "hardware" else "right")
    capacities = []
    for key in hardware:
        for budget in dram_gib:
            try:
                capacities.append(
                    (
                        key,
                        budget,
                        kv_capacity(
                            models[model],
                            machines[key],
                            gpus,
                            precision,
                            block_size,
                            memory_utilization=memory_utilization,
                            dram_gib=budget,
                        ),
                    )
                )
            except ValueError as error:
                fail(ConfigurationError(str(error)))
    for lanes in concurrency:
        traffic = ReplayTraffic(trace, ReplayShape(concurrency=lanes, seed=seed), block_size, requests_per_lane)
        for key, budget, capacity in capacities:
            if capacity.hbm_blocks == 0:
                table.add_row(key, f"{budget:g}", "0", "-", str(lanes), "weights do not fit", "", "")
                continue
            predicted = traffic.hit_rate(capacity.hbm_blocks, capacity.dram_blocks)
            rates = (f"{predicted.hbm_rate:.3f}", f"{predicted.dram_rate:.3f}", f"{predicted.rate:.3f}")
            table.add_row(key, f"{budget:g}", f"{capacity.hbm_blocks:,}", f"{capacity.dram_blocks:,}", str(lanes),
                          *rates)  # fmt: skip
    console.print(table)
    console.print("HBM blocks = (HBM x GPUs x utilisation - weights) / (KV bytes per token x block); "
                  "see runners/traces/planner.py for what the prediction assumes.")  # fmt: skip


_TEXT_COLUMNS = ("hardware", "engine", "origin", "model", "precision")


@trace_app.command("workflow")
def workflow(
    traces: Annotated[list[Path], typer.Argument(help="One or more Weka trace files (with recorded api_time).")],
    decode_speedup: Annotated[
        list[float], typer.Option("--decode-speedup", min=1.0, help="What-if decode speedups K (repeatable).")
    ] = [2.0],  # noqa: B006 - typer reads the default, it is never mutated
    idle_cap_s: Annotated[
        float,
        typer.Option(min=0.0, help=f"The capped view's per-tree idle cap (AgentX: {AGENTX_TREE_IDLE_CAP_S:g} s)."),
    ] = AGENTX_TREE_IDLE_CAP_S,
    chips: Annotated[
        bool, typer.Option(help="Also serve the corpus at each chip's frontier points from the results database.")
    ] = True,
    sweep: Annotated[str | None, typer.Option(help="Only this sweep's results (default: all).")] = None,
    model: Annotated[str | None, typer.Option(help="Only results of this model (its label or registry key).")] = None,
    precision: Annotated[str | None, typer.Option(help="Only results at this precision (fp4, fp8, ...).")] = None,
    at_interactivity: Annotated[
        float, typer.Option(min=1.0, help="The takeaway line: each chip's point nearest this tok/s/user.")
    ] = 50.0,
) -> None:
    """How much of an agent's session is model time, and what K× faster decode saves, from the trace's records
    (as recorded, and with AgentX's per-tree idle cap) and at each chip's operating points (runners/traces/workflow.py,
    analysis/fast_tokens.py)."""
    from runners.traces.formats import load_trace
    from runners.traces.workflow import decode_speedup as faster
    from runners.traces.workflow import model_share, saving, trace_times

    try:
        loaded = [load_trace(path) for path in traces]
        recorded = [trace_times(trace) for trace in loaded]
        capped = [trace_times(trace, idle_cap_s=idle_cap_s) for trace in loaded]
    except InferSweepError as error:
        fail(error)
    table = Table(title="Session wall time from the trace's records: model time (api_time) and tool/user time")
    for column in ("trace", "session", "requests", "wall s", "model s", "tool/user s", "model share",
                   f"capped {idle_cap_s:g} s: wall s", "model share"):  # fmt: skip
        table.add_column(column, justify="left" if column in ("trace", "session") else "right")
    for path, as_recorded, as_capped in zip(traces, recorded, capped, strict=True):
        for tree, tree_capped in zip(as_recorded, as_capped, strict=True):
            table.add_row(path.name, tree.session, str(tree.requests), f"{tree.wall_s:.1f}", f"{tree.model_s:.1f}",
                          f"{tree.tool_s:.1f}", f"{tree.model_share:.1%}", f"{tree_capped.wall_s:.1f}",
                          f"{tree_capped.model_share:.1%}")  # fmt: skip
    console.print(table)
    every_recorded = [tree for trees in recorded for tree in trees]
    every_capped = [tree for trees in capped for tree in trees]
    console.print(f"model-time share over {len(every_recorded)} session tree(s): {model_share(every_recorded):.1%} "
                  f"as recorded, {model_share(every_capped):.1%} capped at {idle_cap_s:g} s idle")  # fmt: skip
    for factor in decode_speedup:
        faster_recorded = [tree for trace in loaded for tree in trace_times(trace, faster(factor))]
        faster_capped = [tree for trace in loaded for tree in trace_times(trace, faster(factor), idle_cap_s)]
        console.print(f"{factor:g}x faster decode (recorded TTFT kept; whole api_time where none is recorded) saves "
                      f"{saving(every_recorded, faster_recorded):.1%} of the session time as recorded, "
                      f"{saving(every_capped, faster_capped):.1%} capped")  # fmt: skip
    if chips:
        _workflow_on_chips(loaded, decode_speedup, idle_cap_s, sweep, model, precision, at_interactivity)


def _workflow_on_chips(
    loaded: list, speedups: list[float], idle_cap_s: float, sweep: str | None, model: str | None,
    precision: str | None, at_interactivity: float,
) -> None:  # fmt: skip
    from analysis.fast_tokens import chip_session_times, nearest_per_chip, operating_points, takeaway
    from db.reads import list_results
    from db.session import NoResultsYet, open_database, open_session

    try:
        engine = open_database(writes=False)
    except NoResultsYet:
        views = []  # a fresh machine: the corpus's own figures above stand, and the line below says why no chips
    else:
        with open_session(engine) as session:
            views = list_results(session, sweep=sweep)
    if model is not None:
        views = [view for view in views if model in (view.model, view.recipe)]
    if precision is not None:
        views = [view for view in views if view.precision == precision]
    points = operating_points(views)
    if not points:
        console.print("no valid results with a TTFT and an interactivity in the database to serve the corpus at "
                      "(run a sweep or import results, or pass --no-chips)")  # fmt: skip
        return
    rows = chip_session_times(loaded, points, speedups, idle_cap_s)
    table = Table(title=f"The corpus served at each chip's frontier points (capped at {idle_cap_s:g} s idle)")
    for column in ("hardware", "engine", "origin", "model", "precision", "ISL/OSL", "c", "tok/s/user", "prefill tok/s",
                   "session wall s",
                   "model share", *(f"saved at {factor:g}x decode" for factor in speedups)):  # fmt: skip
        table.add_column(column, justify="right" if column[0].islower() and column not in _TEXT_COLUMNS else "left")
    for row in rows:
        point = row.point
        table.add_row(point.hardware, point.engine, point.origin, point.model, point.precision,
                      f"{point.isl}/{point.osl}", str(point.concurrency), f"{point.interactivity:.0f}",
                      f"{point.prefill_tokens_per_s:,.0f}", f"{row.wall_s:,.1f}", f"{row.model_share:.1%}",
                      *(f"{row.savings[factor]:.1%}" for factor in speedups))  # fmt: skip
    console.print(table)
    for row in nearest_per_chip(rows, at_interactivity):
        console.print(takeaway(row, speedups[0]), markup=False, highlight=False)
    console.print("Assumptions: think, tool and spawn times as recorded; TTFT = uncached prompt tokens (the trace's "
                  "own prefix reuse) / the point's prefill rate (ISL / median TTFT); decode = output tokens / median "
                  "tok/s/user (docs/METRICS.md, Fast tokens).", markup=False, highlight=False)  # fmt: skip
