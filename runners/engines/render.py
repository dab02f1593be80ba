"""The command lines a recipe's engine would run, rendered without a host: for golden files and dry runs.

`render_command_lines(recipe)` asks the recipe's engine adapter for its launch plan with placeholders in
place of host-specific values and returns shell-quoted lines (`shlex.join`): comment lines naming the
engine and image, then per process its config files (as commented YAML) and its command line, prefixed
with `env NAME=value ...` when it sets environment variables. The argv runs inside the recipe's
container image when it has one; the docker/enroot invocation around it is the runner's, not shown.

Placeholders: `{model_dir}` (the model directory on the engine host), `{port}` (the server port),
`python3` (the engine environment's interpreter), and for multi-host launches `{node_rank}`,
`{dist_init_addr}` and `{leader_host}` (see runners/engines/base.py).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from recipes.errors import InferSweepError
from recipes.schema import Recipe
from runners.engines.base import (
    DIST_INIT_ADDR,
    LEADER_HOST,
    NODE_RANK,
    LaunchPlan,
    ProcessSpec,
    container_image,
)
from runners.engines.registry import engine_adapter
from runners.host.process import member_log_name

MODEL_DIR = "{model_dir}"
PORT = "{port}"
PYTHON = "python3"
PLACEHOLDERS = (MODEL_DIR, PORT, NODE_RANK, DIST_INIT_ADDR, LEADER_HOST)
# Stand-in port handed to the adapter, replaced by PORT in the rendered text. Any port value would do; this
# one is unlikely to appear in an argv for another reason.
_PORT_SENTINEL = 65432


def render_plan(recipe: Recipe) -> LaunchPlan:
    """The recipe's launch plan with placeholder model directory, port and interpreter."""
    adapter = engine_adapter(recipe.engine.kind)
    return adapter.launch_plan(recipe, _PORT_SENTINEL, Path(PYTHON), Path(MODEL_DIR))


def engine_log_names(recipe: Recipe) -> list[str]:
    """The logs a launch of the recipe writes in its job directory: engine.log, and one per further process of a
    multi-process engine (what remote runners fetch back)."""
    try:
        plan = render_plan(recipe)
    except InferSweepError:
        return ["engine.log"]  # the launch itself fails with the reason; its log is the one to fetch
    return ["engine.log", *(member_log_name(process.name) for process in plan.processes if process.argv != plan.argv)]


def _command(argv: list[str], env: dict[str, str]) -> str:
    words = (["env", *(f"{name}={value}" for name, value in sorted(env.items()))] if env else []) + argv
    line = shlex.join(words).replace(str(_PORT_SENTINEL), PORT)
    for placeholder in PLACEHOLDERS:  # a bare placeholder reads better unquoted; its value gets quoted on use
        line = line.replace(shlex.quote(placeholder), placeholder)
    return line


def _file_lines(files: dict[str, str]) -> list[str]:
    lines = []
    for name in sorted(files):
        lines.append(f"# file {name}:")
        lines.extend(f"#   {line}" for line in files[name].splitlines())
    return lines


def render_command_lines(recipe: Recipe) -> list[str]:
    """Shell-quoted command line(s) of the recipe's engine, with comment lines for the image and files."""
    plan = render_plan(recipe)
    version = f" {recipe.engine.version}" if recipe.engine.version else ""
    lines = [f"# engine: {recipe.engine.kind}{version}"]
    if recipe.engine.dynamo is not None:
        lines[0] += f" (backend {recipe.engine.dynamo.backend})"
    image = plan.image or container_image(recipe)  # adapters older than LaunchPlan.image leave it unset
    if image:
        lines.append(f"# image: {image}")
    ready = f"GET {plan.health_path}" + (f" lists model {plan.ready_model!r}" if plan.ready_model else " answers 200")
    lines.append(f"# ready when: {ready}")
    levels = recipe.engine.per_concurrency
    if not levels:
        return lines + _process_lines(plan)
    # One launch per load level with settings of its own (the plan makes a job of each), one for the other levels.
    for level in sorted(levels):
        launched = recipe.model_copy(update={"engine": recipe.engine.at_concurrency(level)})
        lines.append(f"# concurrency {level}: an engine launch of its own")
        lines.extend(_process_lines(render_plan(launched)))
    if any(level not in levels for level in recipe.workload.concurrency):
        lines.append("# the other concurrencies: one engine launch")
        lines.extend(_process_lines(plan))
    return lines


def _process_lines(plan: LaunchPlan) -> list[str]:
    lines = []
    processes = plan.processes or [ProcessSpec(role="server", index=0, argv=plan.argv, env=plan.env, files=plan.files)]
    for process in processes:
        if plan.processes:
            where = f", {process.accelerators} accelerators" if process.accelerators else ""
            if process.nodes > 1:
                where += f" over {process.nodes} hosts (one copy per host)"
            lines.append(f"# process {process.name}{where}")
        lines.extend(_file_lines(process.files))
        lines.append(_command(process.argv, process.env))
    return lines
