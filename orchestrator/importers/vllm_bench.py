"""Import a `vllm bench serve --save-result` JSON file as one Point with origin `imported`.

vLLM's file is an external format that grows with every release, so unknown keys are ignored (not
forbidden) and only the fields below are read; each must have the expected type.
Its figures follow vLLM's definitions: the window is the whole run (`duration`), TPOT excludes the
first token, percentiles are numpy's linear ones. p90 is present only if the run asked for it
(`--metric-percentiles 50,90,99`).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import Field

from orchestrator.importers.peers import (
    PeerFile,
    PeerLevel,
    PeerModel,
    aggregate_validity,
    level_metrics,
    parse,
    utc,
)
from recipes.errors import RecipeError
from recipes.schema import ValidityThresholds
from recipes.yamlio import read_document
from runners.loadgen.records import PointMetrics, Stats

WHAT = "vllm bench serve result"


class VllmBenchFile(PeerModel):
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
    raw = read_document(path, WHAT)
    if not isinstance(raw, dict):
        raise RecipeError(str(path), [("<root>", type(raw).__name__, "expected a JSON object")], what=WHAT)
    parsed = parse(VllmBenchFile, raw, path, WHAT)
    n = parsed.completed
    validity = aggregate_validity(parsed.completed, parsed.failed, parsed.max_concurrency or 1, thresholds)
    metrics = level_metrics(
        completed=parsed.completed, failed=parsed.failed, duration_s=parsed.duration,
        input_tokens=parsed.total_input_tokens, output_tokens=parsed.total_output_tokens, accelerators=accelerators,
        ttft=_stats(raw, "ttft", n), tpot=_stats(raw, "tpot", n), itl=_stats(raw, "itl", n),
        e2el=_stats(raw, "e2el", n), validity=validity,
    )  # fmt: skip
    queue = _stats(raw, "client_queue_time", n)
    goodput = parsed.request_goodput
    return parsed, metrics.model_copy(update={"client_queue_ms": queue, "goodput": goodput})


class VllmBenchFormat:
    name = "vllm-bench"
    description = "`vllm bench serve --save-result` JSON files (one load level each; lengths from --isl/--osl)."

    def read(self, path: Path, accelerators: int, thresholds: ValidityThresholds) -> PeerFile:
        parsed, metrics = load_vllm_bench(path, accelerators, thresholds)
        when = None
        if parsed.date:
            try:
                when = utc(datetime.strptime(parsed.date, "%Y%m%d-%H%M%S"))
            except ValueError:
                when = None  # an unreadable date leaves the level undated, like a file without one
        concurrency = parsed.max_concurrency or 1
        level = PeerLevel(index=0, label=f"c={concurrency}", concurrency=concurrency, isl=None, osl=None,
                          metrics=metrics, measured_at=when)  # fmt: skip
        return PeerFile(path=path, tool="vllm bench serve", model=parsed.model_id, levels=[level])


VLLM_BENCH = VllmBenchFormat()
