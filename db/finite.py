"""The store never holds a number that is not finite: the last line of defence behind every writer's own checks.

NaN and infinity poison a results database: SQLite keeps `NaN` in a JSON column that none of its JSON functions
(and no other JSON reader) can then parse, so one such row made `infersweep results`, `export` and every hub page
fail; PostgreSQL refuses it with a long traceback. Writers check their figures first (the importers and the
recorder apply `PointMetrics.out_of_range`); this refuses, at flush, any row that still carries one, naming the
table, the field (a JSON path inside a JSON column) and the value. `non_finite_fields` is the same walk, for the
repair of rows stored before the guard existed (`infersweep results repair`).
"""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic_core import PydanticSerializationError, to_json
from sqlalchemy import event, inspect
from sqlalchemy.orm import Session

from recipes.errors import InferSweepError


class NonFiniteValue(InferSweepError):
    """A row would store NaN or infinity. Not retryable: the figure must change."""

    retryable = False


def non_finite_fields(value: object, path: str = "") -> list[tuple[str, float]]:
    """(path, value) of every NaN or infinite float in `value` (nested dicts and lists walked)."""
    if isinstance(value, float):
        return [] if math.isfinite(value) else [(path, value)]
    if isinstance(value, dict):
        return [
            found
            for key, item in value.items()
            for found in non_finite_fields(item, f"{path}.{key}" if path else str(key))
        ]
    if isinstance(value, list | tuple):
        return [found for index, item in enumerate(value) for found in non_finite_fields(item, f"{path}[{index}]")]
    return []


def without_non_finite(value: object) -> object:
    """`value` with every NaN or infinite float replaced by None (JSON null), nested dicts and lists rebuilt."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: without_non_finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [without_non_finite(item) for item in value]
    return value


def row_non_finite_fields(row: object) -> list[tuple[str, float]]:
    """(column or column.json.path, value) of every non-finite number a mapped row holds."""
    mapper = inspect(type(row))
    return [
        found for column in mapper.column_attrs for found in non_finite_fields(getattr(row, column.key), column.key)
    ]


def finite_json(value: Any) -> str:
    """The JSON text of a column value; refuses NaN and infinity (JSON has no word for them).

    Written by pydantic's Rust encoder, which takes a fifth of the json module's time on a Point's 1.7 KB of figures
    (100k of them in an import): it writes a non-finite float as a bare `NaN` or `Infinity`, so where neither word is
    in the text every number is finite; where one is (a string may hold it too), the walk says which number is not."""
    try:
        text = to_json(value, inf_nan_mode="constants")
    except PydanticSerializationError:  # what it cannot write (an integer past 64 bits): the json module can
        text = json.dumps(value).encode()
    if b"NaN" in text or b"Infinity" in text:
        found = ", ".join(f"{path or '(value)'}={number!r}" for path, number in non_finite_fields(value))
        if found:
            raise NonFiniteValue(f"a JSON column would hold {found}; expected finite numbers")
    return text.decode()


@event.listens_for(Session, "before_flush")
def _refuse_non_finite(session: Session, _context: object, _instances: object) -> None:
    for row in [*session.new, *session.dirty]:
        found = row_non_finite_fields(row)
        if found:
            table = getattr(type(row), "__tablename__", type(row).__name__)
            fields = ", ".join(f"{table}.{path}={number!r}" for path, number in found)
            raise NonFiniteValue(
                f"refused to store {fields}: expected finite numbers (NaN and infinity poison the store)"
            )
