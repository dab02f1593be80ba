"""The `infersweep` command: the typer app, its command groups, and every command registered in one place.

Each module of this package holds one group's commands as plain functions (`sweeps`, `results`, `capacity`,
`measure`, `imports`, `recipe`, `prepare`, `fleet`, `schedule`, `site`, `trace`); `output` holds the one console
pair and the one error printer. Registration order is the order `infersweep --help` lists them in.
"""

from __future__ import annotations

import sys

import typer

from orchestrator.cli import capacity, fleet, imports, measure, prepare, recipe, results, schedule, site, sweeps, trace
from orchestrator.cli.bundle import bundle_app, verify
from orchestrator.cli.memory import memory_app
from orchestrator.cli.project import project_app
from orchestrator.importers.peer_formats import PEER_FORMATS

app = typer.Typer(help="InferSweep: reproducible cross-vendor LLM inference benchmarks.", no_args_is_help=True)
recipe_app = typer.Typer(help="Recipe files: validate them before spending GPU hours.", no_args_is_help=True)
engine_app = typer.Typer(help="Engine environments on this host.", no_args_is_help=True)
model_app = typer.Typer(help="Models the project generates locally.", no_args_is_help=True)
db_app = typer.Typer(help="The results database.", no_args_is_help=True)
import_app = typer.Typer(help="Import results measured by other tools (origin `imported`).", no_args_is_help=True)
fleet_app = typer.Typer(help="The fleet: inventory targets and the Ray resources they need.", no_args_is_help=True)
app.add_typer(recipe_app, name="recipe")
app.add_typer(engine_app, name="engine")
app.add_typer(model_app, name="model")
app.add_typer(db_app, name="db")
app.add_typer(import_app, name="import")
app.add_typer(fleet_app, name="fleet")
app.add_typer(trace.trace_app, name="trace")
app.add_typer(project_app, name="project")
app.add_typer(memory_app, name="memory")
app.add_typer(bundle_app, name="bundle")

app.command()(sweeps.run)
app.command()(measure.bench)
for _format in PEER_FORMATS.values():
    import_app.command(_format.name)(imports.peer_import_command(_format.name, _format.description))
app.command()(sweeps.publish)
import_app.command("inferencex")(imports.import_inferencex)
import_app.command("inferencex-snapshot")(imports.import_inferencex_snapshot)
app.command()(results.compare)
app.command()(capacity.capacity)
app.command()(results.regressions)
app.command()(results.uplift)
app.command()(verify)
app.command()(results.retract)
app.command()(results.embargo)
app.command()(results.repair)
app.command()(results.export)
app.command()(measure.replay)
app.command()(results.results)
recipe_app.command("validate")(recipe.recipe_validate)
engine_app.command("setup")(prepare.engine_setup)
model_app.command("generate")(prepare.model_generate)
db_app.command("upgrade")(prepare.db_upgrade)
app.command("status")(fleet.status)
app.command("cancel")(fleet.cancel)
app.command("schedule")(schedule.schedule)
app.command("site")(site.site)
recipe_app.command("plan")(recipe.plan)
recipe_app.command("diff")(recipe.diff)
recipe_app.command("changelog-check")(recipe.changelog_check)
fleet_app.command("resources")(fleet.resources)


def main() -> None:
    """Run the command; a fault of the results database or a full disk, wherever it surfaces, is one error line
    (what failed, which database without its password, whether a retry can help), never a traceback."""
    from orchestrator.cli.output import print_error
    from recipes.errors import InferSweepError

    try:
        code = app()
    except Exception as error:  # only the faults environment_fault knows; anything else is a bug, shown whole
        # Imported here: it reads the database's exceptions (SQLAlchemy, a third of a second), which a command that
        # opens no database (--help) need not pay for.
        from orchestrator.cli.faults import environment_fault

        # A project error nothing caught on its way out (opening the database: `db.session.open_database`) is
        # already worded for the reader.
        known = error if isinstance(error, InferSweepError) else environment_fault(error)
        if known is None:
            raise
        print_error(known)
        sys.exit(1)
    sys.exit(code)
