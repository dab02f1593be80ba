"""The `ssh` runner kind: a machine reached over SSH runs the remote agent, which runs the job locally there."""

from runners.ssh.runner import SshRunner
from runners.ssh.transport import SshSession

__all__ = ["SshRunner", "SshSession"]
