"""The trusted-keys list: the shipped file loads, a bad key is refused naming its field."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from recipes.errors import RecipeError
from recipes.trusted_keys import key_id, load_trusted_keys


def test_the_shipped_list_loads() -> None:
    assert load_trusted_keys().keys is not None


def test_an_entry_is_an_owner_and_a_32_byte_key_named_by_its_hash(tmp_path: Path) -> None:
    raw = bytes(range(32))
    path = tmp_path / "keys.yaml"
    path.write_text(f"keys:\n  - owner: runner-1\n    public_key: {base64.b64encode(raw).decode()}\n")
    [key] = load_trusted_keys(path).keys
    assert key.raw == raw and key.id == key_id(raw) and len(key.id) == 16
    path.write_text(f"keys:\n  - owner: runner-1\n    public_key: {base64.b64encode(raw[:31]).decode()}\n")
    with pytest.raises(RecipeError, match=r"keys\[0\]\.public_key.*31 bytes; an ed25519 public key is 32"):
        load_trusted_keys(path)
