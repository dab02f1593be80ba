"""Strict, bounded reading of every YAML and JSON input: recipes and data files (`read_yaml`) and result files of
other tools (`read_document`). Duplicate keys and syntax errors name the line; bytes that are not UTF-8 name their
offset; a file too large, nested too deeply or expanding past a node budget through YAML aliases is refused
before it costs memory."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from recipes.errors import HIDDEN, MISSING, RecipeError
from recipes.secrets import names_a_secret, redacted

M = TypeVar("M", bound=BaseModel)


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys (PyYAML keeps the last one silently)."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):  # `{}: 1`, `[a]: 1`: no file of ours has a key that is not text
            what = f"a key that is a {key_node.id}, not a name (expected text or a number)"
            raise yaml.constructor.ConstructorError(None, None, what, key_node.start_mark)
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node)


def _construct_bounded_int(loader: _UniqueKeyLoader, node: yaml.ScalarNode) -> int:
    """An integer, or a YAML error at its position where it has more digits than Python converts (4,300)."""
    try:
        return int(loader.construct_yaml_int(node))
    except ValueError:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"an integer of {len(str(node.value)):,} characters (expected at most {_MAX_DIGITS:,} digits)",
            node.start_mark,
        ) from None


_MAX_DIGITS = sys.get_int_max_str_digits() or 4300  # Python's limit on converting digits to an int (0: none set)
_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)
_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:int", _construct_bounded_int)


# A data file is a few KB (hardware.yaml, the largest, is 15 KB and 1,350 nodes). The bounds stop a typo or a
# hostile file before it costs memory: aliases let a 1 KB document stand for billions of nodes (9 levels of
# 9 aliases took over 1 GB and 20 s downstream), so nodes are counted as the aliases expand them.
MAX_FILE_BYTES = 1024 * 1024
MAX_EXPANDED_NODES = 100_000


def _expanded_nodes(node: yaml.Node, counted: dict[int, int], budget: int) -> int:
    """Nodes of `node` with every alias expanded (a shared node counts each time it is referred to); stops
    counting once past `budget`. Counts of shared nodes are kept, so the walk is linear in the file."""
    known = counted.get(id(node))
    if known is not None:
        return known
    total = 1
    if isinstance(node, yaml.MappingNode):
        children = [child for pair in node.value for child in pair]
    elif isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    else:
        children = []
    for child in children:
        total += _expanded_nodes(child, counted, budget)
        if total > budget:
            break
    counted[id(node)] = total
    return total


def _decode(path: Path, raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        column = error.start - (raw.rfind(b"\n", 0, error.start) + 1) + 1
        bad = raw[error.start : error.end]
        raise RecipeError(
            str(path),
            [(f"byte {error.start} (line {line}, column {column})", bad, "expected UTF-8 text (save it as UTF-8)")],
            what,
        ) from None


def _read_bytes(path: Path, what: str, max_bytes: int) -> bytes:
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise RecipeError(str(path), [("<file>", f"{size:,} bytes", f"expected at most {max_bytes:,} bytes")], what)
        raw = path.read_bytes()
    except OSError as error:
        raise RecipeError(
            str(path), [("<file>", str(path), f"expected a readable file ({error.strerror})")], what
        ) from error
    if len(raw) > max_bytes:  # grew since stat
        raise RecipeError(str(path), [("<file>", f"{len(raw):,} bytes", f"expected at most {max_bytes:,} bytes")], what)
    return raw


def _too_deep(path: Path, what: str) -> RecipeError:
    return RecipeError(
        str(path), [("<document>", "nested too deeply to read", "expected a few levels of nesting")], what
    )


def _parse_yaml(path: Path, text: str, what: str, max_nodes: int) -> Any:
    try:
        loader = _UniqueKeyLoader(text)  # reads the first characters already: a NUL is refused here
    except yaml.YAMLError as error:
        raise RecipeError(
            str(path), [("<document>", str(error).splitlines()[0], "expected valid YAML")], what
        ) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        nodes = _expanded_nodes(node, {}, max_nodes)
        if nodes > max_nodes:
            raise RecipeError(
                str(path),
                [("<document>", f"over {max_nodes:,} nodes once its aliases are expanded",
                  f"expected at most {max_nodes:,} (write the values out, or use fewer nested aliases)")],
                what,
            )  # fmt: skip
        return loader.construct_document(node)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "<document>"
        problem = getattr(error, "problem", None) or str(error)
        raise RecipeError(str(path), [(where, problem, "expected valid YAML")], what) from error
    except RecursionError:
        raise _too_deep(path, what) from None
    finally:
        loader.dispose()


def read_yaml(path: Path, what: str = "recipe") -> Any:
    """Parse a YAML file strictly; syntax errors, undecodable bytes and oversized documents become a
    RecipeError with the position or the bound."""
    raw = _read_bytes(path, what, MAX_FILE_BYTES)
    return _parse_yaml(path, _decode(path, raw, what), what, MAX_EXPANDED_NODES)


# A result file of another tool (AIPerf, GuideLLM, vllm bench, llm-d, InferenceX) holds per-request data and can
# be tens of MB; the bounds stop what no such file is: a YAML alias bomb (an llm-d report of 1 KB reached 4 GB in
# 60 s through yaml.safe_load), JSON nested 200,000 deep, a file of gigabytes.
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024
MAX_DOCUMENT_NODES = 5_000_000


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > _MAX_DIGITS:
        raise _TooManyDigits(digits)
    return int(digits)


class _TooManyDigits(ValueError):
    pass


def read_json_text(text: str, path: Path, what: str) -> Any:
    """JSON text parsed, with an integer past Python's 4,300-digit conversion limit a RecipeError naming its
    line (json.loads raises a bare ValueError there). Syntax errors stay json.JSONDecodeError for the caller."""
    try:
        return json.loads(text, parse_int=_bounded_int)
    except _TooManyDigits as error:
        digits = str(error.args[0])
        offset = text.find(digits)
        line = text.count("\n", 0, offset) + 1 if offset >= 0 else None
        raise RecipeError(
            str(path),
            [
                (
                    f"line {line}" if line else "<document>",
                    f"an integer of {len(digits):,} digits",
                    f"expected at most {_MAX_DIGITS:,} digits",
                )
            ],
            what,
        ) from None


def read_json_lines(path: Path, what: str) -> list[Any]:
    """A JSON Lines file's documents, one a line (blank lines skipped), within the bounds above; a line that is not
    JSON is a RecipeError naming the file and the line (never a traceback)."""
    text = _decode(path, _read_bytes(path, what, MAX_DOCUMENT_BYTES), what)
    documents = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            documents.append(read_json_text(line, path, what))
        except (json.JSONDecodeError, RecursionError) as error:
            reason = error.msg if isinstance(error, json.JSONDecodeError) else "nested too deep"
            raise RecipeError(
                str(path), [(f"line {number}", MISSING, f"expected one JSON document ({reason})")], what
            ) from None
    return documents


def read_document(path: Path, what: str) -> Any:
    """A result file's document, JSON or else YAML, read within the bounds above; anything else is a RecipeError
    naming the file and what was wrong (never a traceback)."""
    text = _decode(path, _read_bytes(path, what, MAX_DOCUMENT_BYTES), what)
    try:
        return read_json_text(text, path, what)
    except RecursionError:
        raise _too_deep(path, what) from None
    except json.JSONDecodeError as json_error:
        try:
            return _parse_yaml(path, text, what, MAX_DOCUMENT_NODES)
        except RecipeError as yaml_error:
            syntax = yaml_error.problems[0][2] == "expected valid YAML"
            if not (syntax and text.lstrip().startswith(("{", "["))):
                raise
            # Meant as JSON: where it breaks as JSON says more than YAML's view of it.
            where = f"line {json_error.lineno}, column {json_error.colno}"
            raise RecipeError(
                str(path), [(where, MISSING, f"expected a {what} in JSON or YAML ({json_error.msg})")], what
            ) from None


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
        if kind == "missing":
            value = MISSING
        elif names_a_secret(field.rsplit(".", 1)[-1]):
            value = HIDDEN  # `password: ...` under a key where it does not belong is still a password
        else:
            value = redacted(item.get("input"))
        problems.append((field, value, expected))
    return problems


def load_validated(path: Path, model: type[M], what: str) -> M:
    """Read a YAML data file and validate it as `model`; every problem names its field path."""
    data = read_yaml(path, what=what)
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise RecipeError(str(path), validation_problems(error, data, what), what=what) from error
