"""Engine adapters, registered by kind. Importing this package registers the built-in ones."""

from runners.engines import dynamo, sglang, simulated, trtllm, vllm, vllm_tpu  # noqa: F401  (registration side effect)
