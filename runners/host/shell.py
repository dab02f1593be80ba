"""Running commands on a machine, here or over SSH, always as argv lists (never a shell string we build).

`Commands` is what the remote runner kinds need from a machine: run a command, write and read
files. `LocalCommands` does it on this host; the SSH transport (runners/ssh) does it on another.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from recipes.errors import InfrastructureError


@dataclass(frozen=True)
class CommandResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str

    def check(self, what: str) -> CommandResult:
        """Raise a retryable error quoting the command and its output when it failed."""
        if self.returncode != 0:
            tail = "\n".join((self.stdout + self.stderr).strip().splitlines()[-15:])
            raise InfrastructureError(f"{what}: {' '.join(self.argv)!r} exited with {self.returncode}:\n{tail}")
        return self


class Commands(Protocol):
    """A machine we can run commands on and exchange files with."""

    description: str

    def run(
        self,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        input_text: str | None = None,
        timeout_s: float = 60.0,
    ) -> CommandResult: ...

    def write_text(self, path: str, text: str) -> None: ...

    def read_text(self, path: str, offset: int = 0) -> str:
        """The file's text from byte `offset`; empty when the file does not exist yet."""
        ...

    def fetch(self, remote_path: str, local_path: Path) -> bool:
        """Copy a file to this host; False when it does not exist."""
        ...


class LocalCommands:
    """This host."""

    description = "this host"

    def run(
        self,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        input_text: str | None = None,
        timeout_s: float = 60.0,
    ) -> CommandResult:
        try:
            completed = subprocess.run(
                argv, input=input_text, capture_output=True, text=True, timeout=timeout_s, check=False,
                env={**os.environ, **(env or {})},
            )  # fmt: skip
        except subprocess.TimeoutExpired as error:
            raise InfrastructureError(f"{' '.join(argv)!r} did not finish within {timeout_s:g} s") from error
        except FileNotFoundError as error:
            raise InfrastructureError(f"{argv[0]!r} is not installed on this host", retryable=False) from error
        return CommandResult(argv, completed.returncode, completed.stdout, completed.stderr)

    def write_text(self, path: str, text: str) -> None:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(target.name + ".tmp")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, target)

    def read_text(self, path: str, offset: int = 0) -> str:
        try:
            with open(path, "rb") as handle:
                handle.seek(offset)
                return handle.read().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def fetch(self, remote_path: str, local_path: Path) -> bool:
        source = Path(remote_path)
        if not source.is_file():
            return False
        local_path.parent.mkdir(parents=True, exist_ok=True)
        if source.resolve() != local_path.resolve():
            local_path.write_bytes(source.read_bytes())
        return True
