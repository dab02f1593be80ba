"""The changelog check: every recipe added, removed or re-fingerprinted by a change must be named by a new
entry of the results changelog (`recipes/CHANGES.yaml`, see `recipes.changelog`); merged entries never change.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.review.diff import RecipeChange
from orchestrator.review.git_refs import Git
from orchestrator.review.plan_report import CHANGELOG_FILE
from recipes.errors import RecipeError

if TYPE_CHECKING:
    from recipes.changelog import ChangelogEntry


@dataclass(frozen=True)
class ChangelogVerdict:
    needed: list[str]  # recipes added, removed or re-fingerprinted
    new_entries: list[ChangelogEntry]
    missing: list[str]  # needed but named by no new entry
    problems: list[tuple[str, Any, str]]  # every problem, `missing` included, as RecipeError problems

    @property
    def ok(self) -> bool:
        return not self.problems


def check_changelog(
    changes: list[RecipeChange],
    head_entries: list[ChangelogEntry],
    base_entries: list[ChangelogEntry],
    today: Any = None,
) -> ChangelogVerdict:
    """Every recipe added, removed or re-fingerprinted is named by an entry new in this change; merged
    entries never change; new entries name known recipes and are not dated in the future."""
    import datetime as dt

    today = today or dt.datetime.now(dt.UTC).date()
    problems: list[tuple[str, Any, str]] = []
    lost = Counter(e.model_dump_json() for e in base_entries) - Counter(e.model_dump_json() for e in head_entries)
    if lost:
        problems.append(
            (
                "entries",
                [json.loads(text) for text in sorted(lost.elements())],
                "merged entries never change or disappear (the hub's annotations rely on them); add a new entry",
            )
        )
    remaining = Counter(entry.model_dump_json() for entry in base_entries)
    new_indices = []
    for index, entry in enumerate(head_entries):
        key = entry.model_dump_json()
        if remaining[key] > 0:
            remaining[key] -= 1
        else:
            new_indices.append(index)
    known = {change.name for change in changes}
    for index in new_indices:
        entry = head_entries[index]
        unknown = [name for name in entry.recipes if name not in known]
        if unknown:
            problems.append((f"entries[{index}].recipes", unknown, "expected names of recipes in the compared paths"))
        if entry.date > today + dt.timedelta(days=1):
            problems.append((f"entries[{index}].date", entry.date.isoformat(), f"expected a date not after {today}"))
    needed = sorted(c.name for c in changes if c.status != "unchanged" and c.fingerprint_changed)
    named = {name for index in new_indices for name in head_entries[index].recipes}
    missing = [name for name in needed if name not in named]
    if missing:
        problems.append(
            ("entries", missing, "expected a new entry naming each recipe this change adds, removes or re-fingerprints")
        )
    return ChangelogVerdict(
        needed=needed, new_entries=[head_entries[i] for i in new_indices], missing=missing, problems=problems
    )


def changelog_stub(names: list[str], today: Any = None) -> str:
    """A changelog entry to paste, naming `names`."""
    import datetime as dt

    day = (today or dt.datetime.now(dt.UTC).date()).isoformat()
    listed = "".join(f"      - {name}\n" for name in names)
    return f"  - date: {day}\n    recipes:\n{listed}    summary: <what changed and why, one line>\n    pr: <number>\n"


def changelog_at(git: Git, commit: str, relative: str) -> list[ChangelogEntry]:
    from recipes.changelog import load_changelog

    found = [entry for entry in git.tree(commit, relative) if entry[2] == relative]
    if not found:
        return []
    with tempfile.TemporaryDirectory(prefix="infersweep-ref-") as scratch:
        copy = Path(scratch) / CHANGELOG_FILE
        copy.write_bytes(git.blob(found[0][1]))
        try:
            return load_changelog(copy)
        except RecipeError as error:
            raise RecipeError(f"{commit[:12]}:{relative}", error.problems, what="changelog") from None
