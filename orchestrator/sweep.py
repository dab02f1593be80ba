"""Sweep lifecycle: plan, skip what is done, dispatch jobs, persist every event, retry infra faults.

Resuming is the default: a sweep name identifies the run; Points already recorded under it are
skipped. A crash or Ctrl-C loses nothing that finished, because each Point is committed as it arrives.
"""

from __future__ import annotations

import queue
import signal
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from db.session import make_engine, migrate
from orchestrator.dispatch import Dispatcher
from orchestrator.plan import plan_jobs
from orchestrator.recorder import Recorder
from recipes.loader import LoadedRecipe
from runners.job import JobEvent, JobSpec, PointRequest
from runners.paths import data_dir
from runners.process import reap_orphaned_engines, running_engines


def _raise_keyboard_interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


@dataclass
class SweepOptions:
    name: str
    max_attempts: int = 2
    ray_address: str | None = None
    database_url: str | None = None


@dataclass
class JobFailure:
    recipe: str
    job_id: str
    attempt: int
    kind: str
    message: str
    retryable: bool


@dataclass
class SweepSummary:
    sweep: str
    resumed: bool
    skipped_points: int = 0
    recorded_points: int = 0
    failures: list[JobFailure] = field(default_factory=list)
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        return not self.failures and not self.interrupted


@dataclass
class _ActiveJob:
    spec: JobSpec
    recipe: LoadedRecipe
    attempt: int
    points: dict[str, PointRequest]
    progress_task: int
    last_error: JobEvent | None = None
    finished: bool = False


class SweepRunner:
    def __init__(self, options: SweepOptions, console: Console | None = None) -> None:
        self.options = options
        self.console = console or Console()
        self.engine = make_engine(options.database_url)
        migrate(self.engine)
        self.recorder = Recorder(self.engine, options.name)
        self.dispatcher = Dispatcher(options.ray_address)
        self.active: dict[str, _ActiveJob] = {}

    def run(self, recipes: list[LoadedRecipe]) -> SweepSummary:
        summary = SweepSummary(sweep=self.options.name, resumed=self.recorder.resumed)
        self.recorder.sync_hardware()
        stale = self.recorder.clean_stale_jobs()
        if stale:
            self.console.print(f"[yellow]{stale} job(s) of an earlier run were left unfinished; marked interrupted")
        for loaded in recipes:
            self.recorder.register_recipe(loaded)
        done = self.recorder.finished_points()
        work: list[tuple[LoadedRecipe, list[PointRequest]]] = []
        for planned in plan_jobs(recipes):
            remaining = [point for point in planned.points if point.point_key not in done]
            summary.skipped_points += len(planned.points) - len(remaining)
            if remaining:
                work.append((planned.recipe, remaining))
        if summary.skipped_points:
            self.console.print(
                f"Resuming sweep [bold]{self.options.name}[/]: skipping {summary.skipped_points} finished point(s)"
            )
        if not work:
            self.console.print(f"Sweep [bold]{self.options.name}[/]: nothing left to measure")
            self.recorder.sweep_status("finished")
            return summary

        self.recorder.sweep_status("running")
        progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=self.console,
        )  # fmt: skip
        try:
            with progress:
                self.dispatcher.start()
                # After ray.init, which installs its own SIGTERM handler (exit at once): a scheduler's
                # SIGTERM (cron, systemd, a CI timeout) must stop the sweep as cleanly as Ctrl-C does.
                signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
                for loaded, points in work:
                    self._submit(loaded, points, attempt=1, progress=progress, summary=summary)
                self._drain(progress, summary)
        except KeyboardInterrupt:
            summary.interrupted = True
            self.console.print("[yellow]Interrupted: stopping jobs and their engines (finished points are kept)...")
            self.dispatcher.cancel_all()
            # Give cancelled runners time to stop their engines gracefully before Ray goes away.
            deadline = time.monotonic() + 30
            while running_engines() and time.monotonic() < deadline:
                time.sleep(0.2)
            for job in self.active.values():
                if not job.finished:
                    self.recorder.job_status(job.spec.job_id, "interrupted")
            self.recorder.sweep_status("interrupted")
        finally:
            self.dispatcher.shutdown()
            self.recorder.close()
            if summary.interrupted:
                # The Ray workers that owned local engines are gone now: stop anything they left running.
                reap_orphaned_engines(log=lambda line: self.console.print(f"[yellow]{line}"))
        if not summary.interrupted:
            self.recorder = Recorder(self.engine, self.options.name)
            self.recorder.sweep_status("failed" if summary.failures else "finished")
            self.recorder.close()
        return summary

    def _submit(
        self, loaded: LoadedRecipe, points: list[PointRequest], attempt: int, progress: Progress, summary: SweepSummary
    ) -> None:
        job_id = f"{loaded.name}-{uuid.uuid4().hex[:8]}"
        log_dir = data_dir() / "logs" / self.options.name / job_id
        spec = JobSpec(
            job_id=job_id, sweep=self.options.name, recipe=loaded.recipe, points=points, log_dir=str(log_dir)
        )
        self.recorder.job_created(job_id, loaded, attempt, len(points), str(log_dir))
        label = f"{loaded.name} (attempt {attempt})" if attempt > 1 else loaded.name
        task = progress.add_task(f"{label}: queued", total=len(points))
        self.active[job_id] = _ActiveJob(spec, loaded, attempt, {p.point_key: p for p in points}, task)
        capacity = self.dispatcher.pool_capacity(loaded.recipe.hardware)
        if capacity < 1:
            # Ray would wait forever for a resource nobody offers: refuse now, with the reason.
            message = (
                f"hardware: no node of the Ray cluster offers pool {loaded.recipe.hardware!r} "
                f"(recipe {loaded.path}); start a host with that pool or run against a cluster that has one"
            )
            event = JobEvent(kind="job_failed", job_id=job_id, message=message)
            self.recorder.job_status(job_id, "failed", event)
            summary.failures.append(JobFailure(loaded.name, job_id, attempt, "NoCapacity", message, False))
            self.active[job_id].finished = True
            progress.update(task, description=f"{label}: [red]no capacity")
            return
        self.recorder.job_status(job_id, "running")
        self.dispatcher.submit(spec)

    def _drain(self, progress: Progress, summary: SweepSummary) -> None:
        while any(not job.finished for job in self.active.values()):
            try:
                delivery = self.dispatcher.deliveries.get(timeout=0.5)
            except queue.Empty:
                continue  # wake up regularly so Ctrl-C is handled promptly
            job = self.active[delivery.job_id]
            label = job.recipe.name
            event = delivery.event
            if event is None:
                self._stream_ended(job, progress, summary)
                continue
            if event.kind == "engine_preparing":
                progress.update(job.progress_task, description=f"{label}: preparing {event.message}")
            elif event.kind == "engine_launching":
                progress.update(job.progress_task, description=f"{label}: launching engine ({event.message})")
            elif event.kind == "engine_ready":
                progress.update(job.progress_task, description=f"{label}: engine {event.message}")
            elif event.kind == "point_started" and event.point_key:
                progress.update(job.progress_task, description=f"{label}: {event.point_key.rsplit('-', 1)[0]}")
            elif event.kind == "point_finished" and event.outcome is not None:
                point = job.points[event.outcome.point_key]
                if self.recorder.point_finished(job.spec.job_id, job.recipe, point, event.outcome):
                    summary.recorded_points += 1
                progress.advance(job.progress_task)
            elif event.kind == "job_failed":
                job.last_error = event
            elif event.kind == "job_finished":
                self.recorder.job_status(job.spec.job_id, "succeeded")
                self._store_engine_log(job)
                progress.update(job.progress_task, description=f"{label}: [green]done")
                job.finished = True

    def _store_engine_log(self, job: _ActiveJob) -> None:
        self.recorder.store_file(Path(job.spec.log_dir) / "engine.log", "engine-log", job.spec.job_id)

    def _stream_ended(self, job: _ActiveJob, progress: Progress, summary: SweepSummary) -> None:
        if job.finished:
            return
        job.finished = True
        self._store_engine_log(job)  # the log of a failed job is what explains it
        event = job.last_error or JobEvent(kind="job_failed", job_id=job.spec.job_id, message="job stream ended early")
        self.recorder.job_status(job.spec.job_id, "failed", event)
        error = event.error
        retryable = bool(error and error.retryable)
        done = self.recorder.finished_points()
        remaining = [point for key, point in job.points.items() if key not in done]
        if retryable and remaining and job.attempt < self.options.max_attempts:
            progress.update(job.progress_task, description=f"{job.recipe.name}: [yellow]retrying ({error.kind})")
            self._submit(job.recipe, remaining, job.attempt + 1, progress, summary)
            return
        progress.update(job.progress_task, description=f"{job.recipe.name}: [red]failed")
        summary.failures.append(
            JobFailure(
                job.recipe.name,
                job.spec.job_id,
                job.attempt,
                error.kind if error else "Unknown",
                event.message,
                retryable,
            )
        )
