"""The `slurm` runner: submits the remote agent as a batch job and follows it through its events file.

The orchestrator host is either a login node itself (`target.login` absent: commands run here) or
reaches one over SSH. The job's files live on the cluster's shared filesystem, under
`<install.workdir>/jobs/<job_id>/`:

    spec.json      the JobSpec the agent runs (its log_dir is this directory)
    job.sh         the batch script: `srun ... python -m runners.agent --spec spec.json --events events.jsonl`
    events.jsonl   event lines appended by the agent, polled from the last complete line
    slurm-<id>.out the batch job's stdout/stderr (quoted when the job dies without reporting)
    engine.log     the engine's log, fetched into the job's local log_dir at the end

The Slurm job is named after the run id (`--job-name=<job_id>`), so it can always be found and cancelled
by name, even when its numeric id was never learned. See NOTES.md for the footguns.
"""

from __future__ import annotations

import contextlib
import math
import posixpath
import shlex
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from recipes.errors import ConfigurationError, InferSweepError, InfrastructureError
from recipes.hardware import load_hardware_registry
from recipes.schema import ContainerEnvironment, Recipe
from runners.engines.registry import engine_launch_limitations, hosts_needed
from runners.engines.render import engine_log_names
from runners.fleet.inventory import SlurmTarget, Target
from runners.fleet.leases import lease_target
from runners.host.container_registry import container_runtime
from runners.host.process import INHERITED_NAMES
from runners.host.shell import CommandResult, Commands, LocalCommands
from runners.job import JobEvent, JobSpec, Runner, register_runner
from runners.protocol import decode_event

# A job still PENDING after this long is cancelled and fails (retryable: another target, or later, may
# have room). Module constant on purpose: the inventory has no field for it yet.
QUEUE_TIMEOUT_S = 600.0
# Slurm's own time limit (--time) is the job deadline plus this grace: our deadline fires first, with a
# clear message; Slurm's only if this runner died and nobody else stops the job.
SLURM_TIME_GRACE_S = 120.0
# After the agent reported the job's end, how long its Slurm job may take to exit (engine stop, flush).
END_WAIT_S = 60.0
# After scancel, how long to wait for the job to leave the queue (Slurm's KillWait is 30 s by default).
CANCEL_WAIT_S = 45.0
# squeue/sacct unreachable for this long (slurmctld down, network) fails the job (retryable).
CONTROLLER_UNREACHABLE_S = 300.0
# Whole nodes for a benchmark: another tenant's job on the same node would distort every latency figure.
EXCLUSIVE = True
OUTPUT_TAIL_LINES = 20

ACTIVE_STATES = frozenset(
    {
        "PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD",
        "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD",
    }
)  # fmt: skip
WAITING_STATES = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"})
TERMINAL_KINDS = frozenset({"job_finished", "job_failed"})


def _slurm_env(target: SlurmTarget) -> dict[str, str] | None:
    return {"SLURM_CONF": target.slurm_conf} if target.slurm_conf else None


def slurm(commands: Commands, target: SlurmTarget, argv: list[str], timeout_s: float = 60.0) -> CommandResult:
    """Run a Slurm client command against `target`'s cluster (SLURM_CONF set when the target names one)."""
    return commands.run(argv, env=_slurm_env(target), timeout_s=timeout_s)


def nodes_for(recipe: Recipe) -> int:
    """Nodes to allocate: the hosts the engine's workers need (`runners.engines.registry.hosts_needed`).

    One, when the recipe's accelerators fit one node of its hardware or its engine uses none (the simulated
    engine, Dynamo's mocker on a CPU host); otherwise the nodes its workers fill packed whole, each group of a
    disaggregated recipe (prefill, decode) on nodes of its own. Slurm reserves all of them at once or none.
    """
    if load_hardware_registry().get(recipe.hardware) is None:
        raise ConfigurationError(f"hardware: got {recipe.hardware!r}; expected a key of recipes/hardware.yaml")
    return hosts_needed(recipe)


def container_problem(target: SlurmTarget) -> str | None:
    """Why `target` cannot run a recipe whose engine is a container image; None when it can (as far as the
    inventory says: whether its srun really has the plugin is asked on the login node before submitting)."""
    if target.container_runtime is None:
        return (
            f"target {target.name!r}: container_runtime is None (set container_runtime: pyxis on a target whose "
            "srun has the pyxis plugin)"
        )
    if target.container_flags:
        # The agent itself runs in an image then: starting another step from inside it needs srun, munge and the
        # cluster's slurm.conf in that image, which nothing here arranges.
        return (
            f"target {target.name!r}: container_flags {target.container_flags!r} run the agent itself in a "
            "container, from where it cannot start the engine's pyxis step (drop container_flags for container "
            "recipes)"
        )
    return None


# What each target's login node answered to `srun --help`, as the problem it shows (None: none): asked once per
# target and process, since installing a SPANK plugin means a restart of the cluster's daemons anyway.
_SRUN_PROBLEMS: dict[tuple[str, str], str | None] = {}
_SRUN_PROBLEMS_LOCK = threading.Lock()


def check_container_runtime(commands: Commands, target: SlurmTarget) -> None:
    """Fail (not retryable) unless the login node's srun can launch `target.container_runtime` steps."""
    if target.container_runtime is None:
        raise ConfigurationError(f"{container_problem(target)}; the job's engine is a container image")
    runtime = container_runtime(target.container_runtime, field=f"container_runtime of target {target.name!r}")
    key = (target.name, runtime.name)
    with _SRUN_PROBLEMS_LOCK:
        if key not in _SRUN_PROBLEMS:
            result = slurm(commands, target, ["srun", "--help"])
            # srun prints its help on stdout; an srun without a usable slurm.conf complains on stderr first.
            _SRUN_PROBLEMS[key] = runtime.slurm_problem(result.stdout + result.stderr)
        problem = _SRUN_PROBLEMS[key]
    if problem is not None:
        raise ConfigurationError(
            f"target {target.name!r} declares container_runtime {target.container_runtime!r}, but `srun --help` on "
            f"its login node ({commands.description}) shows {runtime.name} is missing: {problem}. Install pyxis (and "
            "enroot) on the cluster, or remove container_runtime from the target; not retryable"
        )


def job_comment(job: JobSpec) -> str:
    """The --comment of the job's Slurm job: which sweep and recipe it belongs to (stale-job matching)."""
    return f"infersweep sweep={job.sweep} recipe={job.recipe.name}"


@dataclass(frozen=True)
class QueuedJob:
    slurm_id: str
    name: str
    state: str
    comment: str


def stale_jobs(commands: Commands, target: SlurmTarget, prefix: str) -> list[QueuedJob]:
    """This user's queued or running Slurm jobs whose name starts with `prefix` (a run-id prefix)."""
    listing = slurm(commands, target, ["squeue", "--me", "-h", "-o", "%i|%j|%T|%k"]).check(
        f"listing Slurm jobs on {target.name}"
    )
    jobs = []
    for line in listing.stdout.splitlines():
        parts = line.strip().split("|", 3)
        if len(parts) == 4 and parts[1].startswith(prefix):
            jobs.append(QueuedJob(*parts))
    return jobs


def cancel_stale(
    commands: Commands,
    target: SlurmTarget,
    prefix: str,
    comment: str | None = None,
    keep: Sequence[str] = (),
) -> list[QueuedJob]:
    """Cancel jobs of dead runs: name starts with `prefix`, `comment` matches exactly when given, id not in `keep`.

    Returns the jobs cancelled. A job of a dead run of the same sweep must not keep the allocation.
    """
    doomed = [
        queued
        for queued in stale_jobs(commands, target, prefix)
        if (comment is None or queued.comment == comment) and queued.slurm_id not in keep
    ]
    if doomed:
        slurm(commands, target, ["scancel", *[queued.slurm_id for queued in doomed]]).check(
            f"cancelling stale Slurm jobs on {target.name}"
        )
    return doomed


def _job_state(commands: Commands, target: SlurmTarget, slurm_id: str) -> str | None:
    """The job's Slurm state; None when Slurm no longer knows the job. Raises InfrastructureError when
    the controller cannot be asked (so a slurmctld hiccup is not mistaken for a vanished job)."""
    listed = slurm(commands, target, ["squeue", "-h", "-t", "all", "-j", slurm_id, "-o", "%T"])
    if listed.returncode == 0 and listed.stdout.strip():
        return listed.stdout.split()[0]
    if listed.returncode != 0 and "invalid job id" not in listed.stderr.lower():
        raise InfrastructureError(f"squeue failed on {target.name}: {listed.stderr.strip()}")
    # squeue forgets finished jobs after MinJobAge (300 s by default): accounting remembers, if enabled.
    accounted = slurm(commands, target, ["sacct", "-n", "-X", "-P", "-j", slurm_id, "-o", "State"])
    if accounted.returncode == 0 and accounted.stdout.strip():
        return accounted.stdout.split()[0]  # "CANCELLED by 0" -> "CANCELLED"
    return None


def _batch_script(target: SlurmTarget, spec_path: str, events_path: str) -> str:
    """The batch script. Every value is shell-quoted; the only expansions are Slurm's node name and our
    own variables. No value goes into a comment line (a newline there would start a command)."""
    install = target.install
    env = [shlex.quote(f"{key}={value}") for key, value in install.env.items()]
    python = shlex.quote(install.python)
    agent = shlex.join(["-m", "runners.agent", "--spec", spec_path, "--events", events_path])
    flags = shlex.join(target.container_flags)
    reap = (
        f'env INFERSWEEP_HOME="$node_home" {" ".join(env)} {python} -c '
        + shlex.quote("from runners.host.process import reap_orphaned_engines; reap_orphaned_engines()")
        + " || true"
    )
    return "\n".join(
        [
            "#!/bin/bash",
            "# InferSweep agent job (generated by runners/slurm; see its NOTES.md).",
            "# The agent runs where this script runs: the allocation's first node (SLURM_JOB_NODELIST has all).",
            "# INFERSWEEP_HOME is per node: engine pidfiles are only meaningful on the node that wrote them.",
            'node="${SLURMD_NODENAME:?not set: not running under slurmd}"',
            f'node_home={shlex.quote(install.workdir)}/nodes/"$node"',
            "# scancel (SIGTERM) after such a death would end this script before the reap below: reap on TERM too",
            "# (bash runs the trap once srun, which Slurm signals as well, has returned; KillWait follows).",
            f"trap {shlex.quote(reap)} TERM",
            f'srun --nodes=1 --ntasks=1 --nodelist="$node" {flags} env INFERSWEEP_HOME="$node_home" '
            f"{' '.join(env)} {python} {agent}",
            "status=$?",
            "# An agent killed outright (SIGKILL, OOM killer) leaves its engine running when Slurm tracks",
            "# processes by parentage (proctrack/linuxproc): stop engines whose owner died on this node.",
            reap,
            'exit "$status"',
            "",
        ]
    )


def exported_names(job: JobSpec) -> list[str]:
    """The variables the batch job takes from the submitting environment (Slurm adds its own SLURM_* ones): what
    an engine inherits, plus the recipe's `engine.env_from`. sbatch exports everything by default, the results
    database's URL and cloud credentials included, and every step and engine of the job would inherit them."""
    locale = ["LC_ALL", "LC_CTYPE", "LC_MESSAGES", "XDG_RUNTIME_DIR"]
    return sorted({*INHERITED_NAMES, *locale, *job.recipe.engine.env_from})


def _sbatch_argv(job: JobSpec, target: SlurmTarget, job_dir: str, script: str) -> list[str]:
    minutes = math.ceil((job.recipe.runner.job_timeout_s + SLURM_TIME_GRACE_S) / 60)
    argv = [
        "sbatch", "--parsable", f"--job-name={job.job_id}", f"--comment={job_comment(job)}",
        f"--chdir={job_dir}", f"--output={job_dir}/slurm-%j.out", f"--nodes={nodes_for(job.recipe)}",
        f"--time={minutes}", f"--export={','.join(exported_names(job))}",
    ]  # fmt: skip
    if EXCLUSIVE:
        argv.append("--exclusive")
    if target.partition:
        argv.append(f"--partition={target.partition}")
    if target.account:
        argv.append(f"--account={target.account}")
    return [*argv, *target.sbatch_flags, script]


@contextlib.contextmanager
def _commands_for(target: SlurmTarget) -> Iterator[Commands]:
    if target.login is None:
        yield LocalCommands()
        return
    from runners.ssh.transport import SshSession  # paramiko only where a login node is reached over SSH

    with SshSession(target.login, name=target.name) as session:
        yield session


class _EventReader:
    """Follows the agent's events file: complete lines only, from the byte after the last one read."""

    def __init__(self, commands: Commands, path: str) -> None:
        self.commands = commands
        self.path = path
        self.offset = 0

    def poll(self) -> list[JobEvent]:
        text = self.commands.read_text(self.path, self.offset)
        end = text.rfind("\n")
        if end < 0:
            return []  # nothing, or a line still being written: read it again next time
        complete = text[: end + 1]
        self.offset += len(complete.encode("utf-8"))
        events = []
        for line in complete.splitlines():
            try:
                event = decode_event(line)
            except ValidationError as error:
                raise InfrastructureError(f"unreadable event line in {self.path}: {line[:200]!r}: {error}") from error
            if event is not None:
                events.append(event)
        return events


class _SlurmJob:
    """One submission of one JobSpec to one Slurm target."""

    def __init__(self, job: JobSpec, target: SlurmTarget, commands: Commands) -> None:
        self.job = job
        self.target = target
        self.commands = commands
        self.job_dir = posixpath.join(target.install.workdir, "jobs", job.job_id)
        self.spec_path = posixpath.join(self.job_dir, "spec.json")
        self.script_path = posixpath.join(self.job_dir, "job.sh")
        self.events_path = posixpath.join(self.job_dir, "events.jsonl")
        self.slurm_id: str | None = None
        self.submitted = False  # sbatch was called (its id may be unknown if it was interrupted)
        self.ended = False  # Slurm no longer runs the job
        self.state: str | None = None
        self.log_fetched = False

    # --- steps -------------------------------------------------------------------------------------

    def run(self) -> Iterator[JobEvent]:
        try:
            yield from self._follow()
        except BaseException:
            # Our errors, GeneratorExit (stream closed), KeyboardInterrupt (Ray cancel): stop the Slurm job,
            # then let the original exception go on. A failing scancel must not replace it (a swallowed
            # KeyboardInterrupt, or a yield after GeneratorExit); the next submit's cancel_stale catches up.
            try:
                self._cleanup()
            except InferSweepError as error:
                print(f"cleanup of {self.job.job_id} on {self.target.name} failed, it may still be queued: {error}")
            self._fetch_log()
            raise
        self._cleanup()  # no-ops after a normal end: _finish has done both
        self._fetch_log()

    def _submit(self) -> None:
        job, target, commands = self.job, self.target, self.commands
        contained = isinstance(job.recipe.engine.environment, ContainerEnvironment)
        if contained:
            check_container_runtime(commands, target)  # before sbatch: a cluster without pyxis never runs it
        comment = job_comment(job)
        for stale in cancel_stale(commands, target, f"{job.recipe.name}-", comment=comment):
            print(f"cancelled stale Slurm job {stale.slurm_id} ({stale.name}, {stale.state}) on {target.name}")
        commands.run(["mkdir", "-p", self.job_dir]).check(f"creating {self.job_dir} on {commands.description}")
        # The agent launches a container engine the way this target says (pyxis), not with the recipe's docker.
        launcher = target.container_runtime if contained else None
        agent_spec = job.model_copy(update={"log_dir": self.job_dir, "targets": [], "container_runtime": launcher})
        commands.write_text(self.spec_path, agent_spec.model_dump_json())
        commands.write_text(self.events_path, "")
        commands.write_text(self.script_path, _batch_script(target, self.spec_path, self.events_path))
        self.submitted = True
        result = slurm(commands, target, _sbatch_argv(job, target, self.job_dir, self.script_path))
        result.check(f"sbatch on {target.name}")
        self.slurm_id = result.stdout.strip().split(";")[0]
        if not self.slurm_id.isdigit():
            raise InfrastructureError(f"sbatch on {target.name} printed {result.stdout.strip()!r}, not a job id")

    def _follow(self) -> Iterator[JobEvent]:
        job, target = self.job, self.target
        self._submit()
        yield JobEvent(
            kind="job_placed",
            job_id=job.job_id,
            target=target.name,
            message=f"slurm job {self.slurm_id} on {target.name}",
        )
        reader = _EventReader(self.commands, self.events_path)
        submitted_at = time.monotonic()
        started_at: float | None = None
        unreachable_since: float | None = None
        deadline_s = job.recipe.runner.job_timeout_s
        while True:
            for event in reader.poll():
                if event.kind in TERMINAL_KINDS:
                    yield from self._finish(event)
                    return
                yield event
            try:
                self.state = _job_state(self.commands, target, self.slurm_id or "")
                unreachable_since = None
            except InfrastructureError:
                unreachable_since = unreachable_since or time.monotonic()
                if time.monotonic() - unreachable_since > CONTROLLER_UNREACHABLE_S:
                    raise
                time.sleep(target.poll_s)
                continue
            now = time.monotonic()
            if self.state is None or self.state not in ACTIVE_STATES:
                yield from self._ended_silently(reader)
                return
            if self.state in WAITING_STATES:
                if now - submitted_at > QUEUE_TIMEOUT_S:
                    raise InfrastructureError(
                        f"slurm job {self.slurm_id} still {self.state} on {target.name} after {QUEUE_TIMEOUT_S:g} s "
                        f"in the queue ({self._reason()}); cancelled"
                    )
            elif started_at is None:
                started_at = now
            elif now - started_at > deadline_s:
                raise InfrastructureError(
                    f"job timeout: slurm job {self.slurm_id} on {target.name} still running after "
                    f"{deadline_s:g} s (runner.job_timeout_s); cancelled",
                    retryable=False,
                )
            time.sleep(target.poll_s)

    def _finish(self, terminal: JobEvent) -> Iterator[JobEvent]:
        """The agent reported the end: let its Slurm job exit, then pass the final event on."""
        if self._wait_gone(END_WAIT_S):
            message = f"slurm job {self.slurm_id} ended ({self.state or 'no longer listed'})"
        else:
            message = f"slurm job {self.slurm_id} still {self.state} {END_WAIT_S:g} s after the agent's end; cancelling"
        yield JobEvent(kind="job_collecting", job_id=self.job.job_id, message=message)
        self._cleanup()
        self._fetch_log()
        yield terminal

    def _ended_silently(self, reader: _EventReader) -> Iterator[JobEvent]:
        """Slurm says the job is over; the agent may still have written its last event just before."""
        for event in reader.poll():
            if event.kind in TERMINAL_KINDS:
                yield from self._finish(event)
                return
            yield event
        self.ended = True
        state = self.state or "unknown (Slurm no longer lists it and accounting is unavailable)"
        raise InfrastructureError(
            f"slurm job {self.slurm_id} on {self.target.name} ended without reporting the job's end; "
            f"state {state}; output tail ({self._output_path()}):\n{self._output_tail()}"
        )

    # --- cleanup -----------------------------------------------------------------------------------

    def _wait_gone(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self.state = _job_state(self.commands, self.target, self.slurm_id or "")
                if self.state is None or self.state not in ACTIVE_STATES:
                    self.ended = True
                    return True
            except InfrastructureError:
                pass  # the controller did not answer: ask again until the deadline
            if time.monotonic() > deadline:
                return False
            time.sleep(min(1.0, self.target.poll_s))

    def _cleanup(self) -> None:
        """scancel by name unless the job is known to have ended (idempotent; covers a lost job id)."""
        if not self.submitted or self.ended:
            return
        result = slurm(self.commands, self.target, ["scancel", "--me", f"--name={self.job.job_id}"])
        result.check(f"scancel of {self.job.job_id} on {self.target.name}")
        if self.slurm_id is not None and not self._wait_gone(CANCEL_WAIT_S):
            print(f"slurm job {self.slurm_id} ({self.job.job_id}) still {self.state} {CANCEL_WAIT_S:g} s after scancel")
        self.ended = self.ended or self.slurm_id is None

    def _fetch_log(self) -> None:
        if not self.submitted or self.log_fetched:
            return
        self.log_fetched = True
        for name in engine_log_names(self.job.recipe):  # engine.log, and one per further process (Dynamo)
            with contextlib.suppress(InferSweepError):  # a lost log must not hide why the job ended
                self.commands.fetch(posixpath.join(self.job_dir, name), Path(self.job.log_dir) / name)

    # --- diagnostics -------------------------------------------------------------------------------

    def _output_path(self) -> str:
        return posixpath.join(self.job_dir, f"slurm-{self.slurm_id}.out")

    def _output_tail(self) -> str:
        with contextlib.suppress(InferSweepError):
            text = self.commands.read_text(self._output_path())
            return "\n".join(text.splitlines()[-OUTPUT_TAIL_LINES:]) or "(empty)"
        return "(unreadable)"

    def _reason(self) -> str:
        with contextlib.suppress(InferSweepError):
            listed = slurm(self.commands, self.target, ["squeue", "-h", "-j", self.slurm_id or "", "-o", "%r"])
            if listed.returncode == 0 and listed.stdout.strip():
                return f"reason {listed.stdout.strip()}"
        return "reason unknown"


@register_runner
class SlurmRunner(Runner):
    kind = "slurm"

    @classmethod
    def limitations(cls, recipe: Recipe, targets: Sequence[Target] = ()) -> list[str]:
        # A Slurm allocation reserves every node of a disaggregated recipe at once: only the launch is missing.
        problems = engine_launch_limitations(recipe, cls.kind, single_host=False)
        environment = recipe.engine.environment
        slurm_targets = [target for target in targets if isinstance(target, SlurmTarget)]
        if isinstance(environment, ContainerEnvironment) and slurm_targets:
            refusals = [container_problem(target) for target in slurm_targets]
            if all(refusals):
                problems.append(
                    f"engine.environment.image: got {environment.image!r}; the slurm runner launches container "
                    "engines only as pyxis steps (srun --container-image), and no slurm target for hardware "
                    f"{recipe.hardware!r} can: " + "; ".join(str(refusal) for refusal in refusals)
                )
        return problems

    def execute(self, job: JobSpec) -> Iterator[JobEvent]:
        targets = [target for target in job.targets if isinstance(target, SlurmTarget)]
        if not targets:
            raise ConfigurationError(
                f"runner.kind: 'slurm' needs a Slurm target for hardware {job.recipe.hardware!r} in the inventory "
                "(--inventory or INFERSWEEP_INVENTORY); none was given to this job"
            )
        if isinstance(job.recipe.engine.environment, ContainerEnvironment):
            refusals = {target.name: container_problem(target) for target in targets}
            targets = [target for target in targets if refusals[target.name] is None]
            if not targets:
                raise ConfigurationError(
                    f"engine.environment.image: got {job.recipe.engine.environment.image!r}; no slurm target of "
                    f"this job can run a container engine: {'; '.join(str(r) for r in refusals.values())}"
                )
        with lease_target(targets, job.avoid_targets) as target, _commands_for(target) as commands:
            yield from _SlurmJob(job, target, commands).run()
