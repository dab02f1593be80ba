"""`infersweep recipe plan|diff|changelog-check`: golden files pin the plan of the whole recipe tree; diffs
and the changelog check are exercised on temporary copies (directories and a throwaway git repository).

Regenerate the golden files after an intended change with `INFERSWEEP_UPDATE_GOLDEN=1 pytest <this file>`
and review their diff like code.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from orchestrator.cli import recipe as recipe_commands
from orchestrator.estimate import estimate_job
from orchestrator.plan import expand_points
from orchestrator.review import changelog, diff, plan_report
from recipes.changelog import ChangelogEntry, changes_between, load_changelog
from recipes.errors import RecipeError
from recipes.hardware import TCO_TIERS, load_hardware_registry
from recipes.loader import load_recipe
from tests.conftest import ROOT, SIMULATED_RECIPE, deep_update

GOLDEN = ROOT / "tests" / "golden" / "plan"
EXAMPLE = ROOT / "recipes" / "examples" / "tiny-llama-simulated.yaml"
AGENTIC = ROOT / "recipes" / "examples" / "agentic-simulated.yaml"
TRACE = ROOT / "traces" / "claude-code-weka" / "sample_trace_with_subagent.json"


def cli() -> typer.Typer:
    """The commands as orchestrator/cli/__init__.py registers them under `infersweep recipe`."""
    app = typer.Typer()
    app.command("plan")(recipe_commands.plan)
    app.command("diff")(recipe_commands.diff)
    app.command("changelog-check")(recipe_commands.changelog_check)
    return app


def invoke(*args: str | Path, cwd: Path | None = None):
    previous = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return CliRunner().invoke(cli(), [str(arg) for arg in args])
    finally:
        os.chdir(previous)


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("INFERSWEEP_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"{path} is missing: run with INFERSWEEP_UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8"), (
        f"`infersweep recipe plan recipes/` no longer matches {path.relative_to(ROOT)}; if the change is intended, "
        "rerun with INFERSWEEP_UPDATE_GOLDEN=1 and review the golden file's diff"
    )


def write(directory: Path, name: str, data: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def example() -> dict:
    return yaml.safe_load(EXAMPLE.read_text())


def table_rows(markdown: str, header_start: str) -> tuple[list[str], list[list[str]], list[str]]:
    """Header, body rows and total row of the markdown table whose header starts with `header_start`."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    block = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        block.append([cell.strip() for cell in line.strip("|").split("|")])
    header, body = block[0], block[2:]
    total = [row for row in body if row[0] == "**total**"]
    return header, [row for row in body if row[0] != "**total**"], total[0] if total else []


def number(cell: str) -> Decimal | None:
    cell = cell.strip("*")
    return None if cell == "–" else Decimal(cell.replace(",", ""))


def assert_totals_are_sums(markdown: str) -> None:
    header, rows, total = table_rows(markdown, "| recipe | hardware |")
    assert rows and total
    for column in ["points", "hours", "accelerator-hours", *(f"{tier} $" for tier in TCO_TIERS)]:
        index = header.index(column)
        values = [number(row[index]) for row in rows]
        known = [value for value in values if value is not None]
        expected = sum(known, Decimal(0)) if known else None
        assert number(total[index]) == expected, f"column {column}: total {total[index]} != sum of {values}"
    # The by-hardware table adds up to the same totals.
    by_header, by_rows, _ = table_rows(markdown, "| hardware | unit |")
    for column in ["points", "hours", "accelerator-hours"]:
        total_value = number(total[header.index(column)])
        assert sum(number(row[by_header.index(column)]) for row in by_rows) == total_value


# ------------------------------------------------------------------------------------------- plan


def test_plan_of_the_whole_recipe_tree_matches_the_golden_files(tmp_path: Path) -> None:
    markdown = invoke("plan", ROOT / "recipes", "--format", "markdown", "--out", tmp_path / "plan.md")
    assert markdown.exit_code == 0, markdown.output
    document = invoke("plan", ROOT / "recipes", "--format", "json", "--out", tmp_path / "plan.json")
    assert document.exit_code == 0, document.output
    text = (tmp_path / "plan.md").read_text()
    check_golden("catalogue.md", text)
    check_golden("catalogue.json", (tmp_path / "plan.json").read_text())
    assert_totals_are_sums(text)
    # Every recipe of the tree is a row, one per engine launch: a recipe with settings per load level
    # (engine.per_concurrency) has a row per level, named with it.
    names = sorted(load_recipe(path).name for path in plan_report.recipe_files([ROOT / "recipes"]))
    _, rows, _ = table_rows(text, "| recipe | hardware |")
    assert sorted({row[0].split(" (concurrency ")[0] for row in rows}) == names
    assert len({row[0] for row in rows}) == len(rows)
    assert "| mi355x-dsr1-fp8-sglang-8k1k-tp4-inferencex (concurrency 32) |" in text


def test_plan_prices_accelerator_hours_with_every_tco_tier(tmp_path: Path) -> None:
    b200 = write(tmp_path, "b200.yaml", deep_update(SIMULATED_RECIPE, {"name": "on-b200", "hardware": "b200",
                                                                        "parallelism": {"tp": 8}}))  # fmt: skip
    tpu = write(tmp_path, "tpu.yaml", deep_update(SIMULATED_RECIPE, {"name": "on-tpu", "hardware": "tpu-v7",
                                                                      "parallelism": {"tp": 4}}))  # fmt: skip
    write(tmp_path, "local.yaml", deep_update(SIMULATED_RECIPE, {"name": "on-cpu"}))
    result = invoke("plan", tmp_path, "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    jobs = {job["recipe"]: job for job in document["jobs"]}
    assert [job["recipe"] for job in document["jobs"]] == ["on-b200", "on-cpu", "on-tpu"]
    registry = load_hardware_registry()
    for path, key in ((b200, "b200"), (tpu, "tpu-v7")):
        loaded = load_recipe(path)
        estimate = estimate_job(loaded, expand_points(loaded))
        job = jobs[loaded.name]
        assert job["accelerators"] == loaded.recipe.parallelism.accelerators
        assert job["accelerator_hours"] == pytest.approx(estimate.accelerator_hours, abs=0.005)
        for tier in TCO_TIERS:
            rate = registry[key].tco(tier)
            expected = None if rate is None else pytest.approx(estimate.accelerator_hours * rate, abs=0.005)
            assert job["cost_usd"][tier] == expected, (key, tier)
    assert jobs["on-tpu"]["cost_usd"]["neocloud"] is None  # the registry has no neocloud figure for TPU v7
    assert document["totals"]["hardware_without_tco"]["neocloud"] == ["cpu-local", "tpu-v7"]
    totals = document["totals"]
    assert totals["cost_usd"]["neocloud"] == pytest.approx(jobs["on-b200"]["cost_usd"]["neocloud"])
    assert totals["points"] == sum(job["points"] for job in document["jobs"])

    markdown = invoke("plan", tmp_path, "--format", "markdown")
    assert markdown.exit_code == 0
    assert_totals_are_sums(markdown.stdout)
    assert "neocloud (cpu-local, tpu-v7)" in markdown.stdout
    table = invoke("plan", tmp_path)
    assert table.exit_code == 0 and "on-b200" in table.stdout and "accel-hours" in table.stdout


def test_totals_are_sums_of_the_rounded_rows() -> None:
    def row(recipe: str, hours: str, cost: str | None) -> plan_report.JobRow:
        value = None if cost is None else Decimal(cost)
        return plan_report.JobRow(
            recipe=recipe, hardware="h100", accelerator_unit="gpu", engine="vllm", accelerators=1, points=1,
            hours=Decimal(hours), accelerator_hours=Decimal(hours), cost_usd=dict.fromkeys(TCO_TIERS, value),
        )  # fmt: skip

    totals = plan_report.totals_of([row("a", "0.33", "0.39"), row("b", "0.33", None), row("c", "0.34", "0.40")])
    assert (totals.hours, totals.accelerator_hours) == (Decimal("1.00"), Decimal("1.00"))
    assert totals.cost_usd["rental_3yr"] == Decimal("0.79")
    assert plan_report.totals_of([row("b", "0.33", None)]).cost_usd["neocloud"] is None


def test_plan_rejects_a_bad_recipe_naming_file_field_and_value(tmp_path: Path) -> None:
    bad = write(tmp_path, "bad.yaml", deep_update(SIMULATED_RECIPE, {"precision": "fp9"}))
    result = invoke("plan", bad)
    assert result.exit_code == 2
    assert str(bad) in result.output and "field 'precision'" in result.output and "'fp9'" in result.output


# ------------------------------------------------------------------------------------------- diff


def test_diff_adding_a_concurrency_adds_points_and_re_keys_the_rest(tmp_path: Path) -> None:
    base = write(tmp_path / "base", "r.yaml", example())
    head = write(tmp_path / "head", "r.yaml", deep_update(example(), {"workload": {"concurrency": [1, 2, 4, 8, 16]}}))
    result = invoke("diff", base.parent, head.parent, "--format", "json", "--changed-out", tmp_path / "changed.txt")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["summary"] | {"accelerator_hours": None} == {
        "added": 0, "removed": 0, "changed": 1, "unchanged": 0, "accelerator_hours": None,
    }  # fmt: skip
    (change,) = document["recipes"]
    assert change["fields"] == [{"path": "workload.concurrency", "old": [1, 2, 4, 8], "new": [1, 2, 4, 8, 16]}]
    assert change["points"] == {"added": ["1024x128-c16-r0"], "removed": [], "re_keyed": 4, "unchanged": 0}
    assert change["base_fingerprint"] != change["head_fingerprint"]
    hours = change["accelerator_hours"]
    assert hours["head"] > hours["base"] and hours["delta"] == pytest.approx(hours["head"] - hours["base"])
    assert (tmp_path / "changed.txt").read_text() == f"{head}\n"


def test_diff_changing_precision_re_keys_every_point(tmp_path: Path) -> None:
    base = write(tmp_path / "base", "r.yaml", example())
    head = write(tmp_path / "head", "r.yaml", deep_update(example(), {"precision": "fp8"}))
    result = invoke("diff", base, head, "--format", "json")
    assert result.exit_code == 0, result.output
    (change,) = json.loads(result.stdout)["recipes"]
    assert change["fields"] == [{"path": "precision", "old": "bf16", "new": "fp8"}]
    assert change["points"] == {"added": [], "removed": [], "re_keyed": 4, "unchanged": 0}
    assert change["accelerator_hours"]["delta"] == 0

    markdown = invoke("diff", base, head, "--format", "markdown")
    assert markdown.exit_code == 0
    assert '| `precision` | `"bf16"` | `"fp8"` |' in markdown.stdout
    assert "4 re-keyed (measured anew)" in markdown.stdout


def test_diff_of_a_runner_change_keeps_every_point(tmp_path: Path) -> None:
    base = write(tmp_path / "base", "r.yaml", example())
    head = write(tmp_path / "head", "r.yaml", deep_update(example(), {"runner": {"point_timeout_s": 60.0}}))
    (change,) = diff.compare(plan_report.load_from_disk([base]), plan_report.load_from_disk([head]))
    assert change.status == "changed" and not change.fingerprint_changed
    assert change.fields == [("runner.point_timeout_s", 3600.0, 60.0)]
    assert (change.points_rekeyed, change.points_unchanged, change.points_added) == (0, 4, [])


def test_diff_lists_added_and_removed_recipes(tmp_path: Path) -> None:
    write(tmp_path / "base", "old.yaml", deep_update(example(), {"name": "old-recipe"}))
    write(tmp_path / "base", "same.yaml", example())
    write(tmp_path / "head", "same.yaml", example())
    write(tmp_path / "head", "new.yaml", deep_update(example(), {"name": "new-recipe", "repeats": 2}))
    result = invoke("diff", tmp_path / "base", tmp_path / "head", "--format", "markdown")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "1 added, 1 removed, 0 changed" in text and "1 unchanged" in text
    assert "### Added" in text and "| new-recipe | cpu-local | simulated | 8 |" in text
    assert "### Removed" in text and "| old-recipe | cpu-local | simulated | 4 |" in text
    document = json.loads(invoke("diff", tmp_path / "base", tmp_path / "head", "--format", "json").stdout)
    assert [(item["name"], item["status"]) for item in document["recipes"]] == [
        ("new-recipe", "added"), ("old-recipe", "removed"),
    ]  # fmt: skip


def test_diff_markdown_cells_cannot_break_the_table() -> None:
    assert diff._code("a|b") == "`a\\|b`"
    assert diff._code("x`y") == "``x`y``"
    assert diff._code("`z") == "`` `z ``"


def test_diff_needs_two_paths_without_a_base_ref(tmp_path: Path) -> None:
    result = invoke("diff", write(tmp_path, "r.yaml", example()))
    assert result.exit_code == 2 and "expected BASE HEAD" in result.output


# ------------------------------------------------------------------------------ git refs, changelog


def test_plan_errors_quote_values_without_markup(tmp_path: Path) -> None:
    bad = write(tmp_path, "bad.yaml", deep_update(SIMULATED_RECIPE, {"hardware": "[bold]b999"}))
    result = invoke("plan", bad)
    assert result.exit_code == 2 and "'[bold]b999'" in result.output


def test_changelog_check_of_entries_against_the_base_is_pure() -> None:
    today = dt.date(2026, 11, 29)
    entry = ChangelogEntry(date=dt.date(2026, 12, 25), recipes=["a"], summary="future")
    change = diff.RecipeChange(name="a", status="unchanged", base=None, head=None)
    verdict = changelog.check_changelog([change], [entry], [], today=today)
    assert [problem[0] for problem in verdict.problems] == ["entries[0].date"]


# -------------------------------------------------------------------------------------- changelog file


def test_the_results_changelog_is_valid() -> None:
    entries = load_changelog()
    assert all(entry.date <= dt.datetime.now(dt.UTC).date() + dt.timedelta(days=1) for entry in entries)


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"date": "2026-11-01", "recipes": ["a"], "summary": "x", "prr": 1}, "entries[0].prr"),
        ({"date": "2026-13-01", "recipes": ["a"], "summary": "x"}, "entries[0].date"),
        ({"date": "2026-11-01", "recipes": ["Bad Name"], "summary": "x"}, "entries[0].recipes"),
        ({"date": "2026-11-01", "recipes": [], "summary": "x"}, "entries[0].recipes"),
        ({"date": "2026-11-01", "recipes": ["a"], "summary": "two\nlines"}, "entries[0].summary"),
    ],
)
def test_the_changelog_schema_is_strict(tmp_path: Path, entry: dict, field: str) -> None:
    path = tmp_path / "CHANGES.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, "entries": [entry]}))
    with pytest.raises(RecipeError) as raised:
        load_changelog(path)
    assert f"field '{field}'" in str(raised.value) and str(path) in str(raised.value)


def test_changes_between_two_dates() -> None:
    entries = [
        ChangelogEntry(date=dt.date(2026, 11, 3), recipes=["a", "b"], summary="second"),
        ChangelogEntry(date=dt.date(2026, 11, 1), recipes=["a"], summary="first"),
        ChangelogEntry(date=dt.date(2026, 11, 9), recipes=["b"], summary="later"),
    ]
    window = changes_between(entries, dt.date(2026, 10, 31), dt.date(2026, 11, 3))
    assert [entry.summary for entry in window] == ["first", "second"]
    assert [e.summary for e in changes_between(entries, dt.date(2026, 11, 1), dt.date(2026, 12, 1), "b")] == [
        "second", "later",
    ]  # fmt: skip
