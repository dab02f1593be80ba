"""requirements.lock agrees with pyproject.toml: every dependency (and the dev extra's) is pinned to one version
that its range admits, every pinned package carries the hashes pip checks (`make setup` installs with
--require-hashes), each engine environment's lock holds what its spec asks for, and the CI workflows run actions
pinned to a commit, not a tag that can move."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from runners.host.environments import ENVIRONMENTS, lock_path

ROOT = Path(__file__).resolve().parents[2]
ENTRY = re.compile(r"^([A-Za-z0-9._-]+)==([^\s\\;]+)")


def locked(lock: Path = ROOT / "requirements.lock") -> dict[str, tuple[str, int]]:
    """Package -> (version, number of hashes) from a lock (requirements.lock unless named)."""
    found: dict[str, tuple[str, int]] = {}
    current = None
    for line in lock.read_text().splitlines():
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


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_each_engine_environment_is_locked_with_hashes_at_the_versions_its_spec_pins(name: str) -> None:
    """The venv is installed from its lock alone (--no-deps): the packages the spec names are in it at their pinned
    versions, those it removes are not, and every entry carries a hash."""
    spec = ENVIRONMENTS[name]
    pins = locked(lock_path(name))
    assert len(pins) > 20 and [package for package, (_version, hashes) in pins.items() if hashes == 0] == []
    for text in spec.requirements + spec.without_dependencies:
        requirement = Requirement(text)
        package = canonicalize_name(requirement.name)
        assert package in pins, f"{text}: not in {lock_path(name).name} (run packaging/engines/lock.py {name})"
        assert requirement.specifier.contains(pins[package][0], prereleases=True), f"{text}: locked at {pins[package]}"
    assert [package for package in spec.remove_after if canonicalize_name(package) in pins] == []


def test_workflow_actions_are_pinned_to_a_commit() -> None:
    unpinned = []
    for workflow in sorted((ROOT / ".github" / "workflows").glob("*.y*ml")):
        for job in yaml.safe_load(workflow.read_text())["jobs"].values():
            for step in job.get("steps", []):
                uses = step.get("uses")
                if uses and not re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", uses):
                    unpinned.append(f"{workflow.name}: {uses}")
    assert unpinned == []


def test_the_hub_lock_is_the_part_of_the_lock_the_hub_needs_and_is_fresh() -> None:
    """packaging/hub/requirements.lock (the hub image's) holds the main lock's own lines for what the hub imports and
    what those require, and nothing only sweeps need; `packaging/hub/lock.py` would write it as it is."""
    spec = importlib.util.spec_from_file_location("hub_lock", ROOT / "packaging" / "hub" / "lock.py")
    assert spec is not None and spec.loader is not None
    hub_lock = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hub_lock)
    written = (ROOT / "packaging" / "hub" / "requirements.lock").read_text()
    assert written == hub_lock.hub_lock(), "packaging/hub/requirements.lock is stale: run packaging/hub/lock.py"
    main, hub = hub_lock.entries((ROOT / "requirements.lock").read_text()), hub_lock.entries(written)
    assert all(hub[name] == main[name] for name in hub), "a hub entry differs from requirements.lock's"
    assert {"streamlit", "sqlmodel", "boto3", "psycopg-binary"} <= set(hub)
    assert not {"ray", "paramiko", "aiohttp", "tokenizers", "grpcio"} & set(hub)
    assert len(hub) < len(main) / 2
