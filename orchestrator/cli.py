"""`infersweep` command line. Flags are parsed here (typer) and handed on as typed values."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from recipes.errors import InferSweepError, RecipeError

app = typer.Typer(help="InferSweep: reproducible cross-vendor LLM inference benchmarks.", no_args_is_help=True)
recipe_app = typer.Typer(help="Recipe files: validate them before spending GPU hours.", no_args_is_help=True)
engine_app = typer.Typer(help="Engine environments on this host.", no_args_is_help=True)
model_app = typer.Typer(help="Models the project generates locally.", no_args_is_help=True)
db_app = typer.Typer(help="The results database.", no_args_is_help=True)
app.add_typer(recipe_app, name="recipe")
app.add_typer(engine_app, name="engine")
app.add_typer(model_app, name="model")
app.add_typer(db_app, name="db")

# Tables are wide: when output is not a terminal (CI logs, pipes) do not squeeze them to 80 columns.
console = Console(width=None if sys.stdout.isatty() else 180)
errors = Console(stderr=True, width=None if sys.stderr.isatty() else 180)


def _fail(error: InferSweepError, code: int = 2) -> None:
    retry = "retryable" if error.retryable else "not retryable"
    errors.print(f"[red]error[/] ({error.kind}, {retry}): {error}", markup=True, highlight=False)
    raise typer.Exit(code)


@app.command()
def run(
    recipes: Annotated[list[Path], typer.Argument(help="Recipe files or directories of recipes.")],
    sweep: Annotated[str | None, typer.Option(help="Sweep name; re-using a name resumes that sweep.")] = None,
    max_attempts: Annotated[int, typer.Option(min=1, max=10, help="Attempts per job for infrastructure faults.")] = 2,
    ray_address: Annotated[str | None, typer.Option(help="Ray cluster to join (default: start a local one).")] = None,
) -> None:
    """Plan and run a sweep: each recipe becomes a Job on its hardware pool, each load level a Point."""
    from orchestrator.sweep import SweepOptions, SweepRunner
    from recipes.loader import load_recipes

    try:
        loaded = load_recipes(list(recipes))
    except RecipeError as error:
        _fail(error)
    name = sweep or "-".join(item.name for item in loaded)
    try:
        runner = SweepRunner(SweepOptions(name=name, max_attempts=max_attempts, ray_address=ray_address), console)
        summary = runner.run(loaded)
    except InferSweepError as error:
        _fail(error, code=1)
    if summary.interrupted:
        console.print(f"[yellow]Sweep {name} interrupted; run the same command again to resume.")
        raise typer.Exit(130)
    _print_results(name)
    for failure in summary.failures:
        errors.print(
            f"[red]job {failure.job_id} failed[/] (attempt {failure.attempt}, {failure.kind}, "
            f"{'retryable' if failure.retryable else 'not retryable'}):\n{failure.message}",
            highlight=False,
        )
    console.print(
        f"Sweep [bold]{name}[/]: {summary.recorded_points} point(s) measured now, "
        f"{summary.skipped_points} already done. Results: `infersweep results --sweep {name}`; "
        "hub: `make hub`."
    )
    if not summary.ok:
        raise typer.Exit(1)


def _print_results(sweep: str | None) -> int:
    from db import queries
    from db.session import make_engine, migrate, open_session

    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        rows = queries.list_results(session, sweep=sweep)
    table = Table(title=f"Results{f' of sweep {sweep}' if sweep else ''}")
    for column in ("sweep", "recipe", "hw", "origin", "isl/osl", "conc", "rep", "valid", "ok/fail"):
        table.add_column(column)
    for column in ("out tok/s/gpu", "TTFT p50 ms", "TPOT p50 ms", "tok/s/user p50"):
        table.add_column(column, justify="right")

    def number(value: float | None, digits: int = 1) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"

    for row in rows:
        table.add_row(
            row.sweep, row.recipe, row.hardware, row.origin, f"{row.isl}/{row.osl}", str(row.concurrency),
            str(row.repeat_index), "yes" if row.valid else "[red]no[/]", f"{row.completed}/{row.failed}",
            number(row.output_throughput_per_gpu), number(row.ttft_p50_ms), number(row.tpot_p50_ms, 2),
            number(row.interactivity_p50),
        )  # fmt: skip
    console.print(table)
    for row in rows:
        if not row.valid:
            console.print(
                f"  invalid: {row.recipe} c={row.concurrency} r={row.repeat_index}: {'; '.join(row.validity_reasons)}"
            )
    return len(rows)


@app.command()
def results(sweep: Annotated[str | None, typer.Option(help="Only this sweep.")] = None) -> None:
    """Show stored results (retracted ones are hidden)."""
    if _print_results(sweep) == 0:
        console.print("No results yet. Run a sweep first: `infersweep run recipes/local/tiny-llama-cpu.yaml`.")


@recipe_app.command("validate")
def recipe_validate(files: Annotated[list[Path], typer.Argument(help="Recipe files or directories.")]) -> None:
    """Check recipes against the schema and the methodology rules; print each error with its field."""
    from orchestrator.plan import expand_points
    from recipes.loader import load_recipe, recipe_files_in

    failed = 0
    paths = [p for entry in files for p in (recipe_files_in(entry) if entry.is_dir() else [entry])]
    for path in paths:
        try:
            loaded = load_recipe(path)
        except RecipeError as error:
            failed += 1
            errors.print(f"[red]✗[/] {error}", highlight=False)
            continue
        console.print(
            f"[green]✓[/] {path}: {loaded.name} ({len(expand_points(loaded))} points, fingerprint {loaded.fingerprint})"
        )
    if failed:
        raise typer.Exit(2)


@engine_app.command("setup")
def engine_setup(
    name: Annotated[str, typer.Argument(help="Environment name, e.g. vllm-cpu.")] = "vllm-cpu",
    force: Annotated[bool, typer.Option(help="Rebuild even if present.")] = False,
) -> None:
    """Build an isolated engine environment (a venv playing the role of a container image)."""
    from runners.environments import setup_environment
    from runners.models import ensure_generated_model

    try:
        python = setup_environment(name, log=lambda line: console.print(line, highlight=False), force=force)
        model = ensure_generated_model("tiny-llama")
    except InferSweepError as error:
        _fail(error, code=1)
    console.print(f"engine environment ready: {python}\ngenerated model ready: {model}")


@model_app.command("generate")
def model_generate(preset: Annotated[str, typer.Argument(help="Model preset.")] = "tiny-llama") -> None:
    """Generate a tiny model (config + locally built tokenizer) for `--load-format dummy` serving."""
    from runners.models import ensure_generated_model

    try:
        console.print(str(ensure_generated_model(preset)))
    except InferSweepError as error:
        _fail(error)


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply database migrations (also done automatically by `run` and `results`)."""
    from db.session import default_database_url, make_engine, migrate

    migrate(make_engine())
    console.print(f"database at head: {default_database_url()}")


def main() -> None:
    sys.exit(app())


if __name__ == "__main__":
    main()
