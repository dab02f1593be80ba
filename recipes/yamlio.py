"""Strict YAML reading shared by every data file: duplicate keys and syntax errors name the line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from recipes.errors import RecipeError


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys (PyYAML keeps the last one silently)."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _value_node in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def read_yaml(path: Path, what: str = "recipe") -> Any:
    """Parse a YAML file strictly; syntax errors become a RecipeError with the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise RecipeError(
            str(path), [("<file>", str(path), f"expected a readable file ({error.strerror})")], what
        ) from error
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - _UniqueKeyLoader is a SafeLoader
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "<document>"
        problem = getattr(error, "problem", None) or str(error)
        raise RecipeError(str(path), [(where, problem, "expected valid YAML")], what) from error
