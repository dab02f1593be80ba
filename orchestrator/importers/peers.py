"""What every peer tool's native result file becomes once read: load levels in our definitions, and refusals.

A peer file (`vllm bench serve --save-result`, AIPerf's profile export, GuideLLM's benchmark report, llm-d's
Benchmark Report) holds one or more load levels. Each reader (`vllm_bench.py`, `aiperf.py`, `guidellm.py`,
`llmd_report.py`) states in its docstring which of the tool's figures it reads as which of ours
(docs/METRICS.md), and returns a `PeerFile`: the levels it could read, each with its PointMetrics, and the
levels it refused, each alone with the field, value and what was expected. `peer_formats.py` names them.

Shared rules, so the four readers agree:
- output tokens are the server's usage counts where the file has them (ours too); where the tool also counted
  them itself, the gap is `token_disagreement` and above the recipe's threshold the level is invalid;
- throughput is recomputed from the file's totals over its measured duration, and the tool's own figure is kept
  in `peer_figures` when it is defined differently;
- interactivity is 1000 / TPOT at the same percentile, where TPOT is time per output token after the first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from recipes.errors import RecipeError, problem_of
from recipes.limits import MAX_TEXT_CHARS
from recipes.schema import ValidityThresholds
from recipes.validity import Evidence, judge
from runners.loadgen.records import MeasuredWindow, PointMetrics, ReplayPoint, Stats, Validity

Model = TypeVar("Model", bound=BaseModel)


class PeerModel(BaseModel):
    """A piece of another tool's file format: it grows with each release, so we read the fields we use and ignore
    the rest (our own formats forbid unknown fields)."""

    # NaN or infinity, or a text longer than any real one: refused, named.
    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False, str_max_length=MAX_TEXT_CHARS)


@dataclass(frozen=True)
class Refusal:
    """A load level (or a whole file, index None) that could not be read, and why."""

    index: int | None
    field: str
    value: object
    expected: str

    def __str__(self) -> str:
        where = f"level {self.index}: " if self.index is not None else ""
        return f"{where}field '{self.field}': got {self.value!r}; {self.expected}"


@dataclass(frozen=True)
class PeerLevel:
    """One load level a peer tool measured, with its figures in our definitions."""

    index: int
    label: str
    concurrency: int
    isl: int | None  # the nominal lengths the file states (None: the file does not say)
    osl: int | None
    metrics: PointMetrics
    measured_at: datetime | None
    replay: ReplayPoint | None = None  # a trace replay's Point (its settings and trace); None: fixed lengths


@dataclass
class PeerFile:
    path: Path
    tool: str  # the tool and its version as the file names them, e.g. "AIPerf 0.13.0"
    model: str | None
    levels: list[PeerLevel] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)


class PeerFormat(Protocol):
    """A reader of one tool's native result file."""

    name: str  # the CLI's `infersweep import <name>`
    description: str

    def read(self, path: Path, accelerators: int, thresholds: ValidityThresholds) -> PeerFile: ...


def parse(model: type[Model], raw: Any, path: Path, what: str, prefix: str = "") -> Model:
    """`raw` as `model`, or a RecipeError naming each bad field of `path`."""
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        raise RecipeError(str(path), validation_problems(error, prefix), what=what) from error


def validation_problems(error: ValidationError, prefix: str = "") -> list[tuple[str, object, str]]:
    return [problem_of(e, prefix + ".".join(map(str, e["loc"]))) for e in error.errors(include_url=False)]


def interactivity_of(tpot_ms: Stats) -> Stats:
    """Tokens/s/user at each percentile of TPOT (no std: it is not a spread of tokens/s)."""
    figures = tpot_ms.model_dump(include={"mean", "p50", "p90", "p99", "p999"})
    return Stats(n=tpot_ms.n, std=None, **{name: (1000 / value if value else None) for name, value in figures.items()})


def aggregate_validity(
    completed: int, failed: int, concurrency: int, thresholds: ValidityThresholds,
    token_disagreement: float | None = None, finished: bool | None = None,
) -> Validity:  # fmt: skip
    """The verdict a file's aggregates allow (recipes/validity.py's checks for a peer file): enough requests, few
    errors, and where the file says so, token counts that agree and a run that finished. What the file cannot
    say is listed as not checked."""
    evidence = Evidence(
        measured_requests=completed + failed, failed_requests=failed, load=concurrency,
        token_disagreement=token_disagreement, finished=finished,
    )  # fmt: skip
    return Validity.of(judge("peer-file", evidence, thresholds))


def level_metrics(
    *, completed: int, failed: int, duration_s: float, input_tokens: int, output_tokens: int, accelerators: int,
    ttft: Stats, tpot: Stats, itl: Stats, e2el: Stats, validity: Validity, token_disagreement: float = 0.0,
    peer_figures: dict[str, float] | None = None,
) -> PointMetrics:  # fmt: skip
    """PointMetrics from a level's totals: every rate is a total over the measured duration."""
    request_throughput = completed / duration_s
    output_throughput = output_tokens / duration_s
    total_throughput = (input_tokens + output_tokens) / duration_s
    return PointMetrics(
        completed=completed, failed=failed, duration_s=duration_s, total_input_tokens=input_tokens,
        total_output_tokens=output_tokens, request_throughput=request_throughput, output_throughput=output_throughput,
        total_token_throughput=total_throughput, accelerators=accelerators,
        output_throughput_per_gpu=output_throughput / accelerators,
        total_token_throughput_per_gpu=total_throughput / accelerators,
        ttft_ms=ttft, tpot_ms=tpot, itl_ms=itl, e2el_ms=e2el, client_queue_ms=NO_SAMPLES,
        interactivity=interactivity_of(tpot), token_disagreement=token_disagreement,
        window=MeasuredWindow(start=0.0, end=duration_s, ramp_down_s=0.0, reached_target=True),
        validity=validity, peer_figures=peer_figures or None,
    )  # fmt: skip


NO_SAMPLES = Stats(n=0, mean=None, p50=None, p90=None, p99=None, std=None)

# Seconds-or-milliseconds units as the tools spell them, as a factor to milliseconds.
TO_MS = {"ms": 1.0, "s": 1000.0, "sec": 1000.0, "seconds": 1000.0, "us": 1e-3, "ns": 1e-6,
         "ms/token": 1.0, "s/token": 1000.0}  # fmt: skip


def stats_in_ms(
    unit: str, where: str, n: int, *, mean: float | None, p50: float | None, p90: float | None, p99: float | None,
    std: float | None, p999: float | None = None,
) -> Stats:  # fmt: skip
    """A tool's latency summary in milliseconds; an unknown unit is a ValueError naming `where` (the unit's field).
    p99.9 is kept only from 1,000 samples on, as ours."""
    factor = TO_MS.get(unit)
    if factor is None:
        raise ValueError(f"{where}: got {unit!r}; expected one of {sorted(TO_MS)}")

    def scaled(value: float | None) -> float | None:
        return None if value is None else value * factor

    return Stats(n=n, mean=scaled(mean), p50=scaled(p50), p90=scaled(p90), p99=scaled(p99),
                 p999=scaled(p999) if n >= 1000 else None, std=scaled(std))  # fmt: skip


def utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
