"""The streaming client against real HTTP servers on 127.0.0.1: the simulated engine and misbehaving handlers.

Every misbehaviour must end as a failed record with a reason; the client never raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from itertools import pairwise

import pytest
from aiohttp import web

from runners.engines.simulated_server import build_app, parse_args
from runners.loadgen.client import Endpoint, PreparedRequest, run_closed_loop
from runners.loadgen.records import RequestRecord
from runners.traces.synthesis import TokenPrompt

pytestmark = pytest.mark.timeout(30)

MODEL = "sim-model"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@contextlib.asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[str]:
    """Serve `app` on a free loopback port for the duration of the block; yields its base URL."""
    runner = web.AppRunner(app, shutdown_timeout=0.5, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        assert host == "127.0.0.1"
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def app_with(handler: Handler) -> web.Application:
    app = web.Application()
    app.router.add_post("/v1/completions", handler)
    return app


def request(index: int = 0, *, prompt_len: int = 3, max_tokens: int = 3, warmup: bool = False) -> PreparedRequest:
    return PreparedRequest(
        index=index, prompt=TokenPrompt.of(list(range(10, 10 + prompt_len))), max_tokens=max_tokens, warmup=warmup
    )


def run_against(handler: Handler, *, timeout_s: float = 2.0, continuous_usage_stats: bool = True) -> RequestRecord:
    """Send one request to a server running `handler`; return its record (the client must not raise)."""

    async def main() -> list[RequestRecord]:
        async with serving(app_with(handler)) as base_url:
            endpoint = Endpoint(base_url=base_url, model=MODEL, continuous_usage_stats=continuous_usage_stats)
            return await asyncio.wait_for(run_closed_loop(endpoint, [request()], 1, timeout_s), 10)

    records = asyncio.run(main())
    assert len(records) == 1
    record = records[0]
    assert record.sent is not None
    assert record.end is not None
    assert record.end >= record.sent
    return record


def sse(payload: object) -> bytes:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return b"data: " + text.encode() + b"\n\n"


def text_chunk(text: str, completion_tokens: int | None = None) -> dict[str, object]:
    chunk: dict[str, object] = {"object": "text_completion", "choices": [{"index": 0, "text": text}]}
    if completion_tokens is not None:
        chunk["usage"] = {"prompt_tokens": 3, "completion_tokens": completion_tokens}
    return chunk


def usage_only(completion_tokens: int) -> dict[str, object]:
    return {
        "object": "text_completion",
        "choices": [],
        "usage": {"prompt_tokens": 3, "completion_tokens": completion_tokens, "total_tokens": 3 + completion_tokens},
    }


def streaming(lines: list[bytes], *, gap_s: float = 0.002) -> Handler:
    """A handler streaming `lines` verbatim (with a small gap between writes), then ending cleanly."""

    async def handler(req: web.Request) -> web.StreamResponse:
        await req.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(req)
        for line in lines:
            await response.write(line)
            await asyncio.sleep(gap_s)
        await response.write_eof()
        return response

    return handler


# --- the simulated engine ----------------------------------------------------------------------------


def test_simulated_server_gives_complete_successful_records() -> None:
    args = parse_args(["--port", "0", "--model", MODEL, "--ttft-ms", "5", "--itl-ms", "1", "--max-batch", "4"])
    requests = [request(i, prompt_len=2 + i, max_tokens=3 + i, warmup=i == 0) for i in range(6)]
    done: list[int] = []

    async def main() -> list[RequestRecord]:
        async with serving(build_app(args)) as base_url:
            endpoint = Endpoint(base_url=base_url, model=MODEL)
            coroutine = run_closed_loop(endpoint, requests, 2, 5.0, on_done=lambda r: done.append(r.index))
            return await asyncio.wait_for(coroutine, 10)

    records = asyncio.run(main())
    assert [r.index for r in records] == [r.index for r in requests]
    assert sorted(done) == [r.index for r in requests]
    for prepared, record in zip(requests, records, strict=True):
        assert record.ok, record.error
        assert record.http_status == 200
        assert record.warmup == prepared.warmup
        assert record.max_tokens == prepared.max_tokens
        assert record.completion_tokens == prepared.max_tokens
        assert record.prompt_tokens == record.prompt_tokens_sent == len(prepared.prompt)
        assert record.output_tokens == prepared.max_tokens
        # One token per chunk (continuous usage deltas of 1), one chunk per token.
        assert record.chunk_tokens == [1] * prepared.max_tokens
        assert len(record.chunk_times) == prepared.max_tokens
        assert all(later >= earlier for earlier, later in pairwise(record.chunk_times))
        assert record.dispatched is not None and record.scheduled <= record.dispatched <= record.sent
        assert record.sent < record.first_byte <= record.chunk_times[0]
        assert record.chunk_times[-1] <= record.end
        # The simulated first token comes after ttft_ms.
        assert record.chunk_times[0] - record.sent >= args.ttft_ms / 1000 * 0.9


# --- token accounting of chunks ----------------------------------------------------------------------


def test_empty_text_with_growing_usage_is_a_token_chunk() -> None:
    lines = [
        sse(text_chunk("a", 1)),
        sse(text_chunk("", 3)),  # incomplete UTF-8 withheld, but usage grew by 2: a chunk of 2 tokens
        sse(text_chunk("b", 4)),
        sse(usage_only(4)),
        sse("[DONE]"),
    ]
    record = run_against(streaming(lines))
    assert record.ok, record.error
    assert record.chunk_tokens == [1, 2, 1]
    assert len(record.chunk_times) == 3
    assert record.completion_tokens == 4
    assert sum(record.chunk_tokens) == record.completion_tokens


def test_final_usage_only_chunk_is_not_a_token() -> None:
    # The server sends usage only at the end (no continuous stats): that chunk has choices == [].
    lines = [sse(text_chunk("a")), sse(text_chunk("b")), sse(text_chunk("c")), sse(usage_only(3)), sse("[DONE]")]
    record = run_against(streaming(lines))
    assert record.ok, record.error
    assert record.chunk_tokens == [1, 1, 1]
    assert len(record.chunk_times) == 3
    assert record.completion_tokens == 3
    assert record.prompt_tokens == 3


def test_usage_deltas_ignored_without_continuous_usage_stats() -> None:
    lines = [sse(text_chunk("a", 2)), sse(text_chunk("b", 5)), sse(usage_only(5)), sse("[DONE]")]
    record = run_against(streaming(lines), continuous_usage_stats=False)
    assert record.ok, record.error
    assert record.chunk_tokens == [1, 1]
    assert record.completion_tokens == 5


def test_sse_comments_and_blank_lines_are_skipped() -> None:
    lines = [b": keep-alive\n\n", sse(text_chunk("a", 1)), b"\n", sse(text_chunk("b", 2)), sse("[DONE]")]
    record = run_against(streaming(lines))
    assert record.ok, record.error
    assert record.chunk_tokens == [1, 1]


# --- misbehaving servers: each must give a failed record with a reason -------------------------------


def test_http_500_with_body() -> None:
    async def handler(req: web.Request) -> web.Response:
        return web.Response(status=500, text="engine exploded: CUDA out of memory")

    record = run_against(handler)
    assert not record.ok
    assert record.http_status == 500
    assert "500" in record.error
    assert "engine exploded" in record.error
    assert record.chunk_times == []


def test_stream_without_done_is_truncated() -> None:
    lines = [sse(text_chunk("a", 1)), sse(text_chunk("b", 2))]  # clean end of body, but no [DONE]
    record = run_against(streaming(lines))
    assert not record.ok
    assert "[DONE]" in record.error


def test_malformed_json_data_line() -> None:
    lines = [sse(text_chunk("a", 1)), b'data: {"choices": [{"text": "b"\n\n', sse("[DONE]")]
    record = run_against(streaming(lines))
    assert not record.ok
    assert "malformed JSON" in record.error


def test_non_data_garbage_line() -> None:
    lines = [sse(text_chunk("a", 1)), b"<html>502 Bad Gateway</html>\n", sse("[DONE]")]
    record = run_against(streaming(lines))
    assert not record.ok
    assert "malformed SSE line" in record.error


def test_non_object_chunk() -> None:
    record = run_against(streaming([sse("[1, 2, 3]"), sse("[DONE]")]))
    assert not record.ok
    assert "not an object" in record.error


def test_error_object_in_stream() -> None:
    lines = [sse(text_chunk("a", 1)), sse({"error": {"message": "KV cache exhausted"}}), sse("[DONE]")]
    record = run_against(streaming(lines))
    assert not record.ok
    assert "KV cache exhausted" in record.error


def test_role_and_usage_only_stream_has_no_text() -> None:
    lines = [
        sse({"object": "text_completion", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}),
        sse({"object": "text_completion", "choices": [{"index": 0, "text": ""}]}),
        sse(usage_only(5)),
        sse("[DONE]"),
    ]
    record = run_against(streaming(lines))
    assert not record.ok
    assert record.chunk_times == []
    assert "no generated text" in record.error


def test_server_sleeping_past_the_timeout() -> None:
    release = asyncio.Event()

    async def handler(req: web.Request) -> web.StreamResponse:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(release.wait(), 5)
        return web.Response(status=200, text="too late")

    timeout_s = 0.5

    async def main() -> tuple[list[RequestRecord], float]:
        async with serving(app_with(handler)) as base_url:
            loop = asyncio.get_running_loop()
            started = loop.time()
            records = await asyncio.wait_for(
                run_closed_loop(Endpoint(base_url=base_url, model=MODEL), [request()], 1, timeout_s), 10
            )
            elapsed = loop.time() - started
            release.set()  # let the handler finish so the server shuts down promptly
            return records, elapsed

    records, elapsed = asyncio.run(main())
    (record,) = records
    assert not record.ok
    assert "timed out" in record.error
    assert timeout_s * 0.9 <= elapsed < timeout_s + 2.0
    assert record.end - record.sent >= timeout_s * 0.9


def test_connection_closed_mid_stream() -> None:
    async def handler(req: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(req)
        await response.write(sse(text_chunk("a", 1)))
        await asyncio.sleep(0.02)
        assert req.transport is not None
        req.transport.close()  # drop the connection: no terminating chunk, no [DONE]
        await asyncio.sleep(0.02)
        return response

    record = run_against(handler)
    assert not record.ok
    assert record.error
    assert len(record.chunk_times) <= 1


def test_one_bad_response_does_not_stop_the_others() -> None:
    calls = {"n": 0}

    async def handler(req: web.Request) -> web.StreamResponse:
        calls["n"] += 1
        if calls["n"] == 2:
            return web.Response(status=503, text="overloaded")
        return await streaming([sse(text_chunk("a", 1)), sse(text_chunk("b", 2)), sse("[DONE]")])(req)

    async def main() -> list[RequestRecord]:
        async with serving(app_with(handler)) as base_url:
            endpoint = Endpoint(base_url=base_url, model=MODEL)
            return await asyncio.wait_for(run_closed_loop(endpoint, [request(i) for i in range(4)], 1, 2.0), 10)

    records = asyncio.run(main())
    assert [r.index for r in records] == [0, 1, 2, 3]
    assert [r.ok for r in records] == [True, False, True, True]
    assert "503" in records[1].error


# --- malformed bytes and shapes that currently escape as exceptions -----------------------------------


def test_invalid_utf8_in_data_line() -> None:
    lines = [b'data: {"choices": [{"index": 0, "text": "\xff"}]}\n\n', sse("[DONE]")]
    record = run_against(streaming(lines))
    assert not record.ok
    assert record.error


def test_http_500_with_undecodable_body() -> None:
    async def handler(req: web.Request) -> web.Response:
        return web.Response(status=500, body=b"boom \xff\xfe", headers={"Content-Type": "text/plain; charset=utf-8"})

    record = run_against(handler)
    assert not record.ok
    assert "500" in record.error


@pytest.mark.parametrize(
    "chunk",
    [
        {"choices": [{"index": 0, "text": "a"}], "usage": "n/a"},
        {"choices": {"index": 0, "text": "a"}},
    ],
    ids=["usage-string", "choices-object"],
)
def test_wrongly_typed_fields_in_chunk(chunk: dict[str, object]) -> None:
    record = run_against(streaming([sse(chunk), sse("[DONE]")]))
    assert not record.ok
    assert record.error
