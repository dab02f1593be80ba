"""The `tpu-vm` runner kind: a TPU VM (GKE node pool or Compute Engine) reached over SSH, like `ssh`."""

from runners.tpu_vm.runner import TpuVmRunner

__all__ = ["TpuVmRunner"]
