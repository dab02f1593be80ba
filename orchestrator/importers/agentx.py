"""Read SemiAnalysis' AgentX harness output (`agentx profile`, agentx-harness 1.0.12) as one agentic-replay Point.

The harness is a fork of AIPerf and writes AIPerf's profile export (`profile_export_aiperf.json`, schema 1.4), so its
figures are read as `aiperf.py` reads them (the same definitions, docs/METRICS.md). What makes it a replay is read
from the export's `input_config`, as our replay's settings (`ReplaySettings`):

- the profiling phase: `concurrency` (live trajectory lanes), `duration` (the measured window, s),
  `warmup_requests_per_lane` (its accelerated warm-up), `system_idle_gap_cap_seconds` (our `idle_cap_s`), a
  trajectory start ratio above 0 (lanes start part-way through their session: our `warmup`), `burst_phase_starts`
  (every lane's first request at once: our `phase_start`);
- the dataset: `trace_idle_gap_cap_seconds` (our per-tree `think_cap_s`), `random_seed`, and the trace file it
  replayed, whose SHA-256 is the Point's trace version: under the dataset path's name inside the harness's output
  directory (a copied run carries its trace with it), else at the path as written; one file, or a folder of one;
- the endpoint's type (`chat` or `completions`: our `api`).

The harness's own labels are kept beside the figures (`peer_figures`): its theoretical prefix-cache hit (%, its
definition: docs/METRICS.md) and whether its scenario's invariants held (`agentx_submission_valid` 0 when the run was
made with `--unsafe-override`, which the harness itself marks not a valid submission). The replay's basis
(`metrics.replay`) holds the trace version, the measured requests and the server's prompt tokens; the harness reports
no session count, schedule lag or cached tokens without the server's usage details, so those are empty (0 sessions, no
samples), never guessed. The Point's `agentx_theoretical_hit_rate` (the harness's definition) is computed by us over
the very requests it measured where its per-request records (`profile_export.jsonl`) are beside the export, else it is
the harness's figure; our token-weighted one is left unset, not computed for its walk.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import Field, ValidationError

from orchestrator.importers.aiperf import AIPERF, EXPORT_NAME, AIPerfMetric
from orchestrator.importers.peers import (
    NO_SAMPLES,
    PeerFile,
    PeerLevel,
    PeerModel,
    Refusal,
    parse,
    validation_problems,
)
from recipes.agentx import (
    AGENTX_CHAT_TEXT,
    AGENTX_JOIN,
    AGENTX_PHASE_START,
    AGENTX_SYSTEM_IDLE_CAP_S,
    AGENTX_TREE_IDLE_CAP_S,
)
from recipes.errors import RecipeError
from recipes.schema import ValidityThresholds
from recipes.yamlio import read_document, read_json_lines
from runners.loadgen.records import ReplayPoint, ReplayStats
from runners.traces.formats import load_trace
from runners.traces.hit_rate import theoretical_hit_rate

WHAT = "AgentX harness export"
RECORDS_NAME, RECORDS_WHAT = "profile_export.jsonl", "AgentX harness per-request records"
PROFILING, DATASET = "input_config.phases[profiling]", "input_config.datasets[0]"
# Our replay setting -> the harness's field it is read from (a refusal names the field of the file).
HARNESS_FIELDS = {
    "duration_s": f"{PROFILING}.duration", "concurrency": f"{PROFILING}.concurrency",
    "warmup_requests_per_lane": f"{PROFILING}.warmup_requests_per_lane",
    "idle_cap_s": f"{PROFILING}.system_idle_gap_cap_seconds", "think_cap_s": f"{DATASET}.trace_idle_gap_cap_seconds",
    "seed": f"{DATASET}.random_seed",
}  # fmt: skip


class AgentXPhase(PeerModel):
    kind: str | None = Field(None, description="'profiling' for the measured phase.")
    timing_mode: str | None = Field(None, description="'agentic_replay' for a trace replay.")
    duration: float | None = Field(None, gt=0, description="The measured window, s.")
    warmup_requests_per_lane: int = Field(0, ge=0, le=1000, description="Accelerated warm-up turns per lane.")
    system_idle_gap_cap_seconds: float = Field(AGENTX_SYSTEM_IDLE_CAP_S, gt=0, description="Whole-system idle cap.")
    trajectory_start_max_ratio: float = Field(0.0, ge=0, le=1, description="Latest start position of a lane.")
    burst_phase_starts: bool = Field(False, description="Every lane's first request at once (else: less the minimum).")


class AgentXDataset(PeerModel):
    path: str = Field("", description="The trace file or folder, on the machine that ran the harness.")
    trace_idle_gap_cap_seconds: float = Field(AGENTX_TREE_IDLE_CAP_S, gt=0, description="Per-tree idle cap.")
    random_seed: int = Field(0, description="Seed of start positions.")


class AgentXEndpoint(PeerModel):
    type: str | None = Field(None, description="'chat' or 'completions'.")


class AgentXConfig(PeerModel):
    phases: list[AgentXPhase] = Field(default_factory=list, description="The run's phases.")
    datasets: list[AgentXDataset] = Field(default_factory=list, description="Its datasets (the trace first).")
    endpoint: AgentXEndpoint = Field(default_factory=AgentXEndpoint, description="The server endpoint.")
    scenario: str | None = Field(None, description="The harness's scenario ('agentx').")
    unsafe_override: bool = Field(False, description="The scenario's invariants were turned into warnings.")


class AgentXExport(PeerModel):
    input_config: AgentXConfig = Field(default_factory=AgentXConfig, description="The run's configuration.")
    theoretical_prefix_cache_hit: AIPerfMetric | None = Field(None, description="The harness's theoretical hit, %.")
    total_usage_prompt_tokens: AIPerfMetric | None = Field(None, description="Prompt tokens, server usage.")


class AgentXRecordMetadata(PeerModel):
    conversation_id: str = Field(description="The request's conversation: the trace's id, or `<id>::sa:<subagent>`.")
    turn_index: int = Field(ge=0, description="The request's turn in its conversation.")
    benchmark_phase: str = Field(description="'profiling' for a measured request, 'warmup' before the window.")


class AgentXRecord(PeerModel):
    metadata: AgentXRecordMetadata = Field(description="Which request it was.")
    error: dict[str, object] | None = Field(None, description="Why the request failed (absent when it succeeded).")


def hit_over_records(records: Path, trace_file: Path) -> float:
    """The theoretical hit (the harness's definition, `HitRate.block_rate`) as we compute it, over the requests the
    harness measured and that succeeded, as its per-request records (`profile_export.jsonl`) name them: the
    harness counts exactly these (`aiperf/metrics/theoretical_prefix_cache.py`)."""
    trace = load_trace(trace_file)
    sessions = {session.id: session.path for root in trace.sessions for session in root.walk()}
    walk = theoretical_hit_rate(trace)
    position = {key: index for index, key in enumerate(walk.keys)}
    measured = []
    for line, raw in enumerate(read_json_lines(records, RECORDS_WHAT), start=1):
        record = parse(AgentXRecord, raw, records, RECORDS_WHAT, prefix=f"line {line}: ")
        request = record.metadata
        if request.benchmark_phase != "profiling" or record.error is not None:
            continue
        key = f"{sessions.get(request.conversation_id.rpartition('::sa:')[2])}:{request.turn_index}"
        if key not in position:
            raise RecipeError(str(records), [(f"line {line}: metadata", f"{request.conversation_id} turn "
                                              f"{request.turn_index}", f"a request of the trace it replayed "
                                              f"({trace_file.name}); without {RECORDS_NAME} beside the export, the "
                                              "harness's own theoretical hit is stored")], RECORDS_WHAT)  # fmt: skip
        measured.append(position[key])
    rate = walk.block_rate(measured)
    if rate is None:
        raise RecipeError(str(records), [("<document>", len(measured), "measured requests with blocks")], RECORDS_WHAT)
    return rate


def _trace_file(dataset: AgentXDataset, export: Path) -> Path | None:
    """The trace the harness replayed: under its name beside the export (a copied run carries it), else at its path as
    written; a file, or a folder of one file."""
    written = Path(dataset.path)
    for candidate in (export.parent / written.name, written) if dataset.path else ():
        if candidate.is_file():
            return candidate
        files = sorted(path for path in candidate.glob("*.json*") if path.is_file()) if candidate.is_dir() else []
        if len(files) == 1:
            return files[0]
    return None


def _refused(peer: PeerFile, refusal: Refusal) -> PeerFile:
    """The file with its one level refused."""
    peer.levels.clear()
    peer.refused.append(refusal)
    return peer


class AgentXFormat:
    name = "agentx"
    description = (
        "The AgentX harness's output (`agentx profile --output-artifact-dir DIR`: the folder, holding the trace it "
        "replayed, or its profile_export_aiperf.json)."
    )

    def read(self, path: Path, accelerators: int, thresholds: ValidityThresholds) -> PeerFile:
        peer = AIPERF.read(path, accelerators, thresholds)
        peer.tool = peer.tool.replace("AIPerf", "AgentX harness (agentx-harness)")
        if not peer.levels:
            return peer
        export = path / EXPORT_NAME if path.is_dir() else path
        harness = parse(AgentXExport, read_document(export, WHAT), export, WHAT)
        config = harness.input_config
        phase = next((phase for phase in config.phases if phase.kind == "profiling"), AgentXPhase())
        dataset = next(iter(config.datasets), AgentXDataset())
        if phase.timing_mode != "agentic_replay":
            return _refused(
                peer,
                Refusal(
                    0,
                    f"{PROFILING}.timing_mode",
                    phase.timing_mode,
                    "'agentic_replay' (a trace replay); for other runs use `import aiperf`",
                ),
            )
        trace = _trace_file(dataset, export)
        if trace is None:
            return _refused(
                peer,
                Refusal(
                    0,
                    f"{DATASET}.path",
                    dataset.path,
                    "the trace file the harness replayed, under its name beside the export or "
                    "at that path (its SHA-256 is the Point's trace version)",
                ),
            )
        [level] = peer.levels
        chat = config.endpoint.type == "chat"
        try:
            replay = ReplayPoint(
                trace_path=trace.name, trace_version=hashlib.sha256(trace.read_bytes()).hexdigest(),
                concurrency=level.concurrency, duration_s=phase.duration or level.metrics.duration_s,
                warmup=phase.trajectory_start_max_ratio > 0, warmup_requests_per_lane=phase.warmup_requests_per_lane,
                api="chat" if chat else "completions", chat_text=AGENTX_CHAT_TEXT if chat else "words",
                think_cap_s=dataset.trace_idle_gap_cap_seconds, idle_cap_s=phase.system_idle_gap_cap_seconds,
                seed=dataset.random_seed, join=AGENTX_JOIN,  # the harness's own rules (recipes/agentx.py)
                phase_start="at-once" if phase.burst_phase_starts else AGENTX_PHASE_START,
            )  # fmt: skip
        except ValidationError as error:  # a window or cap beyond what any replay Point can have
            for field, value, expected in validation_problems(error):
                peer.refused.append(Refusal(0, HARNESS_FIELDS.get(field, field), value, expected))
            peer.levels.clear()
            return peer
        labels = dict(level.metrics.peer_figures or {})
        harness_hit = harness.theoretical_prefix_cache_hit.avg if harness.theoretical_prefix_cache_hit else None
        if harness_hit is not None:
            labels["agentx_theoretical_prefix_cache_hit_pct"] = harness_hit
        labels["agentx_submission_valid"] = 0.0 if config.unsafe_override else 1.0
        usage = harness.total_usage_prompt_tokens
        stats = ReplayStats(
            requests_measured=level.metrics.completed + level.metrics.failed, trace_version=replay.trace_version,
            sessions_completed=0, session_time_s=NO_SAMPLES, schedule_lag_ms=NO_SAMPLES,  # the harness reports none
            prompt_tokens=round(usage.avg) if usage and usage.avg else level.metrics.total_input_tokens,
            cached_tokens=0, realized_hit_rate=None, e2e_interactivity_p90=None,
            # The field our replays fill (HitRate.block_rate): ours over the requests the harness measured where its
            # per-request records are beside the export, else its own figure by the same definition.
            agentx_theoretical_hit_rate=(hit_over_records(export.parent / RECORDS_NAME, trace)
                                         if (export.parent / RECORDS_NAME).is_file()
                                         else None if harness_hit is None else harness_hit / 100),
        )  # fmt: skip
        metrics = level.metrics.model_copy(update={"peer_figures": labels, "replay": stats})
        peer.levels[0] = PeerLevel(index=level.index, label=f"c={level.concurrency}, {config.scenario}",
                                   concurrency=level.concurrency, isl=None, osl=None, metrics=metrics,
                                   measured_at=level.measured_at, replay=replay)  # fmt: skip
        return peer


AGENTX = AgentXFormat()
