"""Where the project keeps its files on a host: data (results DB, logs) and caches (engines, models)."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """Results database, logs and artifacts. `INFERSWEEP_HOME` overrides ~/.infersweep."""
    path = Path(os.environ.get("INFERSWEEP_HOME") or Path.home() / ".infersweep")
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_dir() -> Path:
    """Engine environments and generated models (large, rebuildable). `INFERSWEEP_CACHE` overrides."""
    path = Path(os.environ.get("INFERSWEEP_CACHE") or Path.home() / ".cache" / "infersweep")
    path.mkdir(parents=True, exist_ok=True)
    return path
