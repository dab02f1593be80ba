"""Read GuideLLM's benchmark report (`guidellm run --output kind=json`, report version 2) as load levels.

Each entry of `benchmarks` is one load level. What its figures mean (GuideLLM 0.8.1; docs/METRICS.md):
- a `concurrent` benchmark runs `streams` requests at a time (our concurrency) and `synchronous` one at a time;
  the rate-driven ones (`throughput`, `constant`, `poisson`, `async`) have no fixed concurrency and are refused
  alone, with their rate;
- GuideLLM's `inter_token_latency_ms` is (request latency - TTFT) / (output tokens - 1): our TPOT. Its
  `time_per_output_token_ms` divides by every output token, first included, so it is not ours and is kept as a
  peer figure. GuideLLM weights both distributions by output token, not by request: with a fixed output length
  (the synthetic data's `output_tokens`) the percentiles are the same as per request;
- token counts are the server's usage (GuideLLM prefers response metrics); rates are totals over the
  benchmark's `duration`; `errored` requests count as failed, `incomplete` ones (cancelled when the benchmark
  stopped) are not counted, as our window leaves out the ramp-down.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from orchestrator.importers.peers import (
    NO_SAMPLES,
    PeerFile,
    PeerLevel,
    PeerModel,
    Refusal,
    aggregate_validity,
    level_metrics,
    parse,
    stats_in_ms,
    validation_problems,
)
from recipes.schema import ValidityThresholds
from recipes.yamlio import read_document
from runners.loadgen.records import Stats

WHAT = "GuideLLM benchmark report"
FIXED_CONCURRENCY = ("concurrent", "synchronous")


class Distribution(PeerModel):
    mean: float = Field(description="Mean.")
    median: float = Field(description="Median.")
    std_dev: float | None = Field(None, description="Standard deviation.")
    count: int = Field(ge=0, description="Samples (requests, or tokens for per-token figures).")
    total_sum: float = Field(description="Sum of the samples (a total for token counts).")
    percentiles: dict[str, float] = Field(default_factory=dict, description="p001 ... p999.")

    def stats(self, unit: str) -> Stats:
        percentiles = self.percentiles
        return stats_in_ms(unit, "unit", self.count, mean=self.mean, p50=self.median, p90=percentiles.get("p90"),
                           p99=percentiles.get("p99"), p999=percentiles.get("p999"), std=self.std_dev)  # fmt: skip


class ByStatus(PeerModel):
    successful: Distribution = Field(description="Over the successful requests.")


class RequestTotals(PeerModel):
    successful: int = Field(ge=0, description="Requests that succeeded.")
    errored: int = Field(0, ge=0, description="Requests that failed.")
    incomplete: int = Field(0, ge=0, description="Requests cancelled when the benchmark stopped.")


class BenchmarkMetrics(PeerModel):
    request_totals: RequestTotals = Field(description="Request counts by status.")
    request_latency: ByStatus = Field(description="End-to-end latency, seconds.")
    time_to_first_token_ms: ByStatus = Field(description="TTFT, ms.")
    inter_token_latency_ms: ByStatus = Field(description="(latency - TTFT) / (output tokens - 1), ms: our TPOT.")
    time_per_output_token_ms: ByStatus | None = Field(None, description="latency / output tokens, ms.")
    prompt_token_count: ByStatus = Field(description="Prompt tokens per request (total_sum: all).")
    output_token_count: ByStatus = Field(description="Output tokens per request (total_sum: all).")


class Strategy(PeerModel):
    type_: str = Field(description="'concurrent', 'synchronous', 'throughput', 'constant', 'poisson', ...")
    streams: int | None = Field(None, ge=1, description="Concurrent requests (concurrent only).")
    rate: float | None = Field(None, description="Requests/s (rate-driven strategies).")


class BenchmarkConfig(PeerModel):
    strategy: Strategy = Field(description="How load was generated.")


class Benchmark(PeerModel):
    config: BenchmarkConfig = Field(description="The benchmark's settings.")
    metrics: BenchmarkMetrics = Field(description="Its aggregates.")
    start_time: float = Field(description="Start of measurement, Unix seconds.")
    duration: float = Field(gt=0, description="Measured duration, s.")


class ReportMetadata(PeerModel):
    version: Literal[2] = Field(description="Report format version (GuideLLM 0.4 and later write 2).")
    guidellm_version: str | None = Field(None, description="GuideLLM release that wrote the report.")


class Report(PeerModel):
    metadata: ReportMetadata = Field(description="Report format and tool version.")
    config: dict[str, Any] = Field(default_factory=dict, description="The run's scenario, as given.")
    benchmarks: list[Any] = Field(description="One entry per load level (each read on its own).")


def _nominal_lengths(config: dict[str, Any]) -> tuple[int | None, int | None]:
    """The synthetic data's prompt and output lengths (a dataset of real prompts states none)."""
    for source in (config.get("spec") or {}).get("data") or []:
        if isinstance(source, dict) and source.get("kind") == "synthetic_text":
            isl, osl = source.get("prompt_tokens"), source.get("output_tokens")
            return (isl if isinstance(isl, int) else None), (osl if isinstance(osl, int) else None)
    return None, None


class GuideLLMFormat:
    name = "guidellm"
    description = "GuideLLM's benchmark report (JSON or YAML, report version 2): one load level per benchmark."

    def read(self, path: Path, accelerators: int, thresholds: ValidityThresholds) -> PeerFile:
        report = parse(Report, read_document(path, WHAT), path, WHAT)
        backend = (report.config.get("spec") or {}).get("backend") or {}
        version = report.metadata.guidellm_version or "(version not stated)"
        peer = PeerFile(path=path, tool=f"GuideLLM {version}", model=backend.get("model") or None)
        isl, osl = _nominal_lengths(report.config)
        for index, raw in enumerate(report.benchmarks):
            try:
                benchmark = Benchmark.model_validate(raw)
            except ValidationError as error:
                peer.refused += [Refusal(index, name, value, expected)
                                 for name, value, expected in validation_problems(error)]  # fmt: skip
                continue
            strategy = benchmark.config.strategy
            if strategy.type_ not in FIXED_CONCURRENCY or (strategy.type_ == "concurrent" and not strategy.streams):
                shown = f"{strategy.type_} at {strategy.rate:.4g} req/s" if strategy.rate else strategy.type_
                peer.refused.append(Refusal(index, "config.strategy.type_", shown,
                                            f"one of {list(FIXED_CONCURRENCY)} (a fixed concurrency)"))  # fmt: skip
                continue
            concurrency = strategy.streams or 1
            peer.levels.append(self._level(index, benchmark, concurrency, accelerators, thresholds, isl, osl))
        return peer

    @staticmethod
    def _level(index: int, benchmark: Benchmark, concurrency: int, accelerators: int,
               thresholds: ValidityThresholds, isl: int | None, osl: int | None) -> PeerLevel:  # fmt: skip
        metrics, totals = benchmark.metrics, benchmark.metrics.request_totals
        completed = totals.successful
        validity = aggregate_validity(completed, totals.errored, concurrency, thresholds)
        guidellm_tpot = metrics.time_per_output_token_ms
        figures = {"guidellm_time_per_output_token_ms_mean": guidellm_tpot.successful.mean} if guidellm_tpot else None
        point = level_metrics(
            completed=completed, failed=totals.errored, duration_s=benchmark.duration,
            input_tokens=round(metrics.prompt_token_count.successful.total_sum),
            output_tokens=round(metrics.output_token_count.successful.total_sum), accelerators=accelerators,
            ttft=metrics.time_to_first_token_ms.successful.stats("ms"),
            tpot=metrics.inter_token_latency_ms.successful.stats("ms"),
            itl=NO_SAMPLES,  # GuideLLM has no gap-between-chunks distribution
            e2el=metrics.request_latency.successful.stats("s"), validity=validity, peer_figures=figures,
        )  # fmt: skip
        label = f"benchmark {index} ({benchmark.config.strategy.type_}, c={concurrency})"
        when = datetime.fromtimestamp(benchmark.start_time, UTC)
        return PeerLevel(index=index, label=label, concurrency=concurrency, isl=isl, osl=osl, metrics=point,
                         measured_at=when)  # fmt: skip


GUIDELLM = GuideLLMFormat()
