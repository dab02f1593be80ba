"""Fixed-length workload: random token-id prompts of exact length, lengths uniform in [r*L, L]."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from recipes.errors import ConfigurationError
from recipes.schema import ValidityThresholds
from runners.loadgen import loop
from runners.loadgen.client import Endpoint, PreparedRequest, run_closed_loop
from runners.loadgen.metrics import compute_point_metrics
from runners.loadgen.records import FixedLengthPoint, PointMetrics, RequestRecord
from runners.traces.synthesis import TokenPrompt

# Without a tokenizer, prompts use ids in [10, 1000): ordinary tokens in every common vocabulary
# (special tokens sit at the start or far past 1000: Llama 3 at 128000+, Qwen at 151643+).
DEFAULT_ID_RANGE = (10, 1000)


@dataclass(frozen=True)
class Vocabulary:
    """Token ids a random prompt may use: [0, size) minus the special tokens."""

    size: int
    excluded: frozenset[int]
    tokenizer_file: Path | None = None  # the model's tokenizer.json, where the ids can be turned back into text

    def decoder(self) -> Callable[[list[int]], str]:
        """Token ids -> text with the model's tokenizer (a chat replay sends text the server tokenises again)."""
        if self.tokenizer_file is None:
            raise ConfigurationError(
                "workload.api: got 'chat'; sending prompts as text needs the model's tokenizer.json, and this "
                "vocabulary has none (use api 'completions', or give the tokenizer)"
            )
        from tokenizers import Tokenizer

        return Tokenizer.from_file(str(self.tokenizer_file)).decode

    @classmethod
    def from_model_dir(cls, model_dir: Path) -> Vocabulary:
        tokenizer_file = model_dir / "tokenizer.json"
        if not tokenizer_file.exists():
            raise ConfigurationError(f"{tokenizer_file}: missing; random-token prompts need the model's vocabulary")
        from tokenizers import Tokenizer  # imported here: only hosts that build prompts need it

        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        special = frozenset(tokenizer.get_added_tokens_decoder())  # special tokens, keyed by id
        return cls(size=tokenizer.get_vocab_size(), excluded=special, tokenizer_file=tokenizer_file)


def sample_lengths(rng: np.random.Generator, upper: int, range_ratio: float, count: int) -> list[int]:
    """Uniform integers in [ceil(r*L), L] (InferenceX's meaning of the range ratio), at least 1."""
    # Rounded first: 0.55 * 100 is 55.00000000000001 in floating point, and 55 must stay drawable.
    lower = max(1, math.ceil(round(range_ratio * upper, 9)))
    return [int(v) for v in rng.integers(lower, upper + 1, size=count)]


def build_requests(point: FixedLengthPoint, vocabulary: Vocabulary) -> list[PreparedRequest]:
    """Warmup requests first, then the measured ones; the same seed gives the same prompts."""
    rng = np.random.default_rng(point.seed)
    total = point.num_warmup + point.num_prompts
    input_lengths = sample_lengths(rng, point.isl, point.range_ratio, total)
    output_lengths = sample_lengths(rng, point.osl, point.range_ratio, total)
    allowed = np.setdiff1d(np.arange(vocabulary.size), np.fromiter(vocabulary.excluded, dtype=int))
    requests = []
    for index, (isl, osl) in enumerate(zip(input_lengths, output_lengths, strict=True)):
        ids = rng.choice(allowed, size=isl)
        requests.append(
            PreparedRequest(index=index, prompt=TokenPrompt.of(ids), max_tokens=osl, warmup=index < point.num_warmup)
        )
    return requests


def run_fixed_length_point(
    endpoint: Endpoint,
    point: FixedLengthPoint,
    vocabulary: Vocabulary,
    accelerators: int,
    thresholds: ValidityThresholds,
    on_request_done: Callable[[RequestRecord], None] | None = None,
) -> tuple[PointMetrics, list[RequestRecord]]:
    """Warm up, then measure, at the Point's concurrency; return aggregates and every record."""
    requests = build_requests(point, vocabulary)
    warmup = [request for request in requests if request.warmup]
    measured = [request for request in requests if not request.warmup]
    records: list[RequestRecord] = []
    if warmup:
        records += loop.run(
            run_closed_loop(endpoint, warmup, point.concurrency, point.request_timeout_s, on_request_done)
        )
    # The measured phase on the same event loop as warm-up, bench and replay (uvloop where installed).
    records += loop.run(
        run_closed_loop(endpoint, measured, point.concurrency, point.request_timeout_s, on_request_done)
    )
    metrics = compute_point_metrics(records, point.concurrency, accelerators, thresholds)
    return metrics, records
