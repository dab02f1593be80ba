"""Read llm-d's Benchmark Report (versions 0.2 and 0.2.1, YAML or JSON) as one load level.

llm-d-benchmark writes one report per load level, converted from the harness's native output
(`benchmark_report.cli -b 0.2`, repository llm-d/llm-d-benchmark). Its statistics carry their `units`; the
harness is `scenario.load.standardized.tool`. What we read (docs/METRICS.md):
- concurrency is `scenario.load.standardized.concurrency`; a report without one (rate-driven load, or llm-d's
  converter of AIPerf 0.13 exports, which looks for the concurrency where older exports kept it) is refused;
- TPOT in our definition (after the first token) is the report's `time_per_output_token` when the harness is
  vLLM's client or inference-perf, and its `inter_token_latency` when it is GuideLLM or AIPerf: the converter
  copies each harness's own names, and GuideLLM's and AIPerf's "inter-token latency" is our TPOT while
  GuideLLM's "time per output token" counts the first token too;
- the workload's lengths are `input_seq_len`/`output_seq_len` when fixed and whole, else --isl/--osl;
- `requests.total` counts every request and `failures` the failed ones; token totals are the mean lengths x the
  successful requests; the duration is `run.time.duration`, else successful requests / `request_rate`;
- where the report states the deployment's accelerators (`scenario.stack`, inference engines: count x
  replicas), they must be the recipe's, or the file is refused.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

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
from recipes.errors import RecipeError
from recipes.limits import MAX_INPUT_TOKENS, MAX_OUTPUT_TOKENS, MAX_REQUESTS_PER_POINT
from recipes.schema import ValidityThresholds
from recipes.yamlio import read_document
from runners.loadgen.records import Stats

WHAT = "llm-d Benchmark Report"
# Which of the report's latency names is our TPOT, by the harness that measured it (see the module docstring).
TPOT_FIELD = {"vllm-benchmark": "time_per_output_token", "inference-perf": "time_per_output_token",
              "inferencemax": "time_per_output_token", "guidellm": "inter_token_latency",
              "aiperf": "inter_token_latency"}  # fmt: skip
_ISO_SECONDS = re.compile(r"^PT(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?$")


class Statistic(PeerModel):
    units: str = Field(description="'ms', 's', 'ms/token', 's/token', 'count', 'tokens/s', 'queries/s'.")
    mean: float | None = Field(None, description="Mean.")
    stddev: float | None = Field(None, description="Standard deviation.")
    p50: float | None = Field(None, description="Median.")
    p90: float | None = Field(None, description="90th percentile.")
    p99: float | None = Field(None, description="99th percentile.")
    p99p9: float | None = Field(None, description="99.9th percentile.")


class Requests(PeerModel):
    total: int = Field(ge=0, le=MAX_REQUESTS_PER_POINT, description="Every request sent.")
    failures: int = Field(0, ge=0, le=MAX_REQUESTS_PER_POINT, description="Requests that failed.")
    input_length: Statistic = Field(description="Prompt tokens per request.")
    output_length: Statistic = Field(description="Output tokens per request.")

    @model_validator(mode="after")
    def _lengths_a_request_can_have(self) -> Requests:
        for name, bound in (("input_length", MAX_INPUT_TOKENS), ("output_length", MAX_OUTPUT_TOKENS)):
            mean = getattr(self, name).mean
            if mean is not None and not 0 <= mean <= bound:
                raise ValueError(f"{name}.mean: got {mean!r}; expected between 0 and {bound:,} tokens per request")
        return self


class Aggregate(PeerModel):
    requests: Requests = Field(description="Request counts and lengths.")
    latency: dict[str, Statistic] = Field(description="time_to_first_token, time_per_output_token, ... by name.")
    throughput: dict[str, Statistic] = Field(default_factory=dict, description="Rates by name.")


class RequestPerformance(PeerModel):
    aggregate: Aggregate = Field(description="The statistical summary.")


class Results(PeerModel):
    request_performance: RequestPerformance = Field(description="Performance as the users saw it.")


class Lengths(PeerModel):
    distribution: str | None = Field(None, description="'fixed', 'gaussian', 'other', ...")
    value: float | None = Field(None, description="The nominal length, or the measured mean.")


class LoadStandardized(PeerModel):
    tool: str = Field(description="The harness: 'guidellm', 'vllm-benchmark', 'inference-perf', 'aiperf', ...")
    tool_version: str | None = Field(None, description="Its version, when recorded.")
    concurrency: float | None = Field(None, description="Requests in flight (absent or inf for rate-driven load).")
    input_seq_len: Lengths | None = Field(None, description="Prompt length of the workload.")
    output_seq_len: Lengths | None = Field(None, description="Output length of the workload.")


class Load(PeerModel):
    standardized: LoadStandardized = Field(description="The workload in llm-d's common terms.")


class Scenario(PeerModel):
    load: Load = Field(description="The workload.")
    stack: list[dict[str, Any]] | None = Field(None, description="The deployment's components.")


class RunTime(PeerModel):
    start: datetime | None = Field(None, description="When the run started.")
    end: datetime | None = Field(None, description="When it ended.")
    duration: str | None = Field(None, description="ISO 8601 duration, e.g. 'PT49.97S'.")


class Run(PeerModel):
    time: RunTime | None = Field(None, description="The run's clock.")


class BenchmarkReport(PeerModel):
    version: Literal["0.2", "0.2.1"] = Field(description="Report schema version.")
    run: Run | None = Field(None, description="Identity and time of the run.")
    scenario: Scenario = Field(description="What was measured.")
    results: Results = Field(description="What came out.")


def _seconds(duration: str | None) -> float | None:
    found = _ISO_SECONDS.match(duration or "")
    if not found or not any(found.groups()):
        return None
    hours, minutes, seconds = (float(part) if part else 0.0 for part in found.groups())
    return hours * 3600 + minutes * 60 + seconds


def _stats(statistic: Statistic | None, name: str, n: int) -> Stats:
    if statistic is None:
        return NO_SAMPLES
    return stats_in_ms(statistic.units, f"results.request_performance.aggregate.latency.{name}.units", n,
                       mean=statistic.mean, p50=statistic.p50, p90=statistic.p90, p99=statistic.p99,
                       p999=statistic.p99p9, std=statistic.stddev)  # fmt: skip


def _stated_accelerators(stack: list[dict[str, Any]] | None) -> int | None:
    """Accelerators of the inference engines the report lists (count x replicas), or None if it lists none."""
    total, stated = 0, False
    for component in stack or []:
        standardized = component.get("standardized") or {}
        kind = standardized.get("kind") or (component.get("metadata") or {}).get("kind")
        count = (standardized.get("accelerator") or {}).get("count")
        if kind == "inference_engine" and isinstance(count, int):
            total += count * int(standardized.get("replicas") or 1)
            stated = True
    return total if stated else None


def _length(lengths: Lengths | None) -> int | None:
    """The nominal length, where the report states one: a fixed, whole length. The converters of vLLM's and AIPerf's
    files write the measured mean there (53.975, 61.25), which is not the workload's length."""
    if lengths is None or lengths.distribution != "fixed" or not lengths.value or lengths.value % 1:
        return None
    return int(lengths.value)


class LlmdReportFormat:
    name = "llm-d"
    description = "llm-d's Benchmark Report (version 0.2 or 0.2.1, YAML or JSON): one load level per file."

    def read(self, path: Path, accelerators: int, thresholds: ValidityThresholds) -> PeerFile:
        report = parse(BenchmarkReport, read_document(path, WHAT), path, WHAT)
        load = report.scenario.load.standardized
        peer = PeerFile(path=path, tool=f"llm-d Benchmark Report {report.version} of {load.tool}", model=None)
        stated = _stated_accelerators(report.scenario.stack)
        if stated is not None and stated != accelerators:
            raise RecipeError(str(path), [("scenario.stack[].standardized.accelerator.count", stated,
                                           f"the recipe's {accelerators} accelerators (the per-GPU divisor)")],
                              what=WHAT)  # fmt: skip
        concurrency = load.concurrency
        if concurrency is None or concurrency != concurrency or concurrency in (float("inf"), 0) or concurrency % 1:
            peer.refused.append(Refusal(0, "scenario.load.standardized.concurrency",
                                        "<missing>" if concurrency is None else concurrency,
                                        "a whole number of requests in flight (a fixed concurrency)"))  # fmt: skip
            return peer
        tpot_name = TPOT_FIELD.get(load.tool)
        if tpot_name is None:
            peer.refused.append(Refusal(0, "scenario.load.standardized.tool", load.tool,
                                        f"a harness whose TPOT definition is known: {sorted(TPOT_FIELD)}"))  # fmt: skip
            return peer
        aggregate = report.results.request_performance.aggregate
        requests = aggregate.requests
        completed = requests.total - requests.failures
        time = report.run.time if report.run else None
        duration = _seconds(time.duration if time else None)
        rate = aggregate.throughput.get("request_rate")
        if duration is None and rate is not None and rate.mean:
            duration = completed / rate.mean
        if not duration or duration <= 0:
            peer.refused.append(Refusal(0, "run.time.duration", time.duration if time else "<missing>",
                                        "a duration, or a request_rate to derive it"))  # fmt: skip
            return peer
        latency = aggregate.latency
        try:
            ttft = _stats(latency.get("time_to_first_token"), "time_to_first_token", completed)
            tpot = _stats(latency.get(tpot_name), tpot_name, completed)
            e2el = _stats(latency.get("request_latency"), "request_latency", completed)
            itl = (_stats(latency.get("inter_token_latency"), "inter_token_latency", 0)
                   if tpot_name != "inter_token_latency" else NO_SAMPLES)  # fmt: skip
        except ValueError as error:
            field, _, rest = str(error).partition(": ")
            raise RecipeError(str(path), [(field, None, rest)], what=WHAT) from error
        if tpot.mean is None and tpot.p50 is None:
            peer.refused.append(Refusal(0, f"results.request_performance.aggregate.latency.{tpot_name}", "<missing>",
                                        f"the {load.tool} harness's TPOT"))  # fmt: skip
            return peer
        input_mean, output_mean = requests.input_length.mean or 0.0, requests.output_length.mean or 0.0
        metrics = level_metrics(
            completed=completed, failed=requests.failures, duration_s=duration,
            input_tokens=round(input_mean * completed), output_tokens=round(output_mean * completed),
            accelerators=accelerators, ttft=ttft, tpot=tpot, itl=itl, e2el=e2el,
            validity=aggregate_validity(completed, requests.failures, int(concurrency), thresholds),
        )  # fmt: skip
        when = time.start or time.end if time else None
        peer.levels.append(PeerLevel(
            index=0, label=f"c={int(concurrency)} ({load.tool})", concurrency=int(concurrency),
            isl=_length(load.input_seq_len), osl=_length(load.output_seq_len), metrics=metrics,
            measured_at=utc(when) if when else None,
        ))  # fmt: skip
        return peer


LLMD_REPORT = LlmdReportFormat()
