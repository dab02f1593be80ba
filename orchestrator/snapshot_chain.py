"""Append-only publishing: each published snapshot names its parent, keeps every Point its parent published byte for
byte, and records why any Point left (a retraction naming it and the hash of its bytes as published).

`publish_snapshot` (orchestrator/publish.py) checks a new snapshot against the store's newest one before it moves the
pointer: a published Point whose stored row changed since is refused (a correction is a retraction plus a new Point),
and one that left without being retracted is refused too. `verify_chain` walks a store's snapshots from the newest
through each parent (every file checked against its content hash) and checks every link again, offline.
`snapshots.json` in the API lists the chain, so an `asof` read (a date or a snapshot hash) finds the figures as they
were then under `api/v1/asof/<sha256>/` (`analysis/asof.py`).

A Point's bytes are its `point_result` row as the snapshot file stores it, compared over the columns the earlier
snapshot has: a column a later schema adds is not a change of what was published.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, inspect, text
from sqlmodel import Session, col, select

from db.artifacts import sha256_of
from db.models import PointResultRow, SnapshotPublicationRow, SnapshotRetractionRow
from db.session import make_engine
from orchestrator.artifacts import ArtifactStore, content_key
from recipes.errors import ConfigurationError

LATEST_SNAPSHOT_KEY = "snapshot/latest.json"  # the store's pointer to its newest snapshot
HISTORY_VIEW = "snapshots"  # api/v1/snapshots.json: the chain, newest first


class PublishRefused(ConfigurationError):
    """A snapshot that would change or drop a published Point: not published, and not retryable as it stands."""


class ChainBroken(ConfigurationError):
    """A snapshot of the chain is missing or not the bytes its hash names."""


def point_rows(connection: Connection) -> dict[int, dict[str, Any]]:
    """Every `point_result` row of a snapshot file as it stores it, by id."""
    rows = connection.execute(text("SELECT * FROM point_result")).mappings()
    return {int(row["id"]): dict(row) for row in rows}


def point_sha256(row: Mapping[str, Any]) -> str:
    """SHA-256 of a stored Point row's canonical JSON (keys sorted, values as stored)."""
    canonical = json.dumps(dict(row), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def changed_fields(published: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """`field: published -> now` for each column of the published row whose stored value differs."""
    return [f"{name}: {value!r} -> {now.get(name)!r}" for name, value in published.items() if now.get(name) != value]


def _describe(row: Mapping[str, Any]) -> str:
    return f"Point {row['id']} ({row.get('point_key')!r}, concurrency {row.get('concurrency')})"


def link_problems(
    published: Mapping[int, Mapping[str, Any]], now: Mapping[int, Mapping[str, Any]], retractions: Mapping[int, str]
) -> list[str]:
    """What breaks one link of the chain: each Point the parent `published` must be in the child (`now`) unchanged,
    or named by one of the child's `retractions` (point id -> the SHA-256 of its bytes as published)."""
    problems = []
    for point_id, row in published.items():
        if point_id in now:
            if differences := changed_fields(row, now[point_id]):
                problems.append(f"{_describe(row)} changed since it was published: {'; '.join(differences)}")
        elif point_id not in retractions:
            problems.append(f"{_describe(row)} is neither in this snapshot nor retracted (embargoed or deleted)")
        elif retractions[point_id] != point_sha256(row):
            problems.append(f"the retraction of {_describe(row)} names other bytes ({retractions[point_id][:16]}) "
                            f"than were published ({point_sha256(row)[:16]})")  # fmt: skip
    return problems


def _rows_of(path: Path) -> dict[int, dict[str, Any]]:
    engine = make_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as connection:
            return point_rows(connection)
    finally:
        engine.dispose()


def record_link(
    snapshot: Session, parent: Path | None, parent_sha256: str | None, retracted: Mapping[int, PointResultRow]
) -> int:
    """Write the new snapshot's publication record and its retractions after checking it against `parent` (the
    newest published file); raise `PublishRefused` naming each published Point changed or dropped. `retracted`: the
    results database's retracted rows by id (where a dropped Point's reason comes from). Return the retractions."""
    published = _rows_of(parent) if parent is not None else {}
    now = point_rows(snapshot.connection())
    records = [
        SnapshotRetractionRow(point_result_id=point_id, point_sha256=point_sha256(row),
                              reason=gone.retraction_reason or "retracted", retracted_at=gone.retracted_at)
        for point_id, row in published.items() if point_id not in now and (gone := retracted.get(point_id))
    ]  # fmt: skip
    if problems := link_problems(published, now, {record.point_result_id: record.point_sha256 for record in records}):
        more = f"\n  ... and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise PublishRefused(
            f"publish --snapshot refused: {len(problems)} Point(s) of the published snapshot {parent_sha256} "
            f"would change:\n  " + "\n  ".join(problems[:10]) + more + "\nA published Point's bytes never change: "
            "retract it (`infersweep retract --sweep S --point KEY --reason ...`); a correction is a new Point."
        )
    snapshot.add_all(records)
    snapshot.add(SnapshotPublicationRow(parent_sha256=parent_sha256, points=len(now)))
    return len(records)


def retracted_rows(source: Session) -> dict[int, PointResultRow]:
    rows = source.exec(select(PointResultRow).where(col(PointResultRow.retracted).is_(True))).all()
    return {int(row.id or 0): row for row in rows}


# ------------------------------------------------------------------------------------------------ reading the chain


@dataclass(frozen=True)
class Publication:
    """One snapshot of a chain, as its own file records it."""

    sha256: str
    parent_sha256: str | None
    published_at: datetime | None  # None: a snapshot published before chains were recorded
    points: int
    retractions: list[dict[str, Any]] = field(default_factory=list)

    def entry(self) -> dict[str, Any]:
        """Its line in `snapshots.json`."""
        return {
            "snapshot": self.sha256, "parent": self.parent_sha256, "points": self.points,
            "published_at": self.published_at.isoformat() if self.published_at else None,
            "retractions": self.retractions,
        }  # fmt: skip


def read_publication(path: Path, sha256: str) -> Publication:
    engine = make_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as connection:
            tables = set(inspect(connection).get_table_names())
            if "snapshot_publication" not in tables:
                return Publication(sha256, None, None, len(point_rows(connection)))
            record = connection.execute(text("SELECT parent_sha256, published_at, points FROM snapshot_publication"))
            parent, at, points = record.one()
            retractions = [dict(row) for row in connection.execute(text(
                "SELECT point_result_id, point_sha256, reason, retracted_at FROM snapshot_retraction ORDER BY id"
            )).mappings()]  # fmt: skip
    finally:
        engine.dispose()
    published = datetime.fromisoformat(str(at)).replace(tzinfo=UTC) if at is not None else None
    return Publication(sha256, parent, published, int(points), retractions)


@dataclass
class ChainCheck:
    """What `verify_chain` found: the snapshots walked, newest first, and what failed (empty: it verifies)."""

    publications: list[Publication] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def latest_sha256(store: ArtifactStore) -> str | None:
    """The SHA-256 of the store's newest published snapshot (its pointer, `snapshot/latest.json`); None: none yet."""
    if not store.exists(LATEST_SNAPSHOT_KEY):
        return None
    with tempfile.TemporaryDirectory() as directory:
        pointer = json.loads(store.get(LATEST_SNAPSHOT_KEY, Path(directory) / "latest.json").read_text())
    return Path(str(pointer["key"])).stem  # content keys are snapshot/<sha256>.db


def fetch_snapshot(store: ArtifactStore, sha256: str, target: Path) -> Path:
    """Fetch the snapshot `sha256` from `store` into `target`; raise `ChainBroken` unless its bytes hash to it."""
    key = content_key("snapshot", sha256, ".db")
    try:
        store.get(key, target)
    except OSError as error:
        raise ChainBroken(f"snapshot {sha256}: not in the store ({key}: {error.strerror or error})") from None
    if (found := sha256_of(target)) != sha256:
        raise ChainBroken(f"snapshot {sha256}: the store holds other bytes under {key} (sha256 {found})")
    return target


def verify_chain(store: ArtifactStore, newest: str, limit: int = 10_000) -> ChainCheck:
    """Walk the chain from `newest` through each parent: every file's hash, and every link (each Point the parent
    published is in the child byte for byte, or retracted there by a record naming its hash)."""
    found = ChainCheck()
    with tempfile.TemporaryDirectory() as directory:
        child: tuple[Publication, dict[int, dict[str, Any]]] | None = None
        current: str | None = newest
        while current is not None and len(found.publications) < limit:
            try:
                path = fetch_snapshot(store, current, Path(directory) / f"{current}.db")
            except ChainBroken as error:
                found.problems.append(str(error))
                return found
            publication, rows = read_publication(path, current), _rows_of(path)
            path.unlink()
            if child is not None:
                later, now = child
                retractions = {int(entry["point_result_id"]): str(entry["point_sha256"]) for entry in later.retractions}
                found.problems.extend(f"snapshot {later.sha256[:16]} (parent {current[:16]}): {problem}"
                                      for problem in link_problems(rows, now, retractions))  # fmt: skip
            found.publications.append(publication)
            child, current = (publication, rows), publication.parent_sha256
    return found
