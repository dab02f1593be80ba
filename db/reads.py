"""The read views: stored results (every figure the CLI, the analyses and the hub show), sweeps, their jobs
and lifecycle transitions. Nothing here writes.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import json
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, NamedTuple

from sqlalchemy import Connection, Text, cast, func, not_, or_, true
from sqlalchemy import select as core_select
from sqlalchemy.dialects.postgresql import JSONB
from sqlmodel import Session, col, select

from db.models import (
    ArtifactRow,
    EngineRow,
    JobRow,
    PointResultRow,
    PointVerificationRow,
    ProvenanceRow,
    RecipeRow,
    SnapshotPublicationRow,
    SweepRow,
    TransitionRow,
    table_of,
    utcnow,
)
from recipes.model_registry import load_model_registry
from recipes.schema import agentx_differences
from recipes.validity import state_of


def jobs_of_sweep(session: Session, sweep_id: int) -> list[JobRow]:
    return list(session.exec(select(JobRow).where(JobRow.sweep_id == sweep_id).order_by(col(JobRow.created_at))).all())


@dataclass(frozen=True)
class ResultView:
    """One Point result with the names a reader needs (sweep, recipe, hardware)."""

    sweep: str
    recipe: str
    fingerprint: str
    hardware: str
    engine: str
    origin: str
    isl: int | None
    osl: int | None
    concurrency: int
    repeat_index: int
    valid: bool
    validity_reasons: list[str]
    completed: int
    failed: int
    output_throughput: float
    output_throughput_per_gpu: float
    total_token_throughput_per_gpu: float
    ttft_p50_ms: float | None
    tpot_p50_ms: float | None
    interactivity_p50: float | None
    e2el_p50_ms: float | None
    finished_at: datetime
    point_key: str = ""
    interactivity_p90: float | None = None
    total_token_throughput: float = 0.0
    request_throughput: float = 0.0
    duration_s: float = 0.0
    source: str | None = None
    workload_kind: str = "fixed-length"
    realized_hit_rate: float | None = None
    theoretical_hit_rate: float | None = None
    agentx_theoretical_hit_rate: float | None = None  # the AgentX harness's definition (blocks), beside ours (tokens)
    job_id: str = ""
    accelerators: int = 1
    ttft_p99_ms: float | None = None
    tpot_p90_ms: float | None = None
    ttft_p90_ms: float | None = None
    model: str = ""
    precision: str = ""
    parallelism: str = ""
    kv_offload: str = "none"
    prefix_caching: bool | None = None
    power_w_per_gpu: float | None = None  # mean accelerator power over the Point, where the host could sample it
    engine_image: str | None = None  # the container image the recipe (or the imported row) names, if any
    # Speculative decoding ('mtp', 'eagle', ...), None when off: a point with it is another configuration (its
    # steps emit more than one token per user), never a median with the points without it.
    speculative_decoding: str | None = None
    # Prefill and decode workers on separate GPUs (our recipes' `parallelism.disaggregated`, an imported row's
    # `disagg`, a projection of such a deployment): the fact, where `parallelism` is only its label.
    disaggregated: bool = False
    # A disaggregated deployment's split, where its snapshot states it (imported InferenceX rows): GPUs of all
    # prefill workers, GPUs of all decode workers, decode workers, and whether decode attention is data-parallel.
    prefill_gpus: int | None = None
    decode_gpus: int | None = None
    decode_workers: int | None = None
    decode_dp_attention: bool | None = None
    date_known: bool = True  # False: the source stated no date, finished_at is the import's ('date unknown')
    # A projected point's band edge: 'central', or the 'low'/'high' end of the target's figure ranges; None for
    # results that are not projections. The edges of one configuration are its band, never three configurations.
    projection_edge: str | None = None
    projection_source: str | None = None  # the chip a projected point was projected from

    @property
    def workload(self) -> str:
        """'8k/1k' for fixed-length ISL/OSL, 'agentic' for trace replay, '1k/1k · mtp' with speculative decoding (the
        label the hub and CLI filter and group on: `workload_label`)."""
        return workload_label(self.workload_kind, self.isl, self.osl, self.speculative_decoding)

    @property
    def validity(self) -> str:
        """'valid', 'invalid' or 'not checked' (no request counted: the request rules could not be applied)."""
        return state_of(self.valid, self.completed, self.failed)

    # Agentic replay (`metrics["server"]`, `metrics["replay"]`): prompt tokens by the source of their KV cache
    # (HBM prefix cache, external i.e. DRAM/CPU offload, recomputed), the engine's prefix-cache counters and
    # the usage-based counts; None for fixed-length Points and engines without these counters.
    server_prompt_tokens: float | None = None
    server_prompt_tokens_local_cache_hit: float | None = None
    server_prompt_tokens_external: float | None = None
    server_prompt_tokens_local_compute: float | None = None
    server_prefix_cache_queries: float | None = None
    server_prefix_cache_hits: float | None = None
    # Tier traffic over the Point (vLLM's kv_offload_total_bytes/time by direction), where the engine reports it.
    server_kv_offload_bytes_to_host: float | None = None
    server_kv_offload_bytes_to_device: float | None = None
    server_kv_offload_seconds_to_host: float | None = None
    server_kv_offload_seconds_to_device: float | None = None
    replay_prompt_tokens: int | None = None
    replay_cached_tokens: int | None = None
    e2e_interactivity_p90: float | None = None
    # The KV capacity planner's prediction for the engine's cache (`metrics.replay.planner`,
    # runners.loadgen.records.PlannerPrediction), when one was stored with the Point.
    planner_hbm_hit_rate: float | None = None
    planner_dram_hit_rate: float | None = None
    # A replay's completed session trees (median wall time, count) and its trace and scales (recipe snapshot).
    replay_session_time_p50_s: float | None = None
    replay_sessions_completed: int | None = None
    replay_trace: str | None = None
    replay_time_scale: float | None = None
    replay_length_scale: float | None = None
    replay_max_output_tokens: int | None = None
    # How the replay's settings depart from AgentX's (recipes.schema.agentx_differences), "; "-joined; "" when none.
    replay_agentx_differences: str | None = None
    # The trace version a replay Point replayed and the salt its prompts were made with (ReplayStats): readers never
    # draw Points of two versions, or salted and unsalted ones, as one curve (analysis/comparability.py).
    replay_trace_version: str | None = None
    replay_prompt_salt: str | None = None
    # Per SLO tier, the share of the Point's requests that met it, as stored (JSON text; `PointMetrics.slo_goodput`):
    # read by the capacity figures only.
    slo_goodput: str | None = None


@functools.cache
def _registry_keys_by_repo() -> dict[str, str]:
    return {entry.hf_id.lower(): key for key, entry in load_model_registry().items() if entry.hf_id}


def _registry_key(model: str) -> str:
    """An imported result's model (a hub repository id) as the model registry's key when the registry has it,
    so imported and native results of one model share a row."""
    return _registry_keys_by_repo().get(model.lower(), model)


def _tokens(count: float | None) -> str:
    if count is None or count != count:  # None or NaN
        return "?"
    count = int(count)
    return f"{count // 1024}k" if count >= 1024 and count % 1024 == 0 else str(count)


def workload_label(kind: str, isl: float | None, osl: float | None, speculative: object = None) -> str:
    """'8k/1k' for fixed-length ISL/OSL, 'agentic' for trace replay; with the methodology variant that changes every
    figure after it: '1k/1k · mtp' with speculative decoding. The label is a series of its own wherever a reader meets
    it (a scorecard row, a chip's envelope, a filter's choice, the API, `compare --json`): MTP points read 1.5-3x
    the plain ones' tok/s/GPU on the same chip, and folding them in gave the chip the MTP figure unlabelled."""
    base = "agentic" if kind == "agentic-replay" else f"{_tokens(isl)}/{_tokens(osl)}"
    return f"{base} · {speculative}" if isinstance(speculative, str) and speculative else base


# The figures a reader needs from a Point's stored `PointMetrics` JSON, by path; the database extracts them
# (SQLite's json_extract, PostgreSQL's #>>): decoding every Point's whole JSON (a few KB each) in Python
# cost more than the rest of a 50,000-point read (docs/BENCHMARKS.md, "Hub render"). Absent keys read as None.
_METRIC_PATHS: dict[str, tuple[str, ...]] = {
    "ttft_p90_ms": ("ttft_ms", "p90"),  # the SLO tiers' TTFT (recipes/slo_tiers.yaml)
    "realized_hit_rate": ("replay", "realized_hit_rate"),
    "theoretical_hit_rate": ("replay", "theoretical_hit_rate"),
    "agentx_theoretical_hit_rate": ("replay", "agentx_theoretical_hit_rate"),
    "power_w_mean": ("host", "telemetry", "power_w_mean"),
    # Agentic replay (`metrics["server"]`, `metrics["replay"]`): prompt tokens by the source of their KV cache,
    # the engine's prefix-cache counters, the usage-based counts and the KV planner's prediction.
    **{
        f"server_{name}": ("server", name)
        for name in (
            "prompt_tokens",
            "prompt_tokens_local_cache_hit",
            "prompt_tokens_external",
            "prompt_tokens_local_compute",
            "prefix_cache_queries",
            "prefix_cache_hits",
            "kv_offload_bytes_to_host",
            "kv_offload_bytes_to_device",
            "kv_offload_seconds_to_host",
            "kv_offload_seconds_to_device",
        )
    },
    "replay_prompt_tokens": ("replay", "prompt_tokens"),
    "replay_cached_tokens": ("replay", "cached_tokens"),
    "e2e_interactivity_p90": ("replay", "e2e_interactivity_p90"),
    "planner_hbm_hit_rate": ("replay", "planner", "hbm_hit_rate"),
    "planner_dram_hit_rate": ("replay", "planner", "dram_hit_rate"),
    # Wall time of the session trees a replay completed inside its window (median), and how many it completed.
    "replay_session_time_p50_s": ("replay", "session_time_s", "p50"),
    "replay_sessions_completed": ("replay", "sessions_completed"),
}
# Text figures, read the same way as strings.
_TEXT_METRIC_PATHS: dict[str, tuple[str, ...]] = {
    "replay_trace_version": ("replay", "trace_version"),
    "replay_prompt_salt": ("replay", "prompt_salt"),
    "slo_goodput": ("slo_goodput",),  # an object: the database gives its JSON text
}  # fmt: skip

# Counts (tokens, sessions): read as numbers, kept as int.
# What the public sees unless the viewer asks for more: measurements and imported measurements. Here, below the hub's
# table (analysis.public_results) and the CLI's reading commands, so a command that only lists rows need not load
# pandas to know it.
SHOWN_BY_DEFAULT = ("measured", "imported")

_INTEGER_METRICS = ("replay_prompt_tokens", "replay_cached_tokens", "replay_sessions_completed")

# Point columns a ResultView carries under the same name.
_RESULT_COLUMNS = (
    "origin", "isl", "osl", "concurrency", "repeat_index", "valid", "validity_reasons", "completed", "failed",
    "output_throughput", "output_throughput_per_gpu", "total_token_throughput_per_gpu", "ttft_p50_ms", "tpot_p50_ms",
    "interactivity_p50", "e2el_p50_ms", "finished_at", "point_key", "interactivity_p90", "total_token_throughput",
    "request_throughput", "duration_s", "source", "workload_kind", "job_id", "accelerators", "ttft_p99_ms",
    "tpot_p90_ms", "date_known",
)  # fmt: skip

_POINT = table_of(PointResultRow)
_RECIPE = table_of(RecipeRow)

_SWEEP = table_of(SweepRow)


def _configuration(snapshot: dict[str, Any]) -> dict[str, Any]:
    """What a reader needs of a stored recipe snapshot to tell configurations apart.

    Snapshots leave fields at their defaults out (so adding a schema field keeps old fingerprints), hence
    every read here has the schema's default.
    """
    # Imported results (orchestrator/importers) keep the source tool's flat configuration: `model` is a string
    # and tp/ep sit at the top level.
    model = snapshot.get("model")
    topology = snapshot.get("topology")  # imported InferenceX rows since their topology is kept whole
    parallelism = snapshot.get("parallelism") or topology or {n: snapshot[n] for n in ("tp", "ep") if n in snapshot}
    parts = [f"{name}{parallelism[name]}" for name in ("tp", "ep", "pp", "dp") if int(parallelism.get(name) or 1) > 1]
    if isinstance(topology, dict) and "prefill" in topology:
        parts = ["disagg"] + [
            f"{side[0]}{topology[side].get('workers')}×tp{topology[side].get('tp')}·ep{topology[side].get('ep')}"
            f" {topology[side].get('gpus')}gpu"
            for side in ("prefill", "decode")
        ]
    elif isinstance(topology, dict) and topology.get("dp_attention"):
        parts.append("dpa")
    elif parallelism.get("disaggregated") or snapshot.get("disagg"):
        parts.append("disagg")
    methodology = snapshot.get("methodology") or {}
    offload = methodology.get("kv_offload") or {}
    offload_label = "none"
    if offload.get("backend", "none") != "none":
        size = offload.get("dram_gib")
        offload_label = f"{offload['backend']} {size:g} GiB" if size else str(offload["backend"])
    workload: dict[str, Any] = snapshot["workload"] if isinstance(snapshot.get("workload"), dict) else {}
    engine: dict[str, Any] = snapshot["engine"] if isinstance(snapshot.get("engine"), dict) else {}
    environment: dict[str, Any] = engine["environment"] if isinstance(engine.get("environment"), dict) else {}
    image = snapshot.get("image") or environment.get("image")
    replayed = workload.get("kind") == "agentic-replay"
    # Ours: methodology.speculative_decoding.method; an imported InferenceX row: its spec_decoding ('none' is off).
    speculative = (methodology.get("speculative_decoding") or {}).get("method") or snapshot.get("spec_decoding")
    split = topology if isinstance(topology, dict) and "prefill" in topology else None
    # A projected disaggregated point's fit carries the split it projected (`DisaggRoofline.parameters`).
    projected_fit = (snapshot.get("projection") or {}).get("fit") or {}
    disaggregated = bool(split or parallelism.get("disaggregated") or snapshot.get("disagg")
                         or "decode_workers" in projected_fit)  # fmt: skip
    decode = split["decode"] if split and isinstance(split.get("decode"), dict) else {}
    prefill = split["prefill"] if split and isinstance(split.get("prefill"), dict) else {}
    return {
        "model": model.get("name", "") if isinstance(model, dict) else _registry_key(str(model or "")),
        "precision": snapshot.get("precision", ""),
        # A projected configuration names its own label (its parallelism and the chip it is projected from).
        "parallelism": snapshot.get("parallelism_label") or "·".join(parts) or "tp1",
        "kv_offload": offload_label,
        "prefix_caching": methodology.get("prefix_caching"),
        # A replay's trace and how it was scaled (the schema's defaults where the snapshot leaves them out).
        "replay_trace": str(workload.get("trace", "")) if replayed else None,
        "replay_time_scale": float(workload.get("time_scale", 1.0)) if replayed else None,
        "replay_length_scale": float(workload.get("length_scale", 1.0)) if replayed else None,
        "replay_max_output_tokens": workload.get("max_output_tokens") if replayed else None,
        "replay_agentx_differences": "; ".join(agentx_differences(workload)) if replayed else None,
        "engine_image": str(image) if image else None,
        "speculative_decoding": None if speculative in (None, "", "none") else str(speculative),
        "disaggregated": disaggregated,
        "prefill_gpus": prefill.get("gpus"),
        "decode_gpus": decode.get("gpus"),
        "decode_workers": decode.get("workers"),
        "decode_dp_attention": decode.get("dp_attention"),
        # A projected point's edge of the target's figure bands ('low', 'central', 'high'); None for the rest.
        "projection_edge": (snapshot.get("projection") or {}).get("band_edge"),
        "projection_source": (snapshot.get("projection") or {}).get("from"),  # the chip a projection starts from
    }


def _result_conditions(
    sweep: str | None, include_retracted: bool, public: bool, sweeps: Collection[str] | None = None
) -> list[Any]:
    conditions: list[Any] = []
    if sweep is not None:
        conditions.append(_SWEEP.c.name == sweep)
    if sweeps is not None:
        conditions.append(_SWEEP.c.name.in_(sorted(sweeps)))
    if not include_retracted:
        conditions.append(_POINT.c.retracted.is_(False))
    if public:
        conditions += [not_embargoed(), not_dry_run()]
    return conditions


def result_columns(
    session: Session,
    sweep: str | None = None,
    include_retracted: bool = False,
    public: bool = False,
    sweeps: Collection[str] | None = None,
) -> dict[str, list[Any]]:
    """`list_results` column by column: one list per `ResultView` field (field order), rows in the same order.

    For readers that build a table (the hub's DataFrame): one Core query of the needed columns, without an ORM
    object or a frozen dataclass per row, which at 50,000 rows cost seconds (docs/BENCHMARKS.md, "Hub render").
    """
    with _collector_paused():
        return _result_columns(session, _result_conditions(sweep, include_retracted, public, sweeps))


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector held off while a read builds its 100,000s of rows and lists: none of them
    forms a cycle, yet each batch of new objects started a collection that walked all the older ones again (measured
    on 100k results: the column read 2.85 -> 2.27 s, building the views 1.2 -> 0.5 s). Restored as it was, whatever
    happens."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


_JOINED = _POINT.join(_SWEEP, _SWEEP.c.id == _POINT.c.sweep_id).join(_RECIPE, _RECIPE.c.id == _POINT.c.recipe_id)
# Every result read's order: by sweep, recipe and the Point's place in its curve.
_RESULT_ORDER = (_SWEEP.c.name, _RECIPE.c.name, _POINT.c.isl, _POINT.c.osl, _POINT.c.concurrency, _POINT.c.repeat_index)


def _result_columns(session: Session, conditions: list[Any]) -> dict[str, list[Any]]:
    joined = _JOINED
    metrics: Any = _POINT.c.metrics
    if session.get_bind().dialect.name == "postgresql":
        # PostgreSQL parses a `json` value again for every path read from it (25 a row: 11.5 s of a 100k-result read);
        # read once as jsonb per row instead (3.1 s). The OFFSET keeps the planner from inlining the cast into each
        # path.
        once = core_select(cast(_POINT.c.metrics, JSONB).label("document")).correlate(_POINT).offset(0)
        document = once.lateral("metrics_document")
        joined = joined.join(document, true())
        metrics = document.c.document
    query = (
        core_select(  # sqlmodel's select is typed for at most four columns
            _SWEEP.c.name.label("sweep"), _RECIPE.c.name.label("recipe"), _RECIPE.c.fingerprint,
            _RECIPE.c.hardware_key.label("hardware"), _RECIPE.c.engine_kind.label("engine"), _POINT.c.recipe_id,
            *(_POINT.c[name] for name in _RESULT_COLUMNS if name != "validity_reasons"),
            # As stored: nearly every Point is valid ('[]'), and decoding 50,000 of those costs more than reading them.
            cast(_POINT.c.validity_reasons, Text).label("validity_reasons"),
            *(metrics[path].as_float().label(name) for name, path in _METRIC_PATHS.items()),
            *(metrics[path].as_string().label(name) for name, path in _TEXT_METRIC_PATHS.items()),
        )
        .select_from(joined)
        .where(*conditions)
        .order_by(*_RESULT_ORDER)
    )  # fmt: skip
    connection = session.connection()
    result = connection.execute(query)
    names = list(result.keys())
    rows = result.all()
    by_column = zip(*rows, strict=True) if rows else ([] for _ in names)
    columns: dict[str, list[Any]] = {name: list(values) for name, values in zip(names, by_column, strict=True)}
    configurations = _configurations(connection, conditions)
    of_rows = [configurations[recipe_id] for recipe_id in columns.pop("recipe_id")]
    for name in ("model", "precision", "parallelism", "kv_offload", "prefix_caching", "replay_trace",
                 "replay_time_scale", "replay_length_scale", "replay_max_output_tokens", "replay_agentx_differences",
                 "engine_image", "speculative_decoding", "disaggregated", "prefill_gpus", "decode_gpus",
                 "decode_workers", "decode_dp_attention", "projection_edge", "projection_source"):  # fmt: skip
        columns[name] = [configuration[name] for configuration in of_rows]
    columns["validity_reasons"] = [[] if text == "[]" else json.loads(text) for text in columns["validity_reasons"]]
    power = columns.pop("power_w_mean")
    columns["power_w_per_gpu"] = [
        watts / count if watts is not None and count else None
        for watts, count in zip(power, columns["accelerators"], strict=True)
    ]
    for name in _INTEGER_METRICS:
        columns[name] = [None if value is None else int(value) for value in columns[name]]
    return {field.name: columns[field.name] for field in dataclasses.fields(ResultView)}


def list_results(
    session: Session,
    sweep: str | None = None,
    include_retracted: bool = False,
    public: bool = False,
    sweeps: Collection[str] | None = None,
) -> list[ResultView]:
    """Results with names attached. `public` leaves out embargoed points and dry runs (hub and snapshots); `sweeps`
    keeps those of the sweeps named (a reader that chose them from `list_curve_rows`)."""
    columns = result_columns(session, sweep, include_retracted, public, sweeps)
    names = list(columns)  # every field of ResultView, in its order (result_columns returns exactly those)
    views = []
    with _collector_paused():
        for values in zip(*columns.values(), strict=True):
            # The view's attributes set at once: the frozen dataclass's __init__ sets its 78 fields a call each, which
            # was 2 of the 5 s a 100k-result read took. The values are the fields, so nothing __init__ would do is lost.
            view = object.__new__(ResultView)
            object.__setattr__(view, "__dict__", dict(zip(names, values, strict=True)))
            views.append(view)
    return views


def _configurations(connection: Connection, conditions: list[Any]) -> dict[int, dict[str, Any]]:
    """recipe id -> what a reader needs of its snapshot (`_configuration`), for the recipes of the Points that meet
    `conditions`: a recipe's snapshot is read once, not once per Point (a configuration has many Points)."""
    recipe_ids = select(_POINT.c.recipe_id).select_from(_JOINED).where(*conditions)
    snapshots = connection.execute(
        select(_RECIPE.c.id, _RECIPE.c.snapshot).where(_RECIPE.c.id.in_(recipe_ids.scalar_subquery()))
    ).all()
    return {recipe_id: _configuration(snapshot) for recipe_id, snapshot in snapshots}


class CurveRow(NamedTuple):
    """A result's place on its curve and what chooses its sweep, without the rest of a `ResultView` (same names, same
    values): what a reader of the whole history needs to filter it, pick each configuration's latest sweep and read
    every run of a configuration at a target. At 100k results it is read in a fraction of `list_results`' time (no
    figure inside the metrics document is read); the full rows are then read for the sweeps chosen only."""

    sweep: str
    recipe: str
    fingerprint: str
    hardware: str
    engine: str
    origin: str
    point_key: str
    isl: int | None
    osl: int | None
    concurrency: int
    repeat_index: int
    valid: bool
    interactivity_p50: float | None
    output_throughput_per_gpu: float
    total_token_throughput_per_gpu: float
    finished_at: datetime
    date_known: bool
    workload_kind: str
    model: str
    precision: str
    speculative_decoding: str | None

    @property
    def workload(self) -> str:
        """As `ResultView.workload`."""
        return workload_label(self.workload_kind, self.isl, self.osl, self.speculative_decoding)


# A CurveRow's fields from the sweep, the recipe and the Point, in its order; the last three come from the snapshot.
_CURVE_COLUMNS = (
    _SWEEP.c.name,
    _RECIPE.c.name,
    _RECIPE.c.fingerprint,
    _RECIPE.c.hardware_key,
    _RECIPE.c.engine_kind,
    *(_POINT.c[name] for name in CurveRow._fields[5:-3]),
)
_CURVE_CONFIGURATION = CurveRow._fields[-3:]


def list_curve_rows(session: Session, sweep: str | None = None) -> list[CurveRow]:
    """Every result not retracted as a `CurveRow`, in `list_results`' order."""
    conditions = _result_conditions(sweep, include_retracted=False, public=False)
    query = core_select(*_CURVE_COLUMNS, _POINT.c.recipe_id).select_from(_JOINED).where(*conditions)
    connection = session.connection()
    with _collector_paused():
        configurations = {
            recipe_id: tuple(configuration[name] for name in _CURVE_CONFIGURATION)
            for recipe_id, configuration in _configurations(connection, conditions).items()
        }
        return [
            CurveRow(*row[:-1], *configurations[row[-1]]) for row in connection.execute(query.order_by(*_RESULT_ORDER))
        ]


def results_version(session: Session) -> tuple[int, int, int, int]:
    """A value that changes whenever what `list_results` returns may have: a Point recorded (highest id, count),
    retracted, or put under or out of an embargo. Cheap (each part is answered from the primary key or an
    index), so a reader can cache the results until it changes instead of re-reading them every few seconds."""
    count = func.count()
    query = select(
        select(func.coalesce(func.max(_POINT.c.id), 0)).scalar_subquery(),
        select(count).select_from(_POINT).scalar_subquery(),
        select(count).select_from(_POINT).where(_POINT.c.retracted.is_(True)).scalar_subquery(),
        select(count).select_from(_POINT).where(not_(not_embargoed())).scalar_subquery(),
    )
    highest, points, retracted, embargoed = session.connection().execute(query).one()
    return int(highest), int(points), int(retracted), int(embargoed)


def not_dry_run() -> Any:
    """SQL condition: the point was not a dry run (plumbing checks on a stand-in engine are never published)."""
    return col(PointResultRow.origin) != "dry-run"


def not_embargoed() -> Any:
    """SQL condition: the point is not under an embargo that is still running."""
    return or_(col(PointResultRow.embargo_until).is_(None), col(PointResultRow.embargo_until) <= utcnow())


def list_sweeps(session: Session) -> list[SweepRow]:
    return list(session.exec(select(SweepRow).order_by(col(SweepRow.created_at))).all())


def transitions_of_sweep(session: Session, sweep_id: int, subject: str | None = None) -> list[TransitionRow]:
    query = select(TransitionRow).where(TransitionRow.sweep_id == sweep_id)
    if subject is not None:
        query = query.where(TransitionRow.subject == subject)
    return list(session.exec(query.order_by(col(TransitionRow.id))).all())


def sweep_by_name(session: Session, name: str) -> SweepRow | None:
    return session.exec(select(SweepRow).where(SweepRow.name == name)).first()


def points_of_sweep(session: Session, sweep_id: int) -> list[tuple[PointResultRow, RecipeRow]]:
    """The sweep's Points not retracted, each with its recipe, in the order they were recorded."""
    query = (
        select(PointResultRow, RecipeRow)
        .join(RecipeRow, col(RecipeRow.id) == col(PointResultRow.recipe_id))
        .where(PointResultRow.sweep_id == sweep_id, col(PointResultRow.retracted).is_(False))
        .order_by(col(PointResultRow.id))
    )
    return [(point, recipe) for point, recipe in session.exec(query).all()]


def points_per_job(session: Session, sweep_id: int) -> dict[str, int]:
    """Recorded Points of each job of the sweep."""
    query = (
        select(PointResultRow.job_id, func.count())
        .where(PointResultRow.sweep_id == sweep_id)
        .group_by(col(PointResultRow.job_id))
    )
    return {job_id: count for job_id, count in session.exec(query).all()}


def embargoed_sweep_ids(session: Session) -> set[int]:
    """Sweeps with results under a running embargo: public readers do not learn they exist."""
    query = select(PointResultRow.sweep_id).where(not_(not_embargoed())).distinct()
    return set(session.exec(query).all())


@dataclass(frozen=True)
class PointDetail:
    """Everything the hub's run detail shows of one public Point: its row, recipe, job, files and history."""

    sweep: SweepRow
    point: PointResultRow
    recipe: RecipeRow
    job: JobRow | None
    artifacts: list[ArtifactRow]  # the Point's own (request records) and its job's (engine log, attachments)
    transitions: list[TransitionRow]  # the job's lifecycle and the Point's own states, in the order recorded
    provenance: ProvenanceRow | None = None  # engine command line, env names, commit, host (jobs since 0006)
    engine_build: EngineRow | None = None  # engine kind, version, image (and digest) the job ran
    verification: PointVerificationRow | None = None  # what the newest signed bundle of it said, if one did


def public_point_detail(session: Session, sweep: str, point_key: str) -> PointDetail | None:
    """The Point `point_key` of sweep `sweep` with what produced it; None unless it is public.

    Public as in `list_results(public=True)`: not retracted, not under a running embargo, not a dry run. A
    reader cannot tell a hidden Point from a missing one (an embargo keeps even the existence back).
    """
    found = session.exec(
        select(PointResultRow, SweepRow, RecipeRow)
        .join(SweepRow, col(SweepRow.id) == col(PointResultRow.sweep_id))
        .join(RecipeRow, col(RecipeRow.id) == col(PointResultRow.recipe_id))
        .where(SweepRow.name == sweep, PointResultRow.point_key == point_key)
        .where(col(PointResultRow.retracted).is_(False), not_embargoed(), not_dry_run())
    ).first()
    if found is None:
        return None
    point, sweep_row, recipe = found
    job = session.get(JobRow, point.job_id)
    artifacts = session.exec(
        select(ArtifactRow)
        .where(
            or_(
                (col(ArtifactRow.sweep_id) == point.sweep_id) & (col(ArtifactRow.point_key) == point.point_key),
                (col(ArtifactRow.job_id) == point.job_id) & col(ArtifactRow.point_key).is_(None),
            )
        )
        .order_by(col(ArtifactRow.id))
    ).all()
    transitions = session.exec(
        select(TransitionRow)
        .where(
            TransitionRow.job_id == point.job_id,
            or_(col(TransitionRow.subject) == "job", col(TransitionRow.point_key) == point.point_key),
        )
        .order_by(col(TransitionRow.id))
    ).all()
    provenance = session.get(ProvenanceRow, point.job_id)
    engine_build = session.get(EngineRow, job.engine_id) if job is not None and job.engine_id is not None else None
    verification = session.exec(
        select(PointVerificationRow)
        .where(PointVerificationRow.point_result_id == point.id)
        .order_by(col(PointVerificationRow.id).desc())
    ).first()
    return PointDetail(sweep_row, point, recipe, job, list(artifacts), list(transitions), provenance, engine_build,
                       verification)  # fmt: skip


# Whether a reader can check a Point (orchestrator/bundles.py), as the hub's run detail and the API say it.
Verifiability = Literal["verified", "signed, not recomputed", "unsigned", "cannot be verified"]
NO_RECORDS_ORIGINS = frozenset({"imported", "projected"})  # figures without per-request records to compute them from


def verifiability(origin: str, newest: str | None) -> Verifiability:
    """The Point's state from its origin and the newest state a signed bundle recorded (signed, verified, hash-only)."""
    if origin in NO_RECORDS_ORIGINS:
        return "cannot be verified"
    if newest is None:
        return "unsigned"
    return "verified" if newest == "verified" else "signed, not recomputed"


def snapshot_parent(session: Session) -> str | None:
    """The SHA-256 of the snapshot a published snapshot follows (its `snapshot_publication` record); None for the
    first, and in a results database, which has no such record."""
    return session.exec(select(SnapshotPublicationRow.parent_sha256)).first()


def newest_verifications(session: Session) -> dict[tuple[str, str], str]:
    """The newest recorded verification state of every Point that has one, by (sweep, point key)."""
    rows = session.exec(
        select(SweepRow.name, PointResultRow.point_key, PointVerificationRow.state)
        .join(PointResultRow, col(PointResultRow.id) == col(PointVerificationRow.point_result_id))
        .join(SweepRow, col(SweepRow.id) == col(PointResultRow.sweep_id))
        .order_by(col(PointVerificationRow.id))
    ).all()
    return {(sweep, point_key): state for sweep, point_key, state in rows}


def replay_breakdowns(session: Session, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
    """The by-turn and by-context figures (`metrics.replay.per_turn` / `per_context`) of the public replay Points
    named by (sweep, point key), by that pair; a Point without them maps to empty lists."""
    wanted = set(keys)
    if not wanted:
        return {}
    rows = session.exec(
        select(SweepRow.name, PointResultRow.point_key, PointResultRow.metrics)
        .join(SweepRow, col(SweepRow.id) == col(PointResultRow.sweep_id))
        .where(col(SweepRow.name).in_({sweep for sweep, _ in wanted}))
        .where(col(PointResultRow.point_key).in_({key for _, key in wanted}))
        .where(col(PointResultRow.retracted).is_(False), not_embargoed(), not_dry_run())
    ).all()
    found = {}
    for sweep, point_key, metrics in rows:
        if (sweep, point_key) in wanted:
            replay = (metrics or {}).get("replay") or {}
            found[(sweep, point_key)] = {name: replay.get(name) or [] for name in ("per_turn", "per_context")}
    return found


def artifact_by_key(session: Session, key: str) -> ArtifactRow | None:
    """The artifact stored under `key` (a content key: every row with that key names the same bytes)."""
    return session.exec(select(ArtifactRow).where(ArtifactRow.key == key).order_by(col(ArtifactRow.id))).first()
