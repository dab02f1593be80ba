"""Credentials are recognised by name and by shape, refused in recipes, and never quoted in errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from recipes.errors import RecipeError
from recipes.loader import load_recipe
from recipes.secrets import looks_like_a_credential, names_a_secret, redacted
from runners.fleet.inventory import load_inventory


@pytest.mark.parametrize(
    "name",
    ["HF_TOKEN", "VLLM_API_KEY", "password", "aws-secret-access-key", "OPENAI_APIKEY", "AWS_ACCESS_KEY_ID", "gh.token"],
)
def test_names_that_hold_credentials(name: str) -> None:
    assert names_a_secret(name)


# SGLANG_PER_TOKEN_GROUP_QUANT_8BIT_V2 is set by NVIDIA srt-slurm's public GB300 recipes (recipes/gb300-fp4/8k1k/).
@pytest.mark.parametrize(
    "name",
    [
        "VLLM_CPU_KVCACHE_SPACE",
        "SGLANG_USE_AITER",
        "MAX_TOKENS",
        "HF_HUB_OFFLINE",
        "SGLANG_PER_TOKEN_GROUP_QUANT_8BIT_V2",
    ],
)
def test_names_that_do_not(name: str) -> None:
    assert not names_a_secret(name)


@pytest.mark.parametrize(
    "value", ["hf_" + "a1" * 17, "sk-" + "x" * 40, "ghp_" + "b" * 36, "AKIAABCDEFGHIJKLMNOP", "Bearer " + "t" * 32]
)
def test_values_shaped_like_credentials(value: str) -> None:
    assert looks_like_a_credential(value) and redacted({"X": [value]}) == {"X": ["<not shown>"]}


@pytest.mark.parametrize("value", ["1", "true", "/opt/models", "fp8_e4m3", "hf_transfer"])
def test_ordinary_values(value: str) -> None:
    assert not looks_like_a_credential(value)


@pytest.mark.parametrize(("key", "value"), [("HF_TOKEN", "anything-at-all"), ("MY_SETTING", "hf_" + "z9" * 16)])
def test_a_credential_in_engine_env_is_refused_and_not_quoted(write_recipe, key: str, value: str) -> None:
    with pytest.raises(RecipeError) as caught:
        load_recipe(write_recipe({"engine": {"env": {key: value}}}))
    message = str(caught.value)
    assert f"engine.env_from: [{key}]" in message and value not in message


def test_literal_settings_and_env_from_names_validate(write_recipe) -> None:
    engine = {"env": {"SGLANG_USE_AITER": "1"}, "env_from": ["HF_TOKEN"]}
    loaded = load_recipe(write_recipe({"engine": engine}))
    assert loaded.recipe.engine.env_from == ["HF_TOKEN"]


def test_env_from_takes_variable_names_only(write_recipe) -> None:
    with pytest.raises(RecipeError) as caught:
        load_recipe(write_recipe({"engine": {"env_from": ["HF_TOKEN=hf_x"]}}))
    assert "engine.env_from[0]" in str(caught.value)


def test_a_password_in_the_wrong_place_of_an_inventory_is_not_quoted(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("targets:\n  - name: box\n    kind: ssh\n    host: 10.0.0.1\n    password: hunter2\n")
    with pytest.raises(RecipeError) as caught:
        load_inventory(inventory)
    message = str(caught.value)
    assert "password" in message and "hunter2" not in message and "got a value (not shown)" in message
