"""requirements.lock agrees with pyproject.toml: every dependency (and the dev extra's) is pinned to one version
that its range admits, every pinned package carries the hashes pip checks (`make setup` installs with
--require-hashes), and the CI workflows run actions pinned to a commit, not a tag that can move."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
ENTRY = re.compile(r"^([A-Za-z0-9._-]+)==([^\s\\;]+)")


def locked() -> dict[str, tuple[str, int]]:
    """Package -> (version, number of hashes) from requirements.lock."""
    found: dict[str, tuple[str, int]] = {}
    current = None
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        entry = ENTRY.match(line)
        if entry:
            current = canonicalize_name(entry.group(1))
            found[current] = (entry.group(2), 0)
        elif line.strip().startswith("--hash=sha256:") and current is not None:
            version, hashes = found[current]
            found[current] = (version, hashes + 1)
    return found


def declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(text) for text in [*project["dependencies"], *project["optional-dependencies"]["dev"]]]


def test_every_declared_dependency_is_locked_at_a_version_its_range_admits() -> None:
    pins = locked()
    for requirement in declared():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement}: not in requirements.lock (run `make lock`)"
        version, _hashes = pins[name]
        assert requirement.specifier.contains(version, prereleases=True), f"{requirement}: locked at {version}"


def test_every_locked_package_carries_hashes() -> None:
    pins = locked()
    assert len(pins) > 50
    assert [name for name, (_version, hashes) in pins.items() if hashes == 0] == []


def test_workflow_actions_are_pinned_to_a_commit() -> None:
    unpinned = []
    for workflow in sorted((ROOT / ".github" / "workflows").glob("*.y*ml")):
        for job in yaml.safe_load(workflow.read_text())["jobs"].values():
            for step in job.get("steps", []):
                uses = step.get("uses")
                if uses and not re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", uses):
                    unpinned.append(f"{workflow.name}: {uses}")
    assert unpinned == []
