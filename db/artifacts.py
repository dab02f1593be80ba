"""An artifact's bytes: the SHA-256 its row records, and the copy on this machine that holds them.

The recorder and `infersweep publish` hash what they stage and upload; the hub shows a file only when it is
the bytes its row names. One function each, so that everyone means the same check.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

from db.models import ArtifactRow


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@functools.lru_cache(maxsize=512)
def _holds(path: str, size: int, modified_ns: int, sha256: str) -> bool:
    # Keyed on size and modification time too: the hub reopens a page often, and a records file can be large;
    # a file written since is hashed again.
    return sha256_of(Path(path)) == sha256


def local_copy(artifact: ArtifactRow) -> Path | None:
    """The artifact's bytes on this machine, checked against its row: the store's file (a file:// URI), else the
    staged copy while the upload is pending. None when neither is here or neither holds those bytes."""
    candidates = []
    if artifact.uri and urlparse(artifact.uri).scheme == "file":
        candidates.append(Path(url2pathname(urlparse(artifact.uri).path)))
    if artifact.local_path:
        candidates.append(Path(artifact.local_path))
    for path in candidates:
        try:
            status = path.stat()
        except OSError:
            continue
        if path.is_file() and _holds(str(path), status.st_size, status.st_mtime_ns, artifact.sha256):
            return path
    return None
