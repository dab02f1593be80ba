"""The measured window and the usage evidence against a simulated server whose truth is known: equal requests
of 64 output tokens at concurrency 32, and a server that claims three times the tokens it streams."""

from __future__ import annotations

import pytest

from runners.engines.simulated_server import spawn
from runners.loadgen.bench import BenchSettings, run_bench

OSL = 64


@pytest.mark.parametrize("requests", [256, 2000])
def test_request_and_token_throughput_agree_on_short_and_long_closed_loop_runs(requests: int) -> None:
    # Equal requests (range ratio 1): every request streams exactly OSL tokens, so output / request throughput must
    # be OSL. Counting ends in the window gave 72.5 tokens per request at 256 requests (-11.6 % on requests/s).
    process, url = spawn("--ttft-ms", "10", "--itl-ms", "0.5", "--max-batch", "64")
    try:
        settings = BenchSettings(base_url=url, model="sim", isl=32, osl=OSL, range_ratio=1.0, concurrency=32,
                                 num_prompts=requests)  # fmt: skip
        result, _ = run_bench(settings)
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert result.validity.valid, result.validity.reasons
    assert result.output_throughput / result.request_throughput == pytest.approx(OSL, rel=0.01)


def test_a_server_claiming_more_tokens_than_it_streams_is_invalid() -> None:
    process, url = spawn("--ttft-ms", "5", "--itl-ms", "1", "--inject", "over-report:1")
    try:
        result, records = run_bench(
            BenchSettings(base_url=url, model="sim", isl=32, osl=8, concurrency=2, num_prompts=12)
        )
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert {record.completion_tokens for record in records} == {24}  # 3 x the 8 streamed, in continuous usage too
    assert not result.validity.valid
    assert any("more output tokens than max_tokens for 12 requests (e.g. 24 > 8)" in reason
               for reason in result.validity.reasons), result.validity.reasons  # fmt: skip


def test_the_measured_phase_of_a_fixed_length_point_runs_on_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    import uvloop

    from recipes.schema import ValidityThresholds
    from runners.loadgen import fixed_length
    from runners.loadgen.client import Endpoint
    from runners.loadgen.records import FixedLengthPoint

    loops: list[type] = []
    original = fixed_length.run_closed_loop

    async def observed(*args, **kwargs):  # type: ignore[no-untyped-def]
        loops.append(type(asyncio.get_running_loop()))
        return await original(*args, **kwargs)

    monkeypatch.setattr(fixed_length, "run_closed_loop", observed)
    process, url = spawn("--ttft-ms", "2", "--itl-ms", "0.5")
    try:
        point = FixedLengthPoint(isl=16, osl=4, range_ratio=1.0, concurrency=2, num_prompts=10, num_warmup=2, seed=0,
                                 request_timeout_s=30)  # fmt: skip
        vocabulary = fixed_length.Vocabulary(size=1000, excluded=frozenset())
        fixed_length.run_fixed_length_point(Endpoint(base_url=url, model="sim"), point, vocabulary, 1,
                                            ValidityThresholds())  # fmt: skip
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert loops == [uvloop.Loop, uvloop.Loop]  # warm-up, then the measured phase
