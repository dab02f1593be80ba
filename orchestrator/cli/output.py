"""The CLI's one pair of consoles and its one way to print an error and exit."""

from __future__ import annotations

import sys
from typing import NoReturn

import typer
from rich.console import Console

from recipes.errors import InferSweepError

# Tables are wide: when output is not a terminal (CI logs, pipes) do not squeeze them to 80 columns; text
# is never wrapped, so addresses and paths stay whole on one line.
console = Console(width=None if sys.stdout.isatty() else 180, soft_wrap=True)
errors = Console(stderr=True, width=None if sys.stderr.isatty() else 180, soft_wrap=True)


def print_error(error: InferSweepError) -> None:
    """Print `error` with its kind and whether a retry may help."""
    retry = "retryable" if error.retryable else "not retryable"
    errors.print(f"[red]error[/] ({error.kind}, {retry}): ", end="", markup=True, highlight=False)
    errors.print(str(error), markup=False, highlight=False)  # values may look like markup


def fail(error: InferSweepError, code: int = 2) -> NoReturn:
    """Print `error` (`print_error`), then exit with `code` (2: the user's input)."""
    print_error(error)
    raise typer.Exit(code)
