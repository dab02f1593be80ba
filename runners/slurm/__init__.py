"""The `slurm` runner kind: the remote agent runs as a Slurm batch job on a cluster's compute nodes."""

from runners.slurm.runner import SlurmRunner, cancel_stale, nodes_for, stale_jobs

__all__ = ["SlurmRunner", "cancel_stale", "nodes_for", "stale_jobs"]
