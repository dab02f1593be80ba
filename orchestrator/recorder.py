"""The driver's single writer: turns runner events into database rows and artifacts.

A finished Point's per-request records are staged as Parquet on this host, then the Point row and its
artifact rows (status `pending`) are committed in one transaction, and only then is the artifact
uploaded to the store. A failed upload leaves the artifact pending (the staged file stays) for
`infersweep publish`; the database write never waits on the store.
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from db import queries
from db.lifecycle import JobState, PointState, SweepState
from db.models import ArtifactRow, PointResultRow
from db.session import open_session
from orchestrator.artifacts import ArtifactStore, content_key, sha256_of, staging_dir, store_from_environment
from orchestrator.publish import upload_artifacts
from recipes.hardware import load_hardware_registry
from recipes.loader import LoadedRecipe
from runners.job import JobEvent, PointOutcome, PointRequest
from runners.loadgen.records import FixedLengthPoint, PointMetrics, records_frame

log = logging.getLogger(__name__)


def _stage_records(outcome: PointOutcome) -> Path | None:
    """Write the Point's request records as Parquet in the staging directory (atomically)."""
    target = staging_dir() / f"records-{outcome.point_key}.parquet"
    partial = target.with_name(target.name + ".partial")
    try:
        records_frame(outcome.records).to_parquet(partial, index=False)
        os.replace(partial, target)
    except OSError as error:
        log.warning("could not stage request records of %s: %s", outcome.point_key, error)
        return None
    return target


@dataclass(frozen=True)
class RecipeIdentity:
    """What the database keeps of a recipe: native (from a LoadedRecipe) or imported (another tool's)."""

    fingerprint: str
    name: str
    path: str
    hardware: str
    engine_kind: str
    workload_kind: str
    snapshot: dict[str, Any]

    @classmethod
    def of(cls, recipe: LoadedRecipe | RecipeIdentity) -> RecipeIdentity:
        if isinstance(recipe, RecipeIdentity):
            return recipe
        return cls(
            fingerprint=recipe.fingerprint,
            name=recipe.name,
            path=recipe.path,
            hardware=recipe.recipe.hardware,
            engine_kind=recipe.recipe.engine.kind,
            workload_kind=recipe.recipe.workload.kind,
            snapshot=recipe.recipe.model_dump(mode="json"),
        )


AnyRecipe = LoadedRecipe | RecipeIdentity


class Recorder:
    def __init__(self, engine: Engine, sweep_name: str, store: ArtifactStore | None = None) -> None:
        self.engine = engine
        self.store = store or store_from_environment()
        self.session = open_session(engine)
        self._deferred = False
        self.sweep, self.resumed = queries.get_or_create_sweep(self.session, sweep_name)
        self.recipe_ids: dict[str, int] = {}

    @property
    def sweep_id(self) -> int:
        assert self.sweep.id is not None  # set by the database on insert
        return self.sweep.id

    def sync_hardware(self) -> None:
        entries = [
            (key, hw.vendor, hw.name, hw.accelerator_unit, hw.model_dump(mode="json"))
            for key, hw in load_hardware_registry().items()
        ]
        queries.upsert_hardware(self.session, entries)

    def register_recipe(self, recipe: AnyRecipe) -> int:
        loaded = RecipeIdentity.of(recipe)
        row = queries.upsert_recipe(
            self.session,
            fingerprint=loaded.fingerprint,
            name=loaded.name,
            path=loaded.path,
            hardware_key=loaded.hardware,
            engine_kind=loaded.engine_kind,
            snapshot=loaded.snapshot,
        )
        assert row.id is not None
        self.recipe_ids[loaded.fingerprint] = row.id
        return row.id

    def finished_points(self) -> set[str]:
        return queries.finished_point_keys(self.session, self.sweep_id)

    def sweep_status(self, status: SweepState, reason: str = "") -> None:
        queries.set_sweep_status(self.session, self.sweep, status, reason)

    def set_budget(self, gpu_hours: float) -> None:
        queries.set_sweep_budget(self.session, self.sweep, gpu_hours)

    def cancel_requested(self) -> bool:
        return queries.cancel_requested(self.session, self.sweep_id)

    def clean_stale_jobs(self) -> int:
        return queries.mark_interrupted_jobs(self.session, self.sweep_id)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Group the state changes made inside into one transaction (one commit instead of one each).

        Only lifecycle states wait for the commit; a Point result is always committed on its own at once
        (and takes pending states with it). A crash inside a batch loses at most those state changes,
        which the next run rebuilds (unfinished jobs are marked interrupted)."""
        self._deferred = True
        try:
            yield
        finally:
            self._deferred = False
            self.session.commit()

    def job_created(self, job_id: str, loaded: AnyRecipe, attempt: int, points: int, log_dir: str) -> None:
        queries.create_job(
            self.session, job_id, self.sweep_id, self.recipe_ids[loaded.fingerprint], attempt, points, log_dir,
            commit=not self._deferred,
        )  # fmt: skip

    def job_status(
        self, job_id: str, status: JobState, event: JobEvent | None = None, reason: str = "", host: str | None = None
    ) -> None:
        error = event.error if event is not None else None
        queries.update_job(
            self.session,
            job_id,
            status,
            sweep_id=self.sweep_id,
            reason=reason or (event.message if event is not None else ""),
            host=host,
            error_kind=error.kind if error else None,
            error_message=error.message if error else None,
            retryable=error.retryable if error else None,
            commit=not self._deferred,
        )

    def point_started(self, job_id: str, point_key: str) -> None:
        queries.record_point_transition(
            self.session, self.sweep_id, job_id, point_key, PointState.MEASURING.value, commit=not self._deferred
        )

    def point_imported(
        self, loaded: AnyRecipe, point: PointRequest, metrics: PointMetrics, source: str, measured_at: datetime
    ) -> bool:
        """Store a result measured by another tool: its own job row, origin `imported`, and its source."""
        if point.point_key in self.finished_points():
            return False
        job_id = f"import-{uuid.uuid4().hex[:12]}"
        self.job_created(job_id, loaded, attempt=1, points=1, log_dir="")
        queries.update_job(self.session, job_id, JobState.IMPORTED, reason=source)
        outcome = PointOutcome(
            point_key=point.point_key, origin="imported", metrics=metrics, records=[],
            started_at=measured_at, finished_at=measured_at,
        )  # fmt: skip
        return self.point_finished(job_id, loaded, point, outcome, source=source)

    def point_finished(
        self, job_id: str, loaded: AnyRecipe, point: PointRequest, outcome: PointOutcome, source: str | None = None
    ) -> bool:
        metrics = outcome.metrics
        staged = _stage_records(outcome) if outcome.records else None
        artifacts = [self._artifact(staged, "records", job_id, outcome.point_key)] if staged else []
        row = PointResultRow(
            sweep_id=self.sweep_id,
            job_id=job_id,
            recipe_id=self.recipe_ids[loaded.fingerprint],
            point_key=outcome.point_key,
            repeat_index=point.repeat_index,
            workload_kind=RecipeIdentity.of(loaded).workload_kind,
            isl=point.workload.isl if isinstance(point.workload, FixedLengthPoint) else None,
            osl=point.workload.osl if isinstance(point.workload, FixedLengthPoint) else None,
            concurrency=point.workload.concurrency,
            origin=outcome.origin,
            valid=metrics.validity.valid,
            validity_reasons=metrics.validity.reasons,
            completed=metrics.completed,
            failed=metrics.failed,
            duration_s=metrics.duration_s,
            request_throughput=metrics.request_throughput,
            output_throughput=metrics.output_throughput,
            total_token_throughput=metrics.total_token_throughput,
            accelerators=metrics.accelerators,
            output_throughput_per_gpu=metrics.output_throughput_per_gpu,
            total_token_throughput_per_gpu=metrics.total_token_throughput_per_gpu,
            ttft_p50_ms=metrics.ttft_ms.p50,
            ttft_p99_ms=metrics.ttft_ms.p99,
            tpot_p50_ms=metrics.tpot_ms.p50,
            tpot_p90_ms=metrics.tpot_ms.p90,
            e2el_p50_ms=metrics.e2el_ms.p50,
            interactivity_p50=metrics.interactivity.p50,
            interactivity_p90=metrics.interactivity.p90,
            metrics=metrics.model_dump(mode="json"),
            records_path=str(staged) if staged else None,
            source=source,
            started_at=outcome.started_at,
            finished_at=outcome.finished_at,
        )
        if not queries.record_point_with_artifacts(self.session, row, artifacts):
            return False
        self.upload(artifacts)
        return True

    def _artifact(self, path: Path, kind: str, job_id: str | None, point_key: str | None) -> ArtifactRow:
        digest = sha256_of(path)
        return ArtifactRow(
            sweep_id=self.sweep_id,
            job_id=job_id,
            point_key=point_key,
            kind=kind,
            key=content_key(kind, digest, "".join(path.suffixes[-1:])),
            local_path=str(path),
            sha256=digest,
            size_bytes=path.stat().st_size,
        )

    def store_file(self, path: Path, kind: str, job_id: str | None = None) -> ArtifactRow | None:
        """Register and upload a file that belongs to the sweep (an engine log, say)."""
        if not path.is_file():
            return None
        artifact = queries.add_artifact(self.session, self._artifact(path, kind, job_id, None))
        self.upload([artifact])
        return artifact

    def upload(self, artifacts: list[ArtifactRow]) -> tuple[int, int]:
        return upload_artifacts(self.session, self.store, artifacts)

    def close(self) -> None:
        self.session.close()
