"""The token-price table loads, every entry is labelled, and a bad file names the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from recipes.errors import RecipeError
from recipes.loader import recipe_files_in
from recipes.prices import load_price_table

ROOT = Path(__file__).parents[3]


def test_price_table_loads_with_dated_sourced_entries() -> None:
    """The shipped table is a dated snapshot of a public listing, not placeholders: every entry names its listing's
    address, the provider rule and the month, for the models the public results hold."""
    table = load_price_table()
    assert {"deepseek-ai/DeepSeek-R1-0528", "openai/gpt-oss-120b"} <= set(table)
    for model, price in table.items():
        assert price.model == model and "/" in model
        assert "illustrative" not in f"{price.source} {price.note}"
        assert price.url is not None and price.url.startswith("https://openrouter.ai/") and price.provider_rule
        assert price.note
        assert 0 <= price.cached_input_usd_per_m <= price.input_usd_per_m
        assert price.output_usd_per_m > 0
        assert len(price.as_of) == 7 and price.as_of[4] == "-"


def test_prices_yaml_is_not_a_recipe() -> None:
    assert all(path.name != "prices.yaml" for path in recipe_files_in(ROOT / "recipes"))


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text("schema_version: 1\nmodels:\n  org/model:\n" + body)
    return path


GOOD = (
    "    input_usd_per_m: 0.5\n    cached_input_usd_per_m: 0.25\n    output_usd_per_m: 2\n"
    "    source: s\n    as_of: '2026-11'\n"
)


def test_minimal_file_loads(tmp_path: Path) -> None:
    table = load_price_table(_write(tmp_path, GOOD))
    assert table["org/model"].output_usd_per_m == 2.0


def test_unknown_key_names_field(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD + "    colour: green\n")
    with pytest.raises(RecipeError) as caught:
        load_price_table(path)
    assert str(path) in str(caught.value)
    assert "models.org/model.colour" in str(caught.value)


def test_bad_values_name_fields(tmp_path: Path) -> None:
    body = GOOD.replace("output_usd_per_m: 2", "output_usd_per_m: lots").replace("'2026-11'", "'2026-13'")
    with pytest.raises(RecipeError) as caught:
        load_price_table(_write(tmp_path, body))
    message = str(caught.value)
    assert "models.org/model.output_usd_per_m" in message and "'lots'" in message
    assert "models.org/model.as_of" in message


def test_cached_dearer_than_input_is_rejected(tmp_path: Path) -> None:
    body = GOOD.replace("cached_input_usd_per_m: 0.25", "cached_input_usd_per_m: 0.75")
    with pytest.raises(RecipeError, match="cached_input_usd_per_m must not exceed"):
        load_price_table(_write(tmp_path, body))
