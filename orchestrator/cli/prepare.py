"""What this host needs before a run: `engine setup`, `model generate`, `db upgrade`."""

from __future__ import annotations

from typing import Annotated

import typer

from orchestrator.cli.output import console, fail
from recipes.errors import InferSweepError


def engine_setup(
    name: Annotated[str, typer.Argument(help="Environment name, e.g. vllm-cpu.")] = "vllm-cpu",
    force: Annotated[bool, typer.Option(help="Rebuild even if present.")] = False,
) -> None:
    """Build an isolated engine environment (a venv playing the role of a container image)."""
    from runners.host.environments import setup_environment
    from runners.host.generated_model import ensure_generated_model

    try:
        python = setup_environment(name, log=lambda line: console.print(line, highlight=False), force=force)
        model = ensure_generated_model("tiny-llama")
    except InferSweepError as error:
        fail(error, code=1)
    console.print(f"engine environment ready: {python}\ngenerated model ready: {model}")


def model_generate(preset: Annotated[str, typer.Argument(help="Model preset.")] = "tiny-llama") -> None:
    """Generate a tiny model (config + locally built tokenizer) for `--load-format dummy` serving."""
    from runners.host.generated_model import ensure_generated_model

    try:
        console.print(str(ensure_generated_model(preset)))
    except InferSweepError as error:
        fail(error)


def db_upgrade() -> None:
    """Apply database migrations (also done automatically by `run` and `results`)."""
    from db.session import make_engine, migrate, shown_database_url, sqlite_damage
    from orchestrator.cli.faults import damaged_database

    engine = make_engine()
    migrate(engine)
    damage = sqlite_damage(engine)
    if damage is not None:  # worded as every reader words a malformed file, before anything is said to be at head
        fail(damaged_database(damage), code=1)
    console.print(f"database at head: {shown_database_url()}")
