"""`infersweep recipe validate|plan|diff|changelog-check`: check recipes, and see what they cost and what a
change changes (the reports themselves live in `orchestrator.review`).

Bad input is a RecipeError naming the file, field and value (exit code 2). Only typer, rich and the standard
library are imported at module level so that the `infersweep` command starts fast.
"""

from __future__ import annotations

import enum
import io
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from orchestrator.cli.output import console, errors, fail
from orchestrator.review.changelog import changelog_at, changelog_stub, check_changelog
from orchestrator.review.diff import changed_files, compare, diff_document, diff_markdown, diff_text
from orchestrator.review.git_refs import load_at_ref
from orchestrator.review.plan_report import CHANGELOG_FILE, load_from_disk, plan_document, plan_markdown, plan_table
from recipes.errors import RecipeError

if TYPE_CHECKING:
    pass


class OutputFormat(enum.StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"


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
        fail(error)
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
        fail(error)
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
        base_entries = changelog_at(git, commit, git.relative(file))
    except RecipeError as error:
        fail(error)
    verdict = check_changelog(changes, head_entries, base_entries)
    if not verdict.ok:
        if verdict.missing:
            start = "Append to" if file.exists() else "Create with `schema_version: 1` and `entries:`, then append to"
            stub = changelog_stub(verdict.missing)
            errors.print(f"{start} {file}:\n{stub}", highlight=False, markup=False, soft_wrap=True)
        fail(RecipeError(str(file), verdict.problems, what="changelog"))
    if verdict.needed:
        console.print(
            f"changelog: {len(verdict.needed)} recipe(s) added, removed or re-fingerprinted "
            f"({', '.join(verdict.needed)}), each named by a new entry",
            highlight=False,
        )
    else:
        console.print("changelog: no recipe added, removed or re-fingerprinted; no entry needed", highlight=False)


def recipe_validate(files: Annotated[list[Path], typer.Argument(help="Recipe files or directories.")]) -> None:
    """Check recipes against the schema and the methodology rules; print each error with its field."""
    from orchestrator.plan import expand_points
    from recipes.loader import load_recipe, recipe_files_in

    failed = 0
    paths = [p for entry in files for p in (recipe_files_in(entry) if entry.is_dir() else [entry])]
    for path in paths:
        try:
            loaded = load_recipe(path)
            points = expand_points(loaded)  # plan-time checks: the trace, and requests the engine would refuse
        except RecipeError as error:
            failed += 1
            errors.print("[red]✗[/] ", end="")
            errors.print(str(error), markup=False, highlight=False)  # values may look like markup
            continue
        console.print(f"[green]✓[/] {path}: {loaded.name} ({len(points)} points, fingerprint {loaded.fingerprint})")
    if failed:
        raise typer.Exit(2)
