"""Async streaming client for OpenAI-compatible `/v1/completions`, closed loop at fixed concurrency.

Every failure of a request (HTTP error, timeout, reset, malformed stream) becomes a failed record with
its reason; the client itself never raises because of what one server response did.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import aiohttp

from runners.loadgen.records import RequestRecord

ERROR_TEXT_LIMIT = 500


@dataclass(frozen=True)
class PreparedRequest:
    """A request ready to send: its prompt as token ids and its output length."""

    index: int
    prompt_token_ids: list[int]
    max_tokens: int
    warmup: bool


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    model: str
    api_key: str | None = None
    continuous_usage_stats: bool = True


def _body(endpoint: Endpoint, request: PreparedRequest) -> dict[str, object]:
    return {
        "model": endpoint.model,
        "prompt": request.prompt_token_ids,
        "max_tokens": request.max_tokens,
        "temperature": 0.0,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": endpoint.continuous_usage_stats},
    }


async def _send_one(
    session: aiohttp.ClientSession,
    endpoint: Endpoint,
    request: PreparedRequest,
    scheduled: float,
    timeout_s: float,
) -> RequestRecord:
    record = RequestRecord(
        index=request.index,
        warmup=request.warmup,
        prompt_tokens_sent=len(request.prompt_token_ids),
        max_tokens=request.max_tokens,
        scheduled=scheduled,
    )
    headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
    url = endpoint.base_url.rstrip("/") + "/v1/completions"
    last_usage_tokens = 0
    saw_done = False
    try:
        record.sent = time.perf_counter()
        async with session.post(
            url, json=_body(endpoint, request), headers=headers, timeout=aiohttp.ClientTimeout(total=timeout_s)
        ) as response:
            record.http_status = response.status
            if response.status != 200:
                text = (await response.read()).decode(errors="replace")[:ERROR_TEXT_LIMIT]
                record.error = f"HTTP {response.status}: {text}"
                return record
            async for raw_line in response.content:
                now = time.perf_counter()
                if record.first_byte is None:
                    record.first_byte = now
                line = raw_line.strip()
                if not line or line.startswith(b":"):
                    continue
                if not line.startswith(b"data:"):
                    record.error = f"malformed SSE line: {line[:100]!r}"
                    return record
                payload = line[5:].strip()
                if payload == b"[DONE]":
                    saw_done = True
                    break
                try:
                    chunk = json.loads(payload)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    record.error = f"malformed JSON in stream: {payload[:100]!r}"
                    return record
                if not isinstance(chunk, dict):
                    record.error = f"stream chunk is not an object: {payload[:100]!r}"
                    return record
                if "error" in chunk:
                    record.error = f"server error in stream: {str(chunk['error'])[:ERROR_TEXT_LIMIT]}"
                    return record
                usage = chunk.get("usage") or {}
                choices = chunk.get("choices") or []
                if not isinstance(usage, dict) or not isinstance(choices, list):
                    record.error = f"stream chunk has malformed usage or choices: {payload[:100]!r}"
                    return record
                text = choices[0].get("text") if choices and isinstance(choices[0], dict) else None
                completion_so_far = usage.get("completion_tokens")
                new_tokens = (
                    completion_so_far - last_usage_tokens
                    if isinstance(completion_so_far, int) and endpoint.continuous_usage_stats
                    else None
                )
                # A role-only or usage-only chunk is not a token (DESIGN.md §4). A choice whose text is
                # empty while usage grew is one: the server withholds incomplete UTF-8 until it completes.
                if text or (choices and new_tokens):
                    record.chunk_times.append(now)
                    record.chunk_tokens.append(new_tokens if new_tokens else 1)
                if isinstance(completion_so_far, int):
                    last_usage_tokens = completion_so_far
                    record.completion_tokens = completion_so_far
                if isinstance(usage.get("prompt_tokens"), int):
                    record.prompt_tokens = usage["prompt_tokens"]
                details = usage.get("prompt_tokens_details") or {}
                if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
                    record.cached_tokens = details["cached_tokens"]
            record.end = time.perf_counter()
            if not saw_done:
                record.error = "stream ended without [DONE] (truncated response)"
            elif not record.chunk_times:
                record.error = "stream carried no generated text"
    except TimeoutError:
        record.error = f"timed out after {timeout_s:g} s"
    except aiohttp.ClientError as error:
        record.error = f"{type(error).__name__}: {str(error)[:ERROR_TEXT_LIMIT]}"
    finally:
        if record.end is None:
            record.end = time.perf_counter()
    return record


async def run_closed_loop(
    endpoint: Endpoint,
    requests: Sequence[PreparedRequest],
    concurrency: int,
    timeout_s: float,
    on_done: Callable[[RequestRecord], None] | None = None,
) -> list[RequestRecord]:
    """Send `requests` with at most `concurrency` in flight; each lane sends its next when one ends."""
    queue: asyncio.Queue[PreparedRequest] = asyncio.Queue()
    for request in requests:
        queue.put_nowait(request)
    records: list[RequestRecord] = []
    connector = aiohttp.TCPConnector(limit=concurrency, force_close=False)

    async with aiohttp.ClientSession(connector=connector) as session:

        async def lane() -> None:
            while True:
                try:
                    request = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                record = await _send_one(session, endpoint, request, time.perf_counter(), timeout_s)
                records.append(record)
                if on_done is not None:
                    on_done(record)

        await asyncio.gather(*(lane() for _ in range(concurrency)))
    records.sort(key=lambda record: record.index)
    return records
