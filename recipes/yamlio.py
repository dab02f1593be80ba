"""Strict YAML reading shared by every data file: duplicate keys and syntax errors name the line."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from recipes.errors import MISSING, RecipeError

M = TypeVar("M", bound=BaseModel)


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


def field_path(loc: tuple[int | str, ...], data: Any, tag_key: str = "kind") -> str:
    """Dotted path of a pydantic error location, e.g. `workload.concurrency[0]`.

    Pydantic puts a discriminated union's tag (the `kind` value) into the location; it is not a
    key of the file, so it is skipped when the data at that point carries that `kind`. The tag is
    checked first, once per node: a tag may equal a key of its own data (`kind: ssh` with `ssh:`).
    """
    parts: list[str] = []
    node = data
    tag_skipped_at: object = None
    for element in loc:
        if isinstance(element, int):
            parts.append(f"[{element}]")
            node = node[element] if isinstance(node, list) and element < len(node) else None
        elif isinstance(node, dict) and node.get(tag_key) == element and tag_skipped_at is not node:
            tag_skipped_at = node
        elif isinstance(node, dict) and element in node:
            parts.append(f".{element}")
            node = node[element]
        else:
            parts.append(f".{element}")
            node = None
    return "".join(parts).lstrip(".") or "<root>"


def validation_problems(error: ValidationError, data: Any, what: str = "recipe") -> list[tuple[str, Any, str]]:
    problems: list[tuple[str, Any, str]] = []
    schema = "recipe schema v1" if what == "recipe" else f"the {what} schema"
    for item in error.errors(include_url=False):
        field = field_path(tuple(item["loc"]), data)
        kind = item["type"]
        if kind == "extra_forbidden":
            expected = f"unknown key (not in {schema}; check the spelling)"
        elif kind == "missing":
            expected = "missing (required)"
        else:
            expected = f"expected: {item['msg']}"
        value = item.get("input") if kind != "missing" else MISSING
        problems.append((field, value, expected))
    return problems


def load_validated(path: Path, model: type[M], what: str) -> M:
    """Read a YAML data file and validate it as `model`; every problem names its field path."""
    data = read_yaml(path, what=what)
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise RecipeError(str(path), validation_problems(error, data, what), what=what) from error
