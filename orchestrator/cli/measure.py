"""One-off measurements against any OpenAI-compatible endpoint: `bench` (one load level), `replay` (a trace)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from orchestrator.cli.model_flags import settings_flags, settings_from_flags
from orchestrator.cli.output import console, fail
from recipes.errors import MISSING, InferSweepError, RecipeError
from recipes.schema import ReplaySettings, agentx_differences


def bench(
    base_url: Annotated[str, typer.Option(help="Server root, e.g. http://127.0.0.1:8000.")],
    model: Annotated[str, typer.Option(help="Model name to send.")],
    isl: Annotated[int, typer.Option(min=1, help="Input length (tokens).")] = 1024,
    osl: Annotated[int, typer.Option(min=1, help="Output length (tokens).")] = 128,
    concurrency: Annotated[int, typer.Option(min=1, help="Max requests in flight.")] = 1,
    num_prompts: Annotated[int, typer.Option(min=1, help="Measured requests.")] = 10,
    endpoint: Annotated[str, typer.Option(help="completions or chat.")] = "completions",
    request_rate: Annotated[float, typer.Option(help="Open-loop requests/s; inf = closed loop.")] = float("inf"),
    burstiness: Annotated[float, typer.Option(help="Gamma shape of arrivals (1 = Poisson).")] = 1.0,
    range_ratio: Annotated[float, typer.Option(help="Lengths uniform in [r*L, L].")] = 1.0,
    warmup: Annotated[int, typer.Option(min=0, help="Warmup requests (not measured).")] = 0,
    tokenizer: Annotated[str | None, typer.Option(help="Tokenizer directory (needed for chat).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of prompts, lengths, arrivals.")] = 0,
    goodput: Annotated[str | None, typer.Option(help="SLOs, e.g. ttft:500,tpot:50,e2el:10000 (ms).")] = None,
    timeout: Annotated[float, typer.Option(help="Per-request deadline (s).")] = 600.0,
    output: Annotated[Path | None, typer.Option(help="Write the JSON result here.")] = None,
    save_requests: Annotated[Path | None, typer.Option(help="Write every request record as Parquet.")] = None,
    api_key_env: Annotated[str | None, typer.Option(help="Environment variable holding the API key.")] = None,
    workers: Annotated[int, typer.Option(help="Client processes sharing the schedule (high rates).")] = 1,
) -> None:
    """Measure one load level against any OpenAI-compatible endpoint (definitions: docs/METRICS.md)."""
    from pydantic import ValidationError

    from runners.loadgen.bench import BenchSettings, parse_goodput, run_bench
    from runners.loadgen.bench import save_requests as write_parquet
    from runners.loadgen.client import check_reachable

    try:
        settings = BenchSettings(
            base_url=base_url, model=model, endpoint=endpoint, isl=isl, osl=osl, range_ratio=range_ratio,
            concurrency=concurrency, num_prompts=num_prompts, num_warmup=warmup, request_rate=request_rate,
            burstiness=burstiness, seed=seed, request_timeout_s=timeout, tokenizer=tokenizer,
            goodput=parse_goodput(goodput) if goodput else None, api_key_env=api_key_env, workers=workers,
        )  # fmt: skip
        check_reachable(settings.base_url)
        result, records = run_bench(settings)
    except ValidationError as error:
        problems = [
            (_bench_flag(e["loc"]), e.get("input"), e["msg"])
            if e["loc"]
            else ("flags", MISSING, e["msg"].removeprefix("Value error, "))
            for e in error.errors(include_url=False)
        ]
        fail(RecipeError("infersweep bench", problems, what="flags"))
    except InferSweepError as error:
        fail(error)
    _print_bench(result)
    _print_failures(records)
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(result.model_dump_json(indent=2) + "\n")
        console.print(f"result written to {output}")
    if save_requests is not None:
        write_parquet(records, save_requests)
        console.print(f"{len(records)} request records written to {save_requests}")
    if not result.complete:
        raise typer.Exit(130)


# Settings whose flag is not their field's name (the flags predate the settings being a FixedLengthPoint).
_BENCH_FLAGS = {"num_warmup": "--warmup", "request_timeout_s": "--timeout"}


def _bench_flag(location: tuple[int | str, ...]) -> str:
    name = "_".join(str(part) for part in location)
    return _BENCH_FLAGS.get(name, "--" + name.replace("_", "-"))


def _print_bench(result: object) -> None:
    from runners.loadgen.bench import BenchResult

    assert isinstance(result, BenchResult)
    table = Table(title=f"infersweep bench ({'complete' if result.complete else 'INCOMPLETE'})")
    table.add_column("metric")
    for column in ("mean", "p50", "p90", "p99"):
        table.add_column(column, justify="right")
    for name in ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms", "client_queue_ms", "interactivity"):
        stats = getattr(result, name)
        label = "interactivity (tok/s/user)" if name == "interactivity" else name
        figures = (stats.mean, stats.p50, stats.p90, stats.p99)
        table.add_row(label, *("-" if v is None else f"{v:,.2f}" for v in figures))
    console.print(table)
    console.print(
        "interactivity = 1000 / TPOT (ms) at the same percentile: its p90 and p99 are the slow tail, so they sit "
        "below its p50",
        highlight=False,
    )
    console.print(
        f"completed {result.completed}, failed {result.failed}, window {result.duration_s:.2f} s, "
        f"{result.request_throughput:.2f} req/s, {result.output_throughput:,.1f} output tok/s, "
        f"{result.total_token_throughput:,.1f} total tok/s"
        + (f", goodput {result.goodput:.2f} req/s" if result.goodput is not None else "")
        + f"; client CPU {result.client.cpu_utilisation:.0%}"
    )
    verdict = "valid" if result.validity.valid else "INVALID: " + "; ".join(result.validity.reasons)
    console.print(verdict)


def _print_failures(records: list) -> None:
    """Why measured requests failed, commonest first: the cause is in the summary, not only in --save-requests."""
    from runners.loadgen.metrics import failure_reasons

    for reason, count in failure_reasons(records):
        console.print(f"  {count} failed: ", end="")
        console.print(reason, markup=False, highlight=False)


# The replay's settings are flags made from the one settings model (recipes/schema.py ReplaySettings);
# what the command does not take from it: the trace, the server, the load level and the block size.
@settings_flags(ReplaySettings, exclude=("max_schedule_lag_p99_ms",), defaults={"duration_s": 60.0})
def replay(
    trace: Annotated[Path, typer.Argument(help="Trace file (Weka JSON or Mooncake JSONL).")],
    base_url: Annotated[str, typer.Option(help="Server root, e.g. http://127.0.0.1:8000.")],
    model: Annotated[str, typer.Option(help="Model name to send.")],
    concurrency: Annotated[int, typer.Option(min=1, help="Live session trees (in-flight cap for timeline mode).")] = 1,
    engine_block_size: Annotated[int, typer.Option(help="Engine KV block size for the theoretical rate.")] = 128,
    output: Annotated[Path | None, typer.Option(help="Write the JSON result here.")] = None,
    tokenizer: Annotated[
        Path | None, typer.Option(help="The model's directory (its tokenizer.json): needed for --api chat.")
    ] = None,
    *,
    flags: dict[str, Any],
) -> None:
    """Replay an agentic trace (AgentX-style) and compare realized with theoretical prefix-cache hits.

    Settings are the recipe's `workload` fields of the same names; --mode is timeline for Mooncake traces unless
    given, sessions otherwise."""
    import json

    from runners.loadgen.breakdown import measured_positions
    from runners.loadgen.chat_text import PromptText
    from runners.loadgen.client import Endpoint, check_reachable
    from runners.loadgen.fixed_length import DEFAULT_ID_RANGE, Vocabulary
    from runners.loadgen.metrics import request_latency, summarize
    from runners.loadgen.replay import replay as run_replay
    from runners.loadgen.replay import trace_path
    from runners.traces.formats import load_trace
    from runners.traces.hit_rate import replayed_hit_rate

    try:
        loaded = load_trace(trace)
        mode = "timeline" if loaded.kind == "mooncake" else "sessions"
        settings = settings_from_flags(ReplaySettings, {"mode": mode, **flags}, "replay")
        check_reachable(base_url)
        text, ids = None, DEFAULT_ID_RANGE
        if tokenizer is not None:  # the model's own ids, and the text a chat replay sends
            vocabulary = Vocabulary.from_model_dir(tokenizer)
            ids = (max(vocabulary.excluded, default=-1) + 1, vocabulary.size)
            text = PromptText(vocabulary.text_tokenizer(), settings.chat_text) if settings.api == "chat" else None
        endpoint = Endpoint(base_url=base_url, model=model)
        stats, records = run_replay(loaded, endpoint, settings, concurrency, ids, text=text)
    except InferSweepError as error:
        fail(error)
    walk = replayed_hit_rate(loaded, engine_block_size, settings.length_scale)
    theoretical = walk.rate
    # The AgentX harness's figure for the same requests (its "Theoretical Prefix Cache Hit": blocks, not tokens).
    agentx_theoretical = walk.block_rate(measured_positions([item.record for item in records], walk, trace_path))
    failed = sum(1 for item in records if not item.record.ok)
    latencies = [request_latency(item.record) for item in records if not item.record.warmup]
    ttft = summarize([latency.ttft_ms for latency in latencies if latency and latency.ttft_ms is not None])
    console.print(
        f"trace {loaded.id} ({loaded.kind}, version {loaded.content_hash[:12]}): {stats.requests_measured} measured "
        f"requests, {failed} failed, {stats.sessions_completed} session trees completed"
    )
    realized = (
        "n/a (server reports no cached tokens)" if stats.realized_hit_rate is None else f"{stats.realized_hit_rate:.1%}"
    )
    harness = "n/a" if agentx_theoretical is None else f"{agentx_theoretical:.2%}"
    console.print(
        f"prefix-cache hit rate: realized {realized}, theoretical {theoretical:.1%} at {engine_block_size}-token "
        f"blocks (tokens); AgentX harness's theoretical {harness} (blocks before the first unseen one, measured "
        "requests)"
    )
    console.print(f"schedule lag p50/p99: {stats.schedule_lag_ms.p50} / {stats.schedule_lag_ms.p99} ms; "
                  f"TTFT p50/p99 of the measured requests: {ttft.p50} / {ttft.p99} ms")  # fmt: skip
    departures = agentx_differences(settings.model_dump())
    console.print(
        "comparable with AgentX results" if not departures else f"not comparable with AgentX: {'; '.join(departures)}",
        markup=False, highlight=False,
    )  # fmt: skip
    _print_failures([item.record for item in records])
    if output is not None:
        document = {"trace": {"id": loaded.id, "kind": loaded.kind, "version": loaded.content_hash},
                    "settings": settings.model_dump(), "concurrency": concurrency, "theoretical_hit_rate": theoretical,
                    "agentx_theoretical_hit_rate": agentx_theoretical,
                    "failed": failed, "ttft_ms": ttft.model_dump(), "stats": stats.model_dump()}  # fmt: skip
        output.write_text(json.dumps(document, indent=2) + "\n")
        console.print(f"result written to {output}")
