"""`memory engram`: whether an Engram table can live in host DRAM or on SSD (orchestrator/analysis/engram.py)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from orchestrator.cli.output import console, fail
from recipes.errors import ConfigurationError

memory_app = typer.Typer(help="Memory tiers: what placing data off the accelerator costs and frees.",
                         no_args_is_help=True)  # fmt: skip


def _operating_point(hardware: str, model: str, interactivity: float, batch: int | None, from_results: bool):
    """The point given by the flags, or the stored valid Point of `hardware` and `model` nearest `interactivity`."""
    from orchestrator.analysis.engram import OperatingPoint

    if not from_results:
        if batch is None:
            fail(ConfigurationError("--batch: missing; give the sequences per decode step, or --from-results"))
        return OperatingPoint(interactivity=interactivity, batch=batch)
    from db import reads
    from db.session import make_engine, migrate, open_session

    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        rows = [row for row in reads.list_results(session) if row.valid and row.hardware == hardware
                and row.model == model and row.interactivity_p50 and row.workload_kind == "fixed-length"]  # fmt: skip
    if not rows:
        fail(ConfigurationError(f"--from-results: no valid fixed-length result of {model} on {hardware} is stored; "
                                "import or measure one, or give --interactivity and --batch"))  # fmt: skip
    nearest = min(rows, key=lambda row: abs(row.interactivity_p50 - interactivity))
    label = f"{nearest.origin} point {nearest.point_key} of sweep {nearest.sweep} ({nearest.parallelism})"
    return OperatingPoint(interactivity=nearest.interactivity_p50, batch=nearest.concurrency, label=label)


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
    from orchestrator.analysis.engram import EngramTable, what_if
    from recipes.hardware import hardware_key_for, load_hardware_registry
    from recipes.model_registry import load_model_registry

    registry, models = load_hardware_registry(), load_model_registry()
    key = hardware_key_for(hardware, registry)
    if key is None:
        fail(ConfigurationError(f"--hardware: got {hardware!r}; expected one of {', '.join(sorted(registry))}"))
    if model not in models:
        fail(ConfigurationError(f"--model: got {model!r}; expected one of {', '.join(sorted(models))}"))
    table = EngramTable(table_gb=table_gb, lookups_per_token=lookups_per_token,
                        bytes_per_embedding=bytes_per_embedding, first_layer=first_layer)  # fmt: skip
    point = _operating_point(key, model, interactivity, batch, from_results)
    try:
        verdicts = what_if(table, point, registry[key], models[model], context_tokens)
    except ValueError as error:
        fail(ConfigurationError(f"--{str(error).replace('_', '-')}"))
    layers = int(models[model].layers.value)
    title = (f"Engram what-if (model-based): {model} on {key}, first Engram layer {first_layer} of {layers}, "
             f"{point.interactivity:g} tok/s/user, batch {point.batch} ({point.label})")  # fmt: skip
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
