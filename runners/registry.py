"""Which runner kind runs a recipe: every built-in kind, imported here so each registers itself under its
`kind`, and the lookup by `runner.kind`.

It sits above the runner kinds (they import the contract in `job.py`, never this module), so the contract
never has to import an implementation to find one.
"""

from __future__ import annotations

import runners.local
import runners.noop
import runners.slurm.runner
import runners.ssh.runner
import runners.tpu_vm.runner
from recipes.errors import ConfigurationError
from runners.job import RUNNERS, Runner

# The modules whose import registers the built-in runner kinds.
BUILTIN_KINDS = (runners.local, runners.noop, runners.slurm.runner, runners.ssh.runner, runners.tpu_vm.runner)


def runner_class(kind: str) -> type[Runner]:
    if kind not in RUNNERS:
        raise ConfigurationError(
            f"runner.kind: got {kind!r}; not available yet (registered: {', '.join(sorted(RUNNERS))})"
        )
    return RUNNERS[kind]


def runner_for(kind: str) -> Runner:
    return runner_class(kind)()
