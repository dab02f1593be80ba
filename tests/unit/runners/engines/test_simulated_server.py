"""The simulated engine answers the request fields today's chat clients send (AIPerf, OpenAI's SDK)."""

from __future__ import annotations

import asyncio
import json

import pytest
from aiohttp import ClientSession, web

from runners.engines.simulated_server import build_app, parse_args

pytestmark = pytest.mark.timeout(30)


async def _completion_tokens(body: dict[str, object]) -> int:
    args = parse_args(["--port", "0", "--model", "sim", "--ttft-ms", "1", "--itl-ms", "0"])
    runner = web.AppRunner(build_app(args), shutdown_timeout=0.5, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        async with (
            ClientSession() as session,
            session.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body) as response,
        ):
            usage = None
            async for line in response.content:
                text = line.decode().strip()
                if text.startswith("data: {"):
                    usage = json.loads(text[6:]).get("usage") or usage
        assert usage is not None
        return int(usage["completion_tokens"])
    finally:
        await runner.cleanup()


@pytest.mark.parametrize(("limit", "expected"), [({"max_completion_tokens": 5}, 5), ({"max_tokens": 7}, 7), ({}, 16)])
def test_chat_output_length_follows_max_completion_tokens_then_max_tokens(limit: dict[str, int], expected: int) -> None:
    body = {"model": "sim", "messages": [{"role": "user", "content": "a b c"}], "stream": True,
            "stream_options": {"include_usage": True}, **limit}  # fmt: skip
    assert asyncio.run(_completion_tokens(body)) == expected
