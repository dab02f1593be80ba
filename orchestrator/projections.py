"""Projected points into the database: origin `projected`, each with its source curve, model and parameters.

`analysis.projection` works a projection out; this module stores it through the Recorder (the only
database writer) as one recipe per projected configuration and band edge, whose snapshot carries the projection
(model version, ratios, fitted coefficients, the source chip and the source points' keys), so a reader can tell
what a projected point came from. Storing the same projection again stores nothing.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Engine

from analysis.curves import Curve
from analysis.projection import ProjectedPoint, Projection
from orchestrator.importers.store import close_imported
from orchestrator.plan import point_key
from orchestrator.recorder import RecipeIdentity, Recorder
from recipes.schema import ValidityThresholds
from recipes.validity import Evidence, judge
from runners.job import PointRequest
from runners.loadgen.records import FixedLengthPoint, MeasuredWindow, PointMetrics, Stats, Validity


@dataclass(frozen=True)
class StoredProjection:
    sweep: str
    edge: str
    stored: int
    present: int
    dropped: int
    superseded: int = 0  # points of an earlier projection of the same configurations, retracted


def sweep_name(source: str, target: str) -> str:
    return f"projection-{source}-to-{target}"


def projected_label(parallelism: str, source: str, edge: str) -> str:
    """The configuration label every page shows: the parallelism, and what it is projected from."""
    band = "" if edge == "central" else f", {edge} end of the figures' range"
    return f"{parallelism} · projected from {source}{band}"


def _metrics(projected: ProjectedPoint, gpus: int) -> PointMetrics:
    point = projected.point
    tpot = 1000.0 / point.interactivity
    none = Stats.reported(None)  # a projection derives throughput and interactivity only

    return PointMetrics(
        completed=0, failed=0, duration_s=0.0, total_input_tokens=0, total_output_tokens=0, request_throughput=0.0,
        output_throughput=point.output_per_gpu * gpus, total_token_throughput=point.total_per_gpu * gpus,
        accelerators=gpus, output_throughput_per_gpu=point.output_per_gpu,
        total_token_throughput_per_gpu=point.total_per_gpu, ttft_ms=none, tpot_ms=Stats.reported(tpot), itl_ms=none,
        e2el_ms=none, client_queue_ms=none, interactivity=Stats.reported(point.interactivity),
        token_disagreement=0.0, window=MeasuredWindow(start=0.0, end=0.0, ramp_down_s=0.0, reached_target=True),
        # A model's output, not a measurement: only the figure check applies (its sources were judged).
        validity=Validity.of(judge("projected", Evidence(), ValidityThresholds())),
        peer_figures={"projection_speedup": projected.speedup,
                      "projection_source_output_tput_per_gpu": projected.source.output_per_gpu,
                      "projection_source_interactivity": projected.source.interactivity},
    )  # fmt: skip


def recipe_name(curve: Curve, projection: Projection, parallelism: str, with_workload: bool = True) -> str:
    """The projected configuration's name. The workload is part of it: projecting a chip's 8k/1k curve must not
    retract its 1k/1k projection as superseded (names before 2026-12-02 left it out: `with_workload=False`)."""
    parts = ["projected", curve.key.model, curve.key.precision, projection.target, curve.key.engine, parallelism]
    if curve.key.speculative:
        parts.append(curve.key.speculative)
    if with_workload:
        parts.append(curve.key.workload.replace("/", ""))
    if projection.edge != "central":
        parts.append(projection.edge)
    return "-".join(parts).lower()


def _identity(curve: Curve, projection: Projection, parallelism: str, members: list[ProjectedPoint]) -> RecipeIdentity:
    parameters = projection.parameters()
    snapshot: dict[str, Any] = {
        "source": "projection", "hardware": projection.target, "model": curve.key.model,
        "precision": curve.key.precision, "framework": curve.key.engine, "workload": curve.key.workload,
        **({"spec_decoding": curve.key.speculative} if curve.key.speculative else {}),
        "image": next(iter(sorted(curve.images)), None),
        "parallelism_label": projected_label(parallelism, projection.source, projection.edge),
        "projection": {
            **{name: value for name, value in parameters.items() if name not in ("fits", "kv_capacity_sequences")},
            "fit": parameters["fits"][parallelism],
            "kv_capacity_sequences": parameters["kv_capacity_sequences"].get(parallelism, [None, None]),
            "source_points": [
                {"concurrency": p.source.concurrency, "interactivity": p.source.interactivity,
                 "output_per_gpu": p.source.output_per_gpu, "point_keys": list(p.source.sources),
                 "regime": p.regime, "source_regime": p.source_regime,
                 **({} if p.prefill_gpus is None else {"prefill_gpus": p.prefill_gpus})}
                for p in members
            ],
        },
    }  # fmt: skip
    fingerprint = hashlib.sha256(json.dumps(snapshot, sort_keys=True).encode()).hexdigest()[:16]
    name = recipe_name(curve, projection, parallelism)
    return RecipeIdentity(
        fingerprint=fingerprint, name=name, path="", hardware=projection.target,
        engine_kind=curve.key.engine, workload_kind="fixed-length", snapshot=snapshot,
    )  # fmt: skip


def store_projection(
    engine: Engine, curve: Curve, projection: Projection, when: datetime | None = None
) -> StoredProjection:
    """Store every projected point of `projection` (made from `curve`) in the sweep `projection-<from>-to-<to>`."""
    sweep = sweep_name(projection.source, projection.target)
    stamp = when or datetime.now(UTC)
    stored = present = retracted = 0
    by_configuration: dict[str, list[ProjectedPoint]] = {}
    for projected in projection.points:
        by_configuration.setdefault(projected.point.configuration, []).append(projected)
    recorder = Recorder(engine, sweep)
    try:
        recorder.sync_hardware()
        for parallelism, members in sorted(by_configuration.items()):
            identity = _identity(curve, projection, parallelism, members)
            recorder.register_recipe(identity)
            # The same configuration projected before from other source points (newer measurements since, or a
            # new model version): those points are replaced, not shown beside these.
            retracted += recorder.retract_superseded(identity, "superseded: projected again from other source points")
            # Names before 2026-12-02 left the workload out, so a chip's last projected workload hid the others;
            # such a projection of this workload is superseded too.
            legacy = replace(identity, name=recipe_name(curve, projection, parallelism, with_workload=False))
            retracted += recorder.retract_superseded(legacy, "superseded: projected again from other source points")
            for projected in members:
                workload = FixedLengthPoint(
                    isl=curve.isl, osl=curve.osl, range_ratio=1.0, concurrency=projected.point.concurrency,
                    num_prompts=1, num_warmup=0, seed=0, request_timeout_s=600,
                )  # fmt: skip
                request = PointRequest(
                    point_key="projected-" + point_key(identity.fingerprint, workload, 0), repeat_index=0,
                    workload=workload,
                )  # fmt: skip
                source = (
                    f"projected from {projection.source} by the {projection.parameters()['model_version']} model "
                    f"({projection.edge} edge): bandwidth x{projection.bandwidth_ratio:.2f}, "
                    f"compute x{projection.compute_ratio:.2f}, {projected.regime}-bound on {projection.target}"
                )
                gpus = curve.gpus[parallelism]
                if recorder.point_imported(identity, request, _metrics(projected, gpus), source, stamp, "projected"):
                    stored += 1
                else:
                    present += 1
    finally:
        close_imported(recorder)
    return StoredProjection(sweep, projection.edge, stored, present, len(projection.dropped), retracted)
