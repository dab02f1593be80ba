"""Models the project builds itself, so a benchmark runs with nothing downloaded from a model hub.

`tiny-llama` is a 2-layer Llama-architecture config plus a byte-level BPE tokenizer trained in code on
a fixed, generated corpus. Served with `--load-format dummy` (random weights): its outputs are
meaningless text, but every serving code path (prefill, decode, KV cache, streaming) is real.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

from recipes.errors import ConfigurationError
from runners.host.paths import cache_dir

TINY_LLAMA_VOCAB = 4096
BOS_TOKEN = "<s>"  # noqa: S105 - a tokenizer token, not a secret
EOS_TOKEN = "</s>"  # noqa: S105
SPECIAL_TOKENS = [BOS_TOKEN, EOS_TOKEN, "<unk>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
# Bump when the generated files change, so stale copies in the cache are rebuilt.
TINY_LLAMA_REVISION = "1"


def _training_corpus() -> list[str]:
    """A deterministic corpus: the same on every machine, so the tokenizer is the same everywhere."""
    words = [
        "the",
        "model",
        "token",
        "cache",
        "prefix",
        "serve",
        "request",
        "latency",
        "throughput",
        "agent",
        "tool",
        "call",
        "file",
        "read",
        "write",
        "function",
        "return",
        "value",
        "error",
        "test",
        "python",
        "import",
        "class",
        "def",
        "self",
        "data",
        "result",
        "benchmark",
        "engine",
        "decode",
        "prefill",
    ]
    lines = []
    for i in range(4000):
        picked = [words[(i * 7 + j * 13) % len(words)] for j in range(12)]
        lines.append(" ".join(picked) + f" {i} {i * 31 % 977}.")
    return lines


def build_tiny_tokenizer() -> Tokenizer:
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))  # noqa: S106 - a tokenizer token
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=TINY_LLAMA_VOCAB,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_training_corpus(), trainer=trainer)
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    return tokenizer


def _tiny_llama_config(vocab_size: int, bos_id: int, eos_id: int, max_positions: int) -> dict[str, object]:
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "hidden_act": "silu",
        "max_position_embeddings": max_positions,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "vocab_size": vocab_size,
        "bos_token_id": bos_id,
        "eos_token_id": eos_id,
    }


def _special_token_id(tokenizer: Tokenizer, token: str) -> int:
    token_id = tokenizer.token_to_id(token)
    if token_id is None:  # build_tiny_tokenizer adds both special tokens: this is a bug, not a user error
        raise RuntimeError(f"the generated tokenizer has no {token!r} token")
    return token_id


def generate_tiny_llama(target: Path, max_positions: int = 32768) -> Path:
    """Write config, tokenizer and tokenizer config into `target` (atomically: all or nothing)."""
    tokenizer = build_tiny_tokenizer()
    vocab_size = tokenizer.get_vocab_size()
    bos_id, eos_id = (_special_token_id(tokenizer, token) for token in (BOS_TOKEN, EOS_TOKEN))
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    tokenizer.save(str(staging / "tokenizer.json"))
    files = {
        "config.json": _tiny_llama_config(vocab_size, bos_id, eos_id, max_positions),
        "generation_config.json": {"bos_token_id": bos_id, "eos_token_id": eos_id},
        "tokenizer_config.json": {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "bos_token": BOS_TOKEN,
            "eos_token": EOS_TOKEN,
            "unk_token": "<unk>",
            "model_max_length": max_positions,
            "chat_template": CHAT_TEMPLATE,
        },
        "infersweep-model.json": {"preset": "tiny-llama", "revision": TINY_LLAMA_REVISION, "generated": True},
    }
    for name, content in files.items():
        (staging / name).write_text(json.dumps(content, indent=2) + "\n")
    if target.exists():
        _remove_tree(target)
    os.replace(staging, target)
    return target


def _remove_tree(path: Path) -> None:
    for child in path.iterdir():
        if child.is_dir():
            _remove_tree(child)
        else:
            child.unlink()
    path.rmdir()


GENERATORS = {"tiny-llama": generate_tiny_llama}


def ensure_generated_model(preset: str) -> Path:
    """The generated model's directory, built on first use and rebuilt when its revision changes."""
    if preset not in GENERATORS:
        raise ConfigurationError(f"model.source.preset: got {preset!r}; expected one of {sorted(GENERATORS)}")
    target = cache_dir() / "models" / preset
    if _current(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{preset}.lock", "w") as lock:
        # Parallel jobs on one host (several Ray nodes, or a retry beside a dying attempt) wait for the
        # first build instead of racing it: staging happens before the engine-start timer runs.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _current(target):
            return target
        return GENERATORS[preset](target)


def _current(target: Path) -> bool:
    marker = target / "infersweep-model.json"
    if not marker.exists():
        return False
    try:
        return json.loads(marker.read_text()).get("revision") == TINY_LLAMA_REVISION
    except json.JSONDecodeError:
        return False  # a damaged marker means a damaged model: rebuild
