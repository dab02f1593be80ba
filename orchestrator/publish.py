"""Publishing: finish pending uploads, and write a read-only snapshot of the public results.

A snapshot is a SQLite file with the same schema (migrated to head) holding only what the public
may see: points neither retracted nor under a running embargo, the rows they refer to (and their
server-metric deltas), and the registry tables. Provenance rows (hosts, pre-flight checks) stay in the
production database, and no path of the publishing machine goes out: a local file's path (`/home/...`,
`file:///...`) anywhere in a copied row's text becomes the file's name. A public hub reads it with no access to
the production database (`INFERSWEEP_DATABASE_URL=sqlite:///snapshot.db`).
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Sequence
from pathlib import Path

from sqlalchemy import Engine, insert
from sqlmodel import Session, SQLModel, col, select

from db import reads
from db.artifacts import sha256_of
from db.local_paths import without_local_paths
from db.models import (
    EngineRow,
    HardwareRow,
    JobRow,
    ModelRow,
    PointResultRow,
    PointVerificationRow,
    RecipeRow,
    ServerMetricDeltaRow,
    SweepRow,
    table_of,
)
from db.session import make_engine, migrate, open_session
from orchestrator.artifacts import ArtifactStore, content_key
from orchestrator.public_api import API_PREFIX, build_views, write_views
from orchestrator.snapshot_chain import (
    HISTORY_VIEW,
    LATEST_SNAPSHOT_KEY,
    fetch_snapshot,
    latest_sha256,
    read_publication,
    record_link,
    retracted_rows,
)
from recipes.errors import ConfigurationError

log = logging.getLogger(__name__)


def _copy(target: Session, rows: Sequence[SQLModel]) -> None:
    """`rows` into the snapshot as they are, but for the publishing machine's paths: one bulk insert per table (an
    ORM object each took two minutes for 100k Points)."""
    if rows:
        values = [{name: without_local_paths(value) for name, value in row.model_dump().items()} for row in rows]
        target.connection().execute(insert(table_of(type(rows[0]))), values)


def write_snapshot(engine: Engine, path: Path, parent: Path | None = None, parent_sha256: str | None = None) -> int:
    """Write the public results into a new SQLite file at `path`; return the number of points. Given the newest
    published snapshot (`parent`, its hash), it follows it: every Point it published is kept byte for byte or
    retracted by a record (`orchestrator/snapshot_chain.py`), else `PublishRefused`."""
    snapshot = make_engine(f"sqlite:///{path}")
    migrate(snapshot)
    # What the public Points refer to is selected by subqueries, never by lists of ids: 100k Points' job ids were
    # more parameters than PostgreSQL takes in one statement (65,535).
    public = [col(PointResultRow.retracted).is_(False), reads.not_embargoed(), reads.not_dry_run()]
    public_points = select(PointResultRow.id).where(*public)
    public_jobs = select(PointResultRow.job_id).where(*public)
    with open_session(engine) as source, open_session(snapshot) as target:
        points = source.exec(select(PointResultRow).where(*public).order_by(col(PointResultRow.id))).all()
        for query in (
            select(HardwareRow),
            select(ModelRow),
            select(SweepRow).where(col(SweepRow.id).in_(select(PointResultRow.sweep_id).where(*public))),
            select(RecipeRow).where(col(RecipeRow.id).in_(select(PointResultRow.recipe_id).where(*public))),
            select(EngineRow).where(
                col(EngineRow.id).in_(select(JobRow.engine_id).where(col(JobRow.id).in_(public_jobs)))
            ),
            select(JobRow).where(col(JobRow.id).in_(public_jobs)),
        ):
            _copy(target, source.exec(query).all())
        _copy(target, points)
        for per_point in (ServerMetricDeltaRow, PointVerificationRow):
            _copy(target, source.exec(select(per_point).where(col(per_point.point_result_id).in_(public_points))).all())
        record_link(target, parent, parent_sha256, retracted_rows(source))
        target.commit()
    snapshot.dispose()
    return len(points)


def publish_snapshot(engine: Engine, store: ArtifactStore) -> tuple[str, int]:
    """Write, store (content-addressed) and point `snapshot/latest.json` at a new snapshot; store the read-only API's
    views of it first (`api/v1/`, `orchestrator/public_api.py`), so the pointer moves only once they are there."""
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        parent_sha256 = latest_sha256(store)
        parent_path = fetch_snapshot(store, parent_sha256, folder / "parent.db") if parent_sha256 else None
        path = folder / "snapshot.db"
        count = write_snapshot(engine, path, parent_path, parent_sha256)
        digest = sha256_of(path)
        key = content_key("snapshot", digest, ".db")
        uri = store.put(path, key)
        # The chain's index: the parent's, with this snapshot first (a store from before chains starts one).
        history_key = f"{API_PREFIX}/{HISTORY_VIEW}.json"
        earlier: list[dict[str, object]] = json.loads(store.get(history_key, folder / "history.json").read_text())[
            "snapshots"] if parent_sha256 and store.exists(history_key) else []  # fmt: skip
        history = {"view": HISTORY_VIEW, "snapshots": [read_publication(path, digest).entry(), *earlier]}
        (folder / "api").mkdir()
        (folder / "api" / f"{HISTORY_VIEW}.json").write_text(json.dumps(history, indent=1))
        for view in write_api_views(path, digest, folder / "api"):
            store.put(view, f"{API_PREFIX}/asof/{digest}/{view.name}")  # the figures as they were: `asof` reads
            store.put(view, f"{API_PREFIX}/{view.name}", overwrite=True)
        store.put(folder / "api" / f"{HISTORY_VIEW}.json", history_key, overwrite=True)
        pointer = Path(directory) / "latest.json"
        pointer.write_text(json.dumps({"key": key, "points": count}))
        store.put(pointer, LATEST_SNAPSHOT_KEY, overwrite=True)
    return uri, count


def write_api_views(snapshot: Path, digest: str, directory: Path) -> list[Path]:
    """The read-only API's views of one snapshot file, written into `directory`; return the files."""
    public = make_engine(f"sqlite:///{snapshot}")
    try:
        return write_views(build_views(public, digest), directory)
    finally:
        public.dispose()


def fetch_latest_snapshot(store: ArtifactStore, target: Path) -> Path:
    """Download the newest published snapshot to `target` (for a public hub), checked against its content hash."""
    digest = latest_sha256(store)
    if digest is None:
        raise ConfigurationError(f"the artifact store has no {LATEST_SNAPSHOT_KEY}: nothing was published there yet")
    return fetch_snapshot(store, digest, target)
