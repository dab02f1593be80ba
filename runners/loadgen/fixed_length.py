"""Fixed-length workload: random token-id prompts of exact length, lengths uniform in [r*L, L]."""

from __future__ import annotations

import functools
import math
import re
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
        """Token ids -> text the server tokenises back into exactly as many tokens (a chat prompt), with the model's
        tokenizer: `text_decoder`."""
        return text_decoder(self.text_tokenizer())

    def text_tokenizer(self) -> Path:
        """The tokenizer.json chat text is made with (runners/loadgen/chat_text.py); refused where there is none."""
        if self.tokenizer_file is None:
            raise ConfigurationError(
                "workload.api: got 'chat'; sending prompts as text needs the model's tokenizer.json, and this "
                "vocabulary has none (use api 'completions', or give the tokenizer)"
            )
        return self.tokenizer_file

    @classmethod
    def from_model_dir(cls, model_dir: Path) -> Vocabulary:
        tokenizer_file = model_dir / "tokenizer.json"
        if not tokenizer_file.exists():
            raise ConfigurationError(f"{tokenizer_file}: missing; random-token prompts need the model's vocabulary")
        from tokenizers import Tokenizer  # imported here: only hosts that build prompts need it

        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        special = frozenset(tokenizer.get_added_tokens_decoder())  # special tokens, keyed by id
        return cls(size=tokenizer.get_vocab_size(), excluded=special, tokenizer_file=tokenizer_file)


# A word token: a space, then letters only (GPT-2/Llama 3 byte-level 'Ġword', SentencePiece '▁word'). A run of them
# decodes to words a space apart, and every tokenizer's pre-tokenizer cuts that text at the spaces, so it tokenises
# back into the same tokens, one each.
_WORD_PIECE = re.compile(r"[Ġ▁][A-Za-z]+")
_CHECKED_TOKENS = 4096  # a sequence of word tokens decoded and tokenised again before the table is trusted
# Only the shortest word tokens: a space and at most two letters. The server pays its tokenizer per word (each is a
# pre-token of its own) and per character; natural text, several tokens a word on a small vocabulary and ~1.3 on a
# large one, costs it far less per token than long words one token each. Measured on the tiny model's tokenizer: all
# 39 word tokens 2.5-3.1 µs a token (5.7 characters each), the 7 of at most 3 characters 1.21 µs, English text 1.27
# µs; against the simulated engine, the AgentX harness's TTFT p50 51.5 ms, ours 100-120 ms with every word, 69.5 ms
# with the short ones (docs/BENCHMARKS.md, the AgentX harness beside our replay). Equal ids still give equal text; a
# block of k tokens has 7^k texts, so two different blocks of a Weka trace (16-64 tokens) never read alike.
_MAX_WORD_CHARACTERS = 3


@functools.cache
def text_decoder(tokenizer_file: Path) -> Callable[[list[int]], str]:
    """Token ids -> text that the server's tokenizer turns back into exactly as many tokens.

    Decoding random ids as they are gives text that tokenises into others, and more of them (+6.8 % to +9.9 % measured
    here on the tiny model's and vLLM's counts: docs/METRICS.md), where the field's clients (AIPerf, the AgentX harness)
    send text of the trace's length. So each id is first mapped, one for one, onto the tokenizer's shortest word tokens
    (id mod their count; `_MAX_WORD_CHARACTERS`): equal ids stay equal text, so a prompt's prefix stays another's
    prefix, and the server counts the trace's lengths (plus its chat template). Where the tokenizer has no word token
    that survives the check, ids are decoded as they are."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    pieces = tokenizer.get_vocab()
    # A word piece whose own text, after a space, is itself again (the whole sequence is checked below).
    words = sorted(
        index for piece, index in pieces.items()
        if _WORD_PIECE.fullmatch(piece) and tokenizer.encode(f" {piece[1:]}", add_special_tokens=False).ids == [index]
    )  # fmt: skip
    short = [index for index in words if len(tokenizer.id_to_token(index) or "") <= _MAX_WORD_CHARACTERS]
    table = np.asarray(short if len(short) >= 2 else words, dtype=np.int64)
    if len(table):
        # Every word token in a scrambled order (a prime stride), each beside many others, must come back as itself.
        check = table[np.arange(_CHECKED_TOKENS) * 7919 % len(table)].tolist()
        if tokenizer.encode(tokenizer.decode(check), add_special_tokens=False).ids != check:
            table = table[:0]
    if not len(table):
        return tokenizer.decode
    # Each word token's own text, joined: the same text as the tokenizer's decoding where its decoder only concatenates
    # (byte-level BPE: checked on the scrambled sequence), and ~5x cheaper (a 100k-token prompt 9-14 ms, not 72 ms:
    # a replay makes each next prompt during the think time before it, on the cores the engine serves with).
    texts = np.asarray([tokenizer.decode([index]) for index in table.tolist()], dtype=object)
    if "".join(texts[np.arange(_CHECKED_TOKENS) * 7919 % len(table)]) == tokenizer.decode(check):

        def join(ids: list[int]) -> str:
            return "".join(texts[np.asarray(ids, dtype=np.int64) % len(texts)].tolist())

        return join

    def decode(ids: list[int]) -> str:
        return tokenizer.decode(table[np.asarray(ids, dtype=np.int64) % len(table)].tolist())

    return decode


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
