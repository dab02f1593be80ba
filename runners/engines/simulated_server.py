"""A small OpenAI-compatible streaming server with configurable timing, for fast tests and fault injection.

It behaves like a serving engine from the outside (`/health`, `/v1/models`, streamed `/v1/completions`
and `/v1/chat/completions` with usage, `/metrics` with vLLM's counter names) but computes nothing: the
first token comes after `ttft + prefill of the uncached prompt` and each next one after `itl`. At most
`max_batch` requests are served at once; the rest wait, as in a real engine's queue.

With `--prefix-caching` it keeps a block-level prefix cache (LRU, `--cache-blocks` blocks of
`--block-size` tokens) and reports hits in `usage.prompt_tokens_details.cached_tokens` and on /metrics.
`--inject KIND:EVERY[:MS]` makes every EVERY-th request misbehave (see REQUEST_FAULTS).
Results produced against it are labelled `simulated`.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import subprocess
import sys
import time
import urllib.request
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

try:
    import uvloop
except ImportError:  # e.g. Windows: the standard loop serves the same bytes, with more overhead
    uvloop = None  # type: ignore[assignment]  # the module or None: main() checks which

REQUEST_FAULTS = {
    "http-error": "answer HTTP 500 with an error body",
    "truncate": "stop the stream halfway without [DONE]",
    "disconnect": "drop the connection halfway through the stream",
    "stall": "pause MS milliseconds halfway through the stream",
    "slow-first-byte": "wait MS milliseconds before sending the response headers",
    "malformed": "send a data line that is not JSON",
    "over-report": "report three times the output tokens it streams, in continuous and final usage",
}


LISTEN_BACKLOG = 2048  # uvicorn's default, as vLLM's server listens


def _load_tokenizer(directory: str) -> Any:
    from tokenizers import Tokenizer  # only when asked for: a second of import time

    return Tokenizer.from_file(str(Path(directory) / "tokenizer.json"))


@dataclass(frozen=True)
class RequestFault:
    kind: str
    every: int
    ms: float = 0.0

    @classmethod
    def parse(cls, text: str) -> RequestFault:
        parts = text.split(":")
        if len(parts) not in (2, 3) or parts[0] not in REQUEST_FAULTS:
            raise argparse.ArgumentTypeError(
                f"--inject: got {text!r}; expected KIND:EVERY[:MS], KIND in {sorted(REQUEST_FAULTS)}"
            )
        try:
            every, ms = int(parts[1]), float(parts[2]) if len(parts) == 3 else 0.0
        except ValueError as error:
            raise argparse.ArgumentTypeError(f"--inject: got {text!r}; EVERY and MS must be numbers") from error
        if every < 1:
            raise argparse.ArgumentTypeError(f"--inject: got {text!r}; EVERY must be at least 1")
        return cls(parts[0], every, ms)


class PrefixCache:
    """Block-level LRU prefix cache, optionally backed by a DRAM tier (`dram_blocks`, victim cache).

    A request hits the longest run of leading full blocks held in either tier: the part of that run held
    in HBM from the start counts as local hits, the rest as loaded from DRAM (vLLM's
    `prompt_tokens_by_source{external_kv_transfer}`). Its blocks are then touched tail first, so the prompt's
    first blocks are the most recently used (vLLM frees a request's blocks tail first); HBM evictions move to
    DRAM, and a DRAM hit moves its block back (exclusive tiers, as runners/traces/hit_rate.py models).
    """

    def __init__(self, block_size: int, capacity_blocks: int, dram_blocks: int = 0) -> None:
        self.block_size = block_size
        self.capacity = capacity_blocks
        self.dram_capacity = dram_blocks
        self.blocks: OrderedDict[str, None] = OrderedDict()
        self.dram: OrderedDict[str, None] = OrderedDict()
        # Blocks moved between the tiers, for vLLM's offload counters (kv_offload_total_bytes by transfer_type).
        self.offloaded_blocks = 0  # HBM -> DRAM (an eviction kept in DRAM)
        self.loaded_blocks = 0  # DRAM -> HBM (a hit served from DRAM)

    def lookup_and_insert(self, tokens: list[int]) -> tuple[int, int]:
        """(tokens hit in HBM, tokens loaded from DRAM) for `tokens`; then caches its blocks.

        Whole blocks only, and never the last prompt token (it is computed to produce the first output token).
        """
        hashes, running = [], hashlib.sha256()
        for start in range(0, len(tokens) - len(tokens) % self.block_size, self.block_size):
            running.update(json.dumps(tokens[start : start + self.block_size]).encode())
            hashes.append(running.hexdigest())
        hittable = max(len(tokens) - 1, 0) // self.block_size
        run = hbm_run = 0
        only_hbm = True
        for digest in hashes[:hittable]:
            if digest in self.blocks:
                hbm_run += only_hbm
            elif digest in self.dram:
                only_hbm = False
            else:
                break
            run += 1
        for digest in reversed(hashes):
            if digest in self.blocks:
                self.blocks.move_to_end(digest)
                continue
            self.blocks[digest] = None
            self.dram.pop(digest, None)
            if len(self.blocks) > self.capacity:
                evicted, _ = self.blocks.popitem(last=False)
                if self.dram_capacity:
                    self.dram[evicted] = None
                    self.offloaded_blocks += 1
                    if len(self.dram) > self.dram_capacity:
                        self.dram.popitem(last=False)
        self.loaded_blocks += run - hbm_run  # the hit run's blocks served from DRAM (the rest is recomputed)
        return hbm_run * self.block_size, (run - hbm_run) * self.block_size


class SimulatedEngine:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.slots = asyncio.Semaphore(args.max_batch)
        self.received = 0
        self.served = 0
        self.cache = PrefixCache(args.block_size, args.cache_blocks, args.dram_blocks) if args.prefix_caching else None
        self.record = open(args.record_file, "a") if args.record_file else None  # noqa: SIM115 - open for the server's life
        self.tokenizer = _load_tokenizer(args.tokenizer) if args.tokenizer else None
        self.counters = {
            "vllm:prompt_tokens_total": 0,
            "vllm:generation_tokens_total": 0,
            "vllm:request_success_total": 0,
            "vllm:prefix_cache_queries_total": 0,
            "vllm:prefix_cache_hits_total": 0,
        }
        self.tokens_by_source = {"local_compute": 0, "local_cache_hit": 0, "external_kv_transfer": 0}

    def _fault_armed(self) -> bool:
        """One-off faults fire once across engine launches: the marker file remembers that they did."""
        if not self.args.fault_once_file:
            return True
        marker = Path(self.args.fault_once_file)
        if marker.exists():
            return False
        marker.write_text("fault fired\n")
        return True

    def _fault_for(self, number: int) -> RequestFault | None:
        for fault in self.args.inject:
            if number % fault.every == 0:
                return fault
        return None

    async def health(self, _request: web.Request) -> web.Response:
        if self.args.fault == "never-healthy":
            return web.Response(status=503, text="simulated fault: never healthy")
        return web.Response(text="ok")

    async def models(self, _request: web.Request) -> web.Response:
        model = {"id": self.args.model, "object": "model", "max_model_len": self.args.max_model_len}
        return web.json_response({"object": "list", "data": [model]})

    async def metrics(self, _request: web.Request) -> web.Response:
        lines = [f"{name} {value}" for name, value in self.counters.items()]
        lines += [f'vllm:prompt_tokens_by_source_total{{source="{source}"}} {value}'
                  for source, value in self.tokens_by_source.items()]  # fmt: skip
        # Tier traffic under vLLM's offload counters: bytes each way at the model's KV bytes per token, and the time
        # the host link (--host-link-gbps) would take to move them.
        args = self.args
        if self.cache is not None and args.dram_blocks and args.kv_bytes_per_token:
            block_bytes = args.block_size * args.kv_bytes_per_token
            for direction, blocks in (("GPU_to_CPU", self.cache.offloaded_blocks),
                                      ("CPU_to_GPU", self.cache.loaded_blocks)):  # fmt: skip
                moved, label = blocks * block_bytes, f'{{transfer_type="{direction}"}}'
                lines.append(f"vllm:kv_offload_total_bytes_total{label} {moved}")
                lines.append(f"vllm:kv_offload_total_time_total{label} {moved / (args.host_link_gbps * 1e9)}")
        # The cache's shape, under vLLM's name, so capacity planning can read it from any engine alike.
        lines.append(
            f'vllm:cache_config_info{{block_size="{args.block_size}",enable_prefix_caching="{args.prefix_caching}",'
            f'num_gpu_blocks="{args.cache_blocks}",num_cpu_blocks="{args.dram_blocks}"}} 1.0'
        )
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")

    async def completions(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, chat=False)

    async def chat_completions(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, chat=True)

    @staticmethod
    def _error(message: str, status: int) -> web.Response:
        return web.json_response({"error": {"message": message, "code": status}}, status=status)

    async def _tokens(self, text: str) -> list[int]:
        """A text prompt's token ids: the model's tokenizer's when the server was given one (`--tokenizer`), so usage
        counts what a real server would; otherwise whitespace words stand in for tokens (stable ids let the prefix
        cache work on text too).

        The tokenizer runs off the event loop, in a thread, through `encode_batch`: `encode` holds the GIL (165 ms of
        a 40,000-word prompt here, during which no other request was stamped as arrived nor sent a token), while
        `encode_batch` releases it (the loop ran every 3 ms), as a real server tokenises apart from its other
        requests. Found beside the AgentX harness: our requests were stamped 100-230 ms after they were sent while
        another subagent's prompt was being tokenised (benchmarks/agentx_harness.py)."""
        if self.tokenizer is not None:
            (encoding,) = await asyncio.to_thread(self.tokenizer.encode_batch, [text], add_special_tokens=False)
            return encoding.ids or [0]
        return [int(hashlib.md5(word.encode()).hexdigest()[:6], 16) for word in text.split()] or [0]  # noqa: S324

    async def _serve(self, request: web.Request, chat: bool) -> web.StreamResponse:
        arrived = time.monotonic()  # as early as the server can see the request
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return self._error("body is not JSON", 400)
        if chat:
            messages = body.get("messages")
            if not isinstance(messages, list) or not messages:
                return self._error("messages must be a non-empty list", 400)
            text = " ".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
            prompt = await self._tokens(text)
        else:
            prompt = body.get("prompt")
            if isinstance(prompt, str):
                prompt = await self._tokens(prompt)
        if not isinstance(prompt, list) or not all(isinstance(token, int) for token in prompt):
            return self._error("prompt must be a string or a list of token ids", 400)
        # Chat clients of today (AIPerf, OpenAI's SDK) send `max_completion_tokens`; older ones `max_tokens`.
        max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 16)
        if len(prompt) + max_tokens > self.args.max_model_len:
            return self._error(
                f"prompt ({len(prompt)}) + max_tokens ({max_tokens}) exceeds max_model_len {self.args.max_model_len}",
                400,
            )
        if body.get("model") != self.args.model:
            return self._error(f"model {body.get('model')!r} not served", 404)

        self.received += 1
        fault = self._fault_for(self.received)
        if fault and fault.kind == "http-error":
            return self._error("simulated fault: internal error", 500)
        if fault and fault.kind == "slow-first-byte":
            await asyncio.sleep(fault.ms / 1000)
        options = body.get("stream_options") or {}
        continuous = bool(options.get("continuous_usage_stats")) and not self.args.no_usage
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        kind = "chat.completion.chunk" if chat else "text_completion"

        async def send(payload: dict[str, object]) -> None:
            await response.write(b"data: " + json.dumps(payload).encode() + b"\n\n")

        # Token chunks are written as text around the piece and the counts, not through json.dumps: with no delay the
        # server is the bound of a client benchmark (one core at 128 streams of 256 tokens, a fifth of it in the
        # encoder), and a client's capacity can only be seen beside a server that is not. Same JSON, parsed alike.
        model_json = json.dumps(self.args.model)
        chunk_head = f'data: {{"object": "{kind}", "model": {model_json}, "choices": [{{"index": 0, '
        chunk_head += '"delta": {"content": "' if chat else '"text": "'
        piece_end = '"}}]' if chat else '"}]'

        def chunk(piece: str, completion_tokens: int | None) -> bytes:
            text = chunk_head + piece + piece_end
            if completion_tokens is not None:
                total = len(prompt) + completion_tokens
                text += f', "usage": {usage_head}, "completion_tokens": {completion_tokens}, "total_tokens": {total}}}'
            return (text + "}\n\n").encode()

        async with self.slots:
            self.served += 1
            if self.args.fault == "exit-after-requests" and self.served > self.args.fault_after and self._fault_armed():
                os._exit(3)  # a crash, as an engine dying mid-run would: no cleanup, connections reset
            local, loaded = self.cache.lookup_and_insert(prompt) if self.cache else (0, 0)
            cached = local + loaded  # usage counts both, as vLLM's num_cached_tokens does
            self.counters["vllm:prompt_tokens_total"] += len(prompt)
            self.counters["vllm:prefix_cache_queries_total"] += len(prompt) if self.cache else 0
            self.counters["vllm:prefix_cache_hits_total"] += local
            self.tokens_by_source["local_cache_hit"] += local
            self.tokens_by_source["external_kv_transfer"] += loaded
            self.tokens_by_source["local_compute"] += len(prompt) - cached
            usage_base = {"prompt_tokens": len(prompt)}
            if self.cache is not None:
                usage_base["prompt_tokens_details"] = {"cached_tokens": cached}  # type: ignore[assignment]  # usage values are ints or one nested dict
            usage_head = json.dumps(usage_base)[:-1]  # '{"prompt_tokens": N[, "prompt_tokens_details": {...}]'
            if chat:  # a role-only first chunk, as OpenAI-style chat servers send: it is not a token
                await send(
                    {
                        "object": kind,
                        "model": self.args.model,
                        "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}],
                    }
                )
            prefill_ms = self.args.ttft_ms + self.args.prefill_ms_per_1k * (len(prompt) - cached) / 1000
            await asyncio.sleep(prefill_ms / 1000)
            started = time.monotonic()
            halfway = max(1, max_tokens // 2)
            first_sent = last_sent = 0.0
            # Token chunks already due go out in one write, as an engine hands a stream what its steps have made:
            # with no delay all of them are due at once, and one send per chunk made the server, not the client, the
            # bound of a client benchmark (half of its time in the kernel's send at 128 streams of 256 tokens).
            due_chunks: list[bytes] = []

            async def flush() -> None:
                nonlocal first_sent, last_sent
                if due_chunks:
                    await response.write(b"".join(due_chunks))
                    due_chunks.clear()
                    last_sent = time.monotonic()
                    first_sent = first_sent or last_sent

            for produced in range(1, max_tokens + 1):
                if produced > 1:
                    # Sleep until this token's due time, so timer overshoot does not accumulate.
                    wait = started + (produced - 1) * self.args.itl_ms / 1000 - time.monotonic()
                    if wait > 0:
                        await flush()
                        await asyncio.sleep(wait)
                if fault and produced == halfway:
                    await flush()
                    if fault.kind == "truncate":
                        await response.write_eof()
                        return response
                    if fault.kind == "disconnect":
                        request.transport.close()  # type: ignore[union-attr]  # an open request has a transport
                        return response
                    if fault.kind == "malformed":
                        await response.write(b"data: {not json\n\n")
                    if fault.kind == "stall":
                        await asyncio.sleep(fault.ms / 1000)
                        started += fault.ms / 1000
                reported = produced * (3 if fault and fault.kind == "over-report" else 1)
                due_chunks.append(chunk(f" t{random.randrange(1000)}", reported if continuous else None))
                self.counters["vllm:generation_tokens_total"] += 1
                if produced == 1 and self.args.itl_ms > 0:
                    # The first token is sent as soon as it is made (it ends TTFT): a loop that woke late must not fold
                    # it into the next ones, which drew TTFT late and TPOT short (0.43 ms for 1 ms apart, loaded).
                    await flush()
            await flush()
        if not self.args.no_usage:
            reported = max_tokens * (3 if fault and fault.kind == "over-report" else 1)
            await send({"object": kind, "model": self.args.model, "choices": [], "usage": _usage(usage_base, reported)})
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        self.counters["vllm:request_success_total"] += 1
        if self.record is not None:
            # The server's own account of what it sent: benchmarks compare client timings against it.
            # The session header (ours: X-Session-ID; AIPerf: X-Correlation-ID) and the prompt's length let a
            # schedule comparison match two clients' requests stream by stream (tests/integration/loadgen).
            entry = {
                "arrived": arrived, "first_token": first_sent, "last_token": last_sent, "tokens": max_tokens,
                "prompt_tokens": len(prompt), "api": "chat" if chat else "completions",
                "session": request.headers.get("X-Session-ID") or request.headers.get("X-Correlation-ID"),
                "routing": {name: value for name, value in request.headers.items() if name.startswith("X-Dynamo-")},
            }  # fmt: skip
            self.record.write(json.dumps(entry) + "\n")
            self.record.flush()
        return response


def _usage(base: Mapping[str, object], completion_tokens: int) -> dict[str, object]:
    prompt_tokens = int(base["prompt_tokens"])  # type: ignore[call-overload]  # prompt_tokens is always an int here
    return {**base, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens}


def build_app(args: argparse.Namespace) -> web.Application:
    engine = SimulatedEngine(args)
    app = web.Application()
    app.router.add_get("/health", engine.health)
    app.router.add_get("/v1/models", engine.models)
    app.router.add_get("/metrics", engine.metrics)
    app.router.add_post("/v1/completions", engine.completions)
    app.router.add_post("/v1/chat/completions", engine.chat_completions)
    return app


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--ttft-ms", type=float, default=20.0)
    parser.add_argument("--itl-ms", type=float, default=2.0)
    parser.add_argument("--prefill-ms-per-1k", type=float, default=0.0)
    parser.add_argument("--max-batch", type=int, default=64)
    parser.add_argument("--max-model-len", type=int, default=32768)
    parser.add_argument("--prefix-caching", action="store_true")
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--cache-blocks", type=int, default=100_000, help="HBM-tier capacity in blocks.")
    parser.add_argument("--dram-blocks", type=int, default=0, help="DRAM-tier (offload) capacity in blocks.")
    parser.add_argument("--kv-bytes-per-token", type=float, default=0.0, help="For the tier-traffic counters.")
    parser.add_argument("--host-link-gbps", type=float, default=64.0, help="Host link GB/s the tier traffic takes.")
    parser.add_argument("--fault", choices=["none", "never-healthy", "exit-after-requests"], default="none")
    parser.add_argument("--fault-after", type=int, default=0)
    parser.add_argument("--fault-once-file", default=None)
    parser.add_argument("--no-usage", action="store_true", help="Never report usage (as some servers do).")
    parser.add_argument("--record-file", default=None, help="Append one JSON line per served request.")
    parser.add_argument(
        "--tokenizer", default=None, help="A model directory with tokenizer.json: text prompts are counted with it."
    )
    parser.add_argument("--inject", type=RequestFault.parse, action="append", default=[], help="KIND:EVERY[:MS]")
    return parser.parse_args(argv)


def spawn(*arguments: str, model: str = "sim") -> tuple[subprocess.Popen[bytes], str]:
    """Start a simulated engine process on a free loopback port, wait for /health; (process, base URL).

    For tests and benchmarks; the caller terminates the process. (Sweeps launch it through the runner.)
    """
    from runners.host.process import pick_free_port

    port = pick_free_port()
    command = [sys.executable, "-m", "runners.engines.simulated_server", "--port", str(port), "--model", model]
    process = subprocess.Popen([*command, *arguments], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/health", timeout=1):  # noqa: S310 - loopback URL
                return process, url
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"simulated server did not become healthy (arguments {arguments!r})")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    # uvloop where installed: the standard loop's socket writes were a third of the server's time per token chunk.
    loop = uvloop.new_event_loop() if uvloop is not None else None
    # A listen backlog as deep as uvicorn's (vLLM's server): with aiohttp's 128, 512 replay lanes connecting at once
    # overflowed the accept queue and ~50 of their first requests failed with "connection reset by peer".
    web.run_app(build_app(args), host=args.host, port=args.port, print=None, access_log=None, loop=loop,
                backlog=LISTEN_BACKLOG)  # fmt: skip


if __name__ == "__main__":
    main()
