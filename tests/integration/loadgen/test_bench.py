"""`infersweep bench` against the simulated engine running as a real server process."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from recipes.errors import ConfigurationError
from runners.engines.simulated_server import spawn
from runners.host.generated_model import ensure_generated_model
from runners.loadgen.bench import BenchResult, BenchSettings, parse_goodput, run_bench
from tests.conftest import ROOT, run_cli

TTFT_MS, ITL_MS = 40.0, 5.0


start_simulated = spawn  # (process, url) of a simulated engine; each test stops what it starts


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    process, url = start_simulated("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS))
    yield url
    process.terminate()
    process.wait(timeout=10)


def settings(url: str, **changes: object) -> BenchSettings:
    base = {"base_url": url, "model": "sim", "isl": 64, "osl": 16, "concurrency": 2, "num_prompts": 12}
    return BenchSettings(**{**base, **changes})


def test_result_schema_and_injected_latencies(server: str) -> None:
    result, records = run_bench(settings(server, num_warmup=2))
    document = json.loads(result.model_dump_json())
    for field in ("completed", "failed", "duration_s", "request_throughput", "output_throughput",
                  "total_token_throughput", "goodput", "validity", "settings", "complete", "client"):  # fmt: skip
        assert field in document
    for metric in ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms", "client_queue_ms", "interactivity"):
        assert set(document[metric]) >= {"mean", "p50", "p90", "p99", "std"}
    assert document["bench_schema_version"] == 2 and document["complete"] is True
    assert BenchResult.model_validate_json(result.model_dump_json()) == result
    assert result.completed == 12 and result.failed == 0 and result.validity.valid
    assert len(records) == 14 and sum(r.warmup for r in records) == 2
    # The injected timing is recovered; bounds are wide for a loaded 2-core machine (correctness only).
    assert TTFT_MS <= result.ttft_ms.p50 < TTFT_MS + 60
    assert ITL_MS * 0.8 < result.tpot_ms.p50 < ITL_MS + 5
    assert result.interactivity.p50 == pytest.approx(1000 / result.tpot_ms.p50)
    assert result.interactivity.std is None
    assert 0 <= result.client.cpu_utilisation < 2


def test_open_loop_records_queueing(server: str) -> None:
    # 40 req/s against a cap of 1 in flight: requests queue in the client, and that is measured.
    result, _ = run_bench(settings(server, concurrency=1, request_rate=40.0, num_prompts=10))
    assert result.settings.open_loop
    assert result.completed == 10
    assert result.client_queue_ms.p90 > 50
    assert result.duration_s > 0


def test_chat_endpoint_skips_the_role_only_chunk(server: str) -> None:
    tokenizer = ensure_generated_model("tiny-llama")
    result, records = run_bench(settings(server, endpoint="chat", tokenizer=str(tokenizer), num_prompts=4))
    assert result.completed == 4
    for record in records:
        assert sum(record.chunk_tokens) == record.completion_tokens == record.max_tokens


def test_goodput_counts_only_requests_meeting_every_slo(server: str) -> None:
    strict, _ = run_bench(settings(server, goodput=parse_goodput("ttft:1")))
    assert strict.goodput == 0
    generous, _ = run_bench(settings(server, goodput=parse_goodput("ttft:5000,tpot:1000,e2el:60000")))
    assert generous.goodput == pytest.approx(generous.request_throughput)


@pytest.mark.parametrize("text", ["ttft", "latency:5", "ttft:fast"])
def test_goodput_flag_errors_quote_the_value(text: str) -> None:
    with pytest.raises(ConfigurationError, match="--goodput: got"):
        parse_goodput(text)


def test_cli_writes_json_and_parquet(server: str, tmp_path: Path) -> None:
    output, parquet = tmp_path / "result.json", tmp_path / "requests.parquet"
    result = run_cli("bench", "--base-url", server, "--model", "sim", "--isl", "32", "--osl", "8", "--concurrency", "2",
                     "--num-prompts", "10", "--output", str(output), "--save-requests", str(parquet))  # fmt: skip
    assert result.returncode == 0, result.stderr
    document = json.loads(output.read_text())
    assert document["completed"] == 10 and document["settings"]["isl"] == 32
    frame = pd.read_parquet(parquet)
    assert len(frame) == 10 and {"sent", "chunk_times", "completion_tokens", "error"} <= set(frame.columns)


def test_cli_rejects_bad_flags_with_names(server: str) -> None:
    result = run_cli("bench", "--base-url", server, "--model", "sim", "--endpoint", "chat")
    assert result.returncode == 2 and "--endpoint chat needs --tokenizer" in result.stderr
    result = run_cli("bench", "--base-url", server, "--model", "sim", "--request-rate", "-1")
    assert result.returncode == 2 and "--request-rate" in result.stderr and "-1" in result.stderr


def test_ctrl_c_writes_a_partial_result(tmp_path: Path) -> None:
    process, url = start_simulated("--ttft-ms", "10", "--itl-ms", "50")
    output = tmp_path / "partial.json"
    try:
        bench = subprocess.Popen(
            [sys.executable, "-m", "orchestrator.cli", "bench", "--base-url", url, "--model", "sim", "--isl", "16",
             "--osl", "20", "--concurrency", "1", "--num-prompts", "50", "--output", str(output)],
            cwd=ROOT, env={**os.environ, "COLUMNS": "200"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(6)  # a few requests of about 1 s each finish
        bench.send_signal(signal.SIGINT)
        stdout, stderr = bench.communicate(timeout=60)
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert bench.returncode == 130, stdout + stderr
    document = json.loads(output.read_text())
    assert document["complete"] is False
    assert 0 < document["completed"] < 50
    assert "interrupted before every request finished" in document["validity"]["reasons"]
    assert not math.isnan(document["duration_s"])


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("http-error:2", "HTTP 500"),
        ("truncate:2", "without [DONE]"),
        ("disconnect:2", "connection lost mid-stream"),
        ("malformed:2", "malformed JSON"),
    ],
)
def test_injected_faults_are_failed_requests_with_reasons(fault: str, reason: str) -> None:
    process, url = start_simulated("--ttft-ms", "5", "--itl-ms", "1", "--inject", fault)
    try:
        result, records = run_bench(settings(url, num_prompts=10, osl=8))
    finally:
        process.terminate()
        process.wait(timeout=10)
    failed = [r for r in records if not r.ok]
    assert result.failed == len(failed) == 5 and result.completed == 5
    assert all(reason in (r.error or "") for r in failed), [r.error for r in failed]
    assert not result.validity.valid and any("error rate 50.0%" in text for text in result.validity.reasons)


def test_slow_first_byte_and_stalls_show_in_latencies() -> None:
    process, url = start_simulated(
        "--ttft-ms", "5", "--itl-ms", "1", "--inject", "slow-first-byte:2:300", "--inject", "stall:3:300"
    )
    try:
        result, records = run_bench(settings(url, concurrency=1, num_prompts=6, osl=8))
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert result.failed == 0
    ttfts = [(r.chunk_times[0] - r.sent) * 1000 for r in records]
    assert sorted(ttfts)[-3] >= 300  # requests 2, 4, 6 waited 300 ms for their first byte
    assert (
        result.itl_ms.p99 is not None
        and max((b - a) * 1000 for r in records for a, b in zip(r.chunk_times, r.chunk_times[1:], strict=False)) >= 300
    )


def test_simulated_prefix_cache_reports_hits() -> None:
    process, url = start_simulated("--prefix-caching", "--block-size", "16")
    try:
        body = {"model": "sim", "prompt": list(range(100)), "max_tokens": 2, "stream": True,
                "stream_options": {"include_usage": True}}  # fmt: skip
        cached = []
        for _ in range(2):
            request = urllib.request.Request(
                url + "/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                lines = [line for line in response.read().decode().splitlines() if line.startswith("data: {")]
            cached.append(json.loads(lines[-1][6:])["usage"]["prompt_tokens_details"]["cached_tokens"])
        with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
            metrics = dict(line.split() for line in response.read().decode().splitlines())
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert cached == [0, 96]  # 6 full blocks of 16 hit; the 4-token tail is computed
    assert metrics["vllm:prefix_cache_queries_total"] == "200"
    assert metrics["vllm:prefix_cache_hits_total"] == "96"


@pytest.mark.parametrize("rate", [math.inf, 30.0], ids=["closed-loop", "open-loop"])
def test_worker_processes_share_one_schedule(server: str, rate: float) -> None:
    result, records = run_bench(
        settings(server, concurrency=4, num_prompts=24, num_warmup=4, workers=2, request_rate=rate)
    )
    assert result.completed == 24 and result.failed == 0 and len(records) == 28
    assert sorted(r.index for r in records) == list(range(28))
    assert TTFT_MS <= result.ttft_ms.p50 < TTFT_MS + 60
    assert result.client.cpu_seconds > 0
    measured = [r for r in records if not r.warmup]
    # Both processes worked from one start: the first sends of the measured phase are close together.
    first_sends = sorted(r.sent for r in measured)[:2]
    assert first_sends[1] - first_sends[0] < 0.5
    if rate == math.inf:
        assert result.validity.valid, result.validity.reasons  # in-flight reached 4 across the 2 processes


def test_more_workers_than_concurrency_is_refused(server: str) -> None:
    with pytest.raises(ValueError, match="cannot exceed --concurrency"):
        settings(server, concurrency=2, workers=3)


def test_tokenizer_counts_when_the_server_sends_no_usage() -> None:
    tokenizer = ensure_generated_model("tiny-llama")
    process, url = start_simulated("--ttft-ms", "5", "--itl-ms", "1", "--no-usage")
    try:
        blind, blind_records = run_bench(settings(url, num_prompts=10, osl=8))
        counted, records = run_bench(settings(url, num_prompts=10, osl=8, tokenizer=str(tokenizer)))
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert all(r.completion_tokens is None for r in blind_records + records)
    # Without usage or tokenizer, the count is the number of streamed chunks (8 per request here).
    assert blind.total_output_tokens == 10 * 8
    # With a tokenizer, the streamed text is re-tokenised: each simulated " t123" piece is several tokens.
    assert all(r.tokenizer_tokens is not None and r.tokenizer_tokens > 8 for r in records)
    assert counted.total_output_tokens == sum(r.tokenizer_tokens for r in records)


def test_usage_and_tokenizer_disagreement_is_flagged(server: str) -> None:
    tokenizer = ensure_generated_model("tiny-llama")
    result, records = run_bench(settings(server, num_prompts=10, osl=8, tokenizer=str(tokenizer)))
    assert all(r.completion_tokens == 8 and r.tokenizer_tokens > 8 for r in records)
    assert result.token_disagreement > 0.10
    assert not result.validity.valid
    assert any("output-token counts differ" in reason for reason in result.validity.reasons)


def test_the_summary_says_why_requests_failed() -> None:
    process, url = start_simulated("--ttft-ms", "5", "--itl-ms", "1", "--inject", "http-error:2")
    try:
        result = run_cli("bench", "--base-url", url, "--model", "sim", "--isl", "16", "--osl", "8",
                         "--concurrency", "2", "--num-prompts", "10")  # fmt: skip
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if "failed: " in line]
    assert line.strip().startswith("5 failed: HTTP 500"), line
    # The interactivity row has its unit, and why its p90 is below its p50.
    assert "interactivity (tok/s/user)" in result.stdout
    assert "its p90 and p99 are the slow tail, so they sit below its p50" in result.stdout


@pytest.mark.parametrize(
    ("base_url", "message"),
    [
        ("file:///etc/passwd", "--base-url: got 'file:///etc/passwd'; expected http://HOST[:PORT]"),
        ("http://127.0.0.1:9", "--base-url: cannot reach 'http://127.0.0.1:9' (Connection refused"),
        ("http://127.0.0.1:99999", "--base-url: got 'http://127.0.0.1:99999'; Port out of range"),
    ],
)
def test_an_endpoint_that_cannot_be_reached_fails_before_the_run(base_url: str, message: str) -> None:
    result = run_cli("bench", "--base-url", base_url, "--model", "sim", "--num-prompts", "1000", timeout=60)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert "completed" not in result.stdout
