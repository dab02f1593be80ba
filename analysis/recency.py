"""Which sweep of a configuration is the newer: one rule for the CLI, the hub and trends.

A sweep is as new as its last point's date. A result whose source stated no date (an InferenceX `agg_bmk.json`
row imported without `--run-date`) has none to offer: such sweeps are ordered among themselves by the GitHub
Actions run id their name ends with (`inferencex-run-<id>`; ids grow with time), and before every dated sweep, so
"latest" prefers a run whose date is known. A sweep with neither a date nor a run id (a file named by neither
layout, keyed by its content hash: `inferencex-run-sha-<hash>`) has no known place: its order is unknown, and
"latest" is then every such sweep beside the newest ordered one, never one picked by its hash. The time such a
result was imported is never used to order it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

_DIGITS = re.compile(r"(\d+)")
_RUN_ID = re.compile(r"-run-(\d+)$")  # the GitHub Actions run id an imported run's sweep is named by

DATED, RUN_ID, UNKNOWN = 2, 1, 0  # the first element of a recency key: what orders the sweep


def as_utc(when: datetime) -> datetime:
    """`when` with its zone: a stored time without one is UTC (SQLite keeps none; every time here is written in UTC)."""
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when


def end_of_day(day: date) -> datetime:
    """The end of `day` in UTC: an as-of view (hub `asof`, `compare --as-of`) holds what finished before it."""
    return datetime.combine(day + timedelta(days=1), time.min, tzinfo=UTC)


def finished_by(rows: Iterable[Any], day: date) -> list[Any]:
    """The result rows whose source states a finish before the end of `day` (UTC); a row with no stated date is left
    out (nothing says it existed then). One rule with `public_results.as_of`, the hub's frame of the same view."""
    end = end_of_day(day)
    return [row for row in rows if getattr(row, "date_known", True) and as_utc(row.finished_at) < end]


def natural(name: str) -> tuple[Any, ...]:
    """'run-9' before 'run-10': digit runs compare as numbers."""
    return tuple(int(part) if part.isdigit() else part for part in _DIGITS.split(name))


def run_id_of(sweep: str) -> int | None:
    """The GitHub Actions run id a sweep's name ends with (`...-run-<id>`), else None."""
    found = _RUN_ID.search(sweep)
    return int(found.group(1)) if found else None


def sweep_recency(sweep: str, last_finished: datetime, dated: bool) -> tuple[Any, ...]:
    """A sort key: dated sweeps by their last point's date, after undated ones by run id, after those of unknown
    order (by name, only so that a listing is stable: `order_known` says such a key orders nothing)."""
    if dated:
        return (DATED, last_finished)
    run = run_id_of(sweep)
    return (RUN_ID, run) if run is not None else (UNKNOWN, natural(sweep))


def order_known(key: tuple[Any, ...]) -> bool:
    """False for a sweep with neither a date nor a run id: where it falls among the others is not known."""
    return key[0] != UNKNOWN


def sweep_keys(rows: Iterable[Any]) -> dict[tuple[str, str], tuple[Any, ...]]:
    """(fingerprint, sweep) -> its recency key, from result rows (fingerprint, sweep, finished_at, date_known)."""
    ends: dict[tuple[str, str], tuple[datetime, bool]] = {}
    for row in rows:
        key = (row.fingerprint, row.sweep)
        end, dated = ends.get(key, (row.finished_at, True))
        ends[key] = (max(end, row.finished_at), dated and getattr(row, "date_known", True))
    return {key: sweep_recency(key[1], end, dated) for key, (end, dated) in ends.items()}


def latest_sweeps_of(keys: dict[tuple[str, str], tuple[Any, ...]]) -> dict[str, tuple[str, ...]]:
    """fingerprint -> its latest sweep, from `sweep_keys`; with sweeps of unknown order, every one of those and the
    newest ordered sweep (none of them is known to be the latest)."""
    by_fingerprint: dict[str, list[tuple[tuple[Any, ...], str]]] = defaultdict(list)
    for (fingerprint, sweep), key in keys.items():
        by_fingerprint[fingerprint].append((key, sweep))
    latest = {}
    for fingerprint, candidates in by_fingerprint.items():
        ordered = [item for item in candidates if order_known(item[0])]
        unknown = sorted(sweep for key, sweep in candidates if not order_known(key))
        newest = [max(ordered)[1]] if ordered else []
        latest[fingerprint] = tuple(newest + unknown)
    return latest


def latest_sweep_of(keys: dict[tuple[str, str], tuple[Any, ...]]) -> dict[str, str]:
    """fingerprint -> its one latest sweep, for configurations whose sweeps' order is known (`latest_sweeps_of`
    names every candidate where it is not)."""
    return {fingerprint: sweeps[0] for fingerprint, sweeps in latest_sweeps_of(keys).items() if len(sweeps) == 1}


def order_unknown(keys: dict[tuple[str, str], tuple[Any, ...]]) -> set[str]:
    """The fingerprints with more than one sweep whose latest cannot be told (a sweep of unknown order among them)."""
    return {fingerprint for fingerprint, sweeps in latest_sweeps_of(keys).items() if len(sweeps) > 1}
