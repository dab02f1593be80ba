"""Orchestrator overhead: 1,000 no-op jobs through the scheduler on a local Ray cluster.

Each job goes the whole way a real one does (queued in the driver, submitted when its pool has a
slot, a Ray generator task, events streamed back, every state change written to SQL), with the
`noop` runner behind it instead of an engine. Target: at least 100 jobs/s on this machine.

Peer: the same number of bare Ray generator tasks (submit, stream two events, done) with the same
concurrency, no database: the floor our scheduler adds its bookkeeping to. Both run after a warm-up
that starts Ray's worker processes (one per slot, about a second each on this machine).

Run: .venv/bin/python -m benchmarks.dispatch_overhead [--jobs 1000] [--slots 8]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

TARGET_JOBS_PER_S = 100.0


def _recipes(count: int, prefix: str = "noop") -> list[object]:
    from recipes.loader import parse_recipe

    base = {
        "hardware": "cpu-local",
        "model": {"name": "none", "source": {"kind": "generated", "preset": "tiny-llama"}},
        "engine": {"kind": "simulated", "environment": {"kind": "project"}, "max_model_len": 4096},
        "precision": "bf16",
        "runner": {"kind": "noop"},
        "workload": {"kind": "fixed-length", "sequences": [{"isl": 128, "osl": 8}], "concurrency": [1]},
    }
    return [parse_recipe({**base, "name": f"{prefix}-{index:05d}"}, f"<generated {index}>") for index in range(count)]


def ours(jobs: int, slots: int) -> tuple[float, int]:
    """Seconds for `jobs` no-op jobs through SweepRunner, and the state transitions it wrote."""
    import ray
    from rich.console import Console

    from db import reads
    from db.models import stored_id
    from db.session import make_engine, open_session
    from orchestrator.sweep import SweepOptions, SweepRunner

    quiet = Console(file=open(os.devnull, "w"))  # noqa: SIM115 - lives as long as the process
    ray.init(resources={"pool:cpu-local": slots}, include_dashboard=False, configure_logging=False, log_to_driver=False)
    try:
        # Warm up: Ray starts a worker process per slot on first use (about a second each here).
        SweepRunner(SweepOptions(name="dispatch-warmup"), quiet).run(_recipes(4 * slots, "warmup"))  # type: ignore[arg-type]  # LoadedRecipe stand-ins built for the benchmark
        runner = SweepRunner(SweepOptions(name="dispatch-overhead"), quiet)
        recipes = _recipes(jobs)
        started = time.perf_counter()
        summary = runner.run(recipes)  # type: ignore[arg-type]  # LoadedRecipe stand-ins built for the benchmark
        elapsed = time.perf_counter() - started
    finally:
        ray.shutdown()
    if summary.failures:
        raise SystemExit(f"{len(summary.failures)} job(s) failed: {summary.failures[0].message}")
    with open_session(make_engine()) as session:
        sweep = reads.sweep_by_name(session, "dispatch-overhead")
        assert sweep is not None
        transitions = len(reads.transitions_of_sweep(session, stored_id(sweep)))
    return elapsed, transitions


def bare_ray(jobs: int, slots: int) -> float:
    """Seconds for `jobs` bare Ray generator tasks, at most `slots` in flight."""
    import ray

    @ray.remote(num_cpus=0, max_retries=0)
    def job(index: int) -> Iterator[str]:
        yield f"placed {index}"
        yield f"finished {index}"

    def run(count: int) -> float:
        started = time.perf_counter()
        in_flight: list[ray.ObjectRefGenerator] = []
        for index in range(count):
            in_flight.append(job.options(resources={"slot": 1}).remote(index))
            if len(in_flight) >= slots:
                for reference in in_flight.pop(0):
                    ray.get(reference)
        for generator in in_flight:
            for reference in generator:
                ray.get(reference)
        return time.perf_counter() - started

    ray.init(resources={"slot": slots}, include_dashboard=False, configure_logging=False, log_to_driver=False)
    try:
        run(4 * slots)  # the same warm-up as ours
        return run(jobs)
    finally:
        ray.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--slots", type=int, default=8, help="Jobs in flight at once (the pool's slots).")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        os.environ["INFERSWEEP_HOME"] = home  # a fresh SQLite database, logs and staging
        os.environ.pop("INFERSWEEP_DATABASE_URL", None)
        elapsed, transitions = ours(args.jobs, args.slots)
        database = Path(home) / "infersweep.db"
        size = database.stat().st_size if database.exists() else 0
    peer = bare_ray(args.jobs, args.slots)
    rate = args.jobs / elapsed
    verdict = "met" if rate >= TARGET_JOBS_PER_S else "NOT met"
    print(f"no-op jobs: {args.jobs}, pool slots: {args.slots}, database: SQLite ({size / 1e6:.1f} MB)")
    print(f"ours:     {elapsed:6.2f} s  {rate:7.1f} jobs/s  (target >= {TARGET_JOBS_PER_S:g}: {verdict})")
    print(f"          {transitions} state transitions written: {transitions / elapsed:7.1f} writes/s")
    print(f"bare Ray: {peer:6.2f} s  {args.jobs / peer:7.1f} tasks/s (no bookkeeping)")
    print(f"ratio ours/bare Ray throughput: {peer / elapsed:.2f}")


if __name__ == "__main__":
    main()
