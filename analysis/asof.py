"""`asof` reads: which published snapshot a date or a snapshot hash means, from the chain's index (`snapshots.json`,
newest first, written by `infersweep publish --snapshot`; orchestrator/snapshot_chain.py). The hub's API and the
store's static files answer with that snapshot's views (`api/v1/asof/<sha256>/`)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from recipes.errors import ConfigurationError

__all__ = ["resolve_asof"]


def resolve_asof(history: list[Mapping[str, Any]], asof: str) -> Mapping[str, Any]:
    """The snapshot of `history` (`snapshots.json`, newest first) an `asof` read means: a snapshot hash (a prefix of
    8 or more hex digits), or a date/time (ISO 8601, UTC when no zone): the newest published at or before it."""
    value = asof.strip().lower()
    if len(value) >= 8 and all(character in "0123456789abcdef" for character in value):
        matches = [entry for entry in history if str(entry["snapshot"]).startswith(value)]
        if len(matches) == 1:
            return matches[0]
        raise ConfigurationError(
            f"asof={asof!r}: {'no' if not matches else len(matches)} published snapshot(s) have a hash starting so; "
            f"expected one of {[str(entry['snapshot'])[:12] for entry in history]}"
        )
    try:
        moment = datetime.fromisoformat(asof.strip())
    except ValueError:
        raise ConfigurationError(
            f"asof={asof!r}: expected a date or time (ISO 8601, e.g. 2026-12-01 or 2026-12-01T12:00Z) or a "
            "snapshot hash (8 or more hex digits)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if len(asof.strip()) == 10:  # a date alone: as of the end of that day
        moment = moment.replace(hour=23, minute=59, second=59, microsecond=999_999)
    for entry in history:
        at = entry.get("published_at")
        if at is not None and datetime.fromisoformat(str(at)) <= moment:
            return entry
    raise ConfigurationError(f"asof={asof!r}: no snapshot was published by then (the first: "
                             f"{history[-1].get('published_at') if history else 'none yet'})")  # fmt: skip
