"""Flags made from a settings model: one declaration of a replay setting serves the recipe, the Point and the CLI."""

from __future__ import annotations

import inspect
from typing import Any, Literal

import pytest
import typer
from pydantic import Field
from typer.testing import CliRunner

from orchestrator.cli.model_flags import settings_flags, settings_from_flags
from recipes.schema import AgenticReplayWorkload, ReplaySettings
from recipes.strict import StrictModel
from runners.loadgen.records import ReplayPoint


class Knobs(StrictModel):
    mode: Literal["fast", "slow"] = Field("fast", description="How.")
    window_s: float = Field(gt=0, description="How long.")
    cap: int | None = Field(None, gt=0, description="At most.")
    primed: bool = Field(True, description="Prime first.")


def _app(seen: list[Knobs]) -> typer.Typer:
    app = typer.Typer()

    @app.command()
    @settings_flags(Knobs, defaults={"window_s": 5.0})
    def run(name: str = typer.Option("x", help="A flag of the command's own."), *, flags: dict[str, Any]) -> None:
        seen.append(settings_from_flags(Knobs, flags, "run"))

    return app


def test_every_field_is_a_flag_and_the_model_keeps_its_defaults() -> None:
    seen: list[Knobs] = []
    result = CliRunner().invoke(_app(seen), ["--mode", "slow", "--cap", "3", "--no-primed"])
    assert result.exit_code == 0, result.output
    assert seen == [Knobs(mode="slow", window_s=5.0, cap=3, primed=False)]
    result = CliRunner().invoke(_app(seen), ["--window-s", "2.5"])
    assert result.exit_code == 0, result.output
    assert seen[-1] == Knobs(window_s=2.5)  # mode, cap and primed: the model's defaults, not the CLI's


def test_a_bad_value_names_its_flag_the_value_and_what_was_expected() -> None:
    result = CliRunner().invoke(_app([]), ["--window-s", "-1"])
    assert result.exit_code == 2
    assert "--window-s" in result.output and "-1" in result.output and "greater than 0" in result.output
    assert "Traceback" not in result.output


def test_help_quotes_each_default_and_the_commands_own() -> None:
    result = CliRunner().invoke(_app([]), ["--help"], env={"COLUMNS": "200"})
    assert "(default: fast)" in result.output and "(default here: 5.0)" in result.output
    assert "(default: none)" in result.output and "--no-primed" in result.output


def test_recipe_point_and_cli_hold_the_one_settings_model() -> None:
    from orchestrator.cli.measure import replay

    assert issubclass(AgenticReplayWorkload, ReplaySettings) and issubclass(ReplayPoint, ReplaySettings)
    flags = set(inspect.signature(replay).parameters)
    assert set(ReplaySettings.model_fields) - {"max_schedule_lag_p99_ms"} <= flags


def test_a_setting_added_since_v1_keeps_fingerprints_while_it_holds_its_default() -> None:
    class Later(ReplaySettings):
        settings_since_v1 = (*ReplaySettings.settings_since_v1, "new_knob")
        new_knob: float = Field(1.0, description="A setting added later.")

    assert "new_knob" not in Later(duration_s=1).model_dump()
    assert Later(duration_s=1, new_knob=2.0).model_dump()["new_knob"] == 2.0
    assert Later(duration_s=1).model_dump() == ReplaySettings(duration_s=1).model_dump()


@pytest.mark.parametrize("field", sorted(ReplaySettings.model_fields))
def test_each_setting_is_described(field: str) -> None:
    assert ReplaySettings.model_fields[field].description
