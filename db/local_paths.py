"""A path of the machine that stored a row, kept off anything public: the snapshot `publish` writes and every hub
page (an imported row names the file it was read from; a stored recipe, the file it was loaded from)."""

from __future__ import annotations

import json
import re
from pathlib import Path

# A path of this machine: after `file://`, or an absolute path of two parts or more standing on its own (not the
# tail of a URL or of a registry reference such as `deepseek-ai/DeepSeek-R1`).
_LOCAL_PATH = re.compile(r"file://(/[^\s,;'\"()\[\]]+)|(?<![\w.:/~@-])(/(?:[^\s/,;'\"()\[\]]+/)+[^\s/,;'\"()\[\]]+)")


def without_local_paths(value: object) -> object:
    """`value` (text, or a JSON document of it) with every local file path replaced by the file's name."""
    if isinstance(value, str):
        if "/" not in value:  # every path has one
            return value
        return _LOCAL_PATH.sub(lambda found: Path(found.group(1) or found.group(2)).name, value)
    if isinstance(value, dict | list) and not _has_path(json.dumps(value, ensure_ascii=False, default=str)):
        # No path anywhere in it: a path in any of its texts shows in its JSON text too (escapes only lengthen one),
        # and one search at C speed is what a snapshot of 100k Points can afford, where walking every figure is not.
        return value
    if isinstance(value, dict):
        return {key: without_local_paths(item) for key, item in value.items()}
    if isinstance(value, list):
        return [without_local_paths(item) for item in value]
    return value


def _has_path(text: str) -> bool:
    """Whether `text` holds a local path. Every path has a '/': a text without one (a Point's metrics, nearly always)
    is answered by a substring test, not the pattern (45 µs a document, 5 s of a 100k-Point snapshot)."""
    return "/" in text and _LOCAL_PATH.search(text) is not None
