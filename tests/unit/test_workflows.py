"""GitHub workflows: they parse, every `infersweep`/`make` they run exists, and no input reaches a script."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml

from tests.conftest import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))
# Contexts an outsider can set (workflow inputs, PR titles, branch names): interpolated into a `run:`
# script they become code (script injection); they must reach scripts through `env:` instead.
UNTRUSTED_CONTEXT = re.compile(r"\$\{\{[^}]*\b(inputs\.|github\.event\.|github\.head_ref)")
INFERSWEEP_CALL = re.compile(r"(?:^|[\s/;&|(])infersweep\s+([^\n;&|]*)")
MAKE_CALL = re.compile(r"(?:^|[\s;&|(])make\s+([^\n;&|]*)")


def makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return {match.group(1) for match in re.finditer(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", text, re.MULTILINE)}


def cli_commands() -> dict[str, set[str] | None]:
    """`infersweep` subcommands with their option names (None for groups, whose subcommands vary)."""
    from orchestrator import schedule_cli
    from orchestrator.cli import app

    def options_of(callback: Any) -> set[str]:
        probe = typer.Typer()
        probe.command()(callback)
        return {opt for param in typer.main.get_command(probe).params for opt in param.opts if opt.startswith("-")}

    commands: dict[str, set[str] | None] = {
        info.name or info.callback.__name__.replace("_", "-"): options_of(info.callback)
        for info in app.registered_commands
    }
    commands.update({group.name: None for group in app.registered_groups})
    # Until orchestrator/cli.py registers it: the function the workflow's command runs.
    commands.setdefault("schedule", options_of(schedule_cli.schedule))
    return commands


def run_scripts(workflow: dict[str, Any]) -> list[str]:
    return [step["run"] for job in workflow["jobs"].values() for step in job.get("steps", []) if "run" in step]


def load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def test_there_are_workflows() -> None:
    assert {path.name for path in WORKFLOWS} >= {"ci.yml", "sweep.yml"}


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda path: path.name)
def test_workflow_parses_and_runs_only_commands_that_exist(path: Path) -> None:
    workflow = load(path)
    assert isinstance(workflow, dict) and workflow.get("jobs"), f"{path.name}: no jobs"
    # YAML 1.1 reads the bare key `on` as True.
    assert "on" in workflow or True in workflow, f"{path.name}: no triggers"
    targets = makefile_targets()
    commands = cli_commands()
    for script in run_scripts(workflow):
        assert not UNTRUSTED_CONTEXT.search(script), f"{path.name}: pass inputs through env, not into: {script!r}"
        for call in MAKE_CALL.finditer(script):
            for target in (word for word in shlex.split(call.group(1)) if not word.startswith("-") and "=" not in word):
                assert target in targets, f"{path.name}: `make {target}` but the Makefile has {sorted(targets)}"
        for call in INFERSWEEP_CALL.finditer(script):
            words = shlex.split(call.group(1))
            assert words and words[0] in commands, f"{path.name}: `infersweep {words[:1]}` is not a subcommand"
            options = commands[words[0]]
            if options is not None:
                used = {word.split("=", 1)[0] for word in words[1:] if word.startswith("--")}
                assert used <= options, f"{path.name}: `infersweep {words[0]}` has no option {sorted(used - options)}"


def test_sweep_workflow_fires_the_schedule_through_env_on_the_self_hosted_runner() -> None:
    workflow = load(ROOT / ".github" / "workflows" / "sweep.yml")
    triggers = workflow[True]
    inputs = triggers["workflow_dispatch"]["inputs"]
    assert (inputs["schedule"]["default"], inputs["file"]["default"]) == ("nightly", "schedules/nightly.yaml")
    (job,) = workflow["jobs"].values()
    assert job["runs-on"] == ["self-hosted", "infersweep"]
    step = next(step for step in job["steps"] if "infersweep schedule" in step.get("run", ""))
    assert step["run"] == '.venv/bin/infersweep schedule "$FILE" --run-now "$SCHEDULE"'
    assert step["env"]["RAY_ADDRESS"] == "${{ secrets.INFERSWEEP_RAY_ADDRESS }}"
    assert step["env"]["INFERSWEEP_DATABASE_URL"] == "${{ secrets.INFERSWEEP_DATABASE_URL }}"
    # GitHub's cron and the schedule file's nightly slot name the same time (both UTC).
    from orchestrator.schedule import load_schedule_file

    nightly = load_schedule_file(ROOT / "schedules" / "nightly.yaml").entry("nightly")
    assert nightly.timezone == "UTC"
    assert [entry["cron"] for entry in triggers["schedule"]] == [nightly.cron]
