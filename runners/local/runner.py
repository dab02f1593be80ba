"""The `local` runner: launches the engine on this host (a child process group, or a container) and drives it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from recipes.errors import ConfigurationError, InfrastructureError
from recipes.schema import ContainerEnvironment, GeneratedModelSource, ModelSpec, PathModelSource, Recipe
from runners.engines.base import container_image
from runners.engines.registry import engine_adapter, engine_launch_limitations
from runners.fleet.inventory import Target
from runners.host.container_registry import container_runtime
from runners.host.containers import (
    ContainerEngine,
    ContainerRuntime,
    container_name,
    device_flags,
    reap_orphaned_containers,
)
from runners.host.environments import ensure_environment
from runners.host.generated_model import ensure_generated_model
from runners.host.paths import data_dir
from runners.host.placement import engine_members
from runners.host.process import (
    EngineProcess,
    EngineProcessGroup,
    passed_environment,
    pick_free_port,
    reap_orphaned_engines,
)
from runners.host.server_metrics import CacheShape, cache_shape, counter_deltas, parse_prometheus, scrape_text
from runners.host.telemetry import TelemetrySampler, run_preflight
from runners.job import JobEvent, JobSpec, LaunchedEngine, PointOutcome, Runner, register_runner
from runners.loadgen.accuracy import run_accuracy_gate
from runners.loadgen.client import Endpoint
from runners.loadgen.fixed_length import Vocabulary, run_fixed_length_point
from runners.loadgen.records import (
    FixedLengthPoint,
    HostReport,
    PointMetrics,
    RawScrapes,
    ReplayPoint,
    RequestRecord,
)
from runners.loadgen.replay import run_replay_point


def resolve_model_dir(model: ModelSpec) -> Path:
    source = model.source
    if isinstance(source, GeneratedModelSource):
        return ensure_generated_model(source.preset)
    if isinstance(source, PathModelSource):
        path = Path(source.path)
        if not path.is_dir():
            raise ConfigurationError(f"model.source.path: got {source.path!r}; no such directory on this host")
        return path
    raise ConfigurationError(
        f"model.source.kind: got {source.kind!r}; this host cannot reach a model hub (use 'generated' or 'path')"
    )


# After a Point with failed requests: how long a dying engine may take to report its exit. A container's engine is
# seen through its runtime's client, which notices the exit a moment after the requests fail; read too early, a
# dead engine passed for a live one and its Point was recorded as a measurement.
ENGINE_EXIT_GRACE_S = 10.0


def _exit_code_after(engine: EngineProcess, failed_requests: int) -> int | None:
    """The engine's exit code, or None while it lives. Failed requests may mean it is dying: unless it answers its
    health check (the failures were its own answers), it gets `ENGINE_EXIT_GRACE_S` to report an exit."""
    code = engine.exited()
    if code is not None or not failed_requests:
        return code
    try:
        engine.wait_healthy(timeout_s=ENGINE_EXIT_GRACE_S, poll_s=0.2)
    except InfrastructureError:
        return engine.exited()  # exited meanwhile; None: alive but not answering, the Point says what failed
    return None


@dataclass(frozen=True)
class PointContext:
    """What every workload needs to measure one Point against the running engine."""

    endpoint: Endpoint
    vocabulary: Vocabulary
    recipe: Recipe
    cache: CacheShape | None = None  # the engine's KV cache as its /metrics reports it
    # Called by a workload when its measured window opens (a replay: after priming), to scrape the counters there.
    window_opened: Callable[[], None] | None = None


def _fixed_length(context: PointContext, workload: FixedLengthPoint) -> tuple[PointMetrics, list[RequestRecord]]:
    recipe = context.recipe
    return run_fixed_length_point(
        context.endpoint, workload, context.vocabulary, recipe.parallelism.accelerators, recipe.validity
    )


def _agentic_replay(context: PointContext, workload: ReplayPoint) -> tuple[PointMetrics, list[RequestRecord]]:
    adapter = engine_adapter(context.recipe.engine.kind)
    return run_replay_point(
        context.endpoint, workload, context.vocabulary, context.recipe.parallelism.accelerators,
        context.recipe.validity,
        context.cache.block_size if context.cache else adapter.kv_block_size(context.recipe),
        context.cache, adapter.step_token_budget(context.recipe), context.window_opened,
    )  # fmt: skip


# Workload kinds, by the Point's `kind`: a new workload is one entry here, not a branch in the runner.
WORKLOAD_RUNNERS: dict[str, Callable[[PointContext, Any], tuple[PointMetrics, list[RequestRecord]]]] = {
    "fixed-length": _fixed_length,
    "agentic-replay": _agentic_replay,
}


@register_runner
class LocalRunner(Runner):
    kind = "local"

    @classmethod
    def limitations(cls, recipe: Recipe, targets: Sequence[Target] = ()) -> list[str]:
        # A container runtime missing on the host is a pre-flight error of the job, not a limitation of the kind.
        return engine_launch_limitations(recipe, cls.kind, single_host=True)

    def execute(self, job: JobSpec) -> Iterator[JobEvent]:
        recipe: Recipe = job.recipe
        environment = recipe.engine.environment
        # Pidfiles first (they know their containers), then labelled containers whose pidfile is elsewhere.
        reaper_notes: list[str] = []

        def note(line: str) -> None:
            print(line, flush=True)
            reaper_notes.append(line)

        reaped = reap_orphaned_engines(log=note)
        reaped += [run for run in reap_orphaned_containers() if run not in reaped]
        adapter = engine_adapter(recipe.engine.kind)
        preflight = run_preflight(data_dir(), leftover_engines=len(reaped))
        # What the reaper did, and what it left alone and why, stays with the job's provenance.
        preflight = preflight.model_copy(update={"notes": [*preflight.notes, *reaper_notes]})
        yield JobEvent(kind="engine_preparing", job_id=job.job_id, message="engine environment and model")
        python = ensure_environment(environment)
        runtime: ContainerRuntime | None = None
        if isinstance(environment, ContainerEnvironment):
            # The runner's target may launch containers its own way (slurm: pyxis), whatever the recipe's runtime.
            runtime = (
                container_runtime(job.container_runtime, field="container_runtime (of the job's target)")
                if job.container_runtime
                else container_runtime(environment.runtime)
            )
            runtime.check_ready()
            # Before the engine-start timer (wait_healthy): a pull can take longer than any startup timeout.
            image_id = runtime.prepare(environment.image, container_name(job.job_id))
            preflight = preflight.model_copy(update={"engine_image": image_id})
        model_dir = resolve_model_dir(recipe.model)
        vocabulary = Vocabulary.from_model_dir(model_dir)
        port = recipe.engine.port or pick_free_port()
        plan = adapter.launch_plan(recipe, port, python, model_dir)
        # Credentials by name, from this host's environment: in the launch's memory only, never in the plan's record.
        launch_env = {**plan.env, **passed_environment(recipe.engine.env_from)}
        log_path = Path(job.log_dir) / "engine.log"
        yield JobEvent(kind="engine_launching", job_id=job.job_id, message=f"{recipe.engine.kind} on port {port}")
        if plan.processes:
            if isinstance(environment, ContainerEnvironment):
                raise ConfigurationError(
                    f"engine.environment.image: got {environment.image!r}; the {recipe.engine.kind} engine is several "
                    "processes, and the local runner starts those as processes of a venv or the host, not containers"
                )
            members = engine_members(plan, recipe, job.job_id)
            launched: EngineProcess = EngineProcessGroup(
                members, port, log_path, job.job_id, health_path=plan.health_path, ready_model=plan.ready_model,
                files=plan.files, ready_workers=plan.ready_workers,
            )  # fmt: skip
        elif isinstance(environment, ContainerEnvironment):
            launched = ContainerEngine(
                environment, plan.argv, launch_env, port, log_path, job.job_id,
                model_dir=plan.model_dir or model_dir, devices=device_flags(recipe.hardware),
                health_path=plan.health_path, ready_model=plan.ready_model, files=plan.files, runtime=runtime,
            )  # fmt: skip
        else:
            launched = EngineProcess(
                plan.argv, launch_env, port, log_path, job.job_id, plan.health_path,
                ready_model=plan.ready_model, files=plan.files,
            )  # fmt: skip
        with launched as engine:
            waited = engine.wait_healthy(recipe.engine.startup_timeout_s)
            what_ran = LaunchedEngine(
                argv=engine.argv, env_names=engine.env_names(), image=container_image(recipe),
                image_digest=preflight.engine_image,
            )  # fmt: skip
            yield JobEvent(kind="engine_ready", job_id=job.job_id, message=f"healthy after {waited:.1f} s",
                           launched=what_ran)  # fmt: skip
            endpoint = Endpoint(base_url=engine.base_url, model=plan.served_model,
                                session_headers=plan.session_headers,
                                parent_session_headers=plan.parent_session_headers)  # fmt: skip
            context = PointContext(endpoint, vocabulary, recipe)
            # Once per job, before the first Point: a failed gate marks every Point invalid
            # (runners/loadgen/accuracy.py).
            accuracy = run_accuracy_gate(endpoint, recipe.methodology.accuracy_gate, recipe.model.source, plan.argv)
            for point in job.points:
                yield JobEvent(kind="point_started", job_id=job.job_id, point_key=point.point_key)
                started = datetime.now(UTC)
                before_text = scrape_text(engine.base_url + plan.metrics_path)
                before = parse_prometheus(before_text) if before_text is not None else None
                at_window: list[str | None] = []  # the scrape when the measured window opened, if the workload says

                def window_opened(url: str = engine.base_url + plan.metrics_path, into: list = at_window) -> None:
                    into.append(scrape_text(url))

                context = replace(context, cache=cache_shape(before), window_opened=window_opened)
                sampler = TelemetrySampler()
                with sampler.running():
                    metrics, records = WORKLOAD_RUNNERS[point.workload.kind](context, point.workload)
                if at_window and at_window[0] is not None:
                    # Counters over the measured window only: a replay's priming requests are left out.
                    before_text = at_window[0]
                    before = parse_prometheus(before_text)
                after_text = scrape_text(engine.base_url + plan.metrics_path)
                after = parse_prometheus(after_text) if after_text is not None else None
                metrics.server = counter_deltas(before, after, adapter.counter_series)
                metrics.host = HostReport(preflight=preflight, telemetry=sampler.summary())
                metrics.accuracy = accuracy
                if accuracy.ran:  # the gate judged the engine: its check applies to every Point of the job
                    metrics.validity = metrics.validity.with_check("accuracy", accuracy.invalid_reason)
                code = _exit_code_after(engine, metrics.failed)
                if code is not None:
                    # A dead engine is an infrastructure fault, not a measurement of the configuration.
                    raise InfrastructureError(
                        f"engine exited with code {code} during point {point.point_key}; log tail:\n{engine.log_tail()}"
                    )
                outcome = PointOutcome(
                    point_key=point.point_key,
                    origin="dry-run" if job.dry_run else adapter.origin_of(recipe),
                    metrics=metrics,
                    records=records,
                    server_scrapes=RawScrapes(before=before_text, after=after_text),
                    started_at=started,
                    finished_at=datetime.now(UTC),
                )
                yield JobEvent(kind="point_finished", job_id=job.job_id, point_key=point.point_key, outcome=outcome)
            yield JobEvent(kind="job_collecting", job_id=job.job_id, message="stopping the engine")
        yield JobEvent(kind="job_finished", job_id=job.job_id)
