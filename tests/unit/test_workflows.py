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


def options_of(callback: Any) -> set[str]:
    probe = typer.Typer()
    probe.command()(callback)
    return {opt for param in typer.main.get_command(probe).params for opt in param.opts if opt.startswith("-")}


def cli_commands() -> dict[str, set[str] | dict[str, set[str]]]:
    """`infersweep` subcommands with their option names; a group maps its subcommands to theirs."""
    from orchestrator.cli import app

    commands: dict[str, set[str] | dict[str, set[str]]] = {
        info.name or info.callback.__name__.replace("_", "-"): options_of(info.callback)
        for info in app.registered_commands
    }
    for group in app.registered_groups:
        commands[group.name] = {
            info.name or info.callback.__name__.replace("_", "-"): options_of(info.callback)
            for info in group.typer_instance.registered_commands
        }
    return commands


def run_scripts(workflow: dict[str, Any]) -> list[str]:
    return [step["run"] for job in workflow["jobs"].values() for step in job.get("steps", []) if "run" in step]


def load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def test_there_are_workflows() -> None:
    assert {path.name for path in WORKFLOWS} >= {"ci.yml", "sweep.yml", "recipes.yml", "recipes-comment.yml"}


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
            command, options = words[:1], commands[words[0]]
            if isinstance(options, dict):
                assert len(words) > 1 and words[1] in options, (
                    f"{path.name}: `infersweep {' '.join(words[:2])}` is not a subcommand of {sorted(options)}"
                )
                command, options = words[:2], options[words[1]]
            used = {word.split("=", 1)[0] for word in words[len(command) :] if word.startswith("--")}
            assert used <= options, (
                f"{path.name}: `infersweep {' '.join(command)}` has no option {sorted(used - options)}"
            )


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


def test_recipe_workflow_keeps_contributor_code_away_from_secrets_and_write_tokens() -> None:
    """recipes.yml: `check` runs the pull request's code unprivileged; `hardware` runs only for a labelled,
    exact head commit, with the base branch's tooling and the approved commit checked out as data."""
    workflow = load(ROOT / ".github" / "workflows" / "recipes.yml")
    triggers = workflow[True]
    assert triggers["pull_request"]["paths"] == ["recipes/**"]
    assert triggers["pull_request_target"]["types"] == ["labeled", "synchronize"]
    assert workflow["permissions"] == {"contents": "read"}
    jobs = workflow["jobs"]
    assert set(jobs) == {"check", "hardware", "unlabel"}

    check = jobs["check"]
    assert check["if"] == "github.event_name == 'pull_request'"
    assert check["runs-on"] == "ubuntu-latest" and check["permissions"] == {"contents": "read"}
    assert "secrets." not in yaml.safe_dump(check)
    checkout = check["steps"][0]
    assert checkout["with"] == {"fetch-depth": 0, "persist-credentials": False}
    scripts = "\n".join(step.get("run", "") for step in check["steps"])
    for command in ("recipe validate recipes/", "recipe plan recipes/", 'recipe diff --base-ref "origin/$BASE_REF"',
                    'recipe changelog-check --base-ref "origin/$BASE_REF"', "infersweep run --dry-run-local"):  # fmt: skip
        assert command in scripts, command
    assert any(step.get("uses", "").startswith("actions/upload-artifact") for step in check["steps"])

    hardware = jobs["hardware"]
    assert "github.event_name == 'pull_request_target'" in hardware["if"]
    assert "github.event.label.name == 'run-on-hardware'" in hardware["if"]
    assert hardware["runs-on"] == ["self-hosted", "infersweep"]
    assert hardware["permissions"] == {"contents": "read", "pull-requests": "read"}
    steps = hardware["steps"]
    gate = steps[0]
    assert gate["env"]["LABELLED_SHA"] == "${{ github.event.pull_request.head.sha }}"
    assert '"$head" != "$LABELLED_SHA"' in gate["run"] and "role_name" in gate["run"]
    checkouts = [step for step in steps if step.get("uses", "").startswith("actions/checkout")]
    # The tooling comes from the base branch; the approved commit (that exact SHA) only as data under pr/.
    assert checkouts[0]["with"]["ref"] == "${{ github.event.pull_request.base.sha }}"
    assert checkouts[1]["with"]["ref"] == "${{ github.event.pull_request.head.sha }}"
    assert checkouts[1]["with"]["path"] == "pr"
    assert all(step["with"]["persist-credentials"] is False for step in checkouts)
    assert steps.index(gate) < steps.index(checkouts[0])
    with_secrets = [step for step in steps if "secrets." in yaml.safe_dump(step)]
    assert len(with_secrets) == 1 and with_secrets[0]["run"].startswith(
        "xargs --no-run-if-empty .venv/bin/infersweep run"
    )
    # Every command runs the base branch's tooling (the root .venv), never a program from pr/.
    scripts = "\n".join(step.get("run", "") for step in steps)
    assert set(re.findall(r"(\S*)infersweep\s", scripts)) == {".venv/bin/"}
    assert not re.search(r"cd pr|make -C pr|pr/\.venv|pr/\S*\.(sh|py)\b", scripts)

    unlabel = jobs["unlabel"]
    assert "synchronize" in unlabel["if"] and "uses" not in yaml.safe_dump(unlabel["steps"])
    assert unlabel["permissions"] == {"pull-requests": "write"}


def test_recipe_comment_workflow_posts_without_running_pull_request_code() -> None:
    workflow = load(ROOT / ".github" / "workflows" / "recipes-comment.yml")
    assert workflow[True] == {"workflow_run": {"workflows": ["recipes"], "types": ["completed"]}}
    (job,) = workflow["jobs"].values()
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    uses = [step["uses"] for step in job["steps"] if "uses" in step]
    assert [use.split("@")[0] for use in uses] == ["actions/download-artifact"]  # no checkout: nothing of the PR runs
    post = job["steps"][-1]["run"]
    assert '"$head" != "$RUN_HEAD_SHA"' in post and "^[0-9]+$" in post


def test_ci_runs_each_tier_as_its_own_job_the_unit_tier_first() -> None:
    """The unit tier (with lint and types) answers every push in minutes; integration and system run after it."""
    jobs = load(ROOT / ".github" / "workflows" / "ci.yml")["jobs"]
    scripts = {name: " ".join(step["run"] for step in job["steps"] if "run" in step) for name, job in jobs.items()}
    assert scripts == {"unit": "make lint test-fast", "integration": "make test-integration",
                       "system": "make test-system"}  # fmt: skip
    assert "needs" not in jobs["unit"] and jobs["integration"]["needs"] == jobs["system"]["needs"] == "unit"
    makefile = (ROOT / "Makefile").read_text()
    assert "pytest -m integration" in makefile and "pytest -m system" in makefile
