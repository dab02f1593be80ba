"""A hand-checkable results database for the hub's tests (AppTest and the real browser).

Every figure below is chosen so a test can work its expected value out by hand:

- `b200-vllm-8k1k` (8x B200, vLLM, DeepSeek-R1 FP8, TP8·EP8, 8k/1k): three nightly sweeps. In the
  latest (`nightly-3`, three repeats) concurrency 16 sits at exactly 50 tok/s/user and
  1480/1500/1520 output tok/s/GPU (mean 1500), so at 50 tok/s/user the B200 owning-hyperscaler cost
  is 1.73 / (1500 × 3600 / 10⁶) = $0.3204 per million output tokens.
- `h200-vllm-8k1k`: 1000 then 1005 then 900 tok/s/GPU at 30 tok/s/user: the latest sweep is a planted
  regression (−10 %).
- `mi355x-sglang-8k1k`: imported (an InferenceX row set), shown by default, labelled with its source.
- `b200-sglang-agentic-hbm` / `-dram`: agentic replay arms, prompt tokens split by tier from the
  server counters (HBM hits, DRAM hits, recomputed) with the trace's theoretical ceiling.
- `cpu-local-sim`: simulated (hidden unless asked for); `cpu-local-dry`: a dry run (never shown);
  one invalid point; one retracted point; one sweep under embargo.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from db import recording
from db.models import PointResultRow
from db.session import make_engine, migrate, open_session

DAY0 = datetime(2026, 11, 1, 2, 0, tzinfo=UTC)
B200_OWNING_USD_PER_GPU_HOUR = 1.73
COST_B200_AT_50 = B200_OWNING_USD_PER_GPU_HOUR / (1500 * 3600 / 1e6)


def _snapshot(name: str, hardware: str, engine: str, model: str, precision: str, parallelism: dict[str, int],
              workload: dict[str, Any], offload_gib: float | None = None) -> dict[str, Any]:  # fmt: skip
    methodology: dict[str, Any] = {"prefix_caching": workload["kind"] == "agentic-replay"}
    if offload_gib:
        methodology["kv_offload"] = {"backend": "dram", "dram_gib": offload_gib}
    return {
        "schema_version": 1, "name": name, "hardware": hardware, "engine": {"kind": engine, "version": "0.30.0"},
        "model": {"name": model}, "precision": precision, "parallelism": parallelism, "methodology": methodology,
        "workload": workload,
    }  # fmt: skip


FIXED = {"kind": "fixed-length", "sequences": [{"isl": 8192, "osl": 1024}], "concurrency": [4, 16, 64]}
AGENTIC = {"kind": "agentic-replay", "trace": "claude-code.json", "concurrency": [4, 16]}


class _Seeder:
    def __init__(self, url: str) -> None:
        self.engine = make_engine(url)
        migrate(self.engine)
        self.jobs = 0

    def sweep(self, name: str) -> int:
        with open_session(self.engine) as session:
            sweep, _ = recording.get_or_create_sweep(session, name)
            return int(sweep.id)

    def recipe(self, snapshot: dict[str, Any]) -> int:
        with open_session(self.engine) as session:
            row = recording.upsert_recipe(session, f"fp-{snapshot['name']}", snapshot["name"], f"{snapshot['name']}.yaml",
                                        snapshot["hardware"], snapshot["engine"]["kind"], snapshot)  # fmt: skip
            return int(row.id)

    def points(self, sweep_id: int, recipe_id: int, at: datetime, curve: list[tuple[int, float, float]],
               origin: str = "measured", repeat: int = 0, accelerators: int = 8, agentic: dict[int, dict] | None = None,
               source: str | None = None, invalid: set[int] = frozenset()) -> str:  # fmt: skip
        """`curve`: (concurrency, interactivity tok/s/user, output tok/s/GPU) per Point."""
        self.jobs += 1
        job_id = f"job-{self.jobs}"
        with open_session(self.engine) as session:
            recording.create_job(session, job_id, sweep_id, recipe_id, 1, len(curve), "")
            for concurrency, interactivity, per_gpu in curve:
                replay = agentic is not None
                # TTFT p90 lives in the stored metrics only (the SLO tiers read it): between p50 and p99.
                metrics: dict[str, Any] = {"ttft_ms": {"p90": 300.0 + concurrency}}
                if replay:
                    metrics = {**agentic[concurrency], **metrics}
                valid = concurrency not in invalid
                recording.record_point(
                    session,
                    PointResultRow(
                        sweep_id=sweep_id, job_id=job_id, recipe_id=recipe_id, point_key=f"r{recipe_id}-c{concurrency}-x{repeat}",
                        repeat_index=repeat, workload_kind="agentic-replay" if replay else "fixed-length",
                        isl=None if replay else 8192, osl=None if replay else 1024, concurrency=concurrency,
                        origin=origin, valid=valid, validity_reasons=[] if valid else ["error rate 20.0% above 10%"],
                        completed=100, failed=0 if valid else 25, duration_s=60.0, request_throughput=1.0,
                        output_throughput=per_gpu * accelerators, accelerators=accelerators,
                        total_token_throughput=per_gpu * accelerators * 9, output_throughput_per_gpu=per_gpu,
                        total_token_throughput_per_gpu=per_gpu * 9, ttft_p50_ms=200.0 + concurrency,
                        ttft_p99_ms=400.0 + concurrency, tpot_p50_ms=1000.0 / interactivity, tpot_p90_ms=1100.0 / interactivity,
                        e2el_p50_ms=200.0 + 1024 * 1000.0 / interactivity, interactivity_p50=interactivity,
                        interactivity_p90=interactivity * 0.9, metrics=metrics, source=source,
                        started_at=at, finished_at=at + timedelta(minutes=concurrency),
                    ),
                )  # fmt: skip
            recording.update_job(session, job_id, _succeeded(), reason="fixture", host="node-1")
        return job_id


def _succeeded() -> Any:
    from db.lifecycle import JobState

    return JobState.SUCCEEDED


def _agentic(hbm: float, dram: float, theoretical: float) -> dict[str, Any]:
    """A replay Point's figures. With a DRAM tier its traffic too: 1 kB of KV per token loaded back for each
    DRAM-hit token, twice that offloaded, at 50 GB/s. By turn: turn 0 (10 requests) hits nothing, turns 1-7
    (90 requests) hit what the whole Point hits, against ceilings of 0 and the trace's."""
    prompt = 1_000_000.0
    hits = (hbm + dram) * prompt
    server = {"prompt_tokens": prompt, "prefix_cache_queries": prompt, "prefix_cache_hits": hits,
              "prompt_tokens_local_cache_hit": hbm * prompt, "prompt_tokens_external": dram * prompt,
              "prompt_tokens_local_compute": (1 - hbm - dram) * prompt}  # fmt: skip
    if dram:
        loaded = dram * prompt * 1000
        server |= {"kv_offload_bytes_to_device": loaded, "kv_offload_seconds_to_device": loaded / 50e9,
                   "kv_offload_bytes_to_host": 2 * loaded, "kv_offload_seconds_to_host": 2 * loaded / 50e9}  # fmt: skip
    turns = [
        {"label": "turn 0", "low": 0, "high": 0, "requests": 10, "ttft_p50_ms": 900.0, "prompt_tokens_p50": 20000.0,
         "realized_hit_rate": 0.0, "theoretical_hit_rate": 0.0},
        {"label": "turn 1-7", "low": 1, "high": 7, "requests": 90, "ttft_p50_ms": 300.0, "prompt_tokens_p50": 60000.0,
         "realized_hit_rate": hbm + dram, "theoretical_hit_rate": theoretical},
    ]  # fmt: skip
    return {
        "replay": {"realized_hit_rate": hbm + dram, "theoretical_hit_rate": theoretical,
                   "agentx_theoretical_hit_rate": theoretical - 0.01, "prompt_tokens": prompt,
                   "cached_tokens": hits, "e2e_interactivity_p90": 20.0, "per_turn": turns, "per_context": []},
        "server": server,
    }  # fmt: skip


def seed_hub(url: str) -> None:
    """Fill an empty database at `url` with the results described in the module docstring."""
    seeder = _Seeder(url)
    b200 = seeder.recipe(_snapshot("b200-vllm-8k1k", "b200", "vllm", "deepseek-r1", "fp8", {"tp": 8, "ep": 8}, FIXED))
    h200 = seeder.recipe(_snapshot("h200-vllm-8k1k", "h200", "vllm", "deepseek-r1", "fp8", {"tp": 8, "ep": 8}, FIXED))
    mi355x = seeder.recipe(_snapshot("mi355x-sglang-8k1k", "mi355x", "sglang", "deepseek-r1", "fp8", {"tp": 8}, FIXED))
    hbm = seeder.recipe(
        _snapshot("b200-sglang-agentic-hbm", "b200", "sglang", "deepseek-r1", "fp8", {"tp": 8}, AGENTIC)
    )
    dram = seeder.recipe(
        _snapshot("b200-sglang-agentic-dram", "b200", "sglang", "deepseek-r1", "fp8", {"tp": 8}, AGENTIC, 1024)
    )
    cpu_fixed = {**FIXED, "concurrency": [1, 2]}
    simulated = seeder.recipe(_snapshot("cpu-local-sim", "cpu-local", "simulated", "tiny-llama", "bf16", {}, cpu_fixed))
    dry = seeder.recipe(_snapshot("cpu-local-dry", "cpu-local", "vllm", "tiny-llama", "bf16", {}, cpu_fixed))

    for week, (b200_mid, h200_30) in enumerate([(1500.0, 1000.0), (1510.0, 1005.0)], start=1):
        sweep = seeder.sweep(f"nightly-{week}")
        at = DAY0 + timedelta(days=7 * (week - 1))
        seeder.points(sweep, b200, at, [(4, 100.0, 500.0), (16, 50.0, b200_mid), (64, 20.0, 3000.0)])
        seeder.points(sweep, h200, at, [(4, 60.0, 400.0), (16, 30.0, h200_30)])
    latest = seeder.sweep("nightly-3")
    at = DAY0 + timedelta(days=14)
    for repeat, mid in enumerate((1480.0, 1500.0, 1520.0)):
        seeder.points(latest, b200, at, [(4, 100.0, 500.0), (16, 50.0, mid), (64, 20.0, 3000.0)], repeat=repeat,
                      invalid={64} if repeat == 2 else set())  # fmt: skip
    seeder.points(latest, h200, at, [(4, 60.0, 400.0), (16, 30.0, 900.0)])

    imported = seeder.sweep("inferencex-import")
    seeder.points(imported, mi355x, at, [(4, 80.0, 600.0), (16, 40.0, 1400.0)], origin="imported",
                  source="inferencex: fixture rows")  # fmt: skip

    agentic = seeder.sweep("agentic-1")
    seeder.points(agentic, hbm, at, [(4, 40.0, 300.0), (16, 25.0, 700.0)],
                  agentic={4: _agentic(0.80, 0.0, 0.97), 16: _agentic(0.55, 0.0, 0.97)})  # fmt: skip
    seeder.points(agentic, dram, at, [(4, 42.0, 320.0), (16, 28.0, 820.0)],
                  agentic={4: _agentic(0.80, 0.12, 0.97), 16: _agentic(0.55, 0.35, 0.97)})  # fmt: skip

    local = seeder.sweep("local-sim")
    seeder.points(local, simulated, at, [(1, 400.0, 50.0), (2, 300.0, 80.0)], origin="simulated", accelerators=1)
    seeder.points(local, dry, at, [(1, 400.0, 50.0)], origin="dry-run", accelerators=1)

    retracted = seeder.sweep("bad-driver")
    seeder.points(retracted, h200, at, [(4, 61.0, 9999.0)])
    secret = seeder.sweep("vendor-launch")
    seeder.points(secret, b200, at, [(4, 200.0, 9000.0)])
    with open_session(seeder.engine) as session:
        recording.retract(session, "driver bug inflated throughput", "bad-driver")
        recording.embargo(session, "vendor-launch", datetime(2100, 1, 1, tzinfo=UTC))
    seeder.engine.dispose()


def seed_many_configurations(url: str, count: int = 9) -> None:
    """`count` configurations (one recipe each, five chips and two engines in turn), each measured by two nightly
    sweeps a day apart at 4 and 16 users: more series than the palette's eight colours."""
    seeder = _Seeder(url)
    chips = [("b200", "vllm"), ("h200", "vllm"), ("mi355x", "sglang"), ("b300", "sglang"), ("h100", "vllm")]
    sweeps = [seeder.sweep(f"nightly-{day}") for day in range(2)]
    for index in range(count):
        hardware, engine = chips[index % len(chips)]
        recipe = seeder.recipe(_snapshot(f"{hardware}-{engine}-ep{index + 1}", hardware, engine, "deepseek-r1", "fp8",
                                         {"tp": 8, "ep": index + 1}, FIXED))  # fmt: skip
        for day, sweep in enumerate(sweeps):
            seeder.points(sweep, recipe, DAY0 + timedelta(days=day), [(4, 80.0, 400.0), (16, 40.0, 900.0)])
