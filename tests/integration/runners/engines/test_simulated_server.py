"""The simulated engine answers the request fields today's chat clients send (AIPerf, OpenAI's SDK)."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from aiohttp import ClientSession, web
from tokenizers import Tokenizer

from runners.engines.simulated_server import build_app, parse_args, spawn
from runners.host.generated_model import ensure_generated_model

pytestmark = pytest.mark.timeout(30)


async def _events(path: str, body: dict[str, object], *options: str) -> list[dict[str, object]]:
    """Every streamed event of one request, parsed."""
    args = parse_args(["--port", "0", "--model", "sim", "--ttft-ms", "1", "--itl-ms", "0", *options])
    runner = web.AppRunner(build_app(args), shutdown_timeout=0.5, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        async with ClientSession() as session, session.post(f"http://127.0.0.1:{port}{path}", json=body) as response:
            return [json.loads(line[6:]) async for line in response.content if line.startswith(b"data: {")]
    finally:
        await runner.cleanup()


async def _usage(body: dict[str, object], *options: str) -> dict[str, int]:
    """The last usage a chat request's stream reported."""
    usage = [event["usage"] for event in await _events("/v1/chat/completions", body, *options) if event.get("usage")]
    assert usage
    return usage[-1]  # type: ignore[return-value]  # a usage object of counts


@pytest.mark.parametrize(("limit", "expected"), [({"max_completion_tokens": 5}, 5), ({"max_tokens": 7}, 7), ({}, 16)])
def test_chat_output_length_follows_max_completion_tokens_then_max_tokens(limit: dict[str, int], expected: int) -> None:
    body = {"model": "sim", "messages": [{"role": "user", "content": "a b c"}], "stream": True,
            "stream_options": {"include_usage": True}, **limit}  # fmt: skip
    assert asyncio.run(_usage(body))["completion_tokens"] == expected


def test_with_the_models_tokenizer_a_chat_prompt_counts_its_tokens_not_its_words() -> None:
    # AIPerf's AgentX replay sends chat text; a real server counts it with the model's tokenizer. Whitespace words
    # undercount code-like text several times over.
    tokenizer_dir = ensure_generated_model("tiny-llama")
    text = "def f(x):\n    return {'a': x[0], 'b': x[1:]}  # indexing"
    body = {"model": "sim", "messages": [{"role": "user", "content": text}], "stream": True, "max_tokens": 1,
            "stream_options": {"include_usage": True}}  # fmt: skip
    expected = len(
        Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json")).encode(text, add_special_tokens=False).ids
    )
    assert expected > len(text.split())
    assert asyncio.run(_usage(body, "--tokenizer", str(tokenizer_dir)))["prompt_tokens"] == expected
    assert asyncio.run(_usage(body))["prompt_tokens"] == len(text.split())


@pytest.mark.parametrize("chat", [True, False])
def test_every_token_chunk_is_the_openai_shape_with_its_running_usage(chat: bool) -> None:
    """The token chunks are written as text, not through json.dumps (the server's speed with no delay): each must
    still parse to the object, model, choice and, with continuous usage, the counts so far, cached tokens included."""
    prompt: dict[str, object] = (
        {"messages": [{"role": "user", "content": "a b c d"}]} if chat else {"prompt": [1, 2, 3, 4, 5, 6, 7, 8]}
    )
    body = {"model": "sim", "stream": True, "max_tokens": 3, **prompt,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True}}  # fmt: skip
    path = "/v1/chat/completions" if chat else "/v1/completions"
    events = asyncio.run(_events(path, body, "--prefix-caching", "--block-size", "4"))
    tokens = [event for event in events if event["choices"] and "role" not in event["choices"][0].get("delta", {})]
    prompt_tokens = 4 if chat else 8
    kind = "chat.completion.chunk" if chat else "text_completion"
    for produced, event in enumerate(tokens, start=1):
        (choice,) = event["choices"]  # type: ignore[misc]  # a list of one choice
        piece = choice["delta"]["content"] if chat else choice["text"]
        assert event["object"] == kind and event["model"] == "sim" and choice["index"] == 0
        assert piece.startswith(" t") and piece[2:].isdigit()
        assert event["usage"] == {"prompt_tokens": prompt_tokens, "prompt_tokens_details": {"cached_tokens": 0},
                                  "completion_tokens": produced, "total_tokens": prompt_tokens + produced}  # fmt: skip
    assert len(tokens) == 3


def test_a_long_prompt_being_tokenised_holds_back_no_other_request() -> None:
    """The engine tokenises a chat prompt off its event loop with the GIL released, as a real server tokenises apart
    from its other requests: a short request sent while a long prompt is being tokenised is answered long before the
    long one. (`encode` on the loop held every other request until it ended, so a replay's arrivals were stamped up to
    230 ms late beside the AgentX harness.) The server runs as its own process, as a replay meets it."""
    tokenizer_dir = ensure_generated_model("tiny-llama")
    # Distinct words (no cached merges: 0.6-0.8 s to tokenise here), under the server's 1 MB body limit.
    long_text = " ".join(f"w{index * 7919 % 1_000_003}" for index in range(110_000))

    def chat(text: str) -> bytes:
        return json.dumps({"model": "sim", "messages": [{"role": "user", "content": text}], "stream": True,
                           "max_tokens": 1, "stream_options": {"include_usage": True}}).encode()  # fmt: skip

    def post(url: str, body: bytes, after_s: float = 0.0) -> tuple[float, float, bytes]:
        """(when it was sent, when its whole answer came, the answer), sent `after_s` from now."""
        time.sleep(after_s)
        request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
        sent = time.perf_counter()
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = response.read()
        return sent, time.perf_counter(), answer

    process, base = spawn("--ttft-ms", "1", "--itl-ms", "0", "--max-model-len", "1000000", "--tokenizer",
                          str(tokenizer_dir))  # fmt: skip
    try:
        url = f"{base}/v1/chat/completions"
        with ThreadPoolExecutor(2) as pool:
            # The short request goes out 0.1 s after the long one (whose body is sent and parsed within milliseconds).
            long_request = pool.submit(post, url, chat(long_text))
            short_sent, short_done, _ = pool.submit(post, url, chat("a b c"), 0.1).result()
            _, long_done, long_answer = long_request.result()
    finally:
        process.terminate()
        process.wait(timeout=10)
    events = [json.loads(line[6:]) for line in long_answer.splitlines() if line.startswith(b"data: {")]
    usage = [event["usage"] for event in events if event.get("usage")]
    long_ids = (
        Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json")).encode(long_text, add_special_tokens=False).ids
    )
    assert usage and usage[-1]["prompt_tokens"] == len(long_ids)  # the ids of the tokenizer's own encode
    still_tokenising = long_done - short_sent
    assert still_tokenising > 0.15, f"the long prompt was done {still_tokenising:.3f} s after the short one was sent"
    assert short_done - short_sent < still_tokenising / 2, (
        f"the short request took {short_done - short_sent:.3f} s; the long one ended {still_tokenising:.3f} s after it "
        "was sent"
    )
