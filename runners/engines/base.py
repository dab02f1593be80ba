"""Engine adapters: turn a recipe's typed engine fields into a launch (argv, environment, port).

Adapters register under the recipe's `engine.kind`; the runner looks them up by name, so a new
serving stack is one new module, not a branch in the runner.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from recipes.errors import ConfigurationError
from recipes.schema import Recipe
from runners.loadgen.records import Origin


@dataclass(frozen=True)
class LaunchPlan:
    """How to start one engine server process and how to know it is ready."""

    argv: list[str]
    env: dict[str, str]
    port: int
    served_model: str
    model_dir: Path | None
    health_path: str = "/health"
    metrics_path: str = "/metrics"
    extra: dict[str, str] = field(default_factory=dict)


class EngineAdapter:
    """Base of engine adapters. Subclasses set `kind` and `origin` and build the launch plan."""

    kind: ClassVar[str]
    origin: ClassVar[Origin] = "measured"

    def launch_plan(self, recipe: Recipe, port: int, python: Path, model_dir: Path | None) -> LaunchPlan:
        raise NotImplementedError

    def methodology_flags(self, recipe: Recipe) -> list[str]:
        """Flags for the typed methodology knobs; unsupported combinations raise ConfigurationError."""
        raise NotImplementedError


ENGINE_ADAPTERS: dict[str, type[EngineAdapter]] = {}


def register_engine(adapter: type[EngineAdapter]) -> type[EngineAdapter]:
    ENGINE_ADAPTERS[adapter.kind] = adapter
    return adapter


def engine_adapter(kind: str) -> EngineAdapter:
    # Importing the package registers every built-in adapter.
    import runners.engines  # noqa: F401

    if kind not in ENGINE_ADAPTERS:
        raise ConfigurationError(
            f"engine.kind: got {kind!r}; no adapter registered (available: {', '.join(sorted(ENGINE_ADAPTERS))})"
        )
    return ENGINE_ADAPTERS[kind]()
