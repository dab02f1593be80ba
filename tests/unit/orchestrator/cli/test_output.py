"""Errors are printed as text: a value that looks like Rich markup reaches the reader whole."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.cli.output import fail
from recipes.errors import ConfigurationError


def test_a_value_that_looks_like_markup_is_printed_whole() -> None:
    probe = typer.Typer()

    @probe.command()
    def broken() -> None:
        fail(ConfigurationError("pattern: got '[bold]^*$[/bold]'; expected a regex"))

    result = CliRunner().invoke(probe, [])
    assert result.exit_code == 2
    assert "got '[bold]^*$[/bold]'; expected a regex" in result.output
    assert "(ConfigurationError, not retryable)" in result.output


@pytest.mark.parametrize(
    "command",
    [
        ["results", "--sweep", "no-such-sweep"],
        ["export", "x.csv", "--sweep", "nope"],
        ["compare", "--at-interactivity", "50", "--sweep", "nope"],
    ],
)
def test_an_unknown_sweep_is_an_error_not_an_empty_table(command: list[str], tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("INFERSWEEP_HOME", str(tmp_path))
    monkeypatch.delenv("INFERSWEEP_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(app, ["db", "upgrade"]).exit_code == 0  # a reading command never creates the schema
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 2
    assert f"--sweep: got {command[-1]!r}; no sweep of that name" in result.output
    assert not (tmp_path / "x.csv").exists()
