"""The `local` runner kind: the engine runs as a child process group of the Ray worker on this host."""

from runners.local.runner import LocalRunner, resolve_model_dir

__all__ = ["LocalRunner", "resolve_model_dir"]
