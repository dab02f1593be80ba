"""Import a `vllm bench serve --save-result` JSON file as one Point with origin `imported`.

vLLM's file is an external format that grows with every release, so unknown keys are ignored (not
forbidden) and only the fields below are read; each must have the expected type.
Its figures follow vLLM's definitions: the window is the whole run (`duration`), TPOT excludes the
first token, percentiles are numpy's linear ones. p90 is present only if the run asked for it
(`--metric-percentiles 50,90,99`).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from recipes.errors import MISSING, RecipeError
from recipes.schema import ValidityThresholds
from runners.loadgen.records import MeasuredWindow, PointMetrics, Stats, Validity


class VllmBenchFile(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)  # external format: read what we need

    completed: int = Field(ge=0, description="Successful requests.")
    failed: int = Field(0, ge=0, description="Failed requests (absent in old files).")
    duration: float = Field(gt=0, description="Benchmark wall time, s.")
    total_input_tokens: int = Field(ge=0, description="Prompt tokens of successful requests.")
    total_output_tokens: int = Field(ge=0, description="Output tokens of successful requests.")
    request_throughput: float = Field(ge=0, description="Requests/s over the run.")
    output_throughput: float = Field(ge=0, description="Output tokens/s over the run.")
    total_token_throughput: float = Field(ge=0, description="Input + output tokens/s over the run.")
    request_goodput: float | None = Field(None, description="Goodput, when SLOs were given.")
    max_concurrency: int | None = Field(None, description="The run's --max-concurrency.")
    model_id: str | None = Field(None, description="Model the run targeted.")
    date: str | None = Field(None, description="When vLLM's client wrote the file.")


LATENCIES = ("ttft", "tpot", "itl", "e2el")


def _stats(raw: dict[str, object], name: str, n: int) -> Stats:
    def number(key: str) -> float | None:
        value = raw.get(key)
        return float(value) if isinstance(value, int | float) else None

    return Stats(
        n=n,
        mean=number(f"mean_{name}_ms"),
        p50=number(f"median_{name}_ms") if f"median_{name}_ms" in raw else number(f"p50_{name}_ms"),
        p90=number(f"p90_{name}_ms"),
        p99=number(f"p99_{name}_ms"),
        p999=number(f"p99.9_{name}_ms"),
        std=number(f"std_{name}_ms"),
    )


def load_vllm_bench(
    path: Path, accelerators: int, thresholds: ValidityThresholds
) -> tuple[VllmBenchFile, PointMetrics]:
    """Parse the file and express it as PointMetrics (with a validity verdict from its aggregates)."""
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise RecipeError(str(path), [("<file>", MISSING, f"expected a vllm bench serve JSON result ({error})")],
                          what="vllm bench result") from error  # fmt: skip
    if not isinstance(raw, dict):
        raise RecipeError(
            str(path), [("<root>", type(raw).__name__, "expected a JSON object")], what="vllm bench result"
        )
    try:
        parsed = VllmBenchFile.model_validate(raw)
    except ValidationError as error:
        problems = [
            (".".join(map(str, e["loc"])), e.get("input", MISSING), e["msg"]) for e in error.errors(include_url=False)
        ]
        raise RecipeError(str(path), problems, what="vllm bench result") from error
    n = parsed.completed
    tpot = _stats(raw, "tpot", n)
    interactivity = Stats(
        n=n,
        std=None,
        **{
            k: (1000 / v if v else None)
            for k, v in tpot.model_dump(include={"mean", "p50", "p90", "p99", "p999"}).items()
        },
    )
    total = parsed.completed + parsed.failed
    reasons = []
    concurrency = parsed.max_concurrency or 1
    needed = max(thresholds.min_requests_floor, int(thresholds.min_requests_per_concurrency * concurrency))
    if total < needed:
        reasons.append(f"only {total} requests; at least {needed} needed")
    if total and parsed.failed / total > thresholds.max_error_rate:
        reasons.append(f"error rate {parsed.failed / total:.1%} above {thresholds.max_error_rate:.0%}")
    metrics = PointMetrics(
        completed=parsed.completed,
        failed=parsed.failed,
        duration_s=parsed.duration,
        total_input_tokens=parsed.total_input_tokens,
        total_output_tokens=parsed.total_output_tokens,
        request_throughput=parsed.request_throughput,
        output_throughput=parsed.output_throughput,
        total_token_throughput=parsed.total_token_throughput,
        accelerators=accelerators,
        output_throughput_per_gpu=parsed.output_throughput / accelerators,
        total_token_throughput_per_gpu=parsed.total_token_throughput / accelerators,
        ttft_ms=_stats(raw, "ttft", n),
        tpot_ms=tpot,
        itl_ms=_stats(raw, "itl", n),
        e2el_ms=_stats(raw, "e2el", n),
        client_queue_ms=_stats(raw, "client_queue_time", n),
        interactivity=interactivity,
        goodput=parsed.request_goodput,
        token_disagreement=0.0,
        window=MeasuredWindow(start=0.0, end=parsed.duration, ramp_down_s=0.0, reached_target=True),
        validity=Validity(valid=not reasons, reasons=reasons),
    )
    return parsed, metrics
