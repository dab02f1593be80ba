"""One real point against real vLLM on CPU, through the whole pipeline (the only real engine launch here).

A launch costs about a minute of both cores, so this module launches vLLM once and asserts on all it
can from that one run: results, origin, per-request artifacts, the engine log, and the teardown.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from sqlmodel import select

from db import reads, recording
from db.models import PointResultRow, ProvenanceRow
from db.session import make_engine, migrate, open_session
from runners.host.process import running_engines
from tests.conftest import processes_of_runs, records_of, run_cli

pytestmark = [pytest.mark.system, pytest.mark.vllm]

REAL_RECIPE = {
    "name": "tiny-llama-cpu-test",
    "hardware": "cpu-local",
    "model": {"name": "tiny-llama", "source": {"kind": "generated", "preset": "tiny-llama"}},
    "engine": {
        "kind": "vllm",
        "environment": {"kind": "venv", "name": "vllm-cpu"},
        "max_model_len": 2048,
        "startup_timeout_s": 600,
        "env": {"VLLM_CPU_KVCACHE_SPACE": "1"},
    },
    "precision": "bf16",
    "runner": {"kind": "local"},
    "workload": {"kind": "fixed-length", "sequences": [{"isl": 512, "osl": 64}], "concurrency": [1, 2]},
}


class EngineWatch:
    """Reads /proc while the sweep runs: the command line of each engine the run started (a session leader carrying
    the run's id in its environment), as the kernel has it."""

    def __init__(self, run_prefix: str) -> None:
        self.marker = f"INFERSWEEP_RUN_ID={run_prefix}".encode()
        self.seen: dict[int, list[str]] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self.done.wait(0.5):
            for pid in processes_of_runs(self.marker.decode().partition("=")[2]):
                try:
                    if pid in self.seen or os.getsid(pid) != pid:
                        continue
                    words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue  # it ended while we looked
                self.seen[pid] = [word.decode() for word in words if word]

    def __enter__(self) -> EngineWatch:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.done.set()
        self.thread.join()


def test_real_vllm_sweep(write_recipe, isolated_home: Path) -> None:
    recipe = write_recipe(base=REAL_RECIPE)
    with EngineWatch("tiny-llama-cpu-test-") as watch:
        result = run_cli("run", str(recipe), "--sweep", "vllm-real", timeout=1200)
    assert result.returncode == 0, result.stdout + result.stderr

    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        views = reads.list_results(session, sweep="vllm-real")
        sweep, _ = recording.get_or_create_sweep(session, "vllm-real")
        rows = session.exec(select(PointResultRow).where(PointResultRow.sweep_id == sweep.id)).all()
    assert len(rows) == 2
    assert [(v.concurrency, v.origin, v.valid) for v in views] == [(1, "measured", True), (2, "measured", True)], [
        v.validity_reasons for v in views
    ]
    for view in views:
        assert view.completed == 10 * view.concurrency and view.failed == 0
        assert view.ttft_p50_ms is not None and 0 < view.ttft_p50_ms < 10_000
        # vLLM on a loaded 2-core machine sometimes streams a whole response in one burst at the end
        # (its API server process starved of CPU): TPOT is then ~0 for those requests, truly measured.
        assert view.tpot_p50_ms is not None and 0 <= view.tpot_p50_ms < 1_000
        assert view.output_throughput_per_gpu > 0
        if view.tpot_p50_ms > 0:
            assert view.interactivity_p50 == pytest.approx(1000 / view.tpot_p50_ms)

    # Per-request records are stored as Parquet artifacts, with server usage for every request.
    for row in rows:
        records = records_of(row.records_path).to_dict("records")
        measured = [r for r in records if not r["warmup"]]
        assert len(measured) == 10 * row.concurrency
        assert all(r["completion_tokens"] == r["max_tokens"] for r in measured)
        assert all(r["prompt_tokens"] == r["prompt_tokens_sent"] for r in measured)
        # Range ratio 0.8: lengths uniform in [ceil(0.8 * 512), 512] = [410, 512].
        assert all(410 <= r["prompt_tokens_sent"] <= 512 for r in measured)

    # Provenance is what ran: the argv stored for the job is the command line the engine process had.
    with open_session(engine) as session:
        (job,) = reads.jobs_of_sweep(session, sweep.id)
        provenance = session.get(ProvenanceRow, job.id)
    assert provenance is not None and provenance.engine_argv is not None
    assert list(watch.seen.values()) == [provenance.engine_argv], (watch.seen, provenance.engine_argv)
    assert "vllm.entrypoints.openai.api_server" in provenance.engine_argv
    assert "VLLM_CPU_KVCACHE_SPACE" in (provenance.env_names or [])

    # The engine log was captured, and the engine is gone.
    logs = list((isolated_home / "logs" / "vllm-real").glob("*/engine.log"))
    assert logs and "Application startup complete" in logs[0].read_text()
    assert running_engines() == []
    assert processes_of_runs("tiny-llama-cpu-test-") == []
