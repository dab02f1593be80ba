"""Coverage: which chips have results for which model, precision and workload, and what kind of results.

A reader who looks for a chip must learn that it is missing, not be shown other chips in its place (the hub
was once silent about TPU v7, which has no result). Each cell holds the strongest evidence there is for that chip on
that row: `measured` (here), `imported` (another lab's measurement, e.g. InferenceX's), `projected` (a model's
estimate from another chip's measurements), else `missing`; with how many results and the date of the latest one
(or none, where no result of the cell states its date). Simulated results and dry runs say nothing about a chip and
are not counted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

# Strongest evidence first.
EVIDENCE = ("measured", "imported", "projected")
MISSING = "missing"


@dataclass(frozen=True)
class CoverageCell:
    """One chip on one row (model, precision, workload)."""

    hardware: str
    model: str
    precision: str
    workload: str
    status: str  # one of EVIDENCE, or MISSING
    results: int  # results of that status (repeats of Points)
    latest: datetime | None  # the latest dated result of that status; None when none states a date


def coverage(rows: Iterable[Any], chips: Sequence[str]) -> list[CoverageCell]:
    """Every (row, chip) cell: `rows` are results with hardware, model, precision, workload, origin, finished_at and
    date_known; `chips` are the chips to cover (every chip of the registry a reader may look for). Rows are the
    model, precision and workload combinations some chip has; the cells are in row order, then `chips` order."""
    found: dict[tuple[str, str, str], dict[str, dict[str, list[Any]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for row in rows:
        if row.origin in EVIDENCE:
            found[(row.model, row.precision, row.workload)][row.hardware][row.origin].append(row)
    cells = []
    for key in sorted(found):
        for chip in chips:
            by_origin = found[key].get(chip, {})
            status = next((origin for origin in EVIDENCE if by_origin.get(origin)), MISSING)
            members = by_origin.get(status, [])
            dated = [row.finished_at for row in members if row.date_known]
            cells.append(CoverageCell(chip, *key, status, len(members), max(dated) if dated else None))
    return cells


def chips_to_cover(registry: Iterable[str], local_hosts: Collection[str], with_results: Collection[str]) -> list[str]:
    """The chips a coverage view lists: every accelerator of the registry a reader may look for, in registry order;
    a local CPU host only where it has results of its own."""
    return [chip for chip in registry if chip not in local_hosts or chip in with_results]


def chips_without_results(cells: Iterable[CoverageCell]) -> list[str]:
    """Chips missing on every row, in the cells' order."""
    statuses: dict[str, set[str]] = {}
    for cell in cells:
        statuses.setdefault(cell.hardware, set()).add(cell.status)
    return [chip for chip, seen in statuses.items() if seen == {MISSING}]
