"""Which sweep of a configuration is the newer: one rule for the CLI, the hub and trends.

A sweep is as new as its last point's date. A result whose source stated no date (an InferenceX `agg_bmk.json`
row imported without `--run-date`) has none to offer: such sweeps are ordered among themselves by their name in
natural order, which for `inferencex-run-<id>` is the GitHub Actions run id (ids grow with time), and before
every dated sweep, so "latest" prefers a run whose date is known. The time such a result was imported is never
used to order it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

_DIGITS = re.compile(r"(\d+)")


def natural(name: str) -> tuple[Any, ...]:
    """'run-9' before 'run-10': digit runs compare as numbers."""
    return tuple(int(part) if part.isdigit() else part for part in _DIGITS.split(name))


def sweep_recency(sweep: str, last_finished: datetime, dated: bool) -> tuple[Any, ...]:
    """A sort key: undated sweeps by run order, then dated sweeps by their last point's date."""
    return (1, last_finished) if dated else (0, natural(sweep))


def sweep_keys(rows: Iterable[Any]) -> dict[tuple[str, str], tuple[Any, ...]]:
    """(fingerprint, sweep) -> its recency key, from result rows (fingerprint, sweep, finished_at, date_known)."""
    ends: dict[tuple[str, str], tuple[datetime, bool]] = {}
    for row in rows:
        key = (row.fingerprint, row.sweep)
        end, dated = ends.get(key, (row.finished_at, True))
        ends[key] = (max(end, row.finished_at), dated and getattr(row, "date_known", True))
    return {key: sweep_recency(key[1], end, dated) for key, (end, dated) in ends.items()}


def latest_sweep_of(keys: dict[tuple[str, str], tuple[Any, ...]]) -> dict[str, str]:
    """fingerprint -> its latest sweep, from `sweep_keys`."""
    latest: dict[str, tuple[tuple[Any, ...], str]] = {}
    for (fingerprint, sweep), key in keys.items():
        if fingerprint not in latest or key > latest[fingerprint][0]:
            latest[fingerprint] = (key, sweep)
    return {fingerprint: sweep for fingerprint, (_key, sweep) in latest.items()}
