"""The small database the hub's first tests used: one CPU host, one sweep, four points.

`_seed(url)` writes a measured valid point (c=1), a measured invalid one (c=2, error rate 50 %), a
simulated one (c=4) and a dry run (c=8); with `agentic=True` also a measured agentic replay point (c=3,
realized hit rate 0.8 of a theoretical 0.9); with `first_only=True` only the first (the job then has
recorded 1 of its 3 planned points). The browser test and the Pareto explorer's tests use it as the "one
hardware only" database, the Runs page's tests as a sweep with one job.
"""

from __future__ import annotations

from datetime import UTC, datetime

from db import recording
from db.models import PointResultRow
from db.session import make_engine, migrate, open_session


def _seed(url: str, agentic: bool = False, first_only: bool = False) -> None:
    engine = make_engine(url)
    migrate(engine)
    now = datetime.now(UTC)
    with open_session(engine) as session:
        sweep, _ = recording.get_or_create_sweep(session, "nightly")
        recipe = recording.upsert_recipe(
            session, "fp1", "tiny", "tiny.yaml", "cpu-local", "vllm", {"schema_version": 1}
        )
        recording.create_job(session, "job-1", sweep.id, recipe.id, 1, 3, "")
        rows = [
            ("a", "measured", 1, True), ("b", "measured", 2, False), ("c", "simulated", 4, True),
            ("e", "dry-run", 8, True),
        ]  # fmt: skip
        if agentic:
            rows.append(("d", "measured", 3, True))
        if first_only:
            rows = rows[:1]
        for key, origin, concurrency, valid in rows:
            replay = key == "d"
            recording.record_point(
                session,
                PointResultRow(
                    sweep_id=sweep.id, job_id="job-1", recipe_id=recipe.id, point_key=key, repeat_index=0,
                    workload_kind="agentic-replay" if replay else "fixed-length", isl=None if replay else 128,
                    osl=None if replay else 16, concurrency=concurrency, origin=origin, valid=valid,
                    validity_reasons=[] if valid else ["error rate 50.0% above 10%"], completed=10, failed=0,
                    duration_s=1.0, request_throughput=1.0, output_throughput=100.0 * concurrency,
                    total_token_throughput=1000.0, accelerators=1, output_throughput_per_gpu=100.0 * concurrency,
                    total_token_throughput_per_gpu=1000.0, ttft_p50_ms=10.0, tpot_p50_ms=2.0, interactivity_p50=500.0,
                    metrics={"replay": {"realized_hit_rate": 0.8, "theoretical_hit_rate": 0.9}} if replay else {},
                    started_at=now, finished_at=now,
                ),
            )  # fmt: skip
    engine.dispose()
