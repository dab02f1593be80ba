"""Uploads: the staged artifacts into the artifact store, each checked against its hash first.

The Recorder uploads as it records; `infersweep publish` finishes what a store outage left pending. Apart from
`publish.py` (the snapshot) so that recording never imports the static API and its readers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine
from sqlmodel import Session

from db import recording
from db.artifacts import sha256_of
from db.models import ArtifactRow
from db.session import open_session
from orchestrator.artifacts import ArtifactStore, is_staged
from recipes.errors import InferSweepError, InfrastructureError

log = logging.getLogger(__name__)


def upload_artifacts(
    session: Session, store: ArtifactStore, artifacts: list[ArtifactRow],
    on_store_fault: Callable[[InfrastructureError], None] | None = None,
) -> tuple[int, int]:  # fmt: skip
    """Try to store each artifact; return (stored, still pending). A store fault never propagates; given
    `on_store_fault`, the first one is passed to it and the rest stay pending untried (a store that times out
    would hold the caller once per artifact).

    The staged file is checked against the artifact's SHA-256 before it is uploaded: other bytes under its name
    are an error naming the artifact, never an upload. Once stored, its staged copy is removed."""
    stored = failed = 0
    done: set[tuple[str, str]] = set()  # (key, staged path): marked stored with every row of those bytes
    for position, artifact in enumerate(artifacts):
        if (artifact.key, artifact.local_path) in done:
            stored += 1
            continue
        local = Path(artifact.local_path)
        try:
            found = sha256_of(local)
            if found != artifact.sha256:
                raise ArtifactIntegrityError(
                    f"artifact {artifact.key}: the staged file {local} holds other bytes (sha256 {found[:16]}..., "
                    f"expected {artifact.sha256[:16]}...); not uploaded"
                )
            uri = store.put(local, artifact.key)
        except (InfrastructureError, ArtifactIntegrityError, OSError) as error:
            recording.mark_artifact_failed(session, artifact, str(error))
            log.warning("artifact %s stays pending: %s", artifact.key, error)
            failed += 1
            if on_store_fault is not None and isinstance(error, InfrastructureError):
                on_store_fault(error)
                return stored, failed + len(artifacts) - position - 1
            continue
        recording.mark_artifact_stored(session, artifact, uri)
        done.add((artifact.key, artifact.local_path))
        _unstage(session, local)
        stored += 1
    return stored, failed


class ArtifactIntegrityError(InferSweepError):
    """A file is not the bytes its artifact row or key names: never uploaded, never read."""


def _unstage(session: Session, local: Path) -> None:
    """Remove a stored artifact's staged copy, unless another pending artifact has the same bytes staged there."""
    if not is_staged(local):
        return  # an engine log in its job's directory: not ours to remove
    if recording.artifact_pending_at(session, str(local)):
        return
    local.unlink(missing_ok=True)


def publish_pending(engine: Engine, store: ArtifactStore) -> tuple[int, int]:
    with open_session(engine) as session:
        return upload_artifacts(session, store, recording.pending_artifacts(session))
