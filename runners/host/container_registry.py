"""The container runtimes: every built-in (docker and podman in containers.py, pyxis in pyxis.py) imported here so
it is registered before a runner looks one up. Runners look runtimes up through this module."""

from __future__ import annotations

from runners.host import containers, pyxis
from runners.host.containers import container_runtime

BUILTIN_RUNTIMES = (containers, pyxis)  # the modules whose import registers the built-in runtimes

__all__ = ["BUILTIN_RUNTIMES", "container_runtime"]
