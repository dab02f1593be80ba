"""The hub image's lock: the part of requirements.lock the public hub runs on, nothing the orchestrator alone needs.

The hub serves a published snapshot read-only: Streamlit, the database layer, the snapshot's fetch from S3 and the
CLI that starts it. Ray, paramiko, aiohttp, tokenizers and the rest of what sweeps need are not in its image: less to
patch, less to trust. `HUB` names what the hub imports (found by running every page and `infersweep site`'s own
path with the modules noted); this script adds everything they require on this platform (Linux, the venv's Python:
the image's), read from the installed packages' metadata, and copies each one's entry, version and hashes, from
requirements.lock. The image installs it with `--require-hashes`.

`make lock` runs it after refreshing requirements.lock; tests/unit/test_lock.py fails when the file is stale.

Run: .venv/bin/python packaging/hub/lock.py [--check]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
MAIN_LOCK = ROOT / "requirements.lock"
HUB_LOCK = ROOT / "packaging" / "hub" / "requirements.lock"
HUB = (
    "streamlit", "sqlmodel", "alembic", "pandas", "pyarrow", "numpy", "pydantic", "pyyaml", "typer", "rich",
    "websockets",  # `infersweep site` warms its pages over Streamlit's websocket
    "boto3",  # `--snapshot latest` from an S3 artifact store
    "psycopg[binary]",  # a hub on a PostgreSQL read-only role (docs/DEPLOY.md)
)  # fmt: skip
HEADER = (
    "# The public hub image's dependencies: the part of requirements.lock it runs on (packaging/hub/lock.py wrote\n"
    "# this file from it; `make lock` refreshes both). Installed with --require-hashes by packaging/hub/Dockerfile.\n"
)
ENTRY = re.compile(r"^([A-Za-z0-9._-]+)==")


def required_by(roots: tuple[str, ...]) -> set[str]:
    """Every distribution `roots` need here, themselves included (canonical names), from the installed metadata."""
    needed: set[str] = set()
    visited: set[tuple[str, frozenset[str]]] = set()
    pending = [Requirement(text) for text in roots]
    while pending:
        requirement = pending.pop()
        name = canonicalize_name(requirement.name)
        key = (name, frozenset(requirement.extras))
        if key in visited:
            continue
        visited.add(key)
        needed.add(name)
        extras = {""} | set(requirement.extras)
        for text in importlib.metadata.distribution(name).requires or []:
            dependency = Requirement(text)
            if dependency.marker is None or any(dependency.marker.evaluate({"extra": extra}) for extra in extras):
                pending.append(dependency)
    return needed


def entries(lock: str) -> dict[str, list[str]]:
    """Each package's lines of a pip-compile lock (its pin and hashes, without the '# via' comments)."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lock.splitlines():
        entry = ENTRY.match(line)
        if entry:
            current = found.setdefault(canonicalize_name(entry.group(1)), [])
        elif not line.startswith("    --hash="):
            current = None
        if current is not None:
            current.append(line)
    return found


def hub_lock() -> str:
    locked = entries(MAIN_LOCK.read_text())
    needed = required_by(HUB)
    missing = sorted(needed - set(locked))
    if missing:
        raise SystemExit(f"{MAIN_LOCK}: no entry for {', '.join(missing)}, which the hub needs: run `make lock`")
    body = "\n".join(line for name in sorted(needed) for line in locked[name])
    return HEADER + body + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="Exit 1 if the file is not what this script writes.")
    args = parser.parse_args()
    text = hub_lock()
    if args.check:
        sys.exit(0 if HUB_LOCK.is_file() and HUB_LOCK.read_text() == text else 1)
    HUB_LOCK.write_text(text)
    print(f"{HUB_LOCK.relative_to(ROOT)}: {text.count('==')} packages")


if __name__ == "__main__":
    main()
