"""The cost-plan report: recipes expanded into Jobs and Points (`orchestrator.plan`), each Job's hours and
accelerator-hours estimated (`orchestrator.estimate`) and priced with the TCO tiers of the hardware registry
(`recipes/hardware.yaml`, USD per accelerator-hour); as a table, JSON, or the pull request's markdown comment.

Output is deterministic (sorted, fixed decimals) so golden files pin it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from recipes.errors import RecipeError

if TYPE_CHECKING:
    from recipes.loader import LoadedRecipe
    from runners.job import PointRequest

CENT = Decimal("0.01")
CHANGELOG_FILE = "CHANGES.yaml"


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
    reference: str = "–"  # 'reproduces InferenceX <key>', 'own layout', or – where the recipe cites nothing
    concurrency: int | None = None  # the load level of a launch of its own (engine.per_concurrency), else None

    @property
    def label(self) -> str:
        return self.recipe if self.concurrency is None else f"{self.recipe} (concurrency {self.concurrency})"


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


def _own_launch_level(loaded: LoadedRecipe, points: list[PointRequest]) -> int | None:
    """The load level a job's engine launch is for, when its settings are the level's own (engine.per_concurrency)."""
    levels = {point.workload.concurrency for point in points}
    if len(levels) == 1 and (level := levels.pop()) in loaded.recipe.engine.per_concurrency:
        return level
    return None


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
                reference=loaded.recipe.reference.label if loaded.recipe.reference else "–",
                concurrency=_own_launch_level(loaded, job.points),
            )
        )
        points.extend(_point_row(point) for point in job.points)
    # The recipe as written (the loaded one has its trace path resolved on this machine).
    written = Recipe.model_validate(read_yaml(Path(loaded.path))).model_dump(mode="json")
    return PlannedRecipe(
        name=loaded.name, file=file, path=path, fingerprint=loaded.fingerprint, document=written, jobs=jobs,
        points=points,
    )  # fmt: skip


def load_all(files: list[tuple[str, Path]]) -> list[PlannedRecipe]:
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
    return load_all([(str(path), path) for path in recipe_files(paths)])


@dataclass(frozen=True)
class PlanTotals:
    jobs: int
    points: int
    hours: Decimal
    accelerator_hours: Decimal
    cost_usd: dict[str, Decimal | None]  # None when no job has a figure in that tier
    missing_tco: dict[str, list[str]]  # tier -> hardware keys without a figure in that tier


def plan_rows(recipes: list[PlannedRecipe]) -> list[JobRow]:
    return sorted((job for item in recipes for job in item.jobs),
                  key=lambda job: (job.recipe, job.hardware, job.concurrency or 0))  # fmt: skip


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


def number_text(value: Decimal | None) -> str:
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
        return {tier: None if costs[tier] is None else float(costs[tier]) for tier in TCO_TIERS}  # type: ignore[arg-type]  # mypy cannot narrow costs[tier] by the None test

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
                "reference": row.reference,
                **({"concurrency": row.concurrency} if row.concurrency is not None else {}),
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
        f"{number_text(totals.accelerator_hours)} accelerator-hours",
        "",
        f"Estimated cost in USD by TCO tier ({', '.join(TCO_TIERS)}); – where the hardware has no figure for a tier.",
        "",
        f"| recipe | hardware | engine | reference | accelerators | points | hours | accelerator-hours | {tiers} |",
        f"|---|---|---|---|--:|--:|--:|--:|{align}|",
    ]
    for row in rows:
        costs = " | ".join(number_text(row.cost_usd[tier]) for tier in TCO_TIERS)
        lines.append(
            f"| {row.label} | {row.hardware} | {row.engine} | {row.reference} | {row.accelerators} | {row.points} "
            f"| {number_text(row.hours)} | {number_text(row.accelerator_hours)} | {costs} |"
        )
    costs = " | ".join(f"**{number_text(totals.cost_usd[tier])}**" for tier in TCO_TIERS)
    lines.append(
        f"| **total** | | | | | **{totals.points}** | **{number_text(totals.hours)}** "
        f"| **{number_text(totals.accelerator_hours)}** | {costs} |"
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
        costs = " | ".join(number_text(item.cost_usd[tier]) for tier in TCO_TIERS)
        lines.append(
            f"| {hardware} | {unit} | {item.jobs} | {item.points} | {number_text(item.hours)} "
            f"| {number_text(item.accelerator_hours)} | {costs} |"
        )
    lines += ["", _assumption_text(), ""]
    return "\n".join(lines)


def plan_table(recipes: list[PlannedRecipe]) -> Table:
    from recipes.hardware import TCO_TIERS

    rows = plan_rows(recipes)
    totals = totals_of(rows)
    table = Table(
        title=f"Recipe plan: {totals.jobs} jobs, {totals.points} points, "
        f"{number_text(totals.accelerator_hours)} accelerator-hours (USD by TCO tier)",
        caption=_assumption_text(),
        show_footer=True,
    )
    table.add_column("recipe", footer="total", overflow="fold")
    for name in ("hardware", "engine", "reference"):
        table.add_column(name)
    table.add_column("accel", justify="right")
    table.add_column("points", justify="right", footer=str(totals.points))
    table.add_column("hours", justify="right", footer=number_text(totals.hours))
    table.add_column("accel-hours", justify="right", footer=number_text(totals.accelerator_hours))
    for tier in TCO_TIERS:
        table.add_column(f"{tier} $", justify="right", footer=number_text(totals.cost_usd[tier]))
    for row in rows:
        table.add_row(
            row.label, row.hardware, row.engine, row.reference, str(row.accelerators), str(row.points),
            number_text(row.hours),
            number_text(row.accelerator_hours), *(number_text(row.cost_usd[tier]) for tier in TCO_TIERS),
        )  # fmt: skip
    return table
