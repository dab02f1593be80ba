"""The text of a chat replay's prompts (`workload.chat_text`), made from its synthesised blocks of token ids.

- `words`: each id mapped onto one of the tokenizer's shortest word tokens (`fixed_length.text_decoder`): the server
  counts exactly the trace's lengths, but one word a token costs its tokenizer more per token than natural text (on
  the tiny model's 2.3x: docs/BENCHMARKS.md, the AgentX harness beside our replay).
- `corpus`: each block a slice of a natural text's tokens as long as the block, decoded, as the AgentX harness makes
  its prompts (agentx-harness 1.0.12, `aiperf/dataset/generator/prompt.py`: per hash id a slice of its tokenised
  Shakespeare at a drawn offset). The text is natural, so the server tokenises it at natural text's cost; a slice cut
  at token boundaries does not always tokenise back into the same tokens, so the server's count drifts a little from
  the trace's (reported per Point from the server's usage, as AgentX reads lengths).

Equal blocks give equal text either way, so a prompt that extends another extends its text and prefixes stay shared.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from recipes.schema import ChatText
from runners.loadgen.fixed_length import text_decoder
from runners.traces.synthesis import TokenPrompt

CORPUS = Path(__file__).with_name("corpus") / "shakespeare.txt.gz"  # its source and licence: corpus/README.md
_REMEMBERED_BLOCKS = 1 << 18  # decoded block texts kept (~64 tokens, a few hundred bytes each)


@dataclass(frozen=True)
class PromptText:
    """A prompt -> the text a chat request sends, made in whichever process sends it: it holds only the tokenizer's
    path and the kind, so a split replay's processes (spawned) each build their own."""

    tokenizer_file: Path
    kind: ChatText = "words"

    def __call__(self, prompt: TokenPrompt) -> str:
        if self.kind == "corpus":
            return _corpus_text(self.tokenizer_file)(prompt)
        return text_decoder(self.tokenizer_file)(prompt.ids())


class CorpusText:
    """Each block of a prompt as a slice of the corpus's tokens as long as it, at an offset drawn from the block's
    own ids, decoded; the blocks' texts joined (for a byte-level tokenizer the same text as decoding the whole
    prompt's tokens at once, as the harness does)."""

    def __init__(self, tokenizer: Any, corpus: str) -> None:
        self.tokenizer = tokenizer
        self.tokens = np.asarray(tokenizer.encode(corpus, add_special_tokens=False).ids, dtype=np.int64)
        self._texts: OrderedDict[bytes, str] = OrderedDict()

    def __call__(self, prompt: TokenPrompt) -> str:
        return "".join(self._block(piece.json, len(piece.ids)) for piece in prompt.pieces)

    def _block(self, ids_json: bytes, length: int) -> str:
        key = hashlib.blake2b(ids_json, digest_size=16).digest()
        text = self._texts.get(key)
        if text is not None:
            self._texts.move_to_end(key)
            return text
        span = len(self.tokens) - length
        if span <= 0:
            raise ValueError(f"a block of {length:,} tokens is longer than the corpus ({len(self.tokens):,} tokens)")
        offset = int.from_bytes(key[:8], "big") % span
        text = self.tokenizer.decode(self.tokens[offset : offset + length].tolist())
        self._texts[key] = text
        if len(self._texts) > _REMEMBERED_BLOCKS:
            self._texts.popitem(last=False)
        return text


@functools.cache
def _corpus_text(tokenizer_file: Path) -> CorpusText:
    from tokenizers import Tokenizer  # imported here: only hosts that send chat text need it

    return CorpusText(Tokenizer.from_file(str(tokenizer_file)), gzip.decompress(CORPUS.read_bytes()).decode())
