"""`infersweep recipe plan|diff|changelog-check`: what a set of recipes will cost, and what a change changes.

- `plan` expands recipes into Jobs and Points (`orchestrator.plan`), estimates each Job's hours and
  accelerator-hours (`orchestrator.estimate`) and prices them with the TCO tiers of the hardware registry
  (`recipes/hardware.yaml`, USD per accelerator-hour). `--format markdown` is the pull-request comment.
- `diff` compares two sets of recipes by recipe name: recipes added and removed, fields changed (dotted
  paths of the normalised recipe, old -> new), Points added and removed (by their load parameters),
  Points re-keyed (same load, new identity: they are measured anew) and the change in accelerator-hours.
  The base is a file or directory, or the same paths at a git ref (`--base-ref`), read with git itself.
- `changelog-check` fails when a change adds, removes or re-fingerprints a recipe without a new entry in
  the results changelog (`recipes/CHANGES.yaml`, see `recipes.changelog`) naming it.

Output is deterministic (sorted, fixed decimals) so golden files pin it. Bad input is a RecipeError
naming the file, field and value (exit code 2). Only typer, rich and the standard library are imported
at module level so that the `infersweep` command starts fast; the planner is imported when a command runs.
"""

from __future__ import annotations

import enum
import io
import json
import os
import posixpath
import re
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from recipes.errors import InferSweepError, RecipeError

if TYPE_CHECKING:
    from recipes.changelog import ChangelogEntry
    from recipes.loader import LoadedRecipe

# Wide output when not a terminal (CI logs), as in orchestrator/cli.py.
console = Console(width=None if sys.stdout.isatty() else 180)
errors = Console(stderr=True, width=None if sys.stderr.isatty() else 180)

CENT = Decimal("0.01")
CHANGELOG_FILE = "CHANGES.yaml"
# Recipe file paths handed to other commands (`--changed-out`) are one per line: keep them plain.
_SAFE_PATH = re.compile(r"[A-Za-z0-9._/+-]+")
_GIT_TIMEOUT_S = 60


class OutputFormat(enum.StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"


# --------------------------------------------------------------------------------------------- model


@dataclass(frozen=True)
class PointRow:
    key: str  # the Point's identity in a sweep (orchestrator.plan.point_key)
    label: str  # human-readable load level, e.g. '1024x128-c8-r0'
    load: str  # the load parameters and repeat index, without the recipe's fingerprint


@dataclass(frozen=True)
class JobRow:
    recipe: str
    hardware: str
    accelerator_unit: str
    engine: str
    accelerators: int
    points: int
    hours: Decimal
    accelerator_hours: Decimal
    cost_usd: dict[str, Decimal | None]  # by TCO tier; None where the registry has no figure


@dataclass(frozen=True)
class PlannedRecipe:
    name: str
    file: str  # as shown to people: the path given, or REF:path
    path: Path | None  # the file on disk (None when read from a git ref)
    fingerprint: str
    document: dict[str, Any]  # the normalised recipe as written (defaults filled in, paths unresolved)
    jobs: list[JobRow]
    points: list[PointRow]

    @property
    def accelerator_hours(self) -> Decimal:
        return sum((job.accelerator_hours for job in self.jobs), Decimal(0))


def _cents(value: float | Decimal) -> Decimal:
    return Decimal(str(value)).quantize(CENT, rounding=ROUND_HALF_UP)


def _point_row(point: Any) -> PointRow:
    fields = point.workload.model_dump(mode="json", exclude={"trace_path"})
    load = json.dumps({"workload": fields, "repeat": point.repeat_index}, sort_keys=True)
    return PointRow(key=point.point_key, label=point.point_key.rsplit("-", 1)[0], load=load)


def _plan_recipe(loaded: LoadedRecipe, file: str, path: Path | None) -> PlannedRecipe:
    from orchestrator.estimate import estimate_job
    from orchestrator.plan import plan_jobs
    from recipes.hardware import TCO_TIERS, load_hardware_registry
    from recipes.schema import Recipe
    from recipes.yamlio import read_yaml

    registry = load_hardware_registry()
    jobs: list[JobRow] = []
    points: list[PointRow] = []
    for job in plan_jobs([loaded]):
        estimate = estimate_job(job.recipe, job.points)
        hardware = registry[estimate.hardware]
        accelerator_hours = _cents(estimate.accelerator_hours)
        costs: dict[str, Decimal | None] = {}
        for tier in TCO_TIERS:
            rate = hardware.tco(tier)
            costs[tier] = (
                None if rate is None else _cents(Decimal(str(estimate.accelerator_hours)) * Decimal(str(rate)))
            )
        jobs.append(
            JobRow(
                recipe=loaded.name,
                hardware=estimate.hardware,
                accelerator_unit=hardware.accelerator_unit,
                engine=loaded.recipe.engine.kind,
                accelerators=estimate.accelerators,
                points=estimate.points,
                hours=_cents(estimate.hours),
                accelerator_hours=accelerator_hours,
                cost_usd=costs,
            )
        )
        points.extend(_point_row(point) for point in job.points)
    # The recipe as written (the loaded one has its trace path resolved on this machine).
    written = Recipe.model_validate(read_yaml(Path(loaded.path))).model_dump(mode="json")
    return PlannedRecipe(
        name=loaded.name, file=file, path=path, fingerprint=loaded.fingerprint, document=written, jobs=jobs,
        points=points,
    )  # fmt: skip


def _load_all(files: list[tuple[str, Path]]) -> list[PlannedRecipe]:
    """Load and plan recipe files (shown as the given labels); collect every file's errors, as the loader does."""
    from recipes.loader import load_recipe

    planned: list[PlannedRecipe] = []
    failures: list[RecipeError] = []
    for label, path in files:
        try:
            loaded = load_recipe(path)
            planned.append(_plan_recipe(loaded, label, path))
        except RecipeError as error:
            failures.append(error if error.file == label else RecipeError(label, error.problems))
    if len(failures) == 1:
        raise failures[0]
    if failures:
        raise RecipeError(
            ", ".join(failure.file for failure in failures),
            [(failure.file, "", str(failure)) for failure in failures],
        )
    names = Counter(item.name for item in planned)
    duplicates = sorted(name for name, count in names.items() if count > 1)
    if duplicates:
        where = ", ".join(sorted(item.file for item in planned if item.name in duplicates))
        raise RecipeError(where, [("name", duplicates, "recipe names must be unique")])
    return sorted(planned, key=lambda item: item.name)


def recipe_files(paths: Iterable[Path]) -> list[Path]:
    """Recipe files of the given files and directories (registries and the changelog left out), once each."""
    from recipes.loader import recipe_files_in

    files: dict[Path, Path] = {}
    for entry in paths:
        found = recipe_files_in(entry) if entry.is_dir() else [entry]
        for path in found:
            if path.name != CHANGELOG_FILE:
                files.setdefault(path.resolve(), path)
    return sorted(files.values())


def load_from_disk(paths: list[Path]) -> list[PlannedRecipe]:
    return _load_all([(str(path), path) for path in recipe_files(paths)])


# ----------------------------------------------------------------------------------------- git refs


class _Git:
    """Read-only git access, argv lists only: `rev-parse`, `ls-tree`, `cat-file`, `merge-base`."""

    def __init__(self, near: Path) -> None:
        directory = near if near.is_dir() else near.parent
        directory = directory if directory.exists() else Path.cwd()
        self.root = Path(self._run(["rev-parse", "--show-toplevel"], cwd=directory, what="repository").strip())

    @staticmethod
    def _run(args: list[str], cwd: Path, what: str, text: bool = True) -> Any:
        try:
            done = subprocess.run(
                ["git", "--literal-pathspecs", *args],
                cwd=cwd,
                capture_output=True,
                timeout=_GIT_TIMEOUT_S,
                check=False,
                text=text,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise RecipeError(
                str(cwd), [(what, " ".join(args), f"expected git to answer ({error})")], what="flags"
            ) from error
        if done.returncode != 0:
            message = done.stderr if text else done.stderr.decode(errors="replace")
            raise RecipeError(
                str(cwd), [(what, " ".join(args), f"git failed: {message.strip() or done.returncode}")], what="flags"
            )
        return done.stdout

    def commit(self, ref: str) -> str:
        if not ref or ref.startswith("-") or any(ch.isspace() or ord(ch) < 32 for ch in ref):
            raise RecipeError(
                "--base-ref", [("--base-ref", ref, "expected a git ref or commit (no leading '-')")], "flags"
            )
        try:
            return self._run(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], self.root, "--base-ref").strip()
        except RecipeError:
            raise RecipeError(
                "--base-ref", [("--base-ref", ref, f"expected a commit of the repository at {self.root}")], "flags"
            ) from None

    def relative(self, path: Path) -> str:
        absolute = Path(os.path.realpath(path))
        try:
            relative = absolute.relative_to(self.root)
        except ValueError:
            raise RecipeError(
                str(path), [("<path>", str(path), f"expected a path inside {self.root}")], "flags"
            ) from None
        return relative.as_posix() or "."

    def tree(self, commit: str, relative: str) -> list[tuple[str, str, str]]:
        """(mode, object, repository-relative path) of every file under `relative` at `commit`."""
        args = ["ls-tree", "-r", "-z", "--full-tree", commit]
        if relative != ".":
            args += ["--", relative]
        out = self._run(args, self.root, "--base-ref")
        entries = []
        for record in filter(None, out.split("\0")):
            meta, name = record.split("\t", 1)
            mode, kind, obj = meta.split()
            if kind == "blob":
                entries.append((mode, obj, name))
        return entries

    def blob(self, obj: str) -> bytes:
        return self._run(["cat-file", "blob", obj], self.root, "--base-ref", text=False)


def _materialise(git: _Git, commit: str, files: list[tuple[str, str, str]], into: Path) -> None:
    """Write recipe files (and the traces they name, from the same commit) under `into`, as laid out in git."""
    from recipes.yamlio import read_yaml

    for mode, obj, name in files:
        if mode == "120000":
            raise RecipeError(f"{commit[:12]}:{name}", [("<file>", name, "expected a file, not a symbolic link")])
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(git.blob(obj))
        try:
            data = read_yaml(target)
        except RecipeError:
            continue  # reported with the right label when the recipe is loaded
        workload = data.get("workload") if isinstance(data, dict) else None
        trace = workload.get("trace") if isinstance(workload, dict) else None
        if not isinstance(trace, str) or posixpath.isabs(trace):
            continue
        trace_name = posixpath.normpath(posixpath.join(posixpath.dirname(name), trace))
        if trace_name.startswith("../") or (into / trace_name).exists():
            continue
        for trace_mode, trace_obj, found in git.tree(commit, trace_name):
            if found == trace_name and trace_mode != "120000":
                (into / found).parent.mkdir(parents=True, exist_ok=True)
                (into / found).write_bytes(git.blob(trace_obj))


def load_at_ref(ref: str, paths: list[Path]) -> tuple[list[PlannedRecipe], _Git, str]:
    """The recipes under `paths` as they were at git `ref` (in the repository holding the paths)."""
    from recipes.loader import REGISTRY_FILES

    if not paths:
        raise RecipeError("<arguments>", [("paths", [], "expected at least one recipe file or directory")], "flags")
    git = _Git(paths[0])
    commit = git.commit(ref)
    wanted: dict[str, tuple[str, str, str]] = {}
    for path in paths:
        relative = git.relative(path)
        is_dir = path.is_dir() or not path.suffix
        for mode, obj, name in git.tree(commit, relative):
            leaf = posixpath.basename(name)
            if is_dir and (not name.endswith(".yaml") or leaf in REGISTRY_FILES or leaf == CHANGELOG_FILE):
                continue
            wanted.setdefault(name, (mode, obj, name))
    with tempfile.TemporaryDirectory(prefix="infersweep-ref-") as scratch:
        into = Path(scratch)
        _materialise(git, commit, sorted(wanted.values(), key=lambda item: item[2]), into)
        planned = _load_all([(f"{ref}:{name}", into / name) for name in sorted(wanted)])
    # The scratch files are gone: keep only what was computed from them.
    return [_detach(item) for item in planned], git, commit


def _detach(item: PlannedRecipe) -> PlannedRecipe:
    return PlannedRecipe(
        name=item.name, file=item.file, path=None, fingerprint=item.fingerprint, document=item.document,
        jobs=item.jobs, points=item.points,
    )  # fmt: skip


# -------------------------------------------------------------------------------------------- plan


@dataclass(frozen=True)
class PlanTotals:
    jobs: int
    points: int
    hours: Decimal
    accelerator_hours: Decimal
    cost_usd: dict[str, Decimal | None]  # None when no job has a figure in that tier
    missing_tco: dict[str, list[str]]  # tier -> hardware keys without a figure in that tier


def plan_rows(recipes: list[PlannedRecipe]) -> list[JobRow]:
    return sorted((job for item in recipes for job in item.jobs), key=lambda job: (job.recipe, job.hardware))


def _sum_known(values: Iterable[Decimal | None]) -> Decimal | None:
    known = [value for value in values if value is not None]
    return sum(known, Decimal(0)) if known else None


def totals_of(rows: list[JobRow]) -> PlanTotals:
    from recipes.hardware import TCO_TIERS

    return PlanTotals(
        jobs=len(rows),
        points=sum(row.points for row in rows),
        hours=sum((row.hours for row in rows), Decimal(0)),
        accelerator_hours=sum((row.accelerator_hours for row in rows), Decimal(0)),
        cost_usd={tier: _sum_known(row.cost_usd[tier] for row in rows) for tier in TCO_TIERS},
        missing_tco={tier: sorted({row.hardware for row in rows if row.cost_usd[tier] is None}) for tier in TCO_TIERS},
    )


def _by_hardware(rows: list[JobRow]) -> list[tuple[str, str, PlanTotals]]:
    keys = sorted({(row.hardware, row.accelerator_unit) for row in rows})
    return [(hw, unit, totals_of([row for row in rows if row.hardware == hw])) for hw, unit in keys]


def _num(value: Decimal | None) -> str:
    return "–" if value is None else f"{value:,.2f}"


def _assumptions() -> dict[str, float]:
    from orchestrator import estimate

    return {
        "engine_start_s_cap": estimate.ENGINE_START_S,
        "prefill_tokens_per_s": estimate.ASSUMED_PREFILL_TOKENS_PER_S,
        "decode_tokens_per_s_per_user": estimate.ASSUMED_TOKENS_PER_S_PER_USER,
        "replay_overhead": estimate.REPLAY_OVERHEAD,
    }


def _assumption_text() -> str:
    a = _assumptions()
    return (
        f"Estimate, not a measurement (orchestrator/estimate.py): engine start = the recipe's startup timeout, "
        f"at most {a['engine_start_s_cap']:g} s; a fixed-length request takes isl / "
        f"{a['prefill_tokens_per_s']:g} tok/s + osl / {a['decode_tokens_per_s_per_user']:g} tok/s (lengths at their "
        f"upper bound); a replay Point takes its window × {a['replay_overhead']:g}. Accelerator-hours = hours × the "
        f"accelerators the engine uses. Cost = accelerator-hours × TCO per accelerator-hour of recipes/hardware.yaml."
    )


def plan_document(recipes: list[PlannedRecipe]) -> dict[str, Any]:
    from recipes.hardware import TCO_TIERS

    rows = plan_rows(recipes)
    totals = totals_of(rows)

    def money(costs: dict[str, Decimal | None]) -> dict[str, float | None]:
        return {tier: None if costs[tier] is None else float(costs[tier]) for tier in TCO_TIERS}  # type: ignore[arg-type]

    def total(item: PlanTotals) -> dict[str, Any]:
        return {
            "jobs": item.jobs, "points": item.points, "hours": float(item.hours),
            "accelerator_hours": float(item.accelerator_hours), "cost_usd": money(item.cost_usd),
            "hardware_without_tco": item.missing_tco,
        }  # fmt: skip

    fingerprints = {item.name: item.fingerprint for item in recipes}
    return {
        "tco_tiers": list(TCO_TIERS),
        "assumptions": _assumptions(),
        "jobs": [
            {
                "recipe": row.recipe,
                "fingerprint": fingerprints[row.recipe],
                "hardware": row.hardware,
                "accelerator_unit": row.accelerator_unit,
                "engine": row.engine,
                "accelerators": row.accelerators,
                "points": row.points,
                "hours": float(row.hours),
                "accelerator_hours": float(row.accelerator_hours),
                "cost_usd": money(row.cost_usd),
            }
            for row in rows
        ],
        "by_hardware": [
            {"hardware": hw, "accelerator_unit": unit, **total(item)} for hw, unit, item in _by_hardware(rows)
        ],
        "totals": total(totals),
    }


def plan_markdown(recipes: list[PlannedRecipe]) -> str:
    from recipes.hardware import TCO_TIERS

    rows = plan_rows(recipes)
    totals = totals_of(rows)
    tiers = " | ".join(f"{tier} $" for tier in TCO_TIERS)
    align = "|".join("--:" for _ in TCO_TIERS)
    lines = [
        f"## Recipe plan: {totals.jobs} jobs, {totals.points} points, "
        f"{_num(totals.accelerator_hours)} accelerator-hours",
        "",
        f"Estimated cost in USD by TCO tier ({', '.join(TCO_TIERS)}); – where the hardware has no figure for a tier.",
        "",
        f"| recipe | hardware | engine | accelerators | points | hours | accelerator-hours | {tiers} |",
        f"|---|---|---|--:|--:|--:|--:|{align}|",
    ]
    for row in rows:
        costs = " | ".join(_num(row.cost_usd[tier]) for tier in TCO_TIERS)
        lines.append(
            f"| {row.recipe} | {row.hardware} | {row.engine} | {row.accelerators} | {row.points} | {_num(row.hours)} "
            f"| {_num(row.accelerator_hours)} | {costs} |"
        )
    costs = " | ".join(f"**{_num(totals.cost_usd[tier])}**" for tier in TCO_TIERS)
    lines.append(
        f"| **total** | | | | **{totals.points}** | **{_num(totals.hours)}** | **{_num(totals.accelerator_hours)}** "
        f"| {costs} |"
    )
    missing = [f"{tier} ({', '.join(keys)})" for tier, keys in totals.missing_tco.items() if keys]
    if missing:
        lines += ["", f"Tier totals leave out hardware without a TCO figure in that tier: {'; '.join(missing)}."]
    lines += [
        "",
        "### By hardware",
        "",
        f"| hardware | unit | jobs | points | hours | accelerator-hours | {tiers} |",
        f"|---|---|--:|--:|--:|--:|{align}|",
    ]
    for hardware, unit, item in _by_hardware(rows):
        costs = " | ".join(_num(item.cost_usd[tier]) for tier in TCO_TIERS)
        lines.append(
            f"| {hardware} | {unit} | {item.jobs} | {item.points} | {_num(item.hours)} "
            f"| {_num(item.accelerator_hours)} | {costs} |"
        )
    lines += ["", _assumption_text(), ""]
    return "\n".join(lines)


def plan_table(recipes: list[PlannedRecipe]) -> Table:
    from recipes.hardware import TCO_TIERS

    rows = plan_rows(recipes)
    totals = totals_of(rows)
    table = Table(
        title=f"Recipe plan: {totals.jobs} jobs, {totals.points} points, "
        f"{_num(totals.accelerator_hours)} accelerator-hours (USD by TCO tier)",
        caption=_assumption_text(),
        show_footer=True,
    )
    table.add_column("recipe", footer="total")
    for name in ("hardware", "engine"):
        table.add_column(name)
    table.add_column("accel", justify="right")
    table.add_column("points", justify="right", footer=str(totals.points))
    table.add_column("hours", justify="right", footer=_num(totals.hours))
    table.add_column("accel-hours", justify="right", footer=_num(totals.accelerator_hours))
    for tier in TCO_TIERS:
        table.add_column(f"{tier} $", justify="right", footer=_num(totals.cost_usd[tier]))
    for row in rows:
        table.add_row(
            row.recipe, row.hardware, row.engine, str(row.accelerators), str(row.points), _num(row.hours),
            _num(row.accelerator_hours), *(_num(row.cost_usd[tier]) for tier in TCO_TIERS),
        )  # fmt: skip
    return table


# -------------------------------------------------------------------------------------------- diff

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
        f"Accelerator-hours: {_num(before)} → {_num(after)} ({_signed(after - before)}).",
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
                f"| {item.name} | {job.hardware} | {job.engine} | {len(item.points)} | {_num(item.accelerator_hours)} |"
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
            f"{identity}. Points: {_points_summary(change)}. Accelerator-hours: {_num(change.base_hours)} → "
            f"{_num(change.head_hours)} ({_signed(change.head_hours - change.base_hours)}).",
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
        f"{counts['changed']} changed, {counts['unchanged']} unchanged; accelerator-hours {_num(before)} -> "
        f"{_num(after)} ({_signed(after - before)})"
    ]
    for change in changes:
        if change.status == "unchanged":
            continue
        lines.append(
            f"{change.status}: {change.name}: points {_points_summary(change)}; accelerator-hours "
            f"{_num(change.base_hours)} -> {_num(change.head_hours)}"
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


# --------------------------------------------------------------------------------------- changelog


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


def _changelog_at(git: _Git, commit: str, relative: str) -> list[ChangelogEntry]:
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


# --------------------------------------------------------------------------------------- commands


def _fail(error: InferSweepError, code: int = 2) -> None:
    retry = "retryable" if error.retryable else "not retryable"
    errors.print(f"[red]error[/] ({error.kind}, {retry}): ", end="", markup=True, highlight=False)
    errors.print(str(error), markup=False, highlight=False, soft_wrap=True)  # values may look like markup
    raise typer.Exit(code)


def _emit(text: str, out: Path | None, what: str) -> None:
    if out is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    errors.print(f"{what} written to {out}", highlight=False)


def _render_table(table: Table) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=200, color_system=None, force_terminal=False).print(table)
    return buffer.getvalue()


PathsArgument = Annotated[list[Path], typer.Argument(help="Recipe files or directories of recipes.")]
FormatOption = Annotated[
    OutputFormat,
    typer.Option("--format", case_sensitive=False, help="table (terminal), json, or markdown (the PR comment)."),
]
OutOption = Annotated[Path | None, typer.Option("--out", help="Write to this file instead of standard output.")]


def plan(paths: PathsArgument, format_: FormatOption = OutputFormat.table, out: OutOption = None) -> None:
    """Print the job matrix: per job its hardware, engine, accelerators, Points, estimated hours and
    accelerator-hours and cost by TCO tier, with totals. An estimate with stated assumptions."""
    try:
        recipes = load_from_disk(paths)
    except RecipeError as error:
        _fail(error)
    if format_ is OutputFormat.json:
        _emit(json.dumps(plan_document(recipes), indent=2, sort_keys=False), out, "plan")
    elif format_ is OutputFormat.markdown:
        _emit(plan_markdown(recipes), out, "plan")
    elif out is not None:
        _emit(_render_table(plan_table(recipes)), out, "plan")
    else:
        console.print(plan_table(recipes))


def diff(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="BASE HEAD (two recipe files or directories); with --base-ref, the HEAD files or directories only."
        ),
    ],
    base_ref: Annotated[
        str | None,
        typer.Option(
            "--base-ref", metavar="REF", help="Compare with the same paths at this git ref (e.g. origin/main)."
        ),
    ] = None,
    format_: FormatOption = OutputFormat.table,
    out: OutOption = None,
    changed_out: Annotated[
        Path | None,
        typer.Option("--changed-out", help="Write the head files of added or changed recipes here, one per line."),
    ] = None,
) -> None:
    """Show what a change to recipes changes in the matrix: recipes added and removed, fields changed
    (old → new), Points added, removed and re-keyed (measured anew), and accelerator-hours."""
    try:
        if base_ref is not None:
            base, _git, _commit = load_at_ref(base_ref, paths)
            head = load_from_disk(paths)
            base_label, head_label = base_ref, " ".join(str(path) for path in paths)
        else:
            if len(paths) != 2:
                raise RecipeError(
                    "<arguments>",
                    [("paths", [str(p) for p in paths], "expected BASE HEAD, or --base-ref REF with the HEAD paths")],
                    what="flags",
                )
            base, head = load_from_disk([paths[0]]), load_from_disk([paths[1]])
            base_label, head_label = str(paths[0]), str(paths[1])
        changes = compare(base, head)
        files = changed_files(changes)
    except RecipeError as error:
        _fail(error)
    if format_ is OutputFormat.json:
        _emit(json.dumps(diff_document(changes, base_label, head_label), indent=2), out, "diff")
    elif format_ is OutputFormat.markdown:
        _emit(diff_markdown(changes, base_label, head_label), out, "diff")
    else:
        _emit("\n".join(diff_text(changes, base_label, head_label)), out, "diff")
    if changed_out is not None:
        changed_out.parent.mkdir(parents=True, exist_ok=True)
        changed_out.write_text("".join(f"{file}\n" for file in files), encoding="utf-8")
        errors.print(f"{len(files)} added or changed recipe file(s) written to {changed_out}", highlight=False)


def changelog_check(
    paths: PathsArgument,
    base_ref: Annotated[
        str,
        typer.Option("--base-ref", metavar="REF", help="The branch the change is compared with (e.g. origin/main)."),
    ],
    changelog: Annotated[
        Path | None,
        typer.Option(help="Results changelog (default: recipes/CHANGES.yaml of the paths' repository)."),
    ] = None,
) -> None:
    """Fail unless every recipe added, removed or re-fingerprinted since REF is named by a new entry of the
    results changelog (merged entries never change)."""
    from recipes.changelog import load_changelog

    try:
        base, git, commit = load_at_ref(base_ref, paths)
        changes = compare(base, load_from_disk(paths))
        file = changelog if changelog is not None else git.root / "recipes" / CHANGELOG_FILE
        head_entries = load_changelog(file) if file.exists() else []
        base_entries = _changelog_at(git, commit, git.relative(file))
    except RecipeError as error:
        _fail(error)
    verdict = check_changelog(changes, head_entries, base_entries)
    if not verdict.ok:
        if verdict.missing:
            start = "Append to" if file.exists() else "Create with `schema_version: 1` and `entries:`, then append to"
            stub = changelog_stub(verdict.missing)
            errors.print(f"{start} {file}:\n{stub}", highlight=False, markup=False, soft_wrap=True)
        _fail(RecipeError(str(file), verdict.problems, what="changelog"))
    if verdict.needed:
        console.print(
            f"changelog: {len(verdict.needed)} recipe(s) added, removed or re-fingerprinted "
            f"({', '.join(verdict.needed)}), each named by a new entry",
            highlight=False,
        )
    else:
        console.print("changelog: no recipe added, removed or re-fingerprinted; no entry needed", highlight=False)
