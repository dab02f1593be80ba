"""A chat replay's prompt text (`workload.chat_text`): the AgentX harness's kind (a natural corpus cut per block) and
ours (one short word a token), each keeping shared prefixes shared."""

from __future__ import annotations

import gzip
import pickle
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from runners.host.generated_model import generate_tiny_llama
from runners.loadgen.chat_text import CORPUS, PromptText
from runners.loadgen.fixed_length import text_decoder
from runners.traces.models import TraceRequest
from runners.traces.synthesis import BlockCache, TokenPrompt, synthesize_prompt


@pytest.fixture(scope="module")
def tokenizer_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate_tiny_llama(tmp_path_factory.mktemp("m")) / "tokenizer.json"


def prompts(blocks: int, more: int) -> tuple[TokenPrompt, TokenPrompt]:
    """A turn of `blocks` 64-token blocks, and the next turn: the same blocks, `more` new ones and a partial one."""
    cache = BlockCache()
    turn = TraceRequest("a", 0.0, 64 * blocks, 8, tuple(range(blocks)))
    next_turn = TraceRequest("b", 1.0, 64 * (blocks + more) + 30, 8, tuple(range(blocks + more + 1)))
    return (synthesize_prompt(turn, 64, "scope", (3, 4096), cache=cache),
            synthesize_prompt(next_turn, 64, "scope", (3, 4096), cache=cache))  # fmt: skip


def test_corpus_text_keeps_prefixes_and_is_natural_text_of_about_the_traces_length(tokenizer_file: Path) -> None:
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    first, second = prompts(40, 60)
    corpus = PromptText(tokenizer_file, "corpus")
    text, longer = corpus(first), corpus(second)
    assert longer.startswith(text) and corpus(second) == longer  # a turn's text begins with the turn before it's
    counted = [len(tokenizer.encode(made, add_special_tokens=False).ids) for made in (text, longer)]
    # Cut at token boundaries, natural text mostly tokenises back into its own tokens: within 1 % of the trace here
    # (2,559 of 2,560 and 6,426 of 6,430 on the tiny tokenizer).
    assert counted == pytest.approx([len(first), len(second)], rel=0.01), counted
    # Natural text: several tokens a word (the server's tokenizer pays per word), where ours is one word a token.
    words = PromptText(tokenizer_file, "words")(first)
    assert len(words.split()) == len(first) and len(text.split()) < 0.5 * len(first)
    # Each block's text is a stretch of the corpus's text.
    source = gzip.decompress(CORPUS.read_bytes()).decode()
    blocks = [corpus(TokenPrompt((piece,))) for piece in first.pieces]
    assert "".join(blocks) == text and all(block in source for block in blocks)


def test_words_are_the_exact_text_as_before_and_either_kind_survives_a_process_spawn(tokenizer_file: Path) -> None:
    first, _ = prompts(8, 0)
    words = PromptText(tokenizer_file, "words")
    assert words(first) == text_decoder(tokenizer_file)(first.ids())
    for kind in ("words", "corpus"):
        made = PromptText(tokenizer_file, kind)  # type: ignore[arg-type]
        assert pickle.loads(pickle.dumps(made))(first) == made(first)  # a split replay's processes are spawned


def test_a_chat_replay_of_word_text_is_labelled_not_as_agentx_sends_it_and_a_completions_one_is_not_for_text() -> None:
    from recipes.schema import agentx_differences

    assert "chat_text words (AgentX: corpus)" in agentx_differences({"api": "chat"})
    assert not any("chat_text" in text for text in agentx_differences({"api": "chat", "chat_text": "corpus"}))
    completions = agentx_differences({"api": "completions"})
    assert "api completions (AgentX: chat)" in completions and not any("chat_text" in text for text in completions)


def test_a_text_kind_without_chat_is_refused_naming_both_settings() -> None:
    from pydantic import ValidationError

    from recipes.schema import ReplaySettings

    with pytest.raises(
        ValidationError, match=r"'corpus' is the text of chat prompts, and api 'completions' sends none"
    ):
        ReplaySettings(chat_text="corpus")
    assert ReplaySettings(api="chat", chat_text="corpus").chat_text == "corpus"
