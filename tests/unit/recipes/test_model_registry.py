"""The model registry loads, every fact has a source and date, and KV bytes/token follow the formula."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from recipes.errors import RecipeError
from recipes.loader import recipe_files_in
from recipes.model_registry import (
    Amount,
    Count,
    MixedAttention,
    kv_bytes_per_token,
    load_model_registry,
    markdown_table,
)

ROOT = Path(__file__).parents[3]
REQUIRED = {"deepseek-r1", "kimi-k2", "qwen3-235b-a22b", "gpt-oss-120b", "llama-3.3-70b", "tiny-llama"}

MINIMAL = """\
schema_version: 1
models:
  x:
    name: X
    hf_id: org/x
    architecture: dense
    total_params_b: {value: 1, source: s, as_of: '2026-01'}
    active_params_b: {value: 1, source: s, as_of: '2026-01'}
    context_length: {value: 4096, source: s, as_of: '2026-01'}
    layers: {value: 2, source: s, as_of: '2026-01'}
    attention:
      kind: full
      kv_heads: {value: 2, source: s, as_of: '2026-01'}
      head_dim: {value: 64, source: s, as_of: '2026-01'}
    kv_dtype: bf16
"""


def _facts(node: BaseModel, prefix: str = "") -> list[tuple[str, Count | Amount]]:
    found: list[tuple[str, Count | Amount]] = []
    for name in type(node).model_fields:
        value = getattr(node, name)
        if isinstance(value, Count | Amount):
            found.append((prefix + name, value))
        elif isinstance(value, BaseModel):
            found.extend(_facts(value, f"{prefix}{name}."))
    return found


def test_registry_loads_with_the_required_models() -> None:
    registry = load_model_registry()
    assert not REQUIRED - set(registry), REQUIRED - set(registry)
    for key, model in registry.items():
        assert model.key == key
        assert model.active_params_b.value <= model.total_params_b.value


def test_every_fact_has_source_and_date() -> None:
    for key, model in load_model_registry().items():
        facts = _facts(model)
        assert len(facts) >= 6, key
        for name, fact in facts:
            assert fact.source.strip(), f"{key}.{name}"
            assert len(fact.as_of) == 7 and fact.as_of[4] == "-", f"{key}.{name}"


def test_llama_full_attention_hand_computed() -> None:
    llama = load_model_registry()["llama-3.3-70b"]
    assert kv_bytes_per_token(llama) == 2 * 80 * 8 * 128 * 2 == 327_680
    assert kv_bytes_per_token(llama, kv_dtype="fp8") == 163_840
    assert kv_bytes_per_token(llama, context_tokens=8192) == 327_680  # no sliding layers: context-free


def test_deepseek_and_kimi_mla_hand_computed() -> None:
    registry = load_model_registry()
    assert kv_bytes_per_token(registry["deepseek-r1"]) == 61 * (512 + 64) * 2 == 70_272
    assert kv_bytes_per_token(registry["deepseek-r1"], 131072, "fp8") == 35_136
    assert kv_bytes_per_token(registry["kimi-k2"]) == 70_272


def test_qwen3_gqa_hand_computed() -> None:
    assert kv_bytes_per_token(load_model_registry()["qwen3-235b-a22b"]) == 2 * 94 * 4 * 128 * 2 == 192_512


def test_gpt_oss_sliding_layers_make_it_about_half() -> None:
    oss = load_model_registry()["gpt-oss-120b"]
    assert isinstance(oss.attention, MixedAttention)
    naive = 2 * 36 * 8 * 64 * 2
    assert naive == 73_728
    # 18 full layers + 18 sliding layers holding 128 of 8,192 tokens.
    at_8k = kv_bytes_per_token(oss, context_tokens=8192)
    assert at_8k == 2 * 8 * 64 * 2 * (18 + 18 * 128 / 8192) == 37_440
    assert at_8k / naive == pytest.approx(0.5078, abs=1e-4)
    assert kv_bytes_per_token(oss) == naive / 2  # long-context limit: sliding layers ~0
    assert kv_bytes_per_token(oss, context_tokens=100) == naive  # inside the window: every layer full


def test_qwen35_linear_attention_layers_cache_no_tokens() -> None:
    qwen = load_model_registry()["qwen3.5-397b-a17b"]
    assert isinstance(qwen.attention, MixedAttention) and qwen.attention.has_linear_layers
    # 60 layers, one in four full attention (15), 2 KV heads of 256; the 45 Gated DeltaNet layers add nothing.
    assert kv_bytes_per_token(qwen) == kv_bytes_per_token(qwen, 8192) == 2 * 15 * 2 * 256 * 2 == 30_720
    assert kv_bytes_per_token(qwen, 8192, "fp8") == 15_360
    assert not load_model_registry()["gpt-oss-120b"].attention.has_linear_layers


def test_a_sliding_window_is_required_with_sliding_layers_and_only_then() -> None:
    fact = {"value": 2, "source": "test", "as_of": "2026-01"}
    with pytest.raises(ValueError, match="sliding_window is required"):
        MixedAttention.model_validate(
            {"kind": "mixed", "pattern": ["sliding", "full"], "kv_heads": fact, "head_dim": fact}
        )
    with pytest.raises(ValueError, match="sliding_window is required"):
        MixedAttention.model_validate(
            {"kind": "mixed", "pattern": ["linear", "full"], "sliding_window": fact, "kv_heads": fact, "head_dim": fact}
        )


def test_tiny_llama_matches_the_generated_config(tmp_path: Path) -> None:
    from runners.host.generated_model import generate_tiny_llama

    config = json.loads((generate_tiny_llama(tmp_path / "tiny") / "config.json").read_text())
    tiny = load_model_registry()["tiny-llama"]
    assert tiny.generated == "tiny-llama" and tiny.hf_id is None
    assert tiny.layers.value == config["num_hidden_layers"]
    assert tiny.attention.kind == "full"
    assert tiny.attention.kv_heads.value == config["num_key_value_heads"]
    assert tiny.attention.head_dim.value == config["head_dim"]
    assert tiny.context_length.value == config["max_position_embeddings"]
    expected = 2 * config["num_hidden_layers"] * config["num_key_value_heads"] * config["head_dim"] * 2
    assert kv_bytes_per_token(tiny) == expected == 1024


def test_bad_arguments_are_rejected() -> None:
    llama = load_model_registry()["llama-3.3-70b"]
    with pytest.raises(ValueError, match="kv_dtype"):
        kv_bytes_per_token(llama, kv_dtype="int3")
    with pytest.raises(ValueError, match="context_tokens"):
        kv_bytes_per_token(llama, context_tokens=0)


def test_unknown_field_names_file_field_and_value(tmp_path: Path) -> None:
    bad = tmp_path / "models.yaml"
    bad.write_text(MINIMAL.replace("      kind: full\n", "      kind: full\n      colour: green\n"))
    with pytest.raises(RecipeError) as caught:
        load_model_registry(bad)
    assert str(caught.value) == (
        f"{bad}: invalid model registry\n"
        "  field 'models.x.attention.colour': got 'green'; "
        "unknown key (not in the model registry schema; check the spelling)"
    )
    assert caught.value.retryable is False


def test_negative_value_names_file_field_and_value(tmp_path: Path) -> None:
    bad = tmp_path / "models.yaml"
    bad.write_text(MINIMAL.replace("layers: {value: 2,", "layers: {value: -2,"))
    with pytest.raises(RecipeError) as caught:
        load_model_registry(bad)
    assert str(caught.value) == (
        f"{bad}: invalid model registry\n  field 'models.x.layers.value': got -2; expected: Input should be greater than 0"
    )


def test_minimal_file_loads_and_mla_fields_are_not_allowed_on_full_attention(tmp_path: Path) -> None:
    good = tmp_path / "models.yaml"
    good.write_text(MINIMAL)
    assert kv_bytes_per_token(load_model_registry(good)["x"]) == 2 * 2 * 2 * 64 * 2
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        MINIMAL.replace(
            "      kind: full\n", "      kind: full\n      kv_lora_rank: {value: 512, source: s, as_of: '2026-01'}\n"
        )
    )
    with pytest.raises(RecipeError) as caught:
        load_model_registry(bad)
    assert [field for field, _, _ in caught.value.problems] == ["models.x.attention.kv_lora_rank"]


def test_models_yaml_is_not_read_as_a_recipe() -> None:
    assert ROOT / "recipes" / "models.yaml" not in recipe_files_in(ROOT / "recipes")


def test_docs_table_is_the_generated_one() -> None:
    doc = (ROOT / "docs" / "MODELS.md").read_text(encoding="utf-8")
    assert markdown_table() in doc
    assert "python -m recipes.model_registry" in doc
