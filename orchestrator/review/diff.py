"""What a change to recipes changes: recipes added and removed, fields changed (dotted paths of the
normalised recipe, old -> new), Points added, removed and re-keyed (same load, new identity: measured anew) and
the change in accelerator-hours; as text, JSON, or markdown.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from orchestrator.review.plan_report import PlannedRecipe, number_text
from recipes.errors import RecipeError

if TYPE_CHECKING:
    pass

_SAFE_PATH = re.compile(r"[A-Za-z0-9._/+-]+")


_ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "(absent)"})()


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted paths of the leaves of a recipe document; lists of scalars are one leaf."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key in sorted(value):
            out.update(flatten(value[key], f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list) and any(isinstance(item, dict | list) for item in value):
        out = {}
        for index, item in enumerate(value):
            out.update(flatten(item, f"{prefix}[{index}]"))
        return out
    return {prefix or "<root>": value}


@dataclass
class RecipeChange:
    name: str
    status: str  # added, removed, changed, unchanged
    base: PlannedRecipe | None
    head: PlannedRecipe | None
    fields: list[tuple[str, Any, Any]] = field(default_factory=list)  # path, old, new (_ABSENT when missing)
    points_added: list[str] = field(default_factory=list)
    points_removed: list[str] = field(default_factory=list)
    points_rekeyed: int = 0
    points_unchanged: int = 0

    @property
    def fingerprint_changed(self) -> bool:
        return self.base is None or self.head is None or self.base.fingerprint != self.head.fingerprint

    @property
    def base_hours(self) -> Decimal:
        return self.base.accelerator_hours if self.base else Decimal(0)

    @property
    def head_hours(self) -> Decimal:
        return self.head.accelerator_hours if self.head else Decimal(0)


def compare(base: list[PlannedRecipe], head: list[PlannedRecipe]) -> list[RecipeChange]:
    """Changes from `base` to `head`, by recipe name, sorted by name."""
    old = {item.name: item for item in base}
    new = {item.name: item for item in head}
    changes = []
    for name in sorted(old.keys() | new.keys()):
        before, after = old.get(name), new.get(name)
        if before is None or after is None:
            status = "added" if before is None else "removed"
            change = RecipeChange(name=name, status=status, base=before, head=after)
            if after is not None:
                change.points_added = [point.label for point in after.points]
            if before is not None:
                change.points_removed = [point.label for point in before.points]
            changes.append(change)
            continue
        flat_old, flat_new = flatten(before.document), flatten(after.document)
        fields = [
            (path, flat_old.get(path, _ABSENT), flat_new.get(path, _ABSENT))
            for path in sorted(flat_old.keys() | flat_new.keys())
            if flat_old.get(path, _ABSENT) != flat_new.get(path, _ABSENT)
        ]
        old_points = {point.load: point for point in before.points}
        new_points = {point.load: point for point in after.points}
        common = old_points.keys() & new_points.keys()
        changes.append(
            RecipeChange(
                name=name,
                status="changed" if fields else "unchanged",
                base=before,
                head=after,
                fields=fields,
                points_added=[p.label for load, p in new_points.items() if load not in old_points],
                points_removed=[p.label for load, p in old_points.items() if load not in new_points],
                points_rekeyed=sum(1 for load in common if old_points[load].key != new_points[load].key),
                points_unchanged=sum(1 for load in common if old_points[load].key == new_points[load].key),
            )
        )
    return changes


def _signed(value: Decimal) -> str:
    return f"{value:+,.2f}"


def _json_value(value: Any) -> str:
    return "(absent)" if value is _ABSENT else json.dumps(value, sort_keys=True, ensure_ascii=False)


def _code(text: str) -> str:
    """A markdown code span that survives any content (backticks, pipes, HTML) inside a table cell."""
    text = text.replace("|", "\\|").replace("\n", " ")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _points_summary(change: RecipeChange, limit: int = 12) -> str:
    def listed(labels: list[str]) -> str:
        shown = ", ".join(labels[:limit])
        return shown + (f", … ({len(labels) - limit} more)" if len(labels) > limit else "")

    parts = [
        f"+{len(change.points_added)} added" + (f" ({listed(change.points_added)})" if change.points_added else "")
    ]
    parts.append(
        f"−{len(change.points_removed)} removed"
        + (f" ({listed(change.points_removed)})" if change.points_removed else "")
    )
    if change.status == "changed":
        parts.append(f"{change.points_rekeyed} re-keyed (measured anew)")
        parts.append(f"{change.points_unchanged} unchanged")
    return ", ".join(parts)


def _diff_summary(changes: list[RecipeChange]) -> tuple[Counter[str], Decimal, Decimal]:
    counts = Counter(change.status for change in changes)
    return counts, sum((c.base_hours for c in changes), Decimal(0)), sum((c.head_hours for c in changes), Decimal(0))


def diff_document(changes: list[RecipeChange], base_label: str, head_label: str) -> dict[str, Any]:
    counts, before, after = _diff_summary(changes)
    recipes = []
    for change in changes:
        if change.status == "unchanged":
            continue
        recipes.append(
            {
                "name": change.name,
                "status": change.status,
                "base_fingerprint": change.base.fingerprint if change.base else None,
                "head_fingerprint": change.head.fingerprint if change.head else None,
                "fields": [
                    {"path": path} | ({} if old is _ABSENT else {"old": old}) | ({} if new is _ABSENT else {"new": new})
                    for path, old, new in change.fields
                ],
                "points": {
                    "added": change.points_added,
                    "removed": change.points_removed,
                    "re_keyed": change.points_rekeyed,
                    "unchanged": change.points_unchanged,
                },
                "accelerator_hours": {
                    "base": float(change.base_hours),
                    "head": float(change.head_hours),
                    "delta": float(change.head_hours - change.base_hours),
                },
            }
        )
    return {
        "base": base_label,
        "head": head_label,
        "summary": {
            "added": counts["added"],
            "removed": counts["removed"],
            "changed": counts["changed"],
            "unchanged": counts["unchanged"],
            "accelerator_hours": {"base": float(before), "head": float(after), "delta": float(after - before)},
        },
        "recipes": recipes,
    }


def diff_markdown(changes: list[RecipeChange], base_label: str, head_label: str) -> str:
    counts, before, after = _diff_summary(changes)
    remeasured = sum(1 for c in changes if c.status == "changed" and c.fingerprint_changed)
    lines = [
        f"## Recipe diff: {_code(base_label)} → {_code(head_label)}",
        "",
        f"{counts['added']} added, {counts['removed']} removed, {counts['changed']} changed"
        + (f" ({remeasured} with a new fingerprint: every Point measured anew)" if counts["changed"] else "")
        + f", {counts['unchanged']} unchanged. "
        f"Accelerator-hours: {number_text(before)} → {number_text(after)} ({_signed(after - before)}).",
    ]
    for status, title in (("added", "Added"), ("removed", "Removed")):
        group = [c for c in changes if c.status == status]
        if not group:
            continue
        lines += [
            "",
            f"### {title}",
            "",
            "| recipe | hardware | engine | points | accelerator-hours |",
            "|---|---|---|--:|--:|",
        ]
        for change in group:
            item = change.head or change.base
            assert item is not None
            job = item.jobs[0]
            lines.append(
                f"| {item.name} | {job.hardware} | {job.engine} | {len(item.points)} "
                f"| {number_text(item.accelerator_hours)} |"
            )
    changed = [c for c in changes if c.status == "changed"]
    if changed:
        lines += ["", "### Changed"]
    for change in changed:
        assert change.base is not None and change.head is not None
        identity = (
            f"fingerprint {change.base.fingerprint} → {change.head.fingerprint}"
            if change.fingerprint_changed
            else f"fingerprint {change.head.fingerprint} unchanged (runner only: results carry over)"
        )
        lines += [
            "",
            f"#### {change.name}",
            "",
            f"{identity}. Points: {_points_summary(change)}. Accelerator-hours: {number_text(change.base_hours)} → "
            f"{number_text(change.head_hours)} ({_signed(change.head_hours - change.base_hours)}).",
            "",
            "| field | old | new |",
            "|---|---|---|",
        ]
        lines += [
            f"| {_code(path)} | {_code(_json_value(old))} | {_code(_json_value(new))} |"
            for path, old, new in change.fields
        ]
    lines.append("")
    return "\n".join(lines)


def diff_text(changes: list[RecipeChange], base_label: str, head_label: str) -> list[str]:
    """Plain lines for a terminal (no markup)."""
    counts, before, after = _diff_summary(changes)
    lines = [
        f"Recipe diff {base_label} -> {head_label}: {counts['added']} added, {counts['removed']} removed, "
        f"{counts['changed']} changed, {counts['unchanged']} unchanged; accelerator-hours {number_text(before)} -> "
        f"{number_text(after)} ({_signed(after - before)})"
    ]
    for change in changes:
        if change.status == "unchanged":
            continue
        lines.append(
            f"{change.status}: {change.name}: points {_points_summary(change)}; accelerator-hours "
            f"{number_text(change.base_hours)} -> {number_text(change.head_hours)}"
        )
        if change.status == "changed":
            assert change.base is not None and change.head is not None
            if change.fingerprint_changed:
                lines.append(f"    fingerprint {change.base.fingerprint} -> {change.head.fingerprint}")
            lines += [f"    {path}: {_json_value(old)} -> {_json_value(new)}" for path, old, new in change.fields]
    return lines


def changed_files(changes: list[RecipeChange]) -> list[str]:
    """Head files of the recipes added or changed, for a dry run (plain paths, one per line)."""
    files = []
    for change in changes:
        if change.status in {"added", "changed"} and change.head is not None:
            file = change.head.file
            if not _SAFE_PATH.fullmatch(file):
                raise RecipeError(
                    file, [("<file name>", file, "expected letters, digits, '.', '_', '+', '-' and '/' only")]
                )
            files.append(file)
    return sorted(files)
