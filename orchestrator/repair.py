"""`infersweep repair`: check every stored result's figures again, and take out those no reader can use.

Rows stored before the store refused them (db/finite.py) may hold NaN or infinity, which break every reader of
a SQLite database (its JSON functions call such a row malformed), or figures no chip can have. Each such row is
retracted with the reason naming each field and value, marked invalid, and each non-finite number is replaced
(JSON null, a NULL column, or 0 in a column that cannot be NULL: the reason keeps the value it held). The rest
is untouched; running it again changes nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

from pydantic import ValidationError
from sqlalchemy import inspect
from sqlmodel import Session, col, select

from db.finite import non_finite_fields, row_non_finite_fields, without_non_finite
from db.models import PointResultRow, utcnow
from recipes.errors import problem
from runners.loadgen.records import PointMetrics


@dataclass(frozen=True)
class RepairedRow:
    row_id: int | None
    point_key: str
    problems: list[str]


def _figures_out_of_range(row: PointResultRow) -> tuple[list[str], PointMetrics | None]:
    """Figures of the row's metrics that are finite but impossible (the figures-in-range rule, and the
    figures-possible rule where it has not judged the row yet: stored before it existed), and the metrics with that
    rule's verdict, which a repair stores so that a second one finds nothing new (None for a shape not read)."""
    try:
        metrics = PointMetrics.model_validate(row.metrics)
    except ValidationError:
        return [], None  # an older or foreign shape: its non-finite numbers are still found below
    judged = metrics.with_figures_judged()
    impossible = [reason for reason in judged.validity.reasons if reason not in metrics.validity.reasons]
    return [problem(name, value, f"expected {expected}") for name, value, expected in metrics.out_of_range()
            if not (isinstance(value, float) and not math.isfinite(value))] + impossible, judged  # fmt: skip


def _clean(row: PointResultRow) -> None:
    """Each non-finite number of the row replaced: NULL in a column that may be NULL, else 0 (the reason keeps
    the value it held); inside a JSON column, null."""
    for column in inspect(PointResultRow).column_attrs:
        value = getattr(row, column.key)
        if isinstance(value, float) and not math.isfinite(value):
            setattr(row, column.key, None if all(part.nullable for part in column.columns) else 0.0)
        elif isinstance(value, dict | list) and non_finite_fields(value):
            setattr(row, column.key, without_non_finite(value))  # a new object: the change is seen and written


def repair_stored_figures(session: Session, *, apply: bool = True) -> list[RepairedRow]:
    """Every result row whose figures no reader can use, retracted and cleaned (when `apply`); what was found."""
    repaired = []
    for row in session.exec(select(PointResultRow).order_by(col(PointResultRow.id))).all():
        found = row_non_finite_fields(row)
        impossible, judged = _figures_out_of_range(row)
        problems = [problem(path, value, "expected a finite number") for path, value in found] + impossible
        if not problems:
            continue
        repaired.append(RepairedRow(row.id, row.point_key, problems))
        if not apply:
            continue
        _clean(row)
        if judged is not None:  # the figures-possible verdict kept: a second repair finds nothing new
            row.metrics = cast(dict[str, Any], without_non_finite(judged.model_dump(mode="json")))
        reason = "figures out of range (infersweep repair): " + "; ".join(problems)
        row.valid = False
        row.validity_reasons = [*row.validity_reasons, reason]
        row.retraction_reason = "; ".join(part for part in (row.retraction_reason, reason) if part)
        row.retracted, row.retracted_at = True, row.retracted_at or utcnow()
        session.add(row)
    if apply:
        session.commit()
    return repaired
