"""`memory engram`: whether an Engram table can live in host DRAM or on SSD (analysis/engram.py)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from orchestrator.cli.output import console, fail
from recipes.errors import ConfigurationError, InferSweepError

memory_app = typer.Typer(help="Memory tiers: what placing data off the accelerator costs and frees.",
                         no_args_is_help=True)  # fmt: skip


def _registries(hardware: str, model: str) -> tuple[dict, dict, str]:
    """The hardware and model registries, and `hardware`'s key; a name neither knows is a usage error."""
    from recipes.hardware import hardware_key_for, load_hardware_registry
    from recipes.model_registry import load_model_registry

    registry, models = load_hardware_registry(), load_model_registry()
    key = hardware_key_for(hardware, registry)
    if key is None:
        fail(ConfigurationError(f"--hardware: got {hardware!r}; expected one of {', '.join(sorted(registry))}"))
    if model not in models:
        fail(ConfigurationError(f"--model: got {model!r}; expected one of {', '.join(sorted(models))}"))
    return registry, models, key


def _operating_point(hardware: str, model: str, interactivity: float, batch: int | None, from_results: bool):
    """The point given by the flags, or the stored frontier point of `hardware` and `model` nearest `interactivity`."""
    from analysis.engram import OperatingPoint

    if not from_results:
        if batch is None:
            fail(ConfigurationError("--batch: missing; give the sequences per decode step, or --from-results"))
        return OperatingPoint(interactivity=interactivity, batch=batch)
    [point] = _stored_points(hardware, model, [interactivity])
    return OperatingPoint(interactivity=point.interactivity, batch=point.concurrency, label=point.label)


@memory_app.command("engram")
def engram(
    hardware: Annotated[str, typer.Option(help="Hardware registry key or alias, e.g. b200.")],
    model: Annotated[str, typer.Option(help="Model registry key (its layer count and KV size are used).")],
    table_gb: Annotated[float, typer.Option(min=0.001, help="Embedding table per accelerator, GB.")],
    lookups_per_token: Annotated[int, typer.Option(min=1, help="Rows read per token.")],
    bytes_per_embedding: Annotated[int, typer.Option(min=1, help="Bytes of one row.")],
    first_layer: Annotated[int, typer.Option(min=0, help="0-based index of the first layer reading the rows.")],
    interactivity: Annotated[float, typer.Option(min=0.001, help="Tokens/s/user of the operating point.")] = 50.0,
    batch: Annotated[int | None, typer.Option(min=1, help="Sequences per decode step per accelerator.")] = None,
    from_results: Annotated[
        bool, typer.Option(help="Take the stored valid Point nearest --interactivity (its concurrency is the batch).")
    ] = False,
    context_tokens: Annotated[int, typer.Option(min=1, help="Tokens per sequence the freed HBM holds.")] = 9216,
) -> None:
    """Model-based: per memory tier, whether one decode step's Engram lookups arrive before the first layer that
    reads them, and what moving the table off HBM frees (arXiv 2601.07372 is the work modelled)."""
    from analysis.engram import EngramTable, what_if

    registry, models, key = _registries(hardware, model)
    table = EngramTable(table_gb=table_gb, lookups_per_token=lookups_per_token,
                        bytes_per_embedding=bytes_per_embedding, first_layer=first_layer)  # fmt: skip
    point = _operating_point(key, model, interactivity, batch, from_results)
    try:
        verdicts = what_if(table, point, registry[key], models[model], context_tokens)
    except ValueError as error:
        fail(ConfigurationError(f"--{str(error).replace('_', '-')}"))
    layers = int(models[model].layers.value)
    title = (f"Engram what-if (model-based): {model} on {key}, first Engram layer {first_layer} of {layers}, "
             f"{point.interactivity:.4g} tok/s/user, batch {point.batch} ({point.label})")  # fmt: skip
    shown = Table(title=title)
    for column in ("tier", "GB/s", "latency µs", "fetch µs", "budget µs", "slack µs", "verdict", "HBM freed GB",
                   f"more sequences of {context_tokens} tokens"):  # fmt: skip
        shown.add_column(column, justify="right")

    def number(value: float | None, digits: int = 1) -> str:
        return "unknown" if value is None else f"{value:,.{digits}f}"

    for verdict in verdicts:
        word = {True: "hidden", False: "NOT hidden", None: "unknown (no figure)"}[verdict.hidden]
        figures = (verdict.bandwidth_gbps, verdict.latency_us, verdict.fetch_us, verdict.budget_us, verdict.slack_us)
        shown.add_row(verdict.tier, *map(number, figures), word, number(verdict.hbm_freed_gb),
                      number(verdict.extra_sequences, 0))  # fmt: skip
    console.print(shown)
    console.print("Per-layer time is the decode step split evenly over the layers (an assumption); prefill is not "
                  "modelled. Figures' sources:", markup=False, highlight=False)  # fmt: skip
    for source in dict.fromkeys(source for verdict in verdicts for source in verdict.sources):
        console.print(f"  - {source}", markup=False, highlight=False)


def _stored_points(hardware: str, model: str, levels: list[float]) -> list:
    """Per level, the stored frontier point of `hardware` and `model` nearest it (fast_tokens.operating_points)."""
    from analysis.fast_tokens import nearest_point, operating_points
    from db import reads
    from db.session import open_database, open_session

    engine = open_database(writes=False)
    with open_session(engine) as session:
        points = operating_points(reads.list_results(session))
    chosen = [nearest_point(points, hardware, model, level) for level in levels]
    if None in chosen:
        fail(ConfigurationError(f"--from-results: no valid fixed-length result of {model} on {hardware} is stored; "
                                "give the operating point instead"))  # fmt: skip
    return chosen


@memory_app.command("offload")
def offload(
    trace_file: Annotated[str, typer.Argument(help="An agent corpus (Weka or Mooncake trace file).")],
    hardware: Annotated[str, typer.Option(help="Hardware registry key or alias, e.g. b200.")],
    model: Annotated[str, typer.Option(help="Model registry key, e.g. deepseek-r1.")],
    dram_gib: Annotated[
        float | None,
        typer.Option(
            min=0,
            help="Host DRAM offered to the KV cache, GiB (default: InferenceX's rule on the "
            "registry's host DRAM: min(DRAM, 3 TB) x 0.8 x GPUs / GPUs per node).",
        ),
    ] = None,
    gpus: Annotated[int, typer.Option(min=1, help="Accelerators serving one engine instance.")] = 8,
    precision: Annotated[str, typer.Option(help="Weight precision: fp4, fp8, bf16...")] = "fp8",
    concurrency: Annotated[list[int], typer.Option(help="Live session trees (repeatable).")] = [16, 64, 256],  # noqa: B006
    interactivity: Annotated[list[float], typer.Option(help="Tokens/s/user levels (repeatable).")] = [20, 50, 100],  # noqa: B006
    decode_per_gpu: Annotated[float | None, typer.Option(help="Given decode rate, output tokens/s per GPU.")] = None,
    prefill_per_gpu: Annotated[float | None, typer.Option(help="Given prefill rate, prompt tokens/s per GPU.")] = None,
    from_results: Annotated[bool, typer.Option(help="Rates from the stored Point nearest each level.")] = False,
    tier: Annotated[str, typer.Option(help="TCO tier for $/M tokens.")] = "owning_hyperscaler",
    threshold: Annotated[float, typer.Option(min=0, max=1, help="Saving that makes offload worth it.")] = 0.10,
    block_size: Annotated[int, typer.Option(min=1, help="Engine KV block size in tokens.")] = 64,
    memory_utilization: Annotated[float, typer.Option(help="Share of HBM the engine may use.")] = 0.9,
    requests_per_lane: Annotated[int, typer.Option(min=1, help="Replayed requests per session lane.")] = 50,
) -> None:
    """Model-based: where a DRAM tier for the KV cache lowers $/M output tokens by at least --threshold, over
    concurrency x tokens/s/user (analysis/offload.py states the model)."""
    from analysis.offload import ServingRates, offload_map, planned_hits, rates_at
    from recipes.hardware import offload_budget_gib
    from runners.traces.formats import load_trace
    from runners.traces.planner import kv_capacity

    registry, models, key = _registries(hardware, model)
    price = registry[key].tco_usd_per_gpu_hour.get(tier)
    usd = price.value if price is not None else None
    if from_results:
        levels = [rates_at(point, usd) for point in _stored_points(key, model, interactivity)]
    elif decode_per_gpu is None or prefill_per_gpu is None:
        fail(ConfigurationError("--decode-per-gpu and --prefill-per-gpu: missing; give both, or --from-results"))
    else:
        levels = [ServingRates(interactivity=interactivity[0], decode_per_gpu=decode_per_gpu,
                               prefill_per_gpu=prefill_per_gpu, usd_per_gpu_hour=usd)]  # fmt: skip
    if dram_gib is None:
        dram_gib = offload_budget_gib(registry[key], gpus)
        if dram_gib is None:
            figure = registry[key].host_dram_gb
            why = figure.note if figure is not None else "no entry"
            fail(ConfigurationError(f"--dram-gib: missing; recipes/hardware.yaml has no host DRAM figure for {key} "
                                    f"({why})"))  # fmt: skip
    try:
        trace = load_trace(trace_file)
        capacity = kv_capacity(models[model], registry[key], gpus, precision, block_size,
                               memory_utilization=memory_utilization, dram_gib=dram_gib)  # fmt: skip
    except (InferSweepError, ValueError) as error:
        fail(error if isinstance(error, InferSweepError) else ConfigurationError(str(error)))
    hits = planned_hits(trace, concurrency, block_size, capacity.hbm_blocks, capacity.dram_blocks, requests_per_lane)
    cells = offload_map(hits, levels, threshold)
    blocks = f"{capacity.hbm_blocks:,} HBM + {capacity.dram_blocks:,} DRAM blocks"
    shown = Table(title=f"DRAM offload map (model-based): {model} {precision} on {gpus}x {key}, {trace.id}, "
                        f"{dram_gib:g} GiB DRAM ({blocks})")  # fmt: skip
    heads = ["given rates" if rates.label == "given" else f"{rates.interactivity:.4g} tok/s/user" for rates in levels]
    for column in ("concurrency", "HBM-only hit", "with DRAM", "prompt tokens saved", *heads):
        shown.add_column(column, justify="right")
    for row in hits:
        mine = [cell for cell in cells if cell.concurrency == row.concurrency]
        words = []
        for cell in mine:
            cost = cell.usd_per_million_output(with_dram=True)
            money = f", ${cost:.3f}/M" if cost is not None else ""
            words.append(f"{-cell.saving:+.1%}{money}{' PAYS' if cell.pays else ''}")
        shown.add_row(str(row.concurrency), f"{row.hbm_only:.1%}", f"{row.with_dram:.1%}",
                      f"{mine[0].prefill_tokens_saved:,.0f}", *words)  # fmt: skip
    console.print(shown)
    for rates in levels:
        level = "given rates" if rates.label == "given" else f"{rates.interactivity:.4g} tok/s/user"
        console.print(f"  {level}: decode {rates.decode_per_gpu:,.1f} and prefill "
                      f"{rates.prefill_per_gpu:,.1f} tokens/s per GPU ({rates.label})",
                      markup=False, highlight=False)  # fmt: skip
    console.print(f"Change in $/M output tokens with the DRAM tier; PAYS where it falls by >= {threshold:.0%}. The "
                  "tier's own cost is not charged (an upper bound).", markup=False, highlight=False)  # fmt: skip
