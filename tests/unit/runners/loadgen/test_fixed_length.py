"""Fixed-length workload: lengths uniform in [ceil(r*L), L], exact random-token prompts, deterministic per seed."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from recipes.errors import ConfigurationError
from runners.host.generated_model import generate_tiny_llama
from runners.loadgen.client import Endpoint, PreparedRequest, encode_body
from runners.loadgen.fixed_length import Vocabulary, build_requests, sample_lengths
from runners.loadgen.records import FixedLengthPoint
from runners.traces.synthesis import TokenPrompt

pytestmark = pytest.mark.timeout(60)


def exact_lower(range_ratio: str, upper: int) -> int:
    """ceil(r*L) in exact arithmetic (the ratio as written in a recipe), at least 1."""
    return max(1, math.ceil(Fraction(range_ratio) * upper))


def point(**overrides: object) -> FixedLengthPoint:
    values: dict[str, object] = {
        "isl": 64,
        "osl": 32,
        "range_ratio": 0.5,
        "concurrency": 2,
        "num_prompts": 20,
        "num_warmup": 3,
        "seed": 1234,
        "request_timeout_s": 10.0,
    }
    values.update(overrides)
    return FixedLengthPoint(**values)


# --- sample_lengths ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ratio", "upper"),
    [("0.8", 1024), ("0.5", 10), ("0.9", 7), ("1", 50), ("0", 8), ("0.01", 5), ("0.25", 1)],
)
def test_sample_lengths_stay_within_bounds_and_cover_them(ratio: str, upper: int) -> None:
    lower = exact_lower(ratio, upper)
    lengths = sample_lengths(np.random.default_rng(0), upper, float(ratio), 4000)
    assert len(lengths) == 4000
    assert all(isinstance(length, int) for length in lengths)
    assert min(lengths) >= lower
    assert max(lengths) <= upper
    if upper - lower < 100:  # a small range is covered completely by 4000 uniform draws
        assert set(lengths) == set(range(lower, upper + 1))


def test_sample_lengths_lower_bound_is_exact_for_integer_products() -> None:
    ratio, upper = "0.55", 100
    lengths = sample_lengths(np.random.default_rng(0), upper, float(ratio), 20000)
    assert min(lengths) == exact_lower(ratio, upper) == 55


def test_sample_lengths_are_spread_uniformly() -> None:
    lengths = sample_lengths(np.random.default_rng(3), 20, 0.5, 20000)
    counts = np.bincount(lengths, minlength=21)[10:21]
    expected = len(lengths) / 11
    assert np.all(np.abs(counts - expected) < 0.15 * expected)


# --- build_requests ----------------------------------------------------------------------------------


VOCAB = Vocabulary(size=50, excluded=frozenset({0, 1, 2, 17, 49}))


def test_build_requests_is_deterministic_for_a_seed() -> None:
    first = build_requests(point(), VOCAB)
    again = build_requests(point(), VOCAB)
    other = build_requests(point(seed=4321), VOCAB)
    assert first == again
    assert [r.prompt.ids() for r in first] != [r.prompt.ids() for r in other]


def test_build_requests_lengths_order_and_vocabulary() -> None:
    p = point(isl=40, osl=12, range_ratio=0.25, num_prompts=30, num_warmup=4)
    requests = build_requests(p, VOCAB)
    assert len(requests) == p.num_warmup + p.num_prompts
    assert [r.index for r in requests] == list(range(len(requests)))
    assert [r.warmup for r in requests] == [True] * p.num_warmup + [False] * p.num_prompts

    # Prompt and output lengths are the seeded draws, in order: inputs first, then outputs.
    rng = np.random.default_rng(p.seed)
    input_lengths = sample_lengths(rng, p.isl, p.range_ratio, len(requests))
    output_lengths = sample_lengths(rng, p.osl, p.range_ratio, len(requests))
    assert [len(r.prompt.ids()) for r in requests] == input_lengths
    assert [r.max_tokens for r in requests] == output_lengths

    used: set[int] = set()
    for r in requests:
        assert exact_lower("0.25", p.isl) <= len(r.prompt.ids()) <= p.isl
        assert exact_lower("0.25", p.osl) <= r.max_tokens <= p.osl
        assert all(isinstance(token, int) for token in r.prompt.ids())
        used.update(r.prompt.ids())
    assert used.isdisjoint(VOCAB.excluded)
    assert used <= set(range(VOCAB.size))
    # Enough tokens were drawn (~1000) that every allowed id of a 45-id vocabulary shows up.
    assert used == set(range(VOCAB.size)) - VOCAB.excluded


def test_build_requests_exact_lengths_at_ratio_one() -> None:
    requests = build_requests(point(isl=33, osl=9, range_ratio=1.0, num_warmup=0, num_prompts=5), VOCAB)
    assert [len(r.prompt.ids()) for r in requests] == [33] * 5
    assert [r.max_tokens for r in requests] == [9] * 5
    assert not any(r.warmup for r in requests)


def test_build_requests_without_exclusions() -> None:
    requests = build_requests(point(num_prompts=3, num_warmup=0), Vocabulary(size=5, excluded=frozenset()))
    assert all(0 <= token < 5 for r in requests for token in r.prompt.ids())


# --- Vocabulary.from_model_dir -----------------------------------------------------------------------


def test_vocabulary_from_generated_tiny_llama_excludes_special_tokens(tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    model_dir = generate_tiny_llama(tmp_path / "m")
    vocabulary = Vocabulary.from_model_dir(model_dir)
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    special_ids = {tokenizer.token_to_id(token) for token in ("<s>", "</s>", "<unk>")}
    assert special_ids == {0, 1, 2}
    assert vocabulary.excluded == frozenset(special_ids)
    assert vocabulary.size == tokenizer.get_vocab_size()

    requests = build_requests(point(isl=256, num_prompts=10, num_warmup=0), vocabulary)
    used = {token for r in requests for token in r.prompt.ids()}
    assert used.isdisjoint(special_ids)
    assert max(used) < vocabulary.size


def test_vocabulary_needs_a_tokenizer(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"tokenizer\.json"):
        Vocabulary.from_model_dir(tmp_path)


def test_a_completions_body_is_the_json_its_fields_make() -> None:
    """The prompt is spliced into the body as bytes (encode_body): the body must still be the JSON of its fields."""
    endpoint = Endpoint(base_url="http://127.0.0.1:1", model='tiny "model"')
    for ids in ([], [7], list(range(100, 400))):
        sent = json.loads(encode_body(endpoint, PreparedRequest(0, TokenPrompt.of(ids), max_tokens=3, warmup=False)))
        assert sent["prompt"] == ids and sent["model"] == 'tiny "model"' and sent["max_tokens"] == 3
        assert sent["stream"] is True and "messages" not in sent
    chat = Endpoint(base_url="http://127.0.0.1:1", model="m", kind="chat")
    sent = json.loads(encode_body(chat, PreparedRequest(0, TokenPrompt.of([1, 2]), 3, False, prompt_text="hi")))
    assert sent["messages"] == [{"role": "user", "content": "hi"}] and "prompt" not in sent


def _metaspace_tokenizer(path: Path) -> Path:
    """A SentencePiece-style BPE ('▁word' pieces, as Llama 2 and Mistral tokenise), trained here on a few words."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.decoder = decoders.Metaspace()
    sentence = "the cache holds every block of a prompt that an earlier request sent to the same engine"
    words = sentence.split(" ")
    lines = [" ".join(words[i:] + words[:i]) for i in range(len(words))] * 20
    tokenizer.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>"]))
    tokenizer.save(str(path))
    return path


@pytest.mark.parametrize("kind", ["byte-level BPE (the tiny model's)", "SentencePiece-style BPE"])
def test_a_chat_prompts_text_tokenises_back_into_as_many_tokens_and_keeps_shared_prefixes(kind: str,
                                                                                             tmp_path: Path) -> None:  # fmt: skip
    """Random ids decoded as they are tokenise into more tokens (+7.5 % on the tiny model's tokenizer, 2,000 ids);
    the chat decoder's text gives the server exactly the prompt's length, and a shared prefix of ids stays a shared
    prefix of tokens."""
    from tokenizers import Tokenizer

    from runners.loadgen.fixed_length import text_decoder

    if kind.startswith("byte"):
        file = generate_tiny_llama(tmp_path / "m") / "tokenizer.json"
    else:
        file = _metaspace_tokenizer(tmp_path / "tokenizer.json")
    tokenizer = Tokenizer.from_file(str(file))
    decode = text_decoder(file)
    assert decode is not tokenizer.decode
    rng = np.random.default_rng(7)
    size = tokenizer.get_vocab_size()
    for length in (1, 64, 5000):
        ids = rng.integers(1, size, length).tolist()
        assert len(tokenizer.encode(decode(ids), add_special_tokens=False).ids) == length
        assert decode(ids) == decode(list(ids))  # deterministic
        # The words' own texts joined (where the decoder only concatenates) are the tokenizer's decoding of them.
        text = decode(ids)
        assert tokenizer.decode(tokenizer.encode(text, add_special_tokens=False).ids) == text
        # The shortest word tokens only (a space and at most two letters): the cheapest text for the server to tokenise.
        assert len(decode(ids)) <= 3 * length
    first = rng.integers(1, size, 640).tolist()
    second = first[:320] + rng.integers(1, size, 320).tolist()
    a, b = (tokenizer.encode(decode(ids), add_special_tokens=False).ids for ids in (first, second))
    assert a[:320] == b[:320] and len(a) == len(b) == 640
    if kind.startswith("byte"):  # what decoding the ids as they are does on the same tokenizer
        plain = len(tokenizer.encode(tokenizer.decode(first), add_special_tokens=False).ids)
        assert plain > 640, plain


def test_a_tokenizer_without_word_tokens_decodes_the_ids_as_they_are(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models

    from runners.loadgen.fixed_length import text_decoder

    file = tmp_path / "tokenizer.json"
    Tokenizer(models.WordLevel({"a": 0, "b": 1, "<unk>": 2}, unk_token="<unk>")).save(str(file))
    assert text_decoder(file)([0, 1]) == Tokenizer.from_file(str(file)).decode([0, 1])
