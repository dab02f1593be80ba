"""The `ssh` runner: leases an inventory host, starts the remote agent over SSH and relays its events.

Everything next to the engine (launch, load generator, cleanup) is the `local` runner's, run by the
agent (`python -m runners.agent --spec - --watch-stdin`) on the target; this side only places the job,
forwards the agent's event lines, keeps its other output in `<log_dir>/agent.log` and fetches the
engine log at the end. The agent's stdin stays open for the whole job: when the connection drops or
this side is cancelled, the agent sees end of file and stops its engine.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import ClassVar, TextIO

from pydantic import ValidationError

from recipes.errors import ConfigurationError, InferSweepError, InfrastructureError
from recipes.schema import Recipe
from runners.engines.registry import engine_launch_limitations
from runners.engines.render import engine_log_names
from runners.fleet.inventory import SshTarget, Target, TpuVmTarget
from runners.fleet.leases import lease_target
from runners.job import JobEvent, JobSpec, Runner, register_runner
from runners.protocol import decode_event
from runners.ssh.transport import SshSession

RemoteTarget = SshTarget | TpuVmTarget
TERMINAL_EVENTS = frozenset({"job_finished", "job_failed"})


def remote_log_dir(target: RemoteTarget, job_id: str) -> str:
    return posixpath.join(target.install.workdir, "logs", job_id)


def agent_argv(target: RemoteTarget) -> list[str]:
    """The agent's command line on the target: its environment first, through env(1)."""
    install = target.install
    environment = {"INFERSWEEP_HOME": install.workdir, **install.env}
    assignments = [f"{name}={value}" for name, value in environment.items()]
    return ["env", *assignments, install.python, "-m", "runners.agent", "--spec", "-", "--watch-stdin"]


@register_runner
class SshRunner(Runner):
    kind = "ssh"
    target_type: ClassVar[type[SshTarget] | type[TpuVmTarget]] = SshTarget

    @classmethod
    def limitations(cls, recipe: Recipe, targets: Sequence[Target] = ()) -> list[str]:
        # Container environments run through the agent's local pipeline (runners/host/containers.py); a target
        # without the runtime fails the job's pre-flight there, naming the host.
        return engine_launch_limitations(recipe, cls.kind, single_host=True)

    def placed_message(self, target: RemoteTarget) -> str:
        """Starts with the target's name (the orchestrator reads it back for `avoid_targets` on retry)."""
        return f"{target.name} ({target.ssh.user}@{target.ssh.address}:{target.ssh.port}, hardware {target.hardware})"

    def _targets(self, job: JobSpec) -> list[RemoteTarget]:
        targets = [target for target in job.targets if isinstance(target, self.target_type)]
        if not targets:
            raise ConfigurationError(
                f"runner.kind {self.kind!r}: the job has no inventory target of kind {self.kind!r} for hardware "
                f"{job.recipe.hardware!r}; add one to the inventory (--inventory FILE or INFERSWEEP_INVENTORY)"
            )
        return targets

    def execute(self, job: JobSpec) -> Iterator[JobEvent]:
        with lease_target(self._targets(job), job.avoid_targets) as target:
            yield JobEvent(
                kind="job_placed", job_id=job.job_id, target=target.name, message=self.placed_message(target)
            )
            local_dir = Path(job.log_dir)
            local_dir.mkdir(parents=True, exist_ok=True)
            with (
                SshSession(target.ssh, name=target.name) as session,
                open(local_dir / "agent.log", "a", encoding="utf-8") as agent_log,
            ):
                yield from self._run_on(job, target, session, agent_log)

    def _run_on(self, job: JobSpec, target: RemoteTarget, session: SshSession, agent_log: TextIO) -> Iterator[JobEvent]:
        remote_dir = remote_log_dir(target, job.job_id)
        session.run(["mkdir", "-p", remote_dir]).check(f"creating the job's log directory on {target.name}")
        remote_spec = job.model_copy(update={"log_dir": remote_dir, "targets": [], "avoid_targets": []})
        terminal: JobEvent | None = None
        try:
            lines = session.stream_lines(
                agent_argv(target),
                remote_spec.model_dump_json() + "\n",
                on_stderr=lambda line: _log(agent_log, "stderr", line),
            )
            for line in lines:
                event = self._decode(line, target)
                if event is None:
                    _log(agent_log, "stdout", line)
                elif event.kind == "job_placed":
                    _log(agent_log, "event", f"job_placed {event.message}")  # ours was sent with the lease
                elif event.kind in TERMINAL_EVENTS:
                    terminal = event  # sent after the logs are fetched, so a consumer that stops there has them
                elif terminal is None:
                    yield event
        except (KeyboardInterrupt, GeneratorExit):
            # Cancelled (Ray raises KeyboardInterrupt) or abandoned: closing the session closes the channel,
            # the agent sees end of file on its stdin and stops the engine. Nothing slow on the way out.
            raise
        except BaseException:
            self._collect(job, target, session, remote_dir, agent_log)
            raise
        self._collect(job, target, session, remote_dir, agent_log)
        if terminal is None:
            tail = "\n".join(session.stderr_tail) or "(no stderr)"
            if session.last_exit_status in (126, 127) or "No module named" in tail:
                raise ConfigurationError(
                    f"install.python of {target.name}: got {target.install.python!r}; it could not start the agent "
                    f"(`-m runners.agent`, exit status {session.last_exit_status}); stderr tail:\n{tail}"
                )
            raise InfrastructureError(
                f"the agent on {target.name} exited with status {session.last_exit_status} without finishing "
                f"the job; its stderr tail:\n{tail}"
            )
        yield terminal

    @staticmethod
    def _decode(line: str, target: RemoteTarget) -> JobEvent | None:
        try:
            return decode_event(line)
        except ValidationError as error:
            raise ConfigurationError(
                f"the agent on {target.name} ({target.install.python}) sent an event this orchestrator cannot "
                f"read (is the same InferSweep version installed there?): {error}"
            ) from error

    @classmethod
    def _collect(
        cls, job: JobSpec, target: RemoteTarget, session: SshSession, remote_dir: str, agent_log: TextIO
    ) -> None:
        """Fetch the engine's logs (engine.log, and one per further process of a multi-process engine)."""
        for name in engine_log_names(job.recipe):
            cls._collect_one(name, job, target, session, remote_dir, agent_log)

    @staticmethod
    def _collect_one(
        name: str, job: JobSpec, target: RemoteTarget, session: SshSession, remote_dir: str, agent_log: TextIO
    ) -> None:
        """Fetch one log, over a fresh connection when the job's dropped; failures are logged, never raised over
        the job's own outcome."""
        remote = posixpath.join(remote_dir, name)
        local = Path(job.log_dir) / name
        try:
            fetched = session.fetch(remote, local)
        except InfrastructureError as error:
            _log(agent_log, "collect", f"{error}; fetching {remote} over a new connection")
            try:
                with SshSession(target.ssh, name=target.name) as fresh:
                    fetched = fresh.fetch(remote, local)
            except InferSweepError as again:
                _log(agent_log, "collect", f"could not fetch {remote}: {again}")
                return
        except InferSweepError as error:
            _log(agent_log, "collect", f"could not fetch {remote}: {error}")
            return
        if not fetched:
            _log(agent_log, "collect", f"no engine log at {remote}")


def _log(handle: TextIO, source: str, line: str) -> None:
    handle.write(f"[{source}] {line}\n")
    handle.flush()
