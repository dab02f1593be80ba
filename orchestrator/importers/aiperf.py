"""Read NVIDIA AIPerf's profile export (`profile_export_aiperf.json` in a run's artifact directory) as one load level.

What its figures mean (AIPerf 0.13.0, export schema 1.4; docs/METRICS.md maps them to ours):
- `request_count` counts the successful requests and `error_request_count` the failed ones (AIPerf's
  `completed_request_count` counts both);
- `inter_token_latency` is per request (request latency - TTFT) / (output tokens - 1): our TPOT; its
  `inter_chunk_latency` is the gap between streamed chunks: our ITL;
- output and input token totals are the server's usage (`total_usage_*`) where the server reported it, else
  AIPerf's own tokenizer count (`total_osl`, `total_isl`); with `--use-server-token-count` the two are the same,
  without it the gap is our token disagreement;
- the load level is the profiling phase's concurrency (`input_config.phases`, or `input_config.loadgen` in older
  exports) and the nominal lengths are the synthetic dataset's means; a request-rate phase has no fixed
  concurrency and is refused.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import Field

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
    utc,
)
from recipes.errors import MISSING, RecipeError
from recipes.schema import ValidityThresholds
from recipes.yamlio import read_document
from runners.loadgen.records import Stats

WHAT = "AIPerf profile export"
EXPORT_NAME = "profile_export_aiperf.json"
MISSING_VALUE = "<missing>"


class AIPerfMetric(PeerModel):
    unit: str = Field(description="The metric's unit as AIPerf names it ('ms', 'tokens', 'requests', ...).")
    avg: float | None = Field(None, description="Mean (the value itself for a total or a rate).")
    p50: float | None = Field(None, description="Median.")
    p90: float | None = Field(None, description="90th percentile.")
    p99: float | None = Field(None, description="99th percentile.")
    std: float | None = Field(None, description="Standard deviation.")
    count: int | None = Field(None, description="Samples behind the distribution.")


class AIPerfExport(PeerModel):
    schema_version: str | None = Field(None, description="Version of the export's schema.")
    aiperf_version: str | None = Field(None, description="AIPerf release that wrote the file.")
    request_count: AIPerfMetric = Field(description="Successful requests.")
    error_request_count: AIPerfMetric | None = Field(None, description="Failed requests (absent when none failed).")
    benchmark_duration: AIPerfMetric = Field(description="Length of the profiling phase.")
    time_to_first_token: AIPerfMetric = Field(description="TTFT distribution.")
    inter_token_latency: AIPerfMetric = Field(description="Per request (latency - TTFT) / (OSL - 1): our TPOT.")
    inter_chunk_latency: AIPerfMetric | None = Field(None, description="Gaps between streamed chunks: our ITL.")
    request_latency: AIPerfMetric = Field(description="End-to-end latency distribution.")
    total_isl: AIPerfMetric | None = Field(None, description="Prompt tokens, AIPerf's count.")
    total_osl: AIPerfMetric | None = Field(None, description="Output tokens, AIPerf's count.")
    total_usage_prompt_tokens: AIPerfMetric | None = Field(None, description="Prompt tokens, server usage.")
    total_usage_completion_tokens: AIPerfMetric | None = Field(None, description="Output tokens, server usage.")
    output_token_throughput: AIPerfMetric | None = Field(None, description="AIPerf's output tokens/s (its count).")
    input_config: dict[str, Any] = Field(default_factory=dict, description="The run's configuration, as given.")
    start_time: datetime | None = Field(None, description="When profiling started.")
    was_cancelled: bool = Field(False, description="The run was cancelled before its end.")
    is_complete: bool = Field(True, description="Every phase ran to its end.")


def _ms(metric: AIPerfMetric, name: str, n: int) -> Stats:
    return stats_in_ms(metric.unit, f"{name}.unit", metric.count if metric.count is not None else n, mean=metric.avg,
                       p50=metric.p50, p90=metric.p90, p99=metric.p99, std=metric.std)  # fmt: skip


def _total(metric: AIPerfMetric | None) -> int | None:
    return None if metric is None or metric.avg is None else round(metric.avg)


def _load(config: dict[str, Any]) -> tuple[str, object]:
    """The profiling phase's ('concurrency', N) or its other kind ('request_rate', R), from either export shape."""
    for phase in config.get("phases") or []:
        if isinstance(phase, dict) and phase.get("kind") == "profiling":
            kind = phase.get("type")
            return str(kind), phase.get("concurrency") if kind == "concurrency" else phase.get("rate", MISSING_VALUE)
    loadgen = config.get("loadgen") or {}
    if loadgen.get("request_rate") is not None:
        return "request_rate", loadgen["request_rate"]
    return "concurrency", loadgen.get("concurrency", MISSING_VALUE)


def _nominal_lengths(config: dict[str, Any]) -> tuple[int | None, int | None]:
    """The synthetic dataset's mean prompt and output lengths (schema 1.4 `datasets`, older `input.prompt`)."""
    for dataset in config.get("datasets") or []:
        prompts = dataset.get("prompts") if isinstance(dataset, dict) else None
        if isinstance(prompts, dict):
            return _mean(prompts.get("isl")), _mean(prompts.get("osl"))
    prompt = (config.get("input") or {}).get("prompt") or {}
    return _mean(prompt.get("input_tokens")), _mean(prompt.get("output_tokens"))


def _mean(spec: object) -> int | None:
    value = spec.get("mean") if isinstance(spec, dict) else None
    return round(value) if isinstance(value, int | float) and value > 0 else None


class AIPerfFormat:
    name = "aiperf"
    description = "AIPerf's profile export (profile_export_aiperf.json, or the artifact directory holding it)."

    def read(self, path: Path, accelerators: int, thresholds: ValidityThresholds) -> PeerFile:
        file = path / EXPORT_NAME if path.is_dir() else path
        export = parse(AIPerfExport, read_document(file, WHAT), file, WHAT)
        config = export.input_config
        models = [item.get("name") for item in (config.get("models") or {}).get("items", []) if isinstance(item, dict)]
        models += (config.get("endpoint") or {}).get("model_names") or []
        peer = PeerFile(path=file, tool=f"AIPerf {export.aiperf_version or '(version not stated)'}",
                        model=str(models[0]) if models else None)  # fmt: skip
        kind, concurrency = _load(config)
        if kind != "concurrency" or not isinstance(concurrency, int) or concurrency < 1:
            where = "input_config.phases[profiling]" if config.get("phases") else "input_config.loadgen"
            expected = "a fixed concurrency (InferSweep compares load levels at one concurrency)"
            peer.refused.append(Refusal(0, f"{where}.{kind}", concurrency, expected))
            return peer
        completed = _total(export.request_count) or 0
        failed = _total(export.error_request_count) or 0
        duration = export.benchmark_duration.avg
        if not duration or duration <= 0 or export.benchmark_duration.unit not in ("sec", "s"):
            peer.refused.append(Refusal(0, "benchmark_duration", export.benchmark_duration.model_dump(),
                                        "a positive duration in seconds"))  # fmt: skip
            return peer
        usage_out, own_out = _total(export.total_usage_completion_tokens), _total(export.total_osl)
        output_tokens = usage_out if usage_out is not None else own_out
        input_tokens = _total(export.total_usage_prompt_tokens)
        input_tokens = input_tokens if input_tokens is not None else _total(export.total_isl)
        if output_tokens is None or input_tokens is None:
            peer.refused.append(Refusal(0, "total_osl", MISSING_VALUE, "token totals (server usage or AIPerf's)"))
            return peer
        # AIPerf's own count against the server's usage, where it has both; else the check is not applied.
        disagreement = abs(own_out - usage_out) / usage_out if usage_out and own_out is not None else None
        try:
            ttft = _ms(export.time_to_first_token, "time_to_first_token", completed)
            tpot = _ms(export.inter_token_latency, "inter_token_latency", completed)
            e2el = _ms(export.request_latency, "request_latency", completed)
            chunks = export.inter_chunk_latency
            itl = _ms(chunks, "inter_chunk_latency", 0) if chunks else NO_SAMPLES
        except ValueError as error:
            field, _, rest = str(error).partition(": ")
            raise RecipeError(str(file), [(field, MISSING, rest)], what=WHAT) from error
        finished = export.is_complete and not export.was_cancelled
        validity = aggregate_validity(completed, failed, concurrency, thresholds, disagreement, finished)
        own = export.output_token_throughput
        metrics = level_metrics(
            completed=completed, failed=failed, duration_s=duration, input_tokens=input_tokens,
            output_tokens=output_tokens, accelerators=accelerators, ttft=ttft, tpot=tpot, itl=itl, e2el=e2el,
            validity=validity, token_disagreement=disagreement or 0.0,
            peer_figures={"aiperf_output_token_throughput": own.avg} if own and own.avg is not None else None,
        )  # fmt: skip
        isl, osl = _nominal_lengths(config)
        when = utc(export.start_time) if export.start_time else None
        peer.levels.append(PeerLevel(index=0, label=f"c={concurrency}", concurrency=concurrency, isl=isl, osl=osl,
                                     metrics=metrics, measured_at=when))  # fmt: skip
        return peer


AIPERF = AIPerfFormat()
