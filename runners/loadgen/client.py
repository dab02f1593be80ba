"""Async streaming client for OpenAI-compatible `/v1/completions` and `/v1/chat/completions`.

Two load models: closed loop (a fixed number of lanes, each sending its next request when the last
ends) and open loop (gamma-distributed arrivals at a target rate, optionally capped in flight).

Every failure of a request (HTTP error, timeout, reset, malformed stream) becomes a failed record with
its reason; the client itself never raises because of what one server response did.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import aiohttp
import orjson

from recipes.errors import ConfigurationError, InfrastructureError
from runners.loadgen.records import RequestRecord
from runners.traces.synthesis import TokenPrompt

ERROR_TEXT_LIMIT = 500


@dataclass(frozen=True)
class PreparedRequest:
    """A request ready to send: its prompt (token ids, and their text for chat) and its output length."""

    index: int
    prompt: TokenPrompt
    max_tokens: int
    warmup: bool
    prompt_text: str | None = None


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    model: str
    api_key: str | None = None
    continuous_usage_stats: bool = True
    kind: str = "completions"  # or "chat"
    keep_text: bool = False  # keep the streamed text, for a tokenizer to count afterwards
    # Headers a replay sends a request's session id in (and a subagent's parent's): the engine's router reads them
    # (runners/engines/base.py, LaunchPlan.session_headers).
    session_headers: tuple[str, ...] = ("X-Session-ID",)
    parent_session_headers: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        path = "/v1/chat/completions" if self.kind == "chat" else "/v1/completions"
        return self.base_url.rstrip("/") + path


def check_reachable(base_url: str, what: str = "--base-url", timeout_s: float = 5.0) -> None:
    """Fail before a run, naming the URL, when the server cannot be reached: otherwise every request fails and
    the run "completes" as invalid after its whole schedule."""
    try:
        parsed = urllib.parse.urlsplit(base_url)
        port = parsed.port
    except ValueError as error:
        raise ConfigurationError(f"{what}: got {base_url!r}; {error}") from None
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigurationError(f"{what}: got {base_url!r}; expected http://HOST[:PORT] or https://HOST[:PORT]")
    port = port or (443 if parsed.scheme == "https" else 80)
    try:
        socket.create_connection((parsed.hostname, port), timeout=timeout_s).close()
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise InfrastructureError(
            f"{what}: cannot reach {base_url!r} ({reason} on {parsed.hostname}:{port}); is the server running there?"
        ) from None


def _body(endpoint: Endpoint, request: PreparedRequest) -> dict[str, object]:
    body: dict[str, object] = {
        "model": endpoint.model,
        "max_tokens": request.max_tokens,
        "temperature": 0.0,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": endpoint.continuous_usage_stats},
    }
    if endpoint.kind == "chat":
        body["messages"] = [{"role": "user", "content": request.prompt_text or ""}]
    return body


def encode_body(endpoint: Endpoint, request: PreparedRequest) -> bytes:
    """The request's JSON body, ready to send (a replayer encodes it ahead of the request's due time).

    A completions prompt is spliced in as the JSON array its blocks' cached encodings make (TokenPrompt), not
    re-encoded id by id: the body is the same JSON `json.dumps` would write."""
    encoded = json.dumps(_body(endpoint, request)).encode()
    if endpoint.kind == "chat":
        return encoded
    return encoded[:-1] + b', "prompt": ' + request.prompt.json_array() + b"}"


def _choice_text(choice: object) -> str | None:
    """Generated text of one streamed choice: `text` (completions) or `delta.content` (chat)."""
    if not isinstance(choice, dict):
        return None
    if "delta" in choice:
        delta = choice["delta"]
        content = delta.get("content") if isinstance(delta, dict) else None
        return content if isinstance(content, str) else None
    text = choice.get("text")
    return text if isinstance(text, str) else None


class _StreamError(Exception):
    """A malformed or failed stream: the request fails with this reason."""


class _SseReader:
    """Parses the SSE lines of one streamed response into the request's record."""

    def __init__(self, continuous_usage: bool, keep_text: bool = False) -> None:
        self.continuous_usage = continuous_usage
        self.text_parts: list[str] | None = [] if keep_text else None
        self.last_usage_tokens = 0
        self.done = False
        # Plain attributes while streaming (the hot path); copied into the record once, at the end.
        self.chunk_times: list[float] = []
        self.chunk_tokens: list[int] = []
        self.completion_tokens: int | None = None
        self.prompt_tokens: int | None = None
        self.cached_tokens: int | None = None

    def fill(self, record: RequestRecord) -> None:
        record.chunk_times = self.chunk_times
        record.chunk_tokens = self.chunk_tokens
        record.completion_tokens = self.completion_tokens
        record.prompt_tokens = self.prompt_tokens
        record.cached_tokens = self.cached_tokens
        if self.text_parts is not None:
            record.output_text = "".join(self.text_parts)

    def line(self, raw: bytes, now: float) -> None:
        line = raw.strip()
        if not line or line.startswith(b":"):
            return
        if not line.startswith(b"data:"):
            raise _StreamError(f"malformed SSE line: {line[:100]!r}")
        payload = line[5:].strip()
        if payload == b"[DONE]":
            self.done = True
            return
        try:
            chunk = orjson.loads(payload)
        except orjson.JSONDecodeError as error:  # invalid UTF-8 too
            raise _StreamError(f"malformed JSON in stream: {payload[:100]!r}") from error
        if not isinstance(chunk, dict):
            raise _StreamError(f"stream chunk is not an object: {payload[:100]!r}")
        if "error" in chunk:
            raise _StreamError(f"server error in stream: {str(chunk['error'])[:ERROR_TEXT_LIMIT]}")
        usage = chunk.get("usage") or {}
        choices = chunk.get("choices") or []
        if not isinstance(usage, dict) or not isinstance(choices, list):
            raise _StreamError(f"stream chunk has malformed usage or choices: {payload[:100]!r}")
        text = _choice_text(choices[0]) if choices else None
        completion_so_far = usage.get("completion_tokens")
        new_tokens = (
            completion_so_far - self.last_usage_tokens
            if isinstance(completion_so_far, int) and self.continuous_usage
            else None
        )
        # A role-only or usage-only chunk is not a token (docs/ARCHITECTURE.md §4). A choice whose text is
        # empty while usage grew is one: the server withholds incomplete UTF-8 until it completes.
        if text and self.text_parts is not None:
            self.text_parts.append(text)
        if text or (choices and new_tokens):
            self.chunk_times.append(now)
            self.chunk_tokens.append(new_tokens if new_tokens else 1)
        if isinstance(completion_so_far, int):
            self.last_usage_tokens = self.completion_tokens = completion_so_far
        if usage:  # most chunks of a stream without continuous usage carry none: nothing more to read
            if isinstance(usage.get("prompt_tokens"), int):
                self.prompt_tokens = usage["prompt_tokens"]
            details = usage.get("prompt_tokens_details") or {}
            if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
                self.cached_tokens = details["cached_tokens"]


async def _request_written(_session: aiohttp.ClientSession, context: SimpleNamespace, _params: object) -> None:
    record = context.trace_request_ctx
    if isinstance(record, RequestRecord):
        record.sent = time.perf_counter()


async def _request_dispatched(_session: aiohttp.ClientSession, context: SimpleNamespace, _params: object) -> None:
    record = context.trace_request_ctx
    if isinstance(record, RequestRecord):
        record.dispatched = time.perf_counter()


def client_session(connector: aiohttp.BaseConnector) -> aiohttp.ClientSession:
    """An HTTP session whose requests take `sent` when their body has been written to the connection (and
    `dispatched` when the writing began).

    So TTFT and E2EL start when the request has left the client: the wait for a pooled connection and the
    writing itself are the client's, not the server's, and count as client queue time (sent − scheduled).
    """
    tracing = aiohttp.TraceConfig()
    tracing.on_request_chunk_sent.append(_request_written)
    tracing.on_request_headers_sent.append(_request_dispatched)
    return aiohttp.ClientSession(connector=connector, trace_configs=[tracing])


async def send_one(
    session: aiohttp.ClientSession,
    endpoint: Endpoint,
    request: PreparedRequest,
    scheduled: float,
    timeout_s: float,
    extra_headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> RequestRecord:
    """Send one request and stream its answer into a record; `body` is `encode_body`'s, if already made."""
    record = RequestRecord(
        index=request.index,
        warmup=request.warmup,
        prompt_tokens_sent=len(request.prompt),
        max_tokens=request.max_tokens,
        scheduled=scheduled,
    )
    headers = {"Content-Type": "application/json"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    if extra_headers:
        headers.update(extra_headers)  # e.g. a session id, so KV-aware routers keep a session on one worker
    # Serialised before the clock starts. `sent` is set here and then, by the session's trace hook
    # (`client_session`), moved to when the request's last bytes were written to the connection.
    if body is None:
        body = encode_body(endpoint, request)
    reader = _SseReader(endpoint.continuous_usage_stats, endpoint.keep_text)
    try:
        record.sent = time.perf_counter()
        async with session.post(
            endpoint.url,
            data=body,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=timeout_s),
            trace_request_ctx=record,
        ) as response:
            record.http_status = response.status
            if response.status != 200:
                text = (await response.read()).decode(errors="replace")[:ERROR_TEXT_LIMIT]
                record.error = f"HTTP {response.status}: {text}"
                return record
            pending = b""
            # Read whatever bytes arrived and split them into lines ourselves: one timestamp per read,
            # shared by the events that arrived together, and far fewer awaits than line-by-line reading.
            async for data in response.content.iter_any():
                now = time.perf_counter()
                if record.first_byte is None:
                    record.first_byte = now
                lines = (pending + data).split(b"\n")
                pending = lines.pop()
                for line in lines:
                    reader.line(line, now)
                    if reader.done:
                        break
                if reader.done:
                    break
            if pending and not reader.done:
                reader.line(pending, time.perf_counter())
            record.end = time.perf_counter()
            if not reader.done:
                record.error = "stream ended without [DONE] (truncated response)"
            elif not reader.chunk_times:
                record.error = "stream carried no generated text"
    except _StreamError as error:
        record.error = str(error)
    except TimeoutError:
        record.error = f"timed out after {timeout_s:g} s"
    except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError) as error:
        state = "mid-stream" if record.first_byte is not None else "before the response"
        record.error = f"connection lost {state}: {type(error).__name__}: {str(error)[:ERROR_TEXT_LIMIT]}"
    except aiohttp.ClientError as error:
        record.error = f"{type(error).__name__}: {str(error)[:ERROR_TEXT_LIMIT]}"
    finally:
        if record.end is None:
            record.end = time.perf_counter()
        reader.fill(record)
    return record


def arrival_offsets(count: int, rate: float, burstiness: float, seed: int) -> list[float]:
    """Send offsets (s) of an open-loop schedule: gamma inter-arrivals with mean 1/rate.

    burstiness 1.0 is a Poisson process; lower is burstier, higher is more regular (as vLLM's client).
    """
    rng = random.Random(seed)
    offsets, now = [], 0.0
    for _ in range(count):
        offsets.append(now)
        now += rng.gammavariate(burstiness, 1.0 / (rate * burstiness))
    return offsets


async def run_open_loop(
    endpoint: Endpoint,
    requests: Sequence[PreparedRequest],
    rate: float,
    burstiness: float,
    max_concurrency: int | None,
    timeout_s: float,
    seed: int = 0,
    on_done: Callable[[RequestRecord], None] | None = None,
    offsets: Sequence[float] | None = None,
    start_at: float | None = None,
) -> list[RequestRecord]:
    """Send each request at its scheduled time; with a cap, late ones wait (their queue time is recorded).

    `offsets` and `start_at` (a perf_counter time, the same clock in every process on Linux) let several
    worker processes share one schedule: each gets its own requests with their offsets from one start.
    """
    offsets = list(offsets) if offsets is not None else arrival_offsets(len(requests), rate, burstiness, seed)
    slots = asyncio.Semaphore(max_concurrency) if max_concurrency else None
    records: list[RequestRecord] = []
    connector = aiohttp.TCPConnector(limit=max_concurrency or 0)
    async with client_session(connector) as session:
        start = start_at if start_at is not None else time.perf_counter()

        async def one(request: PreparedRequest, scheduled: float) -> None:
            if slots is None:
                record = await send_one(session, endpoint, request, scheduled, timeout_s)
            else:
                async with slots:
                    record = await send_one(session, endpoint, request, scheduled, timeout_s)
            records.append(record)
            if on_done is not None:
                on_done(record)

        tasks = []
        for request, offset in zip(requests, offsets, strict=True):
            delay = start + offset - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(request, start + offset)))
        await asyncio.gather(*tasks)
    records.sort(key=lambda record: record.index)
    return records


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

    async with client_session(connector) as session:

        async def lane() -> None:
            while True:
                try:
                    request = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                record = await send_one(session, endpoint, request, time.perf_counter(), timeout_s)
                records.append(record)
                if on_done is not None:
                    on_done(record)

        await asyncio.gather(*(lane() for _ in range(concurrency)))
    records.sort(key=lambda record: record.index)
    return records
