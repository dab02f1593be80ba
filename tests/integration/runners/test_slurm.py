"""The `slurm` runner against a real single-node Slurm (started by the `slurm_cluster` fixture)."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from orchestrator.plan import plan_jobs
from recipes.loader import parse_recipe
from runners.fleet.inventory import RemoteInstall, SlurmTarget
from runners.host.shell import CommandResult, LocalCommands
from runners.job import JobEvent, JobSpec
from runners.slurm import SlurmRunner, cancel_stale, nodes_for, stale_jobs
from runners.slurm.runner import job_comment
from tests.conftest import SIMULATED_RECIPE, deep_update, processes_of_runs
from tests.integration.runners.slurm_cluster import SlurmCluster, slurm_cluster, slurm_two_nodes

__all__ = ["slurm_cluster", "slurm_two_nodes"]  # the fixtures, imported so pytest finds them

pytestmark = [pytest.mark.timeout(180)]

NEVER_HEALTHY = {"engine": {"startup_timeout_s": 600, "simulated": {"fault": "never-healthy"}}}
REPO = str(Path(__file__).resolve().parents[3])
CONTAINED = {"engine": {"environment": {"kind": "container", "image": "nvcr.io/nvidia/vllm:25.09-py3"}}}


@pytest.fixture
def target(slurm_cluster: SlurmCluster, tmp_path: Path) -> SlurmTarget:
    return SlurmTarget(
        kind="slurm",
        name="test-cluster",
        hardware="cpu-local",
        slurm_conf=str(slurm_cluster.conf),
        # PYTHONPATH: the agent in the job imports the code under test, not whatever checkout the interpreter's
        # environment has installed (an editable install of another worktree).
        install=RemoteInstall(python=sys.executable, workdir=str(tmp_path / "shared"), env={"PYTHONPATH": REPO}),
        poll_s=0.5,
        sbatch_flags=["--mem=512"],  # what a GPU cluster's --gres would be: passed to sbatch as it is
    )


def make_job(target: SlurmTarget, tmp_path: Path, changes: dict | None = None, sweep: str = "slurm-test") -> JobSpec:
    recipe = deep_update(SIMULATED_RECIPE, {"runner": {"kind": "slurm"}})
    loaded = parse_recipe(deep_update(recipe, changes or {}), str(tmp_path / "recipe.yaml"))
    planned = plan_jobs([loaded])[0]
    job_id = f"{loaded.recipe.name}-{uuid.uuid4().hex[:8]}"
    return JobSpec(
        job_id=job_id, sweep=sweep, recipe=loaded.recipe, points=planned.points,
        log_dir=str(tmp_path / "logs" / job_id), targets=[target],
    )  # fmt: skip


def slurm_id_of(placed: JobEvent) -> str:
    match = re.match(r"slurm job (\d+) on ", placed.message)
    assert match, placed.message
    return match.group(1)


def sbatch_sleep(cluster: SlurmCluster, name: str, comment: str) -> str:
    submitted = cluster.run("sbatch", "--parsable", f"--job-name={name}", f"--comment={comment}",
                            "--output=/dev/null", "--wrap", "sleep 300")  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    return submitted.stdout.strip().split(";")[0]


def wait_running(cluster: SlurmCluster, slurm_id: str, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cluster.run("squeue", "-h", "-j", slurm_id, "-o", "%T").stdout.strip() == "RUNNING":
            return
        time.sleep(0.2)
    raise AssertionError(f"slurm job {slurm_id} did not start within {timeout_s:g} s")


def wait_no_engines(job_id: str, timeout_s: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while (left := processes_of_runs(job_id)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def test_measures_points_end_to_end(slurm_cluster: SlurmCluster, target: SlurmTarget, tmp_path: Path) -> None:
    job = make_job(target, tmp_path)
    # A job of a dead run of this sweep and recipe holds the node (our jobs are --exclusive): it must go first.
    dead = sbatch_sleep(slurm_cluster, f"{job.recipe.name}-dead", job_comment(job))
    wait_running(slurm_cluster, dead)

    events = list(SlurmRunner().run_job(job))

    kinds = [event.kind for event in events]
    failed = [event.message for event in events if event.kind == "job_failed"]
    assert not failed, failed
    assert kinds[0] == "job_placed" and kinds[-1] == "job_finished", kinds
    assert kinds.index("engine_ready") < kinds.index("point_finished")
    outcomes = [event.outcome for event in events if event.kind == "point_finished" and event.outcome]
    assert [o.point_key for o in outcomes] == [p.point_key for p in job.points]
    assert all(o.metrics.validity.valid and o.origin == "simulated" for o in outcomes)
    assert dead not in slurm_cluster.queued(), "the stale job of the dead run still holds the node"

    slurm_id = slurm_id_of(events[0])
    state = slurm_cluster.run("squeue", "-h", "-t", "all", "-j", slurm_id, "-o", "%T").stdout.strip()
    assert state == "COMPLETED"
    assert "MinMemoryNode=512M" in slurm_cluster.run("scontrol", "show", "job", slurm_id).stdout  # target.sbatch_flags
    # Fetched from the shared filesystem (the simulated engine may log nothing at all when all goes well).
    shared_log = Path(target.install.workdir) / "jobs" / job.job_id / "engine.log"
    assert (Path(job.log_dir) / "engine.log").read_bytes() == shared_log.read_bytes()
    assert wait_no_engines(job.job_id) == []


def test_dynamo_frontend_and_mocker_workers_run_in_a_slurm_job(
    slurm_cluster: SlurmCluster, target: SlurmTarget, tmp_path: Path
) -> None:
    """Real Dynamo's processes (frontend, prefill and decode mockers) as one process group inside the job."""
    shipped = yaml.safe_load((Path(REPO) / "recipes" / "local" / "dynamo-mocker-disagg-cpu.yaml").read_text())
    loaded = parse_recipe(deep_update(shipped, {"runner": {"kind": "slurm"}}), str(tmp_path / "dynamo.yaml"))
    job_id = f"{loaded.name}-{uuid.uuid4().hex[:8]}"
    job = JobSpec(
        job_id=job_id, sweep="slurm-dynamo", recipe=loaded.recipe, points=plan_jobs([loaded])[0].points,
        log_dir=str(tmp_path / "logs" / job_id), targets=[target],
    )  # fmt: skip

    events = list(SlurmRunner().run_job(job))

    failed = [event.message for event in events if event.kind == "job_failed"]
    assert not failed, failed
    outcomes = [event.outcome for event in events if event.kind == "point_finished" and event.outcome]
    assert [(o.origin, o.metrics.validity.valid, o.metrics.failed) for o in outcomes] == [("simulated", True, 0)] * 2
    # Every process's log came back from the job's directory; the frontend's shows the prefill worker registered.
    logs = {path.name for path in Path(job.log_dir).glob("engine*.log")}
    assert logs == {"engine.log", "engine-prefill-0.log", "engine-decode-0.log"}
    assert "Prefill worker detected" in (Path(job.log_dir) / "engine.log").read_text(errors="replace")
    assert wait_no_engines(job.job_id) == []


def test_dynamo_workers_span_the_nodes_of_a_two_node_allocation(slurm_two_nodes: SlurmCluster, tmp_path: Path) -> None:
    """Mocker workers standing in for B200 workers of eight GPUs each: prefill on the first node (with the
    frontend and the agent), decode as a step of the same job on the second."""
    target = SlurmTarget(
        kind="slurm", name="two-nodes", hardware="b200", slurm_conf=str(slurm_two_nodes.conf), poll_s=0.5,
        install=RemoteInstall(python=sys.executable, workdir=str(tmp_path / "shared"), env={"PYTHONPATH": REPO}),
    )  # fmt: skip
    shipped = yaml.safe_load((Path(REPO) / "recipes" / "local" / "dynamo-mocker-disagg-cpu.yaml").read_text())
    eight = {"num_workers": 1, "tp": 8}
    changes = {"hardware": "b200", "runner": {"kind": "slurm"},
               "parallelism": {"disaggregated": {"prefill": eight, "decode": eight}}}  # fmt: skip
    loaded = parse_recipe(deep_update(shipped, changes), str(tmp_path / "dynamo-b200.yaml"))
    job_id = f"{loaded.name}-{uuid.uuid4().hex[:8]}"
    job = JobSpec(
        job_id=job_id, sweep="slurm-two-nodes", recipe=loaded.recipe, points=plan_jobs([loaded])[0].points,
        log_dir=str(tmp_path / "logs" / job_id), targets=[target],
    )  # fmt: skip
    assert nodes_for(job.recipe) == 2

    events, steps = [], ""
    for event in SlurmRunner().run_job(job):
        events.append(event)
        if event.kind == "engine_ready":  # every worker registered: list the job's steps and their nodes
            steps = slurm_two_nodes.run("squeue", "--steps", "-h", "-o", "%j|%N").stdout

    failed = [event.message for event in events if event.kind == "job_failed"]
    assert not failed, failed
    assert f"infersweep-{job_id}-decode-0|node-b" in steps.splitlines(), steps
    outcomes = [event.outcome for event in events if event.kind == "point_finished" and event.outcome]
    assert [(o.origin, o.metrics.validity.valid, o.metrics.failed) for o in outcomes] == [("simulated", True, 0)] * 2
    assert "Prefill worker detected" in (Path(job.log_dir) / "engine.log").read_text(errors="replace")
    assert (Path(job.log_dir) / "engine-decode-0.log").stat().st_size > 0  # the step's output, through srun
    assert wait_no_engines(job.job_id) == []


def test_job_timeout_scancels(slurm_cluster: SlurmCluster, target: SlurmTarget, tmp_path: Path) -> None:
    job = make_job(target, tmp_path, {**NEVER_HEALTHY, "runner": {"kind": "slurm", "job_timeout_s": 8}})

    started = time.monotonic()
    events = list(SlurmRunner().run_job(job))

    last = events[-1]
    assert last.kind == "job_failed" and last.error is not None, [e.kind for e in events]
    assert "job timeout" in last.message and "runner.job_timeout_s" in last.message
    assert last.error.retryable is False
    assert time.monotonic() - started < 60
    assert slurm_cluster.wait_gone(slurm_id_of(events[0]), timeout_s=15)
    assert job.job_id not in slurm_cluster.queued().values()
    assert wait_no_engines(job.job_id) == []


@pytest.mark.parametrize("how", ["close", "keyboard-interrupt"])
def test_cancelled_stream_scancels(slurm_cluster: SlurmCluster, target: SlurmTarget, tmp_path: Path, how: str) -> None:
    job = make_job(target, tmp_path, NEVER_HEALTHY)
    stream = SlurmRunner().run_job(job)
    placed = next(stream)
    for event in stream:
        assert event.kind != "job_failed", event.message
        if event.kind == "engine_launching":
            break  # the agent runs in the Slurm job and its engine is starting

    assert processes_of_runs(job.job_id), "the engine should be running inside the Slurm job"
    if how == "close":
        stream.close()  # what the orchestrator does when it drops the stream
    else:
        with pytest.raises(KeyboardInterrupt):
            stream.throw(KeyboardInterrupt)  # Ray's cancel of the task: cleanup, then re-raise

    assert slurm_cluster.wait_gone(slurm_id_of(placed), timeout_s=15)
    assert wait_no_engines(job.job_id) == []


def test_cancel_stale_only_touches_dead_runs_of_the_same_sweep(
    slurm_cluster: SlurmCluster, target: SlurmTarget, tmp_path: Path
) -> None:
    job = make_job(target, tmp_path)
    prefix = f"{job.recipe.name}-"
    dead = sbatch_sleep(slurm_cluster, f"{prefix}dead", job_comment(job))
    other_sweep = sbatch_sleep(slurm_cluster, f"{prefix}other", job_comment(job).replace("slurm-test", "another"))
    unrelated = sbatch_sleep(slurm_cluster, "someone-else", job_comment(job))
    commands = LocalCommands()
    try:
        listed = {queued.slurm_id for queued in stale_jobs(commands, target, prefix)}
        assert listed == {dead, other_sweep}

        cancelled = cancel_stale(commands, target, prefix, comment=job_comment(job))

        assert [queued.slurm_id for queued in cancelled] == [dead]
        assert slurm_cluster.wait_gone(dead, timeout_s=15)
        assert {other_sweep, unrelated} <= set(slurm_cluster.queued())
    finally:
        slurm_cluster.run("scancel", other_sweep, unrelated, dead)


def test_through_an_ssh_login_node(slurm_cluster: SlurmCluster, sshd, tmp_path: Path) -> None:
    """The same job with the login node reached over SSH (the `sshd` fixture of this directory's conftest)."""
    target = SlurmTarget(
        kind="slurm", name="ssh-cluster", hardware="cpu-local", login=sshd.access(),
        slurm_conf=str(slurm_cluster.conf), install=sshd.install(tmp_path / "shared"), poll_s=0.5,
    )  # fmt: skip
    job = make_job(target, tmp_path)

    events = list(SlurmRunner().run_job(job))

    assert [e.kind for e in events][-1] == "job_finished", [(e.kind, e.message) for e in events]
    assert len([e for e in events if e.kind == "point_finished"]) == len(job.points)
    assert (Path(job.log_dir) / "engine.log").is_file()
    assert wait_no_engines(job.job_id) == []


def test_queue_timeout_cancels_a_pending_job(
    slurm_cluster: SlurmCluster, target: SlurmTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import runners.slurm.runner as slurm_runner

    monkeypatch.setattr(slurm_runner, "QUEUE_TIMEOUT_S", 2.0)
    blocker = sbatch_sleep(slurm_cluster, "someone-elses-job", "not ours")
    try:
        wait_running(slurm_cluster, blocker)
        job = make_job(target, tmp_path)
        events = list(SlurmRunner().run_job(job))
    finally:
        slurm_cluster.run("scancel", blocker)

    last = events[-1]
    assert last.kind == "job_failed" and last.error is not None, [(e.kind, e.message) for e in events]
    assert "still PENDING" in last.message and "reason Resources" in last.message
    assert last.error.retryable
    assert slurm_cluster.wait_gone(slurm_id_of(events[0]), timeout_s=15)


# --- no Slurm needed ---------------------------------------------------------------------------------


def test_nodes_and_limitations(tmp_path: Path) -> None:
    from recipes.schema import ContainerEnvironment, Disaggregation, VenvEnvironment, WorkerGroup
    from runners.slurm import nodes_for

    recipe = make_job(_offline_target(tmp_path), tmp_path).recipe
    assert nodes_for(recipe) == 1
    split = Disaggregation(prefill=WorkerGroup(num_workers=2, tp=4), decode=WorkerGroup(tp=8, dp=2))
    gb200 = recipe.model_copy(update={"hardware": "gb200-nvl72"})
    gb200 = gb200.model_copy(update={"parallelism": gb200.parallelism.model_copy(update={"disaggregated": split})})
    assert nodes_for(gb200) == 1  # the simulated engine occupies no GPU: its workers share one node
    vllm = VenvEnvironment(kind="venv", name="vllm-cpu")
    gb200 = gb200.model_copy(update={"engine": gb200.engine.model_copy(update={"kind": "vllm", "environment": vllm})})
    assert nodes_for(gb200) == 2 + 4  # 8 prefill GPUs on 4-GPU trays, 16 decode GPUs
    assert SlurmRunner.limitations(gb200) == []
    image = ContainerEnvironment(kind="container", image="vllm/vllm-openai:v0.11.0")
    contained = recipe.model_copy(update={"engine": recipe.engine.model_copy(update={"environment": image})})
    offline = _offline_target(tmp_path)
    assert "container_runtime is None" in SlurmRunner.limitations(contained, [offline])[0]
    assert SlurmRunner.limitations(contained, [offline.model_copy(update={"container_runtime": "pyxis"})]) == []


def test_batch_script_quotes_every_value(tmp_path: Path) -> None:
    import subprocess

    from runners.slurm.runner import _batch_script

    pwned = tmp_path / "pwned"
    hostile = f"a b; touch {pwned}; $(touch {pwned}) `touch {pwned}` 'q' \"d\"\nnext line"
    workdir = str(tmp_path / "w $x")
    target = _offline_target(tmp_path).model_copy(
        update={
            "install": RemoteInstall(python="/opt/py thon", workdir=workdir, env={"X": hostile}),
            "container_flags": [f"--container-mounts={hostile}"],
        }
    )
    script = _batch_script(target, f"/s p/{hostile}.json", "/s p/events.jsonl")
    # Run it with a fake srun that records its argv (NUL-separated).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_srun = bin_dir / "srun"
    fake_srun.write_text(f'#!/bin/bash\nprintf "%s\\0" "$@" > {tmp_path}/argv\nexit 3\n')
    fake_srun.chmod(0o755)
    done = subprocess.run(
        ["bash", "-c", script],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURMD_NODENAME": "n1"},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr  # srun's status is the job's
    argv = (tmp_path / "argv").read_text().split("\0")[:-1]
    assert argv == [
        "--nodes=1", "--ntasks=1", "--nodelist=n1", f"--container-mounts={hostile}",
        "env", f"INFERSWEEP_HOME={workdir}/nodes/n1", f"X={hostile}",
        "/opt/py thon", "-m", "runners.agent", "--spec", f"/s p/{hostile}.json", "--events", "/s p/events.jsonl",
    ]  # fmt: skip
    assert not pwned.exists()


def test_no_slurm_target_is_a_configuration_error(tmp_path: Path) -> None:
    job = make_job(_offline_target(tmp_path), tmp_path).model_copy(update={"targets": []})
    events = list(SlurmRunner().run_job(job))
    assert [e.kind for e in events] == ["job_failed"]
    assert events[0].error is not None and events[0].error.kind == "ConfigurationError"
    assert events[0].error.retryable is False


def _offline_target(tmp_path: Path) -> SlurmTarget:
    return SlurmTarget(
        kind="slurm", name="offline", hardware="cpu-local",
        install=RemoteInstall(python=sys.executable, workdir=str(tmp_path / "shared")),
    )  # fmt: skip


def test_job_killed_without_a_word_is_a_retryable_failure(
    slurm_cluster: SlurmCluster, target: SlurmTarget, tmp_path: Path
) -> None:
    job = make_job(target, tmp_path, NEVER_HEALTHY)
    stream = SlurmRunner().run_job(job)
    placed = next(stream)
    for event in stream:
        if event.kind == "engine_launching":
            break
    # SIGKILL the agent: it cannot write its last event (like a node that died under it).
    agents = [
        pid
        for pid in _pids_with_argument(job.job_id)
        if _cmdline(pid).startswith(f"{sys.executable}\0-m\0runners.agent\0".encode())
    ]
    assert len(agents) == 1, agents
    os.kill(agents[0], signal.SIGKILL)
    rest = list(stream)

    assert [event.kind for event in rest] == ["job_failed"], [(e.kind, e.message) for e in rest]
    error = rest[0].error
    assert error is not None and error.kind == "InfrastructureError" and error.retryable
    assert "ended without reporting the job's end" in error.message
    assert re.search(r"state (FAILED|CANCELLED)", error.message), error.message
    assert slurm_cluster.wait_gone(slurm_id_of(placed), timeout_s=15)
    assert wait_no_engines(job.job_id) == []  # the orphaned engine: Slurm's step cleanup stops it


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _pids_with_argument(fragment: str) -> list[int]:
    return [
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit() and fragment.encode() in _cmdline(int(entry.name))
    ]


# --- containers through pyxis: Debian's Slurm has no pyxis, so only its absence is tested for real ------------


def test_container_recipe_on_a_cluster_without_pyxis_fails_before_sbatch(
    slurm_cluster: SlurmCluster, target: SlurmTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import runners.slurm.runner as slurm_runner

    monkeypatch.setattr(slurm_runner, "_SRUN_PROBLEMS", {})
    asked: list[list[str]] = []
    real_slurm = slurm_runner.slurm

    def counting(
        commands: LocalCommands, target: SlurmTarget, argv: list[str], timeout_s: float = 60.0
    ) -> CommandResult:
        asked.append(argv)
        return real_slurm(commands, target, argv, timeout_s)

    monkeypatch.setattr(slurm_runner, "slurm", counting)
    pyxis_target = target.model_copy(update={"container_runtime": "pyxis"})

    for _attempt in range(2):
        job = make_job(pyxis_target, tmp_path, CONTAINED)
        events = list(SlurmRunner().run_job(job))

        assert [event.kind for event in events] == ["job_failed"], [(e.kind, e.message) for e in events]
        error = events[0].error
        assert error is not None and error.kind == "ConfigurationError" and error.retryable is False
        assert error.message.startswith(
            "target 'test-cluster' declares container_runtime 'pyxis', but `srun --help` on its login node "
        )
        assert "pyxis is missing: its srun has no --container-image option" in error.message
        assert not (Path(target.install.workdir) / "jobs" / job.job_id).exists()  # nothing written, nothing queued
        assert job.job_id not in slurm_cluster.queued().values()
    assert asked == [["srun", "--help"]]  # once per target, not once per job


def test_agent_checks_pyxis_on_its_node_too(
    slurm_cluster: SlurmCluster, target: SlurmTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A login node with pyxis over compute nodes without it (plugstack.conf differs): the agent, inside the job,
    says so before the engine-start timer. The login node's answer is faked here; the node's is real."""
    import runners.slurm.runner as slurm_runner

    monkeypatch.setattr(slurm_runner, "_SRUN_PROBLEMS", {("test-cluster", "pyxis"): None})
    job = make_job(target.model_copy(update={"container_runtime": "pyxis"}), tmp_path, CONTAINED)

    events = list(SlurmRunner().run_job(job))

    kinds = [event.kind for event in events]
    assert kinds[-1] == "job_failed" and "engine_launching" not in kinds, [(e.kind, e.message) for e in events]
    error = events[-1].error
    assert error is not None and error.kind == "ConfigurationError" and error.retryable is False
    assert f"container runtime 'pyxis' on node {slurm_cluster.node!r}: its srun has no --container-image" in (
        error.message
    )
    spec = JobSpec.model_validate_json((Path(target.install.workdir) / "jobs" / job.job_id / "spec.json").read_text())
    assert spec.container_runtime == "pyxis"  # what made the agent ask for pyxis instead of the recipe's docker


def test_pyxis_steps_are_cancelled_by_name(
    slurm_cluster: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `remove` and the reaper's stop_argv do, on real steps (started without containers)."""
    from runners.host.pyxis import main as pyxis_main

    step = "srun --overlap --nodes=1 --ntasks=1 --job-name={} sleep 300 &"
    script = f"{step.format('infersweep-run-1')} {step.format('infersweep-run-2')} wait"
    submitted = slurm_cluster.run("sbatch", "--parsable", "--output=/dev/null", "--wrap", script)
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip()
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))

    def steps() -> set[str]:
        listed = slurm_cluster.run("squeue", "--steps", "-h", "-j", job, "-o", "%j").stdout.split()
        return set(listed) - {"batch", "extern"}

    try:
        deadline = time.monotonic() + 15
        while steps() != {"infersweep-run-1", "infersweep-run-2"} and time.monotonic() < deadline:
            time.sleep(0.2)
        assert steps() == {"infersweep-run-1", "infersweep-run-2"}

        assert pyxis_main(["cancel", "--job", job, "infersweep-run-1"]) == 0

        deadline = time.monotonic() + 15
        while "infersweep-run-1" in steps() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert steps() == {"infersweep-run-2"}  # the other step and the job go on
        assert pyxis_main(["cancel", "--job", job, "infersweep-run-1"]) == 0  # nothing left: idempotent
    finally:
        slurm_cluster.run("scancel", job)


def test_the_batch_job_and_its_steps_do_not_inherit_the_runners_credentials(
    slurm_cluster: SlurmCluster, target: SlurmTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runners.slurm.runner import _sbatch_argv

    secret = uuid.uuid4().hex
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.setenv("INFERSWEEP_DB_URL", f"postgresql://postgres:{secret}@127.0.0.1/test")
    monkeypatch.setenv("INFERSWEEP_TEST_PASSED", "asked-for")
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    job = make_job(target, tmp_path, {"engine": {"env_from": ["INFERSWEEP_TEST_PASSED"]}})
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    script = job_dir / "job.sh"
    # What the real batch script does: a step (srun) starts the agent, which starts the engine.
    script.write_text(f"#!/bin/bash\nenv > {job_dir}/batch.env\nsrun --nodes=1 --ntasks=1 env > {job_dir}/step.env\n")
    sbatch, *flags = _sbatch_argv(job, target, str(job_dir), str(script))
    submitted = LocalCommands().run([sbatch, "--wait", *flags], timeout_s=120)
    assert submitted.returncode == 0, submitted.stderr
    for name in ("batch.env", "step.env"):
        seen = (job_dir / name).read_text()
        assert secret not in seen and "AWS_SECRET_ACCESS_KEY" not in seen, name
        assert "INFERSWEEP_TEST_PASSED=asked-for" in seen and f"PATH={os.environ['PATH']}" in seen, name
