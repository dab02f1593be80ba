"""Our client and vLLM's own client, against the same simulated server with injected latencies.

Both must recover the injected TTFT and TPOT (correctness, with bounds wide enough for a loaded 2-core
machine); how close each gets is measured by benchmarks/loadgen_timing.py, not asserted here.
"""

from __future__ import annotations

from benchmarks.peers import run_vllm_client, simulated_server
from runners.loadgen.bench import BenchSettings, run_bench

TTFT_MS, ITL_MS = 60.0, 8.0


def test_both_clients_recover_injected_latencies() -> None:
    with simulated_server("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS)) as url:
        ours, _ = run_bench(BenchSettings(base_url=url, model="sim", isl=64, osl=16, concurrency=4, num_prompts=24))
        theirs = run_vllm_client(url, 64, 16, 4, 24)
    assert ours.completed == theirs["completed"] == 24
    for ttft in (ours.ttft_ms.p50, theirs["median_ttft_ms"]):
        assert TTFT_MS <= ttft < TTFT_MS + 60
    for tpot in (ours.tpot_ms.p50, theirs["median_tpot_ms"]):
        assert ITL_MS * 0.8 < tpot < ITL_MS + 6
    # Same server, same load: the two clients agree on the medians within a few milliseconds.
    assert abs(ours.tpot_ms.p50 - theirs["median_tpot_ms"]) < 3
