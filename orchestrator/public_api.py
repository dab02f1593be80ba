"""The read-only API of the public results: versioned JSON views of a published snapshot, described by OpenAPI.

`infersweep publish --snapshot` stores them beside the snapshot (`api/v1/<view>.json` in the artifact store, so a
bucket alone serves them), and a hub serving a snapshot serves the same files at `/api/v1/<view>.json`
(`infersweep site`, `site/server.py`). Both are made by `build_views` from the snapshot itself, so they hold the same
bytes, and every figure is read by the code the hub's pages read it with (`analysis`): an envelope's
$/M output tokens here is the Overview's cell at the same tier.

Views: `index` (what there is), `results` (every public result, one item per Point repeat), `envelopes` (each chip's
cheapest configuration per model, precision and workload at the standard interactivity tiers, for each TCO tier:
the Overview's scorecard), `coverage` (each chip × model × workload: measured, imported, projected or missing),
`capacity` (live agents served at each SLO tier per configuration: the Capacity page) and `methodology` (the
constants the figures rest on: tiers, TCO figures with their sources and dates, validity rules).
A missing figure is `null`, never NaN: every file is strict JSON.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.json_schema import models_json_schema
from sqlalchemy import Engine

from analysis.capacity import capacities, split_readable
from analysis.coverage import chips_to_cover, chips_without_results, coverage
from analysis.economics import (
    DEFAULT_TIER,
    INTERACTIVITY_TIERS,
    GpuHourRate,
    ReadMemo,
    ScorecardCell,
    default_reference,
    scorecard,
)
from analysis.intervals import Interval
from analysis.public_results import (
    NOT_MEASUREMENTS,
    SHOWN_BY_DEFAULT,
    default_view,
    every_run_of,
    results_frame,
    run_path,
)
from db import reads
from db.reads import Verifiability
from db.session import open_session
from recipes.hardware import TCO_TIER_LABELS, TCO_TIERS, Figure, Hardware, load_hardware_registry
from recipes.slo import SloTier, load_slo_tiers
from recipes.validity import CHECKS

API_VERSION = "v1"
API_PREFIX = f"api/{API_VERSION}"  # under the artifact store's root, and under the hub's address
OPENAPI_FILE = "openapi.json"
_LINK = re.compile(r"https?://[^\s)]+")


class _View(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Item(_View):
    """An item of a view, with an `id` made from the fields that say which series and point it is (`IDENTITY`): the
    same item has the same id in every publish of the same data, whatever else it holds or where it stands."""

    IDENTITY: ClassVar[tuple[str, ...]] = ()
    id: str = Field("", description="The item's stable identity: the first 16 hex digits of SHA-256 over the fields "
                    "that say which series and point it is (the view's description names them).")  # fmt: skip

    @model_validator(mode="after")
    def _identify(self) -> Self:
        parts = json.dumps([getattr(self, name) for name in self.IDENTITY], sort_keys=True, default=str)
        self.id = hashlib.sha256(parts.encode()).hexdigest()[:16]
        return self


class ViewHeader(_View):
    """What every view starts with: which API, which view, which snapshot."""

    api_version: Literal["v1"] = Field("v1", description="The API's version; a breaking change is a new one.")
    view: str = Field(..., description="The view's name, as in its file name.")
    snapshot_sha256: str | None = Field(
        ..., description="SHA-256 of the published snapshot (SQLite file) the view was read from; null if none."
    )
    results_as_of: datetime | None = Field(
        ..., description="When the newest dated public result finished (UTC); null when no result states a date."
    )


class ResultItem(_Item):
    """One public result: one repeat of one Point (a concurrency level of one configuration)."""

    IDENTITY = ("sweep", "point_key", "repeat_index")

    sweep: str = Field(..., description="The sweep (a run of recipes) the result belongs to.")
    point_key: str = Field(..., description="The Point's stable identity within its sweep.")
    repeat_index: int = Field(..., description="Which repeat of the Point (0 for the first).")
    recipe: str = Field(..., description="The recipe's name.")
    configuration: str = Field(..., description="What was measured, in one line: chip, engine, model, parallelism.")
    hardware: str = Field(..., description="Chip, as a key of the hardware registry (recipes/hardware.yaml).")
    engine: str = Field(..., description="Serving engine (vllm, sglang, trt-llm, dynamo...).")
    engine_image: str | None = Field(..., description="The engine's container image, where the result names one.")
    model: str = Field(..., description="Model key.")
    precision: str = Field(..., description="Weight precision (fp8, fp4, bf16...).")
    parallelism: str = Field(..., description="Parallelism label, e.g. 'tp8' or 'tp4·ep4'.")
    kv_offload: str = Field(..., description="KV-cache offload tier ('none' when the cache stays in HBM).")
    workload: str = Field(..., description="Workload label: ISL/OSL like '1k/1k', or 'agentic' for trace replay.")
    isl: int | None = Field(..., description="Input tokens per request (fixed-length workloads).")
    osl: int | None = Field(..., description="Output tokens per request (fixed-length workloads).")
    concurrency: int = Field(..., description="Requests in flight (or live sessions for trace replay).")
    accelerators: int = Field(..., description="Accelerators the configuration used.")
    origin: str = Field(
        ..., description="measured (here), imported (another lab's measurement), projected or simulated."
    )
    validity: Literal["valid", "invalid", "not checked"] = Field(
        ..., description="The validity verdict; 'not checked' when no request counts were there to judge."
    )
    validity_reasons: list[str] = Field(..., description="Why the result is invalid (empty when it is not).")
    latest: bool = Field(..., description="The result belongs to the latest sweep of its configuration.")
    verification: Verifiability = Field(
        ...,
        description="Whether a reader can check it: 'verified' (a signed bundle's raw records gave every figure "
        "again), 'signed, not recomputed', 'unsigned', or 'cannot be verified' (imported or projected: no raw records "
        "of it exist). The hub's run detail says the same.",
    )
    finished_at: datetime | None = Field(..., description="When the Point finished (UTC); null when the source "
                                         "states no date.")  # fmt: skip
    interactivity_p50: float | None = Field(..., description="Median tok/s/user: 1000 / TPOT p50 (ms).")
    ttft_p50_ms: float | None = Field(..., description="Median time to first token, ms.")
    ttft_p90_ms: float | None = Field(..., description="90th percentile time to first token, ms.")
    tpot_p50_ms: float | None = Field(..., description="Median time per output token after the first, ms.")
    e2el_p50_ms: float | None = Field(..., description="Median end-to-end request latency, ms.")
    output_throughput_per_gpu: float = Field(..., description="Output tokens per second per accelerator.")
    input_throughput_per_gpu: float = Field(..., description="Input (prompt) tokens per second per accelerator.")
    total_token_throughput_per_gpu: float = Field(..., description="Input plus output tokens per second per "
                                                  "accelerator.")  # fmt: skip
    request_throughput: float | None = Field(
        ...,
        description="Completed requests per second; null where the source counts no requests (an imported "
        "aggregate row states figures, not requests).",
    )
    realized_hit_rate: float | None = Field(
        None, description="Trace replay: Σ cached tokens / Σ prompt tokens the server reported for the measured "
        "requests; null for other workloads or where the server reports no cached tokens.",
    )  # fmt: skip
    theoretical_hit_rate: float | None = Field(
        None, description="Trace replay: the trace's own prefix reuse, token weighted at the engine's block size "
        "(ours; docs/METRICS.md); null for other workloads.",
    )  # fmt: skip
    agentx_theoretical_hit_rate: float | None = Field(
        None, description="Trace replay: the AgentX harness's 'Theoretical Prefix Cache Hit' of the measured requests "
        "(their blocks before the first unseen one over their blocks); an imported harness run's own figure.",
    )  # fmt: skip
    source_url: str | None = Field(..., description="Where an imported result comes from (e.g. its GitHub Actions "
                                   "run); null for results measured here.")  # fmt: skip
    hub_path: str = Field(..., description="The result's Run detail page on the hub, relative to the hub's address.")


class EnvelopeItem(_Item):
    """One chip's cheapest configuration for a model, precision and workload at one interactivity tier and TCO tier:
    the Overview's scorecard cell (read along the chip's envelope; never extrapolated)."""

    IDENTITY = ("tco_tier", "model", "precision", "workload", "interactivity", "hardware")

    tco_tier: str = Field(..., description="TCO tier the costs use (a key of the hardware registry's TCO figures).")
    model: str = Field(..., description="Model key.")
    precision: str = Field(..., description="Weight precision.")
    workload: str = Field(..., description="Workload label.")
    interactivity: float = Field(..., description="The tier: tok/s/user the chip must serve (or faster).")
    hardware: str = Field(..., description="Chip (hardware registry key).")
    configuration: str | None = Field(..., description="The configuration the figure is read from; null when none.")
    origins: list[str] = Field(..., description="Origins of the results the figure rests on.")
    sweeps: list[str] = Field(..., description="The sweeps the figure rests on.")
    read_at: float | None = Field(..., description="tok/s/user the figure was read at (above the tier where the "
                                  "chip's slowest point is faster).")  # fmt: skip
    output_throughput_per_gpu: Interval | None = Field(
        ..., description="Output tok/s per accelerator at the tier: mean of repeats with a 95 % interval."
    )
    runs: int | None = Field(
        ..., description="Runs (sweeps) of the configurations behind the figure that read a figure at the tier alone."
    )
    usd_per_gpu_hour: float | None = Field(..., description="The chip's TCO per accelerator-hour at this tier.")
    usd_per_million_output: float | None = Field(..., description="$ per million output tokens.")
    usd_per_million_output_low: float | None = Field(..., description="Low end of the cost's 95 % interval.")
    usd_per_million_output_high: float | None = Field(..., description="High end of the cost's 95 % interval.")
    usd_per_million_input: float | None = Field(..., description="$ per million input tokens.")
    usd_per_million_total: float | None = Field(..., description="$ per million input plus output tokens.")
    reference: str | None = Field(..., description="The reference chip of `vs_reference`.")
    vs_reference: float | None = Field(..., description="Cost relative to the reference chip's cell, minus one.")
    configurations: int = Field(..., description="Configurations of this chip in the row (covered or not).")
    no_figure_because: str | None = Field(..., description="Why there is no cost; null when there is one.")


class CoverageItem(_Item):
    """One chip on one model, precision and workload: the strongest evidence there is."""

    IDENTITY = ("hardware", "model", "precision", "workload")

    hardware: str = Field(..., description="Chip (hardware registry key).")
    model: str = Field(..., description="Model key.")
    precision: str = Field(..., description="Weight precision.")
    workload: str = Field(..., description="Workload label.")
    status: Literal["measured", "imported", "projected", "missing"] = Field(..., description="Strongest evidence.")
    results: int = Field(..., description="Results (Point repeats) of that status.")
    latest: datetime | None = Field(..., description="The latest dated result of that status; null if none states "
                                    "a date.")  # fmt: skip


class CapacityItem(_Item):
    """The live agents one configuration serves at one SLO tier (`infersweep capacity`, the hub's Capacity page)."""

    IDENTITY = ("recipe", "hardware", "sweep", "tier")

    configuration: str = Field(..., description="What was measured, in one line.")
    recipe: str = Field(..., description="The recipe's name.")
    hardware: str = Field(..., description="Chip (hardware registry key).")
    sweep: str = Field(..., description="The sweep over concurrency read.")
    tier: str = Field(..., description="SLO tier name (methodology view, `slo_tiers`).")
    agents: int = Field(..., description="Live agents served at the tier (sessions of a replay, requests in flight of "
                        "a fixed-length sweep).")  # fmt: skip
    basis: Literal["measured", "interpolated", "at least", "below the smallest measured"] = Field(
        ...,
        description="How it was read: a measured level, between two levels, the largest level measured (more may "
        "be served), or none (the smallest level already misses).",
    )
    explanation: str = Field(..., description="The levels it rests on, in words.")
    accelerators: int = Field(..., description="Accelerators of the configuration.")
    per_accelerator: float = Field(..., description="Agents per accelerator.")
    per_all_in_mw: float | None = Field(
        ..., description="Agents per MW of all-in power (AA-AgentPerf's unit); null without a power figure."
    )
    per_all_in_kw: float | None = Field(..., description="per_all_in_mw / 1000, as v1 published it first.")
    per_usd_hour: float | None = Field(..., description="Agents per TCO dollar-hour at the default TCO tier.")


class ValidityRule(_View):
    """One validity rule a result is judged by."""

    id: str = Field(..., description="The rule's id, as in a result's reasons.")
    text: str = Field(..., description="The rule in one line (docs/METHODOLOGY.md).")
    judges: Literal["requests", "figures"] = Field(..., description="What it reads: request records, or only the "
                                                   "stated figures.")  # fmt: skip


class CapacityView(ViewHeader):
    """Agents served at each SLO tier, per configuration (latest sweep, measured and imported origins), at the default
    TCO tier; configurations whose results state no TTFT p90 (imported InferenceX rows) cannot be read and are left
    out."""

    tco_tier: str = Field(..., description="The TCO tier of `per_usd_hour`.")
    items: list[CapacityItem] = Field(..., description="One item per configuration and tier.")


class ResultsView(ViewHeader):
    """Every public result (no dry runs, nothing retracted or under embargo)."""

    items: list[ResultItem] = Field(..., description="One item per Point repeat.")


class EnvelopesView(ViewHeader):
    """The Overview's scorecard for every TCO tier, on the results the Overview shows by default."""

    interactivity_tiers: list[float] = Field(..., description="The standard tiers, tok/s/user.")
    default_tco_tier: str = Field(..., description="The TCO tier the Overview opens on.")
    origins: list[str] = Field(..., description="The origins read (the hub's default: measured and imported).")
    items: list[EnvelopeItem] = Field(..., description="One item per TCO tier, model, precision, workload, "
                                      "interactivity tier and chip.")  # fmt: skip


class CoverageView(ViewHeader):
    """Which chip has which kind of result, and which has none."""

    chips: list[str] = Field(..., description="Every chip covered (the registry's accelerators).")
    chips_without_results: list[str] = Field(..., description="Chips missing on every row.")
    items: list[CoverageItem] = Field(..., description="One item per model, precision, workload and chip.")


class MethodologyView(ViewHeader):
    """The constants the figures rest on."""

    interactivity_tiers: list[float] = Field(..., description="The scorecard's tiers, tok/s/user.")
    tco_tiers: dict[str, str] = Field(..., description="TCO tier keys and how a reader names them.")
    default_tco_tier: str = Field(..., description="The TCO tier pages open on.")
    tco_usd_per_gpu_hour: dict[str, dict[str, Figure]] = Field(
        ..., description="Per chip, per TCO tier: the $/accelerator-hour figure with its source and month."
    )
    origins_shown_by_default: list[str] = Field(..., description="Origins pages and envelopes read by default.")
    not_measurements: dict[str, str] = Field(..., description="Origins that are not measurements, and why.")
    validity_rules: list[ValidityRule] = Field(..., description="The validity rules, in the registry's order.")
    slo_tiers: list[SloTier] = Field(..., description="SLO tiers of `infersweep capacity` (recipes/slo_tiers.yaml).")


class ViewLink(_View):
    name: str = Field(..., description="The view's name.")
    path: str = Field(..., description="The view's file, relative to the API's root.")
    items: int | None = Field(..., description="Items the view holds (null for views without items).")


class IndexView(ViewHeader):
    """What the API holds."""

    points: int = Field(..., description="Public results in the snapshot.")
    parent_sha256: str | None = Field(
        None, description="SHA-256 of the snapshot this one follows (append-only publishing: every Point of it is "
        "here unchanged or retracted by a record); null for the first, or for a hub reading a results database.",
    )  # fmt: skip
    history: str = Field(
        "snapshots.json", description="The chain of published snapshots, newest first, where the store keeps it; each "
        "one's views stay under asof/<sha256>/, and a hub serving a store answers ?asof=DATE|HASH from them.",
    )  # fmt: skip
    views: list[ViewLink] = Field(..., description="Every view, with its file.")
    openapi: str = Field(OPENAPI_FILE, description="The OpenAPI description of every view, relative to the root.")


VIEWS: dict[str, type[ViewHeader]] = {
    "index": IndexView,
    "results": ResultsView,
    "envelopes": EnvelopesView,
    "coverage": CoverageView,
    "capacity": CapacityView,
    "methodology": MethodologyView,
}


# ---------------------------------------------------------------------------------------------- reading


def _number(value: Any) -> float | None:
    """A figure as JSON holds it: None for a missing one (pandas' NaN), never NaN or infinity."""
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _integer(value: Any) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


def _source_url(source: Any) -> str | None:
    found = _LINK.search(source) if isinstance(source, str) else None
    return found.group(0) if found else None


def _result_item(row: Any, verifications: Mapping[tuple[str, str], str]) -> ResultItem:
    return ResultItem(
        sweep=row.sweep, point_key=row.point_key, repeat_index=int(row.repeat_index), recipe=row.recipe,
        configuration=row.configuration, hardware=row.hardware, engine=row.engine,
        engine_image=row.engine_image if isinstance(row.engine_image, str) else None, model=row.model,
        precision=row.precision, parallelism=row.parallelism, kv_offload=row.kv_offload, workload=row.workload,
        isl=_integer(row.isl), osl=_integer(row.osl), concurrency=int(row.concurrency),
        accelerators=int(row.accelerators), origin=row.origin, validity=row.validity,
        validity_reasons=list(row.validity_reasons), latest=bool(row.latest),
        verification=reads.verifiability(row.origin, verifications.get((row.sweep, row.point_key))),
        finished_at=row.finished_at.to_pydatetime() if row.date_known else None,
        interactivity_p50=_number(row.interactivity_p50), ttft_p50_ms=_number(row.ttft_p50_ms),
        ttft_p90_ms=_number(row.ttft_p90_ms), tpot_p50_ms=_number(row.tpot_p50_ms),
        e2el_p50_ms=_number(row.e2el_p50_ms),
        output_throughput_per_gpu=float(row.output_throughput_per_gpu),
        input_throughput_per_gpu=float(row.input_throughput_per_gpu),
        total_token_throughput_per_gpu=float(row.total_token_throughput_per_gpu),
        request_throughput=float(row.request_throughput) if row.completed + row.failed > 0 else None,
        realized_hit_rate=_number(row.realized_hit_rate), theoretical_hit_rate=_number(row.theoretical_hit_rate),
        agentx_theoretical_hit_rate=_number(row.agentx_theoretical_hit_rate),
        source_url=_source_url(row.source) if row.origin != "measured" else None,
        hub_path=run_path(row.sweep, row.point_key),
    )  # fmt: skip


def _envelope_item(tier: str, cell: ScorecardCell) -> EnvelopeItem:
    best = cell.best
    read = best.read if best is not None else None
    cost = best.output if best is not None else None
    return EnvelopeItem(
        tco_tier=tier, model=cell.model, precision=cell.precision, workload=cell.workload,
        interactivity=cell.interactivity, hardware=cell.hardware,
        configuration=read.configuration if read else None,
        origins=list(read.origins if read else cell.origins), sweeps=list(read.sweeps) if read else [],
        read_at=_number(read.read_at) if read else None, output_throughput_per_gpu=read.output if read else None,
        runs=read.runs if read else None, usd_per_gpu_hour=best.usd_per_gpu_hour if best else None,
        usd_per_million_output=cost.usd_per_million if cost else None,
        usd_per_million_output_low=_number(cost.low) if cost else None,
        usd_per_million_output_high=_number(cost.high) if cost else None,
        usd_per_million_input=best.input.usd_per_million if best and best.input else None,
        usd_per_million_total=best.total.usd_per_million if best and best.total else None,
        reference=cell.reference, vs_reference=_number(cell.vs_reference), configurations=cell.configurations,
        no_figure_because=cell.empty_because or None,
    )  # fmt: skip


def _envelopes(frame: Any, registry: Mapping[str, Hardware], local_hosts: frozenset[str]) -> list[EnvelopeItem]:
    """The Overview's scorecard, as the page opens: its default view, every standard tier, its default reference
    (the runs behind each cell are every public run of the configurations it shows)."""
    shown = default_view(frame, local_hosts)
    if shown.empty:
        return []
    rows = list(shown.itertuples(index=False))
    history = every_run_of(frame, shown)
    reference = default_reference(rows)
    items: list[EnvelopeItem] = []
    reads: ReadMemo = {}  # a chip's read is the same at every TCO tier: only its price differs
    for tier in TCO_TIERS:
        cells = scorecard(rows, registry, GpuHourRate(tier), INTERACTIVITY_TIERS, reference, history, reads)
        items.extend(_envelope_item(tier, cell) for cell in cells)
    return items


def _capacity(frame: Any, registry: Mapping[str, Hardware], local_hosts: frozenset[str]) -> list[CapacityItem]:
    """The Capacity page as it opens: its default view, every SLO tier, the default TCO tier."""
    shown = default_view(frame, local_hosts)
    readable, _ = split_readable(list(shown.itertuples(index=False)))
    read = capacities(readable, list(load_slo_tiers().values()), dict(registry), DEFAULT_TIER)
    return [
        CapacityItem(
            configuration=item.configuration, recipe=item.recipe, hardware=item.hardware, sweep=item.sweep,
            tier=item.tier, agents=item.agents, basis=item.basis, explanation=item.explanation,
            accelerators=item.accelerators, per_accelerator=item.per_accelerator,
            per_all_in_mw=_number(item.per_all_in_mw),
            per_all_in_kw=None if item.per_all_in_mw is None else _number(item.per_all_in_mw / 1000),
            per_usd_hour=_number(item.per_usd_hour),
        )
        for item in read
    ]  # fmt: skip


def build_views(engine: Engine, snapshot_sha256: str | None) -> dict[str, ViewHeader]:
    """Every view of the public results in `engine` (a snapshot, or a results database read as the public sees it)."""
    registry = load_hardware_registry()
    local_hosts = frozenset(key for key, spec in registry.items() if spec.vendor == "local")
    with open_session(engine) as session:
        frame = results_frame(reads.result_columns(session, public=True))
        verifications = reads.newest_verifications(session)
        parent = reads.snapshot_parent(session)
    dated = frame.loc[frame["date_known"].astype(bool), "finished_at"] if not frame.empty else frame
    as_of = dated.max().to_pydatetime() if len(dated) else None
    header = {"snapshot_sha256": snapshot_sha256, "results_as_of": as_of}
    rows = list(frame.itertuples(index=False))
    chips = chips_to_cover(registry, local_hosts, set(frame["hardware"]) if not frame.empty else set())
    cells = coverage(rows, chips)
    views: dict[str, ViewHeader] = {
        "results": ResultsView(view="results", **header, items=[_result_item(row, verifications) for row in rows]),
        "envelopes": EnvelopesView(
            view="envelopes", **header, interactivity_tiers=list(INTERACTIVITY_TIERS), default_tco_tier=DEFAULT_TIER,
            origins=list(SHOWN_BY_DEFAULT), items=_envelopes(frame, registry, local_hosts),
        ),
        "coverage": CoverageView(
            view="coverage", **header, chips=chips,
            chips_without_results=chips_without_results(cells),
            items=[CoverageItem(hardware=c.hardware, model=c.model, precision=c.precision, workload=c.workload,
                                status=c.status, results=c.results, latest=c.latest) for c in cells],
        ),
        "capacity": CapacityView(
            view="capacity", **header, tco_tier=DEFAULT_TIER, items=_capacity(frame, registry, local_hosts)
        ),
        "methodology": MethodologyView(
            view="methodology", **header, interactivity_tiers=list(INTERACTIVITY_TIERS),
            tco_tiers=dict(TCO_TIER_LABELS), default_tco_tier=DEFAULT_TIER,
            tco_usd_per_gpu_hour={key: dict(spec.tco_usd_per_gpu_hour) for key, spec in registry.items()},
            origins_shown_by_default=list(SHOWN_BY_DEFAULT), not_measurements=dict(NOT_MEASUREMENTS),
            validity_rules=[ValidityRule(id=check.id, text=check.text, judges=check.kind) for check in CHECKS.values()],
            slo_tiers=list(load_slo_tiers().values()),
        ),
    }  # fmt: skip
    links = [ViewLink(name=name, path=f"{name}.json", items=_items(view)) for name, view in views.items()]
    index = IndexView(view="index", **header, points=len(frame), parent_sha256=parent, views=links)
    return {"index": index, **views}


def _items(view: ViewHeader) -> int | None:
    items: object = getattr(view, "items", None)
    return len(items) if isinstance(items, list) else None


# ---------------------------------------------------------------------------------------------- describing


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 description of every view: one GET per file, its schema from the view's model."""
    _, definitions = models_json_schema(
        [(model, "serialization") for model in VIEWS.values()], ref_template="#/components/schemas/{model}"
    )
    paths = {
        f"/{name}.json": {
            "get": {
                "operationId": f"get_{name}",
                "summary": (model.__doc__ or name).strip().splitlines()[0],
                "responses": {
                    "200": {
                        "description": f"The {name} view.",
                        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}},
                    }
                },
            }
        }
        for name, model in VIEWS.items()
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "InferSweep public results",
            "version": API_VERSION,
            "description": "Read-only JSON views of a published InferSweep snapshot: static files, the same on the "
            "hub (under /api/v1/) and in the artifact store (under api/v1/). docs/DEPLOY.md, 'The read-only API'.",
        },
        "servers": [{"url": f"/{API_PREFIX}", "description": "A hub serving a published snapshot."}],
        "paths": paths,
        "components": {"schemas": definitions.get("$defs", {})},
    }


def write_views(views: Mapping[str, ViewHeader], directory: Path) -> list[Path]:
    """Write each view (and the OpenAPI description) as `<name>.json` in `directory`, each file whole or not at all;
    return the files."""
    directory.mkdir(parents=True, exist_ok=True)
    documents: Iterable[tuple[str, str]] = [
        *((f"{name}.json", view.model_dump_json(indent=1)) for name, view in views.items()),
        (OPENAPI_FILE, json.dumps(openapi_document(), indent=1)),
    ]
    written = []
    for name, text in documents:
        target = directory / name
        partial = target.with_name(f".{name}.partial")
        partial.write_text(text + "\n")
        os.replace(partial, target)
        written.append(target)
    return written
