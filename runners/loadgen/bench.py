"""`infersweep bench`: one measured load level against any OpenAI-compatible endpoint.

The same code measures recipe Points; this module adds the standalone settings, the versioned JSON
result (with the exact settings and the client's own CPU use), and partial results on Ctrl-C.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import os
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from recipes.errors import ConfigurationError
from recipes.schema import ValidityThresholds
from recipes.strict import Strict
from runners.loadgen import loop
from runners.loadgen.client import Endpoint, PreparedRequest, arrival_offsets, run_closed_loop, run_open_loop
from runners.loadgen.fixed_length import DEFAULT_ID_RANGE, Vocabulary, build_requests
from runners.loadgen.metrics import compute_point_metrics
from runners.loadgen.records import FixedLengthPoint, GoodputSlo, PointMetrics, RequestRecord, records_frame

BENCH_SCHEMA_VERSION = 2  # 2: settings are a FixedLengthPoint (num_warmup, request_timeout_s, kind)


class BenchSettings(FixedLengthPoint):
    """Everything that defines a bench run: the load level (a FixedLengthPoint), where and how it is driven;
    stored verbatim in its result."""

    # JSON has no infinity: a closed loop's request_rate is written as the string "Infinity".
    model_config = ConfigDict(frozen=True, ser_json_inf_nan="strings")

    base_url: str = Field(description="Server root, e.g. http://127.0.0.1:8000 (no /v1).")
    model: str = Field(description="Model name sent in each request.")
    endpoint: Literal["completions", "chat"] = Field("completions", description="API to drive.")
    request_rate: float = Field(math.inf, gt=0, description="Open-loop arrivals per second; inf = closed loop.")
    burstiness: float = Field(1.0, gt=0, description="Gamma shape of inter-arrivals (1.0 = Poisson).")
    tokenizer: str | None = Field(None, description="Tokenizer directory (tokenizer.json) for ids and chat text.")
    goodput: GoodputSlo | None = Field(None, description="SLOs for the goodput figure.")
    api_key_env: str | None = Field(None, description="Environment variable holding the API key (never stored).")
    workers: int = Field(
        1, ge=1, le=64, description="Client processes sharing the schedule, for rates one process cannot drive."
    )

    @model_validator(mode="after")
    def _chat_needs_text(self) -> BenchSettings:
        if self.endpoint == "chat" and self.tokenizer is None:
            raise ValueError("--endpoint chat needs --tokenizer DIR to turn random token ids into prompt text")
        return self

    @model_validator(mode="after")
    def _lanes_for_every_worker(self) -> BenchSettings:
        if self.workers > self.concurrency:
            raise ValueError(f"--workers ({self.workers}) cannot exceed --concurrency ({self.concurrency})")
        return self

    @property
    def open_loop(self) -> bool:
        return math.isfinite(self.request_rate)


class ClientUsage(Strict):
    cpu_seconds: float = Field(description="User + system CPU time of the client (all its processes) during the run.")
    cpu_seconds_per_request: float = Field(description="cpu_seconds / requests sent (warmup included).")
    cpu_utilisation: float = Field(
        description="cpu_seconds / wall time / workers: near 1.0 means the client processes were saturated."
    )


class BenchResult(PointMetrics):
    """The JSON written by `infersweep bench --output`: PointMetrics plus provenance."""

    model_config = ConfigDict(ser_json_inf_nan="strings")

    bench_schema_version: int = Field(BENCH_SCHEMA_VERSION, description="Version of this JSON schema.")
    complete: bool = Field(description="False when the run was interrupted; figures cover what finished.")
    started_at: datetime = Field(description="Wall-clock start (UTC).")
    settings: BenchSettings = Field(description="The exact settings used.")
    client: ClientUsage = Field(description="The client's own resource use.")


def parse_goodput(text: str) -> GoodputSlo:
    """`ttft:MS,tpot:MS,e2el:MS` (any subset) -> GoodputSlo; errors quote the bad part."""
    values: dict[str, float] = {}
    for part in filter(None, (piece.strip() for piece in text.split(","))):
        name, _, number = part.partition(":")
        if name not in {"ttft", "tpot", "e2el"}:
            raise ConfigurationError(f"--goodput: got {part!r}; expected ttft:MS, tpot:MS or e2el:MS")
        try:
            values[f"{name}_ms"] = float(number)
        except ValueError as error:
            raise ConfigurationError(f"--goodput: got {part!r}; {number!r} is not a number of milliseconds") from error
    return GoodputSlo(**values)


def _vocabulary(settings: BenchSettings) -> Vocabulary:
    if settings.tokenizer is None:
        low, high = DEFAULT_ID_RANGE
        return Vocabulary(size=high, excluded=frozenset(range(low)))
    return Vocabulary.from_model_dir(Path(settings.tokenizer))


def prepare_requests(settings: BenchSettings) -> list[PreparedRequest]:
    vocabulary = _vocabulary(settings)
    requests = build_requests(settings, vocabulary)
    if settings.endpoint == "chat" and vocabulary.tokenizer_file is not None:
        decode = vocabulary.decoder()
        requests = [
            PreparedRequest(
                index=r.index,
                prompt=r.prompt,
                max_tokens=r.max_tokens,
                warmup=r.warmup,
                prompt_text=decode(r.prompt.ids()),
            )
            for r in requests
        ]
    return requests


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _drive(
    settings: BenchSettings, endpoint: Endpoint, requests: list[PreparedRequest], sink: list[RequestRecord]
) -> None:
    warmup = [r for r in requests if r.warmup]
    measured = [r for r in requests if not r.warmup]
    if warmup:
        await run_closed_loop(endpoint, warmup, settings.concurrency, settings.request_timeout_s, sink.append)
    if settings.open_loop:
        await run_open_loop(
            endpoint, measured, settings.request_rate, settings.burstiness, settings.concurrency,
            settings.request_timeout_s, settings.seed, sink.append,
        )  # fmt: skip
    else:
        await run_closed_loop(endpoint, measured, settings.concurrency, settings.request_timeout_s, sink.append)


def _worker_main(
    settings: BenchSettings, endpoint: Endpoint, requests: list[PreparedRequest], lanes: int,
    offsets: list[float] | None, start_at: float,
) -> tuple[list[RequestRecord], float, bool]:  # fmt: skip
    """One client process: its share of the measured requests, from the shared start time."""
    sink: list[RequestRecord] = []
    cpu_before = _cpu_seconds()

    async def drive() -> None:
        if offsets is not None:
            await run_open_loop(
                endpoint, requests, settings.request_rate, settings.burstiness, lanes,
                settings.request_timeout_s, on_done=sink.append, offsets=offsets, start_at=start_at,
            )  # fmt: skip
        else:
            await asyncio.sleep(max(0.0, start_at - time.perf_counter()))
            await run_closed_loop(endpoint, requests, lanes, settings.request_timeout_s, sink.append)

    complete = True
    try:
        loop.run(drive())
    except KeyboardInterrupt:
        complete = False
    return sink, _cpu_seconds() - cpu_before, complete


def _run_workers(
    settings: BenchSettings, endpoint: Endpoint, measured: list[PreparedRequest], sink: list[RequestRecord]
) -> tuple[float, bool]:
    """Split the measured requests over `settings.workers` processes; return their CPU seconds."""
    workers = settings.workers
    offsets = (
        arrival_offsets(len(measured), settings.request_rate, settings.burstiness, settings.seed)
        if settings.open_loop
        else None
    )
    # Every process starts from one instant on the shared monotonic clock; spawning takes about a second.
    start_at = time.perf_counter() + 3.0
    context = multiprocessing.get_context("spawn")
    cpu, complete = 0.0, True
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = [
            pool.submit(
                _worker_main,
                settings,
                endpoint,
                measured[w::workers],
                settings.concurrency // workers + (1 if w < settings.concurrency % workers else 0),
                offsets[w::workers] if offsets is not None else None,
                start_at,
            )
            for w in range(workers)
        ]
        for future in futures:
            try:
                records, seconds, finished = future.result()
            except KeyboardInterrupt:
                # Ctrl-C reached every process: each returns what it finished; collect those.
                records, seconds, finished = future.result(timeout=60)
            sink.extend(records)
            cpu += seconds
            complete = complete and finished
    return cpu, complete


def run_bench(
    settings: BenchSettings, thresholds: ValidityThresholds | None = None
) -> tuple[BenchResult, list[RequestRecord]]:
    """Run the benchmark; on Ctrl-C return what finished, marked incomplete."""
    api_key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
    if settings.api_key_env and api_key is None:
        raise ConfigurationError(f"--api-key-env: environment variable {settings.api_key_env!r} is not set")
    endpoint = Endpoint(
        base_url=settings.base_url, model=settings.model, api_key=api_key, kind=settings.endpoint,
        keep_text=settings.tokenizer is not None,
    )  # fmt: skip
    requests = prepare_requests(settings)
    records: list[RequestRecord] = []
    started_at = datetime.now(UTC)
    cpu_before, wall_before = _cpu_seconds(), time.perf_counter()
    complete = True
    worker_cpu = 0.0
    try:
        if settings.workers == 1:
            loop.run(_drive(settings, endpoint, requests, records))
        else:
            warmup = [r for r in requests if r.warmup]
            if warmup:  # warm up from this process, then measure from all workers
                loop.run(
                    run_closed_loop(endpoint, warmup, settings.concurrency, settings.request_timeout_s, records.append)
                )
            worker_cpu, complete = _run_workers(settings, endpoint, [r for r in requests if not r.warmup], records)
    except KeyboardInterrupt:
        complete = False
    cpu = _cpu_seconds() - cpu_before + worker_cpu
    wall = time.perf_counter() - wall_before
    records.sort(key=lambda record: record.index)
    if settings.tokenizer is not None:
        count_with_tokenizer(records, Path(settings.tokenizer))
    metrics = compute_point_metrics(
        records, settings.concurrency, 1, thresholds or ValidityThresholds(), settings.open_loop, settings.goodput
    )
    if not complete:
        metrics.validity = metrics.validity.with_check("finished", "interrupted before every request finished")
    result = BenchResult(
        **metrics.model_dump(),
        complete=complete,
        started_at=started_at,
        settings=settings,
        client=ClientUsage(
            cpu_seconds=cpu,
            cpu_seconds_per_request=cpu / max(len(records), 1),
            cpu_utilisation=cpu / wall / settings.workers if wall > 0 else 0.0,
        ),
    )
    return result, records


def count_with_tokenizer(records: list[RequestRecord], tokenizer_dir: Path) -> None:
    """Count each request's output by re-tokenising its text: the fallback when a server sends no
    usage, and the cross-check against usage otherwise (a > 10 % gap makes the point invalid)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    for record in records:
        if record.output_text is not None:
            record.tokenizer_tokens = len(tokenizer.encode(record.output_text, add_special_tokens=False).ids)


def save_requests(records: list[RequestRecord], path: Path) -> None:
    """Every request record as one Parquet row (lists stay lists)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    records_frame(records).to_parquet(path, index=False)
