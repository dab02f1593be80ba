"""Recipe validation: every bad input names the file, the field and the value."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from recipes.errors import RecipeError
from recipes.loader import load_recipe, load_recipes, recipe_files_in
from tests.conftest import ROOT


def error_of(path: Path) -> str:
    with pytest.raises(RecipeError) as caught:
        load_recipe(path)
    assert caught.value.retryable is False
    message = str(caught.value)
    assert str(path) in message
    return message


def test_shipped_recipes_are_valid() -> None:
    files = recipe_files_in(ROOT / "recipes")
    assert any(path.name == "tiny-llama-cpu.yaml" for path in files)
    loaded = load_recipes(files)
    assert {item.name for item in loaded} >= {"tiny-llama-cpu", "tiny-llama-simulated"}


def test_unknown_key_is_named(write_recipe) -> None:
    message = error_of(write_recipe({"engine": {"extra_argz": ["--x"]}}))
    assert "field 'engine.extra_argz'" in message
    assert "unknown key" in message


def test_unknown_top_level_key(write_recipe) -> None:
    message = error_of(write_recipe({"concurency": [1]}))
    assert "field 'concurency'" in message and "[1]" in message


def test_unknown_hardware_lists_known_keys(write_recipe) -> None:
    message = error_of(write_recipe({"hardware": "b2000"}))
    assert "field 'hardware': got 'b2000'" in message
    assert "b200" in message and "cpu-local" in message


def test_prefix_caching_with_random_tokens_is_rejected(write_recipe) -> None:
    message = error_of(write_recipe({"methodology": {"prefix_caching": True}}))
    assert "field 'methodology.prefix_caching': got True" in message
    assert "random-token workloads" in message and "prefix caching off" in message


@pytest.mark.parametrize(
    "argument", ["--enable-prefix-caching", "--enable_prefix_caching", "--no-enable-prefix-caching=true"]
)
def test_prefix_caching_smuggled_in_raw_arguments(write_recipe, argument: str) -> None:
    message = error_of(write_recipe({"engine": {"extra_args": ["--max-num-seqs", "8", argument]}}))
    assert f"field 'engine.extra_args[2]': got '{argument}'" in message
    assert "methodology.prefix_caching" in message


def test_speculative_decoding_in_raw_arguments(write_recipe) -> None:
    message = error_of(write_recipe({"engine": {"extra_args": ['--speculative-config={"method": "mtp"}']}}))
    assert "methodology.speculative_decoding" in message


def test_zero_concurrency(write_recipe) -> None:
    message = error_of(write_recipe({"workload": {"concurrency": [1, 0]}}))
    assert "field 'workload.concurrency[1]': got 0" in message
    assert "greater than 0" in message


def test_isl_beyond_max_model_len(write_recipe) -> None:
    message = error_of(write_recipe({"workload": {"sequences": [{"isl": 8192, "osl": 1024}]}}))
    assert "field 'workload.sequences[0].isl': got 8192" in message
    assert "engine.max_model_len (4096)" in message


def test_missing_field(write_recipe) -> None:
    path = write_recipe()
    path.write_text(path.read_text().replace("precision: bf16\n", ""))
    assert "field 'precision': missing (required)" in error_of(path)


def test_wrong_kind_in_union(write_recipe) -> None:
    message = error_of(write_recipe({"workload": {"kind": "fixed-lenght"}}))
    assert "workload" in message and "fixed-lenght" in message


def test_duplicate_yaml_key(tmp_path: Path, write_recipe) -> None:
    path = write_recipe()
    path.write_text(path.read_text() + "hardware: b200\n")
    message = error_of(path)
    assert "duplicate key 'hardware'" in message and "line" in message


def test_yaml_syntax_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: [unclosed\n")
    assert "expected valid YAML" in error_of(path)


def test_simulated_settings_only_for_simulated_engine(write_recipe) -> None:
    message = error_of(write_recipe({"engine": {"kind": "vllm", "environment": {"kind": "venv", "name": "vllm-cpu"}}}))
    assert "field 'engine.simulated'" in message


def test_fingerprint_ignores_formatting_but_not_content(write_recipe, tmp_path: Path) -> None:
    first = load_recipe(write_recipe(name="a.yaml"))
    reformatted = tmp_path / "b.yaml"
    data = yaml.safe_load((tmp_path / "a.yaml").read_text())
    reformatted.write_text(
        "# same recipe, other layout\n" + yaml.safe_dump(data, sort_keys=True, default_flow_style=True)
    )
    assert load_recipe(reformatted).fingerprint == first.fingerprint
    changed = load_recipe(write_recipe({"workload": {"concurrency": [1, 8]}}, name="c.yaml"))
    assert changed.fingerprint != first.fingerprint


def test_directory_scan_skips_registry_files() -> None:
    assert all(path.name != "hardware.yaml" for path in recipe_files_in(ROOT / "recipes"))
