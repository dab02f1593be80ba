"""Simulated engine adapter: launches `runners.engines.simulated_server` with the project's Python.

Its results always carry origin `simulated` and are never shown as measurements.
"""

from __future__ import annotations

import sys
from pathlib import Path

from recipes.schema import Recipe, SimulatedEngineSettings
from runners.engines.base import EngineAdapter, LaunchPlan, register_engine


@register_engine
class SimulatedAdapter(EngineAdapter):
    kind = "simulated"
    origin = "simulated"

    def methodology_flags(self, recipe: Recipe) -> list[str]:
        return ["--prefix-caching"] if recipe.methodology.prefix_caching else []

    def launch_plan(self, recipe: Recipe, port: int, python: Path, model_dir: Path | None) -> LaunchPlan:
        settings = recipe.engine.simulated or SimulatedEngineSettings()
        argv = [
            sys.executable, "-m", "runners.engines.simulated_server",
            "--port", str(port),
            "--model", recipe.model.name,
            "--ttft-ms", str(settings.ttft_ms),
            "--itl-ms", str(settings.itl_ms),
            "--prefill-ms-per-1k", str(settings.prefill_ms_per_1k_tokens),
            "--max-batch", str(settings.max_batch),
            "--max-model-len", str(recipe.engine.max_model_len),
            "--fault", settings.fault,
            "--fault-after", str(settings.fault_after),
        ]  # fmt: skip
        if settings.fault_once_file:
            argv += ["--fault-once-file", settings.fault_once_file]
        argv += self.methodology_flags(recipe) + recipe.engine.extra_args
        return LaunchPlan(
            argv=argv, env=dict(recipe.engine.env), port=port, served_model=recipe.model.name, model_dir=model_dir
        )
