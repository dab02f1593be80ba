"""Every result model a runner reports: one record per request, aggregates per Point, the engine's counters,
the host's report and the accuracy gate's verdict.

This module imports nothing else from `runners`, so the contract (`runners/job.py`) and every layer can use it.

These are plain pydantic models so they cross process boundaries (Ray) and land in SQL unchanged.
Definitions of every figure: docs/METRICS.md (and docs/ARCHITECTURE.md §4).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field
from pydantic_core import to_json

from recipes.limits import MAX_CONCURRENCY, MAX_INPUT_TOKENS, MAX_OUTPUT_TOKENS, MAX_REQUESTS_PER_POINT, MAX_SECONDS
from recipes.schema import FixedLengthWorkload, ReplaySettings, SequenceLengths, ValidityThresholds
from recipes.strict import Strict
from recipes.validity import (
    CHECKS,
    FIGURES_POSSIBLE,
    MAX_LATENCY_MS,
    MAX_TOKENS_PER_S_PER_ACCELERATOR,
    Evidence,
    StatedFigures,
    Verdict,
)

RESULT_SCHEMA_VERSION = 1

Origin = Literal["measured", "simulated", "dry-run", "imported", "projected"]


# What the engine's /metrics said over a Point (filled by runners/host/server_metrics.py).


class RawScrapes(Strict):
    """The engine's /metrics exactly as served before and after a Point: the evidence behind its counter deltas."""

    before: str | None = Field(None, description="Prometheus text scraped just before the Point.")
    after: str | None = Field(None, description="Prometheus text scraped just after it.")


class ServerCounters(Strict):
    """Deltas of the engine's counters over one Point (named by vLLM's series below; another engine's series for the
    same figure are in its table, `runners.host.server_metrics.COUNTER_SERIES[series]`; None where it has none)."""

    series: str = Field("vllm", description="The table of Prometheus series the counters were read by (the engine "
                        "adapter's `counter_series`: 'vllm', 'sglang').")  # fmt: skip

    prompt_tokens: float | None = Field(None, description="vllm:prompt_tokens_total.")
    generation_tokens: float | None = Field(None, description="vllm:generation_tokens_total.")
    prefix_cache_queries: float | None = Field(None, description="vllm:prefix_cache_queries_total (tokens).")
    prefix_cache_hits: float | None = Field(None, description="vllm:prefix_cache_hits_total (tokens).")
    prompt_tokens_local_compute: float | None = Field(None, description="prompt_tokens_by_source{local_compute}.")
    prompt_tokens_local_cache_hit: float | None = Field(None, description="prompt_tokens_by_source{local_cache_hit}.")
    prompt_tokens_external: float | None = Field(None, description="prompt_tokens_by_source{external_kv_transfer}.")
    preemptions: float | None = Field(None, description="vllm:num_preemptions_total.")
    kv_offload_bytes_to_host: float | None = Field(
        None, description="vllm:kv_offload_total_bytes{transfer_type=GPU_to_CPU}: KV bytes offloaded to host memory."
    )
    kv_offload_bytes_to_device: float | None = Field(
        None,
        description="vllm:kv_offload_total_bytes{transfer_type=CPU_to_GPU}: KV bytes loaded back from host memory.",
    )
    kv_offload_seconds_to_host: float | None = Field(
        None, description="vllm:kv_offload_total_time{transfer_type=GPU_to_CPU}: seconds spent offloading."
    )
    kv_offload_seconds_to_device: float | None = Field(
        None, description="vllm:kv_offload_total_time{transfer_type=CPU_to_GPU}: seconds spent loading back."
    )
    router_overlap_sum: float | None = Field(
        None,
        description="dynamo_component_router_kv_hit_rate_sum: Dynamo's KV router's PREDICTED prefix overlap of the "
        "workers it picked, summed over routing decisions (not a realised cache hit; docs/ARCHITECTURE.md §4).",
    )
    router_overlap_count: float | None = Field(
        None, description="dynamo_component_router_kv_hit_rate_count: routing decisions behind router_overlap_sum."
    )

    @property
    def prefix_hit_rate(self) -> float | None:
        if self.prefix_cache_queries and self.prefix_cache_hits is not None:
            return self.prefix_cache_hits / self.prefix_cache_queries
        return None

    @property
    def router_predicted_hit_rate(self) -> float | None:
        """Mean predicted overlap per routing decision of Dynamo's KV router; realised hits are the workers'."""
        if self.router_overlap_count and self.router_overlap_sum is not None:
            return self.router_overlap_sum / self.router_overlap_count
        return None


# The host side of a Point (filled by runners/host/telemetry.py).


class Preflight(Strict):
    checked_at: float = Field(description="Unix time of the checks.")
    free_disk_gb: float = Field(description="Free space where logs and artifacts are written.")
    accelerators_idle: bool | None = Field(
        description="No foreign process on the accelerators (None when the host cannot tell)."
    )
    accelerator_processes: list[str] = Field(default_factory=list, description="What was found running on them.")
    leftover_engines: int = Field(description="Engines of dead runs reaped before this job.")
    accelerator_driver: str | None = Field(None, description="Accelerator driver version (nvidia-smi), when reported.")
    engine_image: str | None = Field(
        None,
        description="Id of the container image the engine ran from (`docker image inspect`; under pyxis the image "
        "reference it imported), when in one.",
    )
    notes: list[str] = Field(default_factory=list, description="Checks that could not run here, and why.")


class TelemetrySummary(Strict):
    source: str = Field(
        description="Where figures came from: nvidia-smi, amd-smi, dcgmi, /proc/stat, or 'unavailable'."
    )
    samples: int = Field(description="Samples taken during the Point.")
    interval_s: float = Field(description="Seconds between samples.")
    power_w_mean: float | None = Field(None, description="Mean total accelerator power draw (W).")
    power_w_max: float | None = Field(None, description="Highest total accelerator power draw (W).")
    utilization_pct_mean: float | None = Field(None, description="Mean accelerator (or CPU) utilisation, %.")
    memory_used_gb_max: float | None = Field(None, description="Highest accelerator memory in use (GB).")
    unavailable: list[str] = Field(default_factory=list, description="Figures this host could not report, and why.")


class HostReport(Strict):
    """The host side of one Point's result."""

    preflight: Preflight | None = Field(None, description="Checks made before the engine started.")
    telemetry: TelemetrySummary | None = Field(None, description="Power and utilisation during the Point.")


# What the accuracy gate found (filled by runners/loadgen/accuracy.py).


class AccuracyAnswer(Strict):
    prompt: str = Field(description="The question asked.")
    expected: list[str] = Field(description="Accepted answers.")
    answer: str | None = Field(description="The reply's text (None when the request failed).")
    normalised: str | None = Field(description="The reply after normalisation, as compared.")
    correct: bool = Field(description="The normalised reply equals a normalised accepted answer.")
    error: str | None = Field(None, description="Why the request failed; None when it succeeded.")


class AccuracyResult(Strict):
    """What the accuracy gate found, stored with every Point of the job (`PointMetrics.accuracy`)."""

    ran: bool = Field(description="False when the gate was skipped (see skipped_reason).")
    skipped_reason: str | None = Field(None, description="Why the gate did not run.")
    prompts: str = Field(description="Question set name or question file.")
    prompts_version: str | None = Field(None, description="sha256 (16 hex) of the questions and answers asked.")
    correct: int = Field(0, description="Questions answered correctly.")
    total: int = Field(0, description="Questions asked.")
    accuracy: float | None = Field(None, description="correct / total; None when skipped.")
    min_accuracy: float = Field(description="Share needed to pass.")
    passed: bool | None = Field(None, description="accuracy >= min_accuracy; None when skipped.")
    errors: int = Field(0, description="Questions whose request failed (counted as wrong).")
    duration_s: float = Field(0.0, description="Wall time of the gate.")
    answers: list[AccuracyAnswer] = Field(default_factory=list, description="Every question with its reply.")

    @property
    def invalid_reason(self) -> str | None:
        """The validity reason for every Point when the gate ran and failed; None otherwise."""
        if not self.ran or self.passed:
            return None
        reason = f"accuracy gate failed: {self.correct}/{self.total} correct (min {self.min_accuracy:g})"
        if self.errors:
            first = next(answer.error for answer in self.answers if answer.error)
            reason += f"; {self.errors} requests failed (first: {first})"
        return reason


class RequestRecord(Strict):
    """Everything observed about one request. Times are seconds on the client's monotonic clock."""

    index: int = Field(description="Position of the request in the Point's request list.")
    warmup: bool = Field(description="Warmup requests are sent but never measured.")
    prompt_tokens_sent: int = Field(description="Prompt length the client sent, in tokens.")
    max_tokens: int = Field(description="Output length requested (with ignore_eos).")
    scheduled: float = Field(description="When the request was due to be sent.")
    sent: float | None = Field(None, description="When the HTTP request was sent (its last bytes written).")
    dispatched: float | None = Field(
        None,
        description="When the client began writing the request (its headers, on a connection it holds). Until "
        "`sent` the body was being written: milliseconds on loopback, longer when a busy server reads slowly.",
    )
    first_byte: float | None = Field(None, description="When the first response byte arrived.")
    chunk_times: list[float] = Field(default_factory=list, description="Arrival of each chunk carrying text.")
    chunk_tokens: list[int] = Field(
        default_factory=list, description="Tokens in each content chunk (from usage deltas, else 1)."
    )
    end: float | None = Field(None, description="When the response finished (or failed).")
    prompt_tokens: int | None = Field(None, description="Server-reported prompt tokens (usage).")
    completion_tokens: int | None = Field(None, description="Server-reported output tokens (usage).")
    cached_tokens: int | None = Field(None, description="Server-reported prompt tokens served from cache.")
    output_text: str | None = Field(None, description="Streamed text, kept only when a tokenizer will count it.")
    tokenizer_tokens: int | None = Field(None, description="Output tokens counted by re-tokenising output_text.")
    http_status: int | None = Field(None, description="HTTP status of the response.")
    error: str | None = Field(None, description="Why the request failed; None when it succeeded.")
    session: str | None = Field(
        None, description="Trace replay only: the replayed session, '<seed>-<copy>-<path>' (the X-Session-ID sent)."
    )
    turn: int | None = Field(None, description="Trace replay only: the request's index within its session.")

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def output_tokens(self) -> int:
        """Output tokens: server usage when present, else the tokenizer's count, else streamed chunks."""
        if self.completion_tokens is not None:
            return self.completion_tokens
        if self.tokenizer_tokens is not None:
            return self.tokenizer_tokens
        return sum(self.chunk_tokens)

    @property
    def client_tokens(self) -> int:
        """The client's own count, to check usage against: the tokenizer's when it ran, else chunks."""
        return self.tokenizer_tokens if self.tokenizer_tokens is not None else sum(self.chunk_tokens)

    @classmethod
    def from_stored(cls, row: Mapping[str, Any]) -> RequestRecord:
        """A record read back from its Parquet artifact (`records_frame`), where a missing number is NaN and a
        list an array: the same record the load generator measured."""
        return cls.model_validate({name: _stored_value(row.get(name)) for name in cls.model_fields if name in row})


class Stats(Strict):
    """Summary of one latency-like metric over the measured requests (numpy linear percentiles)."""

    n: int = Field(description="Number of samples.")
    mean: float | None = Field(description="Arithmetic mean.")
    p50: float | None = Field(description="Median.")
    p90: float | None = Field(description="90th percentile.")
    p99: float | None = Field(description="99th percentile.")
    p999: float | None = Field(None, description="99.9th percentile, only when n >= 1000.")
    std: float | None = Field(description="Population standard deviation.")

    @classmethod
    def reported(cls, p50: float | None, p99: float | None = None) -> Stats:
        """Percentiles another tool reported, or a model derived, without their samples: n is 0 (unknown) and the
        figures not given are None."""
        return cls(n=0, mean=None, p50=p50, p90=None, p99=p99, std=None)


class Validity(Strict):
    valid: bool = Field(description="True when every validity rule applied to the Point holds.")
    reasons: list[str] = Field(default_factory=list, description="Each rule that failed, with its figures.")
    checked: list[str] = Field(
        default_factory=list,
        description="Ids of the checks applied (recipes/validity.py); empty in results stored before checks had ids.",
    )
    not_checked: list[str] = Field(
        default_factory=list, description="Ids of the checks this origin does not apply or had no evidence for."
    )

    @classmethod
    def of(cls, verdict: Verdict) -> Validity:
        return cls(valid=verdict.valid, reasons=list(verdict.reasons), checked=list(verdict.checked),
                   not_checked=list(verdict.not_checked))  # fmt: skip

    def with_check(self, check_id: str, failure: str | None) -> Validity:
        """This verdict with one more check applied, failed with `failure` or held (None): a gate judged after
        the aggregates, such as the accuracy gate or an interrupted run."""
        reasons = [*self.reasons, failure] if failure else self.reasons
        return Validity(
            valid=not reasons, reasons=reasons, checked=sorted({*self.checked, check_id}),
            not_checked=[other for other in self.not_checked if other != check_id],
        )  # fmt: skip


class MeasuredWindow(Strict):
    start: float = Field(description="Window start (client clock, s): in-flight first reached the target.")
    end: float = Field(description="Window end: in-flight first fell below the target after the last send.")
    ramp_down_s: float = Field(description="Tail after the window until the last request ended (not counted).")
    reached_target: bool = Field(description="False when in-flight never reached the target concurrency.")

    @property
    def duration_s(self) -> float:
        return self.end - self.start


class FixedLengthPoint(Strict):
    """What to run for one Point of a fixed-length workload. A recipe's (or another tool's methodology written as
    one) is built with `of`; `infersweep bench`'s settings are one (BenchSettings extends it), and so is the load
    level an imported single file measured."""

    kind: Literal["fixed-length"] = Field("fixed-length", description="Workload kind of this Point.")
    isl: int = Field(gt=0, le=MAX_INPUT_TOKENS, description="Upper bound of the prompt length (tokens).")
    osl: int = Field(gt=0, le=MAX_OUTPUT_TOKENS, description="Upper bound of the output length (tokens).")
    range_ratio: float = Field(1.0, ge=0, le=1, description="Lengths uniform in [r*L, L] (InferenceX's meaning).")
    concurrency: int = Field(gt=0, le=MAX_CONCURRENCY, description="Max requests in flight.")
    num_prompts: int = Field(gt=0, le=MAX_REQUESTS_PER_POINT, description="Measured requests.")
    num_warmup: int = Field(
        0, ge=0, le=MAX_REQUESTS_PER_POINT, description="Warmup requests sent first at the same concurrency."
    )
    seed: int = Field(0, description="Seed of prompt contents and lengths.")
    request_timeout_s: float = Field(600.0, gt=0, le=MAX_SECONDS, description="Per-request deadline, seconds.")

    @classmethod
    def of(
        cls, workload: FixedLengthWorkload, lengths: SequenceLengths, concurrency: int, repeat: int = 0
    ) -> FixedLengthPoint:
        """The Point of `workload` at one ISL/OSL pair, concurrency and repeat (repeats draw other prompts)."""
        return cls(
            isl=lengths.isl, osl=lengths.osl, range_ratio=workload.range_ratio, concurrency=concurrency,
            num_prompts=workload.prompts_per_concurrency * concurrency,
            num_warmup=workload.warmup_per_concurrency * concurrency,
            seed=workload.seed + repeat, request_timeout_s=workload.request_timeout_s,
        )  # fmt: skip


class GoodputSlo(Strict):
    """Service-level objectives a request must meet to count towards goodput (any may be omitted)."""

    ttft_ms: float | None = Field(None, gt=0, description="Largest acceptable TTFT.")
    tpot_ms: float | None = Field(None, gt=0, description="Largest acceptable TPOT.")
    e2el_ms: float | None = Field(None, gt=0, description="Largest acceptable end-to-end latency.")


class TierGoodput(Strict):
    """How many of a Point's requests one SLO tier (recipes/slo_tiers.yaml) would have served."""

    ttft_ms: float = Field(gt=0, description="The tier's TTFT threshold each request was held to, ms.")
    interactivity: float = Field(gt=0, description="The tier's tok/s/user each request's own 1000 / TPOT was held to.")
    share: float = Field(ge=0, le=1, description="Share of the measured requests (failed ones count as missed) "
                         "that met both.")  # fmt: skip


class ReplayPoint(ReplaySettings):
    """What to run for one Point of an agentic trace replay: the recipe's replay settings (recipes/schema.py),
    at one concurrency, on one version of the trace."""

    kind: Literal["agentic-replay"] = Field("agentic-replay", description="Workload kind of this Point.")
    trace_path: str = Field(description="Trace file on the engine host.")
    trace_version: str = Field(description="sha256 of the trace file: part of the Point's identity.")
    concurrency: int = Field(gt=0, description="Live session trees (in-flight cap for timeline).")


class PlannerPrediction(Strict):
    """What the KV capacity planner predicted for the cache the engine reported (vllm:cache_config_info)."""

    model: Literal["lru", "scheduler"] = Field(
        "lru",
        description="'lru': the replay's requests, in the order they were sent, through an LRU of the cache "
        "(traces/planner.py);"
        " 'scheduler': a vLLM-style scheduler that pins running requests' blocks, queues and preempts, at the "
        "speed the Point measured (traces/scheduler_sim.py).",
    )
    block_size: int = Field(description="Engine block size in tokens.")
    hbm_blocks: int = Field(description="Blocks of the engine's accelerator-memory KV cache.")
    dram_blocks: int = Field(description="Blocks of its DRAM offload tier (0: none).")
    requests_per_lane: int = Field(description="Requests per session lane the prediction replayed.")
    hbm_hit_rate: float = Field(description="Predicted share of prompt tokens hit in HBM.")
    dram_hit_rate: float = Field(description="Predicted share of prompt tokens loaded from DRAM.")
    hit_rate: float = Field(description="Both tiers together.")
    preemptions: int | None = Field(None, description="Scheduler model only: requests it preempted.")


class ReplayBucket(Strict):
    """The measured requests of one turn range or context-length range of a replay Point."""

    label: str = Field(description="The range as a reader reads it: 'turn 4-7', '8k-16k tokens'.")
    low: int = Field(description="Smallest turn index or prompt length in the range.")
    high: int = Field(description="Largest turn index or prompt length in the range (inclusive).")
    requests: int = Field(description="Measured requests that succeeded in the range.")
    ttft_p50_ms: float | None = Field(description="Their median TTFT.")
    prompt_tokens_p50: float = Field(description="Their median prompt length (tokens sent).")
    realized_hit_rate: float | None = Field(
        description="Σ cached_tokens / Σ prompt tokens over those whose usage reports cached tokens."
    )
    theoretical_hit_rate: float | None = Field(
        description="The trace's hit rate for the same requests (their hits in the replayed walk)."
    )


class ReplayStats(Strict):
    requests_measured: int = Field(description="Requests sent inside the measured window.")
    client_processes: int | None = Field(
        None, ge=1,
        description="Client processes the live sessions were split among, as resolved for this Point: the recipe's "
        "`processes`, else one per 256 live sessions up to the cores the client may use (not part of the Point's "
        "identity: ReplaySettings.not_in_identity). None in results stored before it was recorded.",
    )  # fmt: skip
    sessions_completed: int = Field(description="Session trees that started and ended inside the window.")
    session_time_s: Stats = Field(description="Wall time of completed session trees.")
    schedule_lag_ms: Stats = Field(description="How late requests were sent against their schedule.")
    dispatch_lag_ms: Stats | None = Field(
        None,
        description="How late the client began writing requests against their schedule: the schedule lag "
        "without the time the server took to read the bodies. Where the two differ, the server set the pace.",
    )
    client_cpu_share: float | None = Field(
        None,
        description="CPU time of the client's process (all its threads) from the window's opening to the replay's "
        "end, over that wall time; the busiest process's where the lanes were split among several (`processes`): near "
        "1, one core was saturated and the client, not the engine, may have set the pace (validity check "
        "'client-saturated').",
    )
    prompt_tokens: int = Field(description="Prompt tokens of measured requests (server usage).")
    cached_tokens: int = Field(description="Of those, served from the prefix cache (usage cached_tokens).")
    realized_hit_rate: float | None = Field(description="cached / prompt tokens; None without usage details.")
    theoretical_hit_rate: float | None = Field(
        None, description="The trace's own prefix reuse at the engine's block size (runners/traces/hit_rate.py)."
    )
    agentx_theoretical_hit_rate: float | None = Field(
        None,
        description="The AgentX harness's 'Theoretical Prefix Cache Hit' for the requests this Point measured: their "
        "blocks before the first unseen one over their blocks, at the trace's block size (HitRate.block_rate). None "
        "in results stored before it was recorded.",
    )
    e2e_interactivity_p90: float | None = Field(
        description="Output tokens per second of E2E latency at the slow tail: 1 / P90(E2EL / OSL)."
    )
    planner: PlannerPrediction | None = Field(
        None, description="The KV capacity planner's prediction for this engine's cache (runners/traces/planner.py)."
    )
    trace_version: str | None = Field(
        None,
        description="sha256 of the trace replayed. Points of different versions are never one curve: a trace "
        "revision alone moved InferenceX's theoretical hit rate from 96.8 % to 85.8 % (their issue 1632).",
    )
    per_turn: list[ReplayBucket] | None = Field(
        None, description="The measured requests by turn in their session (runners/loadgen/breakdown.py)."
    )
    per_context: list[ReplayBucket] | None = Field(
        None, description="The measured requests by prompt length (runners/loadgen/breakdown.py)."
    )
    prompt_salt: str | None = Field(
        None,
        description="How this Point's prompts were kept from hitting what an earlier Point left in the engine's "
        "cache: the salt its copies' prompts were made with, '<seed>-c<concurrency>' (runners/traces/synthesis.py "
        "copy_salt). None: not recorded (results stored before it was), which is not known to be salted.",
    )


LATENCY_PERCENTILES = ("p50", "p90", "p99", "p999")  # in order: each at most the next


class PointMetrics(Strict):
    """Aggregates of one Point: what the hub plots and the database stores."""

    def stated_figures(self) -> StatedFigures:
        """The figures the "figures-possible" rule reads (recipes/validity.py)."""
        return StatedFigures(
            completed=self.completed, failed=self.failed,
            throughputs=(("output_throughput_per_gpu", self.output_throughput_per_gpu),
                         ("total_token_throughput_per_gpu", self.total_token_throughput_per_gpu)),
            latencies=tuple((name, tuple((part, getattr(getattr(self, name), part)) for part in LATENCY_PERCENTILES))
                            for name in ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms")),
        )  # fmt: skip

    def with_figures_judged(self) -> PointMetrics:
        """These metrics with the "figures-possible" rule applied (by the registry), for every origin where results
        are stored; applied once (a second call changes nothing)."""
        if FIGURES_POSSIBLE in self.validity.checked:
            return self
        failures = CHECKS[FIGURES_POSSIBLE].judge(Evidence(stated=self.stated_figures()), ValidityThresholds())
        validity = self.validity.with_check(FIGURES_POSSIBLE, "; ".join(failures) or None)
        return self.model_copy(update={"validity": validity})

    def out_of_range(self) -> list[tuple[str, object, str]]:
        """(field, value, what was expected) for each figure no Point can have (recipes/validity.py's
        "figures-in-range" rule): a number that is not finite anywhere in the metrics, a negative rate or latency,
        a throughput per accelerator beyond any chip. A non-finite value poisons the store: SQLite keeps NaN in a
        JSON column that no reader can then parse."""
        problems: list[tuple[str, object, str]] = []

        def walk(value: object, path: str) -> None:
            if isinstance(value, dict):
                for key, item in value.items():
                    walk(item, f"{path}.{key}" if path else str(key))
            elif isinstance(value, list | tuple):
                for index, item in enumerate(value):
                    walk(item, f"{path}[{index}]")
            elif isinstance(value, float) and not math.isfinite(value):
                problems.append((path, value, "a finite number"))

        dumped = self.model_dump()
        # Every number finite, checked in pydantic's Rust encoder (an import checks hundreds of thousands; 5 µs where
        # the json module took 21), which writes a non-finite float as a bare NaN or Infinity; where either word is
        # in the text (a string may hold it too), the walk finds which figure, if any, is not finite.
        text = to_json(dumped, inf_nan_mode="constants")
        if b"NaN" in text or b"Infinity" in text:
            walk(dumped, "")
        for name in ("duration_s", "request_throughput", "output_throughput", "total_token_throughput"):
            value = getattr(self, name)
            if math.isfinite(value) and value < 0:
                problems.append((name, value, "a number ≥ 0"))
        for name in ("output_throughput_per_gpu", "total_token_throughput_per_gpu"):
            value = getattr(self, name)
            if math.isfinite(value) and not 0 <= value <= MAX_TOKENS_PER_S_PER_ACCELERATOR:
                problems.append((name, value, f"between 0 and {MAX_TOKENS_PER_S_PER_ACCELERATOR:g} tokens/s per "
                                              "accelerator (no chip comes near)"))  # fmt: skip
        for name in ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"):
            for part in ("mean", "p50", "p90", "p99", "p999"):
                value = getattr(getattr(self, name), part)
                if value is not None and math.isfinite(value) and not 0 <= value <= MAX_LATENCY_MS:
                    problems.append((f"{name}.{part}", value, f"between 0 and {MAX_LATENCY_MS:g} ms (a day)"))
        return problems

    schema_version: int = Field(RESULT_SCHEMA_VERSION, description="Version of this result schema.")
    completed: int = Field(description="Measured requests that succeeded.")
    failed: int = Field(description="Measured requests that failed.")
    duration_s: float = Field(description="Length of the measured window.")
    total_input_tokens: int = Field(description="Prompt tokens of successful measured requests.")
    total_output_tokens: int = Field(description="Output tokens of successful measured requests.")
    request_throughput: float = Field(description="Requests finished per second in the window.")
    output_throughput: float = Field(description="Output tokens per second in the window.")
    total_token_throughput: float = Field(description="Input + output tokens per second in the window.")
    accelerators: int = Field(description="Accelerators the engine uses (per-GPU divisor).")
    output_throughput_per_gpu: float = Field(description="output_throughput / accelerators.")
    total_token_throughput_per_gpu: float = Field(description="total_token_throughput / accelerators.")
    ttft_ms: Stats = Field(description="Time to first content token.")
    tpot_ms: Stats = Field(description="Time per output token after the first, per request.")
    itl_ms: Stats = Field(description="Inter-token latency, multi-token chunks split evenly.")
    e2el_ms: Stats = Field(description="End-to-end latency.")
    client_queue_ms: Stats = Field(description="Sent minus scheduled: time waiting in the client.")
    interactivity: Stats = Field(
        description="Tokens/s/user = 1000 / TPOT at the same percentile (p90 is the slow tail); no std."
    )
    goodput: float | None = Field(
        None, description="Requests per second in the window that met every SLO (None when no SLO was given)."
    )
    slo_goodput: dict[str, TierGoodput] | None = Field(
        None, description="Per SLO tier (recipes/slo_tiers.yaml, by name): the share of requests that met it."
    )
    token_disagreement: float = Field(description="Relative gap of server vs client output-token counts.")
    window: MeasuredWindow = Field(description="The measured window.")
    validity: Validity = Field(description="Validity verdict with reasons.")
    replay: ReplayStats | None = Field(None, description="Agentic replay figures (replay Points only).")
    peer_figures: dict[str, float] | None = Field(
        None,
        description="An imported result's figures in its own tool's definitions, as published (e.g. InferenceX's "
        "output tokens/s per decode GPU of a disaggregated row); the fields above are in ours.",
    )
    server: ServerCounters | None = Field(
        None, description="Deltas of the engine's own counters over the Point (None when /metrics was unreadable)."
    )
    host: HostReport | None = Field(
        None, description="Pre-flight checks and power/utilisation during the Point (None for imported results)."
    )
    accuracy: AccuracyResult | None = Field(
        None,
        description="The job's accuracy gate, run once before its first Point (None when no gate was run, "
        "e.g. imported results); a gate that ran and failed makes the Point invalid.",
    )


def _stored_value(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return value.tolist()
    return value


def records_frame(records: list[RequestRecord]):  # -> pandas.DataFrame (pandas is imported lazily)
    """Request records as a column-per-field DataFrame, built column-wise from the models' field values.

    Reading the fields directly is several times faster than `model_dump()` per record, which matters at
    a million records (benchmarks/analysis_scale.py).
    """
    import pandas as pd

    names = list(RequestRecord.model_fields)
    return pd.DataFrame({name: [record.__dict__[name] for record in records] for name in names}, columns=names)
