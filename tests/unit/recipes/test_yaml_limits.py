"""Hostile or broken data files are refused quickly, naming the file and the position or the bound
(recipes/yamlio.py reads every recipe, inventory, registry and schedule)."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest
import yaml

from recipes.errors import RecipeError
from recipes.loader import load_recipe
from recipes.yamlio import MAX_EXPANDED_NODES, MAX_FILE_BYTES, read_document, read_yaml
from runners.fleet.inventory import load_inventory
from tests.conftest import SIMULATED_RECIPE


def alias_bomb(levels: int = 9, fan_out: int = 9) -> str:
    """A billion-laughs document: each level lists `fan_out` aliases of the one below (9 x 9: 387 M leaves)."""
    lines = [f"l0: &l0 [{', '.join(['lol'] * fan_out)}]"]
    for level in range(1, levels):
        lines.append(f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * fan_out)}]")
    return "\n".join(lines) + "\n"


def problem_of(path: Path, read=read_yaml) -> str:
    with pytest.raises(RecipeError) as caught:
        read(path)
    return str(caught.value)


def test_an_alias_bomb_is_refused_in_bounded_time_and_memory(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(alias_bomb())
    tracemalloc.start()
    started = time.monotonic()
    try:
        message = problem_of(bomb, load_recipe)
        elapsed = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(bomb) in message and f"over {MAX_EXPANDED_NODES:,} nodes once its aliases are expanded" in message
    assert elapsed < 2.0, elapsed  # measured here: 0.01 s; before the bound, over 20 s and 1 GB
    assert peak < 100 * 1024 * 1024, peak


def test_aliases_within_the_bound_still_work(tmp_path: Path) -> None:
    small = tmp_path / "small.yaml"
    small.write_text(alias_bomb(levels=3, fan_out=3))
    assert read_yaml(small)["l2"] == [[["lol"] * 3] * 3] * 3


def test_a_latin1_recipe_names_the_file_and_the_byte(tmp_path: Path) -> None:
    text = yaml.safe_dump({**SIMULATED_RECIPE, "name": "cafe-recipe"}, sort_keys=False)
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes(text.replace("cafe-recipe", "caf\xe9-recipe", 1).encode("latin-1"))
    offset = text.index("cafe-recipe") + len("caf")
    message = problem_of(latin1, load_recipe)
    line = text[:offset].count("\n") + 1
    assert str(latin1) in message and f"byte {offset} (line {line}," in message and "expected UTF-8 text" in message


def test_a_latin1_inventory_names_the_file_and_the_byte(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_bytes("targets:\n  - name: m\xfcnchen\n".encode("latin-1"))
    message = problem_of(inventory, load_inventory)
    assert str(inventory) in message and "byte 20 (line 2, column 12)" in message


def test_an_oversized_file_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("# padding\n" * (MAX_FILE_BYTES // 10 + 1))
    assert f"expected at most {MAX_FILE_BYTES:,} bytes" in problem_of(big)


def test_nesting_deeper_than_the_parser_can_follow_is_an_error_not_a_crash(tmp_path: Path) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    assert "nested too deeply" in problem_of(deep)


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_an_integer_past_pythons_digit_limit_is_named_not_a_traceback(tmp_path: Path, suffix: str) -> None:
    digits = "1" + "0" * 4300
    path = tmp_path / f"big{suffix}"
    path.write_text(f"v: {digits}\n" if suffix == ".yaml" else f'{{"rows": [{{"conc": {digits}}}]}}')
    with pytest.raises(RecipeError) as caught:
        read_document(path, "InferenceX rows") if suffix == ".json" else read_yaml(path)
    [(where, value, expected)] = caught.value.problems
    assert where.startswith("line 1") and "4,301" in str(value) and "4,300 digits" in str(value) + expected
    small = tmp_path / f"small{suffix}"
    small.write_text("v: 12345\n" if suffix == ".yaml" else '{"v": 12345}')
    assert (read_yaml(small) if suffix == ".yaml" else read_document(small, "rows")) == {"v": 12345}


@pytest.mark.parametrize("key", ["{}", "[a]", "{a: 1}"])
def test_a_key_that_is_not_a_name_is_refused_with_its_position(tmp_path: Path, key: str) -> None:
    path = tmp_path / "recipe.yaml"
    path.write_text(f"name: x\n{key}: 1\n")
    problem = problem_of(path)
    assert "line 2, column 1" in problem and "not a name" in problem
    assert "not a name" in problem_of(path, lambda found: read_document(found, "llm-d report"))
