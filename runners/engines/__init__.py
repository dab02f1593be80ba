"""Engine adapters, registered by kind. Importing this package registers the built-in ones."""

from runners.engines import simulated, vllm  # noqa: F401  (registration side effect)
