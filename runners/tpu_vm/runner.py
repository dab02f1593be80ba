"""The `tpu-vm` runner: the `ssh` runner's transport and agent on a TPU VM, for JAX/vLLM-TPU engines.

TPU v7 VMs come from GKE (a TPU node pool) or Compute Engine, not from the legacy Cloud TPU API; the
inventory's `provisioning` says which, and the placement message records it with the zone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from recipes.schema import Recipe
from runners.fleet.inventory import Target, TpuVmTarget
from runners.job import register_runner
from runners.ssh.runner import RemoteTarget, SshRunner

TPU_ENGINES = frozenset({"vllm-tpu", "simulated"})


@register_runner
class TpuVmRunner(SshRunner):
    kind = "tpu-vm"
    target_type: ClassVar[type[TpuVmTarget]] = TpuVmTarget

    @classmethod
    def limitations(cls, recipe: Recipe, targets: Sequence[Target] = ()) -> list[str]:
        problems = super().limitations(recipe, targets)
        if recipe.engine.kind not in TPU_ENGINES:
            problems.append(
                f"engine.kind: got {recipe.engine.kind!r}; a TPU VM runs only {' or '.join(sorted(TPU_ENGINES))} "
                "(the other engines need GPUs)"
            )
        return problems

    def placed_message(self, target: RemoteTarget) -> str:
        message = super().placed_message(target)
        if isinstance(target, TpuVmTarget):
            provisioning = target.provisioning
            message = message[:-1] + (
                f", via {provisioning.via} in {provisioning.zone}, project {provisioning.project}, "
                f"resource {provisioning.resource})"
            )
        return message
