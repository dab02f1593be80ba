"""Imports every built-in runner kind so each registers itself under its `kind`."""

import runners.local
import runners.noop
import runners.slurm.runner
import runners.ssh.runner
import runners.tpu_vm.runner  # noqa: F401
