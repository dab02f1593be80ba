"""The one registry of named plugins (runner kinds, engine adapters, container runtimes, trace formats, rules).

A registry is a dict from name to plugin that refuses a second plugin under a taken name, naming both, instead of
letting the later one replace the first without a word. Each registry's built-ins are imported by one module that
also holds its lookup (runners/registry.py, runners/engines/registry.py, runners/host/container_registry.py), or
are defined in the registry's own module (trace formats, rules).
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")


def _describe(plugin: Any) -> str:
    target = plugin if isinstance(plugin, type) or callable(plugin) else type(plugin)
    module = getattr(target, "__module__", "?")
    name = getattr(target, "__qualname__", repr(target))
    return f"{module}.{name}" if isinstance(plugin, type) or callable(plugin) else f"{plugin!r} ({module}.{name})"


class Registry(dict[str, T]):
    """Plugins by name; `what` says what they are in messages ("runner kind", "engine adapter", ...)."""

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what

    def __setitem__(self, name: str, plugin: T) -> None:
        existing = self.get(name)
        if existing is not None and existing is not plugin:
            raise ValueError(
                f"{self.what} {name!r} registered twice: by {_describe(existing)} and by {_describe(plugin)}; "
                "give one of them another name"
            )
        super().__setitem__(name, plugin)

    def register(self, name: str, plugin: T) -> T:
        self[name] = plugin
        return plugin

    def copy(self) -> Registry[T]:
        """A registry of the same plugins (a test registers more without touching the process's)."""
        copied: Registry[T] = Registry(self.what)
        dict.update(copied, self)
        return copied
