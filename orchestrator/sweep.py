"""Sweep lifecycle: plan, skip what is done, queue and dispatch jobs, persist every event, retry infra faults.

Resuming is the default: a sweep name identifies the run; Points already recorded under it are
skipped. A crash or Ctrl-C loses nothing that finished, because each Point is committed as it arrives.

The driver keeps the queue itself and submits a job only when its hardware pool has a free slot, so
a job's state says truthfully whether it is waiting (`queued`) or running somewhere (`placed` and
after). Every change of state is written with its reason (db/lifecycle.py).
"""

from __future__ import annotations

import signal
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from db.lifecycle import JobState, SweepState
from db.session import make_engine, migrate
from orchestrator.dispatch import Dispatcher
from orchestrator.estimate import estimate_job
from orchestrator.lease import LEASE_TTL_S, SweepLease
from orchestrator.plan import plan_jobs
from orchestrator.progress import SweepProgress
from orchestrator.recorder import DATABASE_OUTAGE_S, Recorder
from recipes.errors import ConfigurationError
from recipes.loader import LoadedRecipe
from runners.fleet.inventory import Inventory, Target
from runners.host.containers import reap_orphaned_containers
from runners.host.paths import data_dir
from runners.host.process import reap_orphaned_engines, running_engines
from runners.job import ErrorInfo, JobEvent, JobSpec, PointRequest
from runners.registry import runner_class


class BudgetError(ConfigurationError):
    """The sweep's estimated accelerator-hours exceed its budget: nothing was started."""


def _raise_keyboard_interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


# Events that move a job forward, and the state each one means.
EVENT_STATES = {
    "job_placed": JobState.PLACED,
    "engine_preparing": JobState.PREPARING,
    "engine_launching": JobState.LAUNCHING,
    "engine_ready": JobState.WARMING,
    "point_started": JobState.MEASURING,
    "job_collecting": JobState.COLLECTING,
}
CANCEL_POLL_S = 1.0


def _wait_for_local_engines(limit_s: float) -> None:
    """Wait (bounded) until engines started on this host by this orchestrator's jobs have stopped."""
    deadline = time.monotonic() + limit_s
    while running_engines() and time.monotonic() < deadline:
        time.sleep(0.2)


PLACEMENT_TIMEOUT_S = 300.0  # starting a Ray worker takes seconds; a node's runtime environment setup, minutes


@dataclass
class SweepOptions:
    name: str
    max_attempts: int = 2
    ray_address: str | None = None
    database_url: str | None = None
    inventory: Inventory = field(default_factory=Inventory)
    retry_backoff_s: float = 2.0  # first retry waits this long, each further one twice as long
    gpu_hour_budget: float | None = None  # refuse to start when the estimated accelerator-hours exceed it
    dry_run: bool = False  # stand-in recipes: results are labelled origin 'dry-run'
    # Text files stored with each job of a recipe (by recipe name), e.g. a dry run's target command lines.
    job_attachments: dict[str, dict[str, str]] = field(default_factory=dict)
    database_outage_s: float = DATABASE_OUTAGE_S  # how long a lost database may stay away before the sweep stops
    wait_for_lease: bool = False  # another driver runs the sweep: wait for it to end instead of refusing
    # How long a job may wait to be placed on a live node of its pool: queued while no live node offers the pool (its
    # node was lost), or submitted and not yet running. Past it the job fails with an infrastructure error naming the
    # pool, never waits on forever. A busy pool does not count: a job behind others waits for a slot, not a node.
    placement_timeout_s: float = PLACEMENT_TIMEOUT_S


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
    cancelled: bool = False

    @property
    def ok(self) -> bool:
        return not self.failures and not self.interrupted and not self.cancelled


@dataclass
class _Attempt:
    """One attempt of a job: what to run and what earlier attempts learned about where not to run it."""

    recipe: LoadedRecipe
    points: list[PointRequest]
    attempt: int
    avoid_nodes: list[str] = field(default_factory=list)
    avoid_targets: list[str] = field(default_factory=list)
    not_before: float = 0.0  # monotonic time before which a retry must not start (backoff)


@dataclass
class _ActiveJob:
    spec: JobSpec
    plan: _Attempt
    points: dict[str, PointRequest]
    label: str
    submitted: bool = False
    submitted_at: float | None = None
    unplaceable_since: float | None = None  # waiting while no live node offered its pool, since then
    placed_at: float | None = None
    point_started_at: float | None = None
    node_id: str | None = None
    target: str | None = None
    last_error: JobEvent | None = None
    timeout: ErrorInfo | None = None
    finished: bool = False


class SweepRunner:
    def __init__(self, options: SweepOptions, console: Console | None = None) -> None:
        self.options = options
        self.console = console or Console()
        self.engine = make_engine(options.database_url)
        migrate(self.engine)
        # Before anything is written or started: a second driver of this sweep refuses here (or waits).
        self.lease = SweepLease(self.engine, options.name, ttl_s=max(LEASE_TTL_S, 2 * options.database_outage_s))
        self.lease.acquire(wait=options.wait_for_lease, log=lambda line: self.console.print(f"[yellow]{line}"))
        try:
            self.recorder = Recorder(self.engine, options.name, outage_s=options.database_outage_s)
        except BaseException:
            self.lease.release()
            raise
        self.dispatcher = Dispatcher(options.ray_address, extra_slots=options.inventory.slots())
        self.active: dict[str, _ActiveJob] = {}
        self.waiting: dict[str, deque[_ActiveJob]] = {}  # per hardware pool, in submission order
        self.in_flight: dict[str, int] = {}  # submitted and not yet ended, per hardware pool
        self.running: dict[str, _ActiveJob] = {}  # submitted jobs whose Ray task has not ended
        self._unfinished = 0
        self._next_cancel_poll = 0.0

    def run(self, recipes: list[LoadedRecipe]) -> SweepSummary:
        try:
            return self._run(recipes)
        finally:
            self.lease.release()

    def _run(self, recipes: list[LoadedRecipe]) -> SweepSummary:
        summary = SweepSummary(sweep=self.options.name, resumed=self.recorder.resumed)
        self.recorder.sync_hardware()
        stale = self.recorder.clean_stale_jobs()
        if stale:
            self.console.print(f"[yellow]{stale} job(s) of an earlier run were left unfinished; marked interrupted")
        with self.recorder.batch():  # one commit for all recipes: sweeps of thousands of recipes exist
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
        budget = self.options.gpu_hour_budget
        if budget is not None and work:
            estimated = sum(estimate_job(loaded, points).accelerator_hours for loaded, points in work)
            self.recorder.set_budget(budget)
            if estimated > budget:
                error = BudgetError(
                    f"--gpu-hour-budget: got {budget:g}; the {len(work)} job(s) left are estimated at "
                    f"{estimated:.2f} accelerator-hours (orchestrator/estimate.py states the assumptions); "
                    "raise the budget or run fewer recipes"
                )
                self.recorder.sweep_status(SweepState.FAILED, str(error))
                self.recorder.close()
                raise error
        if not work:
            self.console.print(f"Sweep [bold]{self.options.name}[/]: nothing left to measure")
            self.recorder.sweep_status(SweepState.FINISHED, "nothing left to measure")
            return summary

        self.recorder.sweep_status(SweepState.RUNNING, f"{len(work)} job(s) to run")
        progress = SweepProgress(self.console, len(work))
        try:
            with progress:
                self.dispatcher.start()
                # After ray.init, which installs its own SIGTERM handler (exit at once): a scheduler's
                # SIGTERM (cron, systemd, a CI timeout) must stop the sweep as cleanly as Ctrl-C does.
                signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
                with self.recorder.batch():
                    for loaded, points in work:
                        self._enqueue(_Attempt(loaded, points, attempt=1), progress, summary)
                self._drain(progress, summary)
        except KeyboardInterrupt:
            summary.interrupted = True
            self.recorder.hold_uploads()
            self.console.print("[yellow]Interrupted: stopping jobs and their engines (finished points are kept, "
                               "their uploads left pending for `infersweep publish`)...")  # fmt: skip
            self._stop_everything(JobState.INTERRUPTED, "the orchestrator was stopped (Ctrl-C or SIGTERM)")
            self.recorder.sweep_status(SweepState.INTERRUPTED, "the orchestrator was stopped")
        finally:
            # Cancelled jobs (Ctrl-C, `cancel`, a deadline) stop their engines in their own time: give
            # them that time before Ray's workers go away, then stop whatever they left running.
            _wait_for_local_engines(30.0)
            self.dispatcher.shutdown()
            self.recorder.close()
            reap_orphaned_engines(log=lambda line: self.console.print(f"[yellow]{line}"))
            # Containers of this host's dead workers whose pidfile is elsewhere (another INFERSWEEP_HOME).
            reap_orphaned_containers(log=lambda line: self.console.print(f"[yellow]{line}"))
        if not summary.interrupted and not summary.cancelled:
            self.recorder = Recorder(self.engine, self.options.name, outage_s=self.options.database_outage_s)
            failed = len(summary.failures)
            self.recorder.sweep_status(
                SweepState.FAILED if failed else SweepState.FINISHED,
                f"{failed} job(s) failed" if failed else f"{summary.recorded_points} point(s) recorded",
            )
            self.recorder.close()
        return summary

    def _stop_everything(self, state: JobState, reason: str) -> None:
        for delivery in self.dispatcher.cancel_all():
            event = delivery.event
            if event is not None and event.kind == "point_finished" and event.outcome is not None:
                # A Point that finished while its job was being stopped is a result: keep it.
                job = self.active[delivery.job_id]
                self.recorder.point_finished(
                    job.spec.job_id, job.plan.recipe, job.points[event.outcome.point_key], event.outcome
                )
        _wait_for_local_engines(30.0)
        for job in self.active.values():
            if not job.finished:
                self._mark_finished(job)
                self.recorder.job_status(job.spec.job_id, state, reason=reason)

    def _mark_finished(self, job: _ActiveJob) -> None:
        if not job.finished:
            job.finished = True
            self._unfinished -= 1

    # --- queueing ---------------------------------------------------------------------------------

    def _enqueue(self, plan: _Attempt, progress: SweepProgress, summary: SweepSummary) -> None:
        loaded = plan.recipe
        job_id = f"{loaded.name}-{uuid.uuid4().hex[:8]}"
        log_dir = data_dir() / "logs" / self.options.name / job_id
        runner_kind = loaded.recipe.runner.kind
        targets = self.options.inventory.for_job(runner_kind, loaded.recipe.hardware)
        spec = JobSpec(
            job_id=job_id, sweep=self.options.name, recipe=loaded.recipe, points=plan.points, log_dir=str(log_dir),
            targets=targets, avoid_targets=plan.avoid_targets, dry_run=self.options.dry_run,
        )  # fmt: skip
        self.recorder.job_created(job_id, loaded, plan.attempt, len(plan.points), str(log_dir))
        for kind, text in self.options.job_attachments.get(loaded.name, {}).items():
            log_dir.mkdir(parents=True, exist_ok=True)
            attachment = log_dir / f"{kind}.txt"
            attachment.write_text(text, encoding="utf-8")
            self.recorder.store_file(attachment, kind, job_id)
        label = f"{loaded.name} (attempt {plan.attempt})" if plan.attempt > 1 else loaded.name
        progress.queued(job_id, label, len(plan.points))
        job = _ActiveJob(spec, plan, {p.point_key: p for p in plan.points}, label)
        self.active[job_id] = job
        self._unfinished += 1
        problem = self._cannot_run(loaded, targets, retry=plan.attempt > 1)
        if problem is not None:
            error = ErrorInfo(kind=problem[0], message=problem[1], retryable=False)
            self._fail_unstarted(job, error, progress, summary)
            return
        self.waiting.setdefault(loaded.recipe.hardware, deque()).append(job)

    def _fail_unstarted(
        self, job: _ActiveJob, error: ErrorInfo, progress: SweepProgress, summary: SweepSummary
    ) -> None:
        """A job that never started fails with `error`, recorded and counted, its slot never taken."""
        job_id = job.spec.job_id
        event = JobEvent(kind="job_failed", job_id=job_id, message=error.message, error=error)
        self.recorder.job_status(job_id, JobState.FAILED, event)
        summary.failures.append(JobFailure(job.plan.recipe.name, job_id, job.plan.attempt, error.kind, error.message,
                                           error.retryable))  # fmt: skip
        self._mark_finished(job)
        progress.ended(job_id, f"{job.label}: [red]{error.kind}", ok=False, ran=False)

    def _placement_timeout(self, hardware: str, waited_s: float, why: str) -> ErrorInfo:
        deadline = self.options.placement_timeout_s
        return ErrorInfo(
            kind="PlacementTimeout", retryable=True,
            message=f"pool {hardware!r}: {why} for {waited_s:.0f} s (placement deadline {deadline:g} s): a node of "
            "the pool was lost or cannot start workers; start a host with that pool, then run the sweep again to "
            "resume",
        )  # fmt: skip

    def _check_placement(self, progress: SweepProgress, summary: SweepSummary) -> None:
        """Fail jobs that cannot be placed on a live node within the deadline: waiting while no live node offers
        their pool, or submitted and never placed (Ray keeps such a task pending forever, and the job "queued")."""
        now, limit = time.monotonic(), self.options.placement_timeout_s
        for hardware, waiting in self.waiting.items():
            if not waiting:
                continue
            if self.dispatcher.pool_capacity(hardware) >= 1:
                for job in waiting:
                    job.unplaceable_since = None
                continue
            expired = []
            for job in waiting:
                job.unplaceable_since = job.unplaceable_since or now
                if now - job.unplaceable_since > limit:
                    expired.append(job)
            for job in expired:
                waiting.remove(job)
                why = "no live node of the Ray cluster offers it"
                self._fail_unstarted(job, self._placement_timeout(hardware, now - (job.unplaceable_since or now), why),
                                     progress, summary)  # fmt: skip
        for job in list(self.running.values()):
            if job.finished or job.placed_at is not None or job.submitted_at is None or job.timeout is not None:
                continue
            if now - job.submitted_at > limit:
                hardware = job.spec.recipe.hardware
                job.timeout = self._placement_timeout(hardware, now - job.submitted_at, "the job was never placed")
                self.dispatcher.forget(job.spec.job_id)  # cancelled; its stream may never end (no node runs it)
                self._stream_ended(job, progress, summary)

    def _cannot_run(self, loaded: LoadedRecipe, targets: list[Target], retry: bool = False) -> tuple[str, str] | None:
        """Why this job can never start here, checked before anything is reserved; None when it can."""
        recipe = loaded.recipe
        limits = runner_class(recipe.runner.kind).limitations(recipe, targets)
        if limits:
            reasons = "\n  ".join(limits)
            return "RunnerLimitation", f"{loaded.path}: runner kind {recipe.runner.kind!r} cannot run it:\n  {reasons}"
        if recipe.runner.kind in {"ssh", "tpu-vm", "slurm"} and not targets:
            return "NoCapacity", (
                f"{loaded.path}: runner.kind {recipe.runner.kind!r} with hardware {recipe.hardware!r}: the inventory "
                f"has no {recipe.runner.kind} target for that hardware (pass --inventory or set INFERSWEEP_INVENTORY)"
            )
        if self.dispatcher.pool_capacity(recipe.hardware) < 1 and not retry:
            # Ray would wait forever for a resource nobody offers: refuse now, with the reason. A retry's pool was there
            # for its first attempt (a node was lost): it waits for a live node up to the placement deadline.
            return "NoCapacity", (
                f"hardware: no node of the Ray cluster offers pool {recipe.hardware!r} "
                f"(recipe {loaded.path}); start a host with that pool or run against a cluster that has one"
            )
        return None

    def _submit_ready(self, progress: SweepProgress) -> None:
        """Submit waiting jobs whose pool has a free slot and whose backoff has passed, in order per pool."""
        now = time.monotonic()
        for hardware, waiting in self.waiting.items():
            free = self.dispatcher.pool_capacity(hardware) - self.in_flight.get(hardware, 0)
            if free < 1 or not waiting:
                continue
            held: deque[_ActiveJob] = deque()
            while waiting and free >= 1:
                job = waiting.popleft()
                if job.plan.not_before > now:
                    held.append(job)  # a retry in its backoff keeps its place; later jobs may go first
                    continue
                free -= 1
                self.in_flight[hardware] = self.in_flight.get(hardware, 0) + 1
                self.running[job.spec.job_id] = job
                job.submitted, job.submitted_at = True, now
                self.dispatcher.submit(job.spec, avoid_nodes=job.plan.avoid_nodes)
                progress.submitted(job.spec.job_id, job.label)
            waiting.extendleft(reversed(held))

    # --- events -----------------------------------------------------------------------------------

    def _drain(self, progress: SweepProgress, summary: SweepSummary) -> None:
        while self._unfinished > 0:
            self.lease.raise_if_lost()
            self._submit_ready(progress)
            self._check_deadlines()
            self._check_placement(progress, summary)
            if self._cancel_requested():
                summary.cancelled = True
                self.console.print("[yellow]Cancel requested: stopping jobs and their engines...")
                self.waiting.clear()
                self._stop_everything(JobState.CANCELLED, "infersweep cancel")
                self.recorder.sweep_status(SweepState.CANCELLED, "infersweep cancel")
                return
            # Wake up at least every 0.2 s so Ctrl-C, cancels and deadlines are handled promptly. What has
            # arrived is handled together, its state changes in one transaction.
            deliveries = self.dispatcher.poll(timeout_s=0.2)
            with self.recorder.batch():
                for delivery in deliveries:
                    job = self.active[delivery.job_id]
                    if delivery.event is None:
                        self._stream_ended(job, progress, summary)
                    else:
                        self._on_event(job, delivery.event, progress, summary)

    def _cancel_requested(self) -> bool:
        now = time.monotonic()
        if now < self._next_cancel_poll:
            return False
        self._next_cancel_poll = now + CANCEL_POLL_S
        return self.recorder.cancel_requested()

    def _check_deadlines(self) -> None:
        now = time.monotonic()
        for job in self.running.values():
            if job.finished or job.timeout is not None or job.placed_at is None:
                continue
            limits = job.spec.recipe.runner
            if now - job.placed_at > limits.job_timeout_s:
                job.timeout = ErrorInfo(
                    kind="JobTimeout", retryable=False,
                    message=f"runner.job_timeout_s: the job ran longer than {limits.job_timeout_s:g} s; stopped",
                )  # fmt: skip
            elif job.point_started_at is not None and now - job.point_started_at > limits.point_timeout_s:
                # A Point that never ends is a wedged engine or host, not a property of the configuration.
                job.timeout = ErrorInfo(
                    kind="PointTimeout", retryable=True,
                    message=f"runner.point_timeout_s: a Point ran longer than {limits.point_timeout_s:g} s; stopped",
                )  # fmt: skip
            if job.timeout is not None:
                self.dispatcher.cancel(job.spec.job_id)

    def _on_event(self, job: _ActiveJob, event: JobEvent, progress: SweepProgress, summary: SweepSummary) -> None:
        label = job.label
        job_id = job.spec.job_id
        state = EVENT_STATES.get(event.kind)
        if event.kind == "job_placed":
            job.placed_at = job.placed_at or time.monotonic()
            job.node_id = event.node_id or job.node_id
            job.target = event.target or job.target
            self.recorder.job_status(job_id, JobState.PLACED, reason=event.message, host=event.message)
            progress.describe(job_id, f"{label}: placed on {event.message}")
            return
        if event.kind == "point_started" and event.point_key:
            job.point_started_at = time.monotonic()
            self.recorder.job_status(job_id, JobState.MEASURING, reason=event.point_key)
            self.recorder.point_started(job_id, event.point_key)
            progress.describe(job_id, f"{label}: {event.point_key.rsplit('-', 1)[0]}")
        elif state is not None:
            self.recorder.job_status(job_id, state, event, reason=event.message)
            progress.describe(job_id, f"{label}: {state.value} {event.message}")
        elif event.kind == "point_finished" and event.outcome is not None:
            job.point_started_at = None
            point = job.points[event.outcome.point_key]
            if self.recorder.point_finished(job_id, job.plan.recipe, point, event.outcome):
                summary.recorded_points += 1
            progress.advance(job_id)
        elif event.kind == "job_failed":
            job.last_error = event
        elif event.kind == "job_finished":
            self._store_engine_log(job)
            self.recorder.job_status(job_id, JobState.SUCCEEDED, reason="all points measured")
            progress.ended(job_id, f"{label}: [green]done", ok=True)
            self._mark_finished(job)

    def _store_engine_log(self, job: _ActiveJob) -> None:
        # engine.log, and engine-<role>-<index>.log of each further process of a multi-process engine.
        for log in sorted(Path(job.spec.log_dir).glob("engine*.log")):
            self.recorder.store_file(log, "engine-log", job.spec.job_id)

    def _stream_ended(self, job: _ActiveJob, progress: SweepProgress, summary: SweepSummary) -> None:
        if self.running.pop(job.spec.job_id, None) is not None:
            hardware = job.spec.recipe.hardware
            self.in_flight[hardware] -= 1  # the Ray task has ended: its pool slot is free again
        if job.finished:
            return
        self._mark_finished(job)
        self._store_engine_log(job)  # the log of a failed job is what explains it
        job_id = job.spec.job_id
        if job.timeout is not None:
            event = JobEvent(kind="job_failed", job_id=job_id, message=job.timeout.message, error=job.timeout)
        else:
            event = job.last_error or JobEvent(kind="job_failed", job_id=job_id, message="job stream ended early")
        error = event.error
        cancelled = error is not None and error.kind == "Cancelled"
        self.recorder.job_status(job_id, JobState.CANCELLED if cancelled else JobState.FAILED, event)
        retryable = bool(error and error.retryable)
        done = self.recorder.finished_points()
        remaining = [point for key, point in job.points.items() if key not in done]
        plan = job.plan
        if error is not None and retryable and remaining and plan.attempt < self.options.max_attempts:
            delay = self.options.retry_backoff_s * 2 ** (plan.attempt - 1)
            progress.ended(job_id, f"{job.label}: [yellow]retrying in {delay:g} s ({error.kind})", ok=False)
            retry = _Attempt(
                plan.recipe, remaining, plan.attempt + 1,
                avoid_nodes=plan.avoid_nodes + ([job.node_id] if job.node_id else []),
                avoid_targets=plan.avoid_targets + ([job.target] if job.target else []),
                not_before=time.monotonic() + delay,
            )  # fmt: skip
            self._enqueue(retry, progress, summary)
            return
        progress.ended(job_id, f"{job.label}: [red]failed", ok=False)
        summary.failures.append(
            JobFailure(
                plan.recipe.name, job_id, plan.attempt, error.kind if error else "Unknown", event.message, retryable
            )
        )
