"""A small OpenAI-compatible streaming server with configurable timing, for fast tests and fault injection.

It behaves like a serving engine from the outside (`/health`, `/v1/models`, streamed `/v1/completions`
with usage, `/metrics`) but computes nothing: the first token comes after `ttft + prefill` and each
next one after `itl`. At most `max_batch` requests are served at once; the rest wait, as in a real
engine's queue. Results produced against it are labelled `simulated`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import time
from pathlib import Path

from aiohttp import web


class SimulatedEngine:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.slots = asyncio.Semaphore(args.max_batch)
        self.served = 0
        self.counters = {"prompt_tokens": 0, "generation_tokens": 0, "requests": 0}

    def _fault_armed(self) -> bool:
        """One-off faults fire once across engine launches: the marker file remembers that they did."""
        if not self.args.fault_once_file:
            return True
        marker = Path(self.args.fault_once_file)
        if marker.exists():
            return False
        marker.write_text("fault fired\n")
        return True

    async def health(self, _request: web.Request) -> web.Response:
        if self.args.fault == "never-healthy":
            return web.Response(status=503, text="simulated fault: never healthy")
        return web.Response(text="ok")

    async def models(self, _request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": self.args.model, "object": "model"}]})

    async def metrics(self, _request: web.Request) -> web.Response:
        lines = [f"simulated:{name}_total {value}" for name, value in self.counters.items()]
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")

    async def completions(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return web.json_response({"error": {"message": "body is not JSON"}}, status=400)
        prompt = body.get("prompt")
        if isinstance(prompt, list) and all(isinstance(token, int) for token in prompt):
            prompt_tokens = len(prompt)
        elif isinstance(prompt, str):
            prompt_tokens = max(1, len(prompt.split()))
        else:
            return web.json_response(
                {"error": {"message": "prompt must be a string or a list of token ids"}}, status=400
            )
        max_tokens = int(body.get("max_tokens") or 16)
        if prompt_tokens + max_tokens > self.args.max_model_len:
            message = (
                f"prompt ({prompt_tokens}) + max_tokens ({max_tokens}) exceeds max_model_len {self.args.max_model_len}"
            )
            return web.json_response({"error": {"message": message}}, status=400)
        if body.get("model") != self.args.model:
            return web.json_response({"error": {"message": f"model {body.get('model')!r} not served"}}, status=404)

        options = body.get("stream_options") or {}
        continuous = bool(options.get("continuous_usage_stats"))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        async with self.slots:
            self.served += 1
            self.counters["requests"] += 1
            self.counters["prompt_tokens"] += prompt_tokens
            if self.args.fault == "exit-after-requests" and self.served > self.args.fault_after and self._fault_armed():
                os._exit(3)  # a crash, as an engine dying mid-run would: no cleanup, connections reset
            prefill_s = (self.args.ttft_ms + self.args.prefill_ms_per_1k * prompt_tokens / 1000) / 1000
            await asyncio.sleep(prefill_s)
            started = time.monotonic()
            for produced in range(1, max_tokens + 1):
                if produced > 1:
                    # Sleep until this token's due time, so timer overshoot does not accumulate.
                    due = started + (produced - 1) * self.args.itl_ms / 1000
                    await asyncio.sleep(max(0.0, due - time.monotonic()))
                chunk: dict[str, object] = {
                    "object": "text_completion",
                    "model": self.args.model,
                    "choices": [{"index": 0, "text": f" t{random.randrange(1000)}", "finish_reason": None}],
                }
                if continuous:
                    chunk["usage"] = _usage(prompt_tokens, produced)
                await response.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.counters["generation_tokens"] += 1
        final = {
            "object": "text_completion",
            "model": self.args.model,
            "choices": [],
            "usage": _usage(prompt_tokens, max_tokens),
        }
        await response.write(b"data: " + json.dumps(final).encode() + b"\n\n")
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def build_app(args: argparse.Namespace) -> web.Application:
    engine = SimulatedEngine(args)
    app = web.Application()
    app.router.add_get("/health", engine.health)
    app.router.add_get("/v1/models", engine.models)
    app.router.add_get("/metrics", engine.metrics)
    app.router.add_post("/v1/completions", engine.completions)
    return app


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--ttft-ms", type=float, default=20.0)
    parser.add_argument("--itl-ms", type=float, default=2.0)
    parser.add_argument("--prefill-ms-per-1k", type=float, default=0.0)
    parser.add_argument("--max-batch", type=int, default=64)
    parser.add_argument("--max-model-len", type=int, default=32768)
    parser.add_argument("--prefix-caching", action="store_true")
    parser.add_argument("--fault", choices=["none", "never-healthy", "exit-after-requests"], default="none")
    parser.add_argument("--fault-after", type=int, default=0)
    parser.add_argument("--fault-once-file", default=None)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    web.run_app(build_app(args), host=args.host, port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
