"""SSH sessions (paramiko) with verified host keys: run commands as argv lists, move files, stream output.

Host keys are always checked against the target's `known_hosts` file (`RejectPolicy`: an unknown or
changed key is refused, never added). Errors are mapped to the project's two kinds: a setting that
must change (wrong host key, unknown host, refused credentials) is a `ConfigurationError`; a network
fault (refused, timed out, reset, dropped) is a retryable `InfrastructureError`.
"""

from __future__ import annotations

import collections
import contextlib
import os
import posixpath
import re
import shlex
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

import paramiko

from recipes.errors import ConfigurationError, InfrastructureError
from runners.fleet.inventory import SshAccess
from runners.host.shell import CommandResult

KEEPALIVE_S = 5  # SSH-level keepalive; TCP keepalive below notices a silently dead link
TCP_KEEPALIVE = {"TCP_KEEPIDLE": 10, "TCP_KEEPINTVL": 5, "TCP_KEEPCNT": 3}
POLL_S = 0.2
EXIT_STATUS_WAIT_S = 10.0  # after EOF on stdout, how long the exit status may take to arrive
STDERR_TAIL_LINES = 30
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

NetworkErrors = (OSError, EOFError, paramiko.SSHException)


def env_argv(env: dict[str, str] | None) -> list[str]:
    """`env K=V ...` prefix: sshd usually refuses paramiko's `environment=` (AcceptEnv), env(1) never does."""
    if not env:
        return []
    for name in env:
        if not _ENV_NAME.match(name):
            raise ConfigurationError(f"environment variable name: got {name!r}; expected letters, digits and '_'")
    return ["env", *(f"{name}={value}" for name, value in env.items())]


def command_label(argv: list[str], words: int = 3) -> str:
    """A short name of a command for messages: its first words, after any `env K=V` prefix."""
    rest = list(argv)
    if rest and rest[0] == "env":
        rest = rest[1:]
        while rest and _ENV_NAME.match(rest[0].split("=", 1)[0]) and "=" in rest[0]:
            rest = rest[1:]
    return shlex.join(rest[:words]) + (" ..." if len(rest) > words else "")


def _split_lines(buffer: bytearray) -> list[str]:
    """Complete lines taken off the front of `buffer` (the unfinished tail stays in it)."""
    end = buffer.rfind(b"\n")
    if end < 0:
        return []
    chunk = bytes(buffer[: end + 1])
    del buffer[: end + 1]
    return chunk.decode("utf-8", errors="replace").splitlines()


class SshSession:
    """One SSH connection to a machine; implements `runners.host.shell.Commands` plus `stream_lines`."""

    def __init__(self, access: SshAccess, name: str | None = None) -> None:
        self.access = access
        self.endpoint = f"{access.address}:{access.port}"
        self.description = f"{name} ({access.user}@{self.endpoint})" if name else f"{access.user}@{self.endpoint}"
        self.known_hosts = os.path.expanduser(access.known_hosts)
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self.last_exit_status: int | None = None
        self._client: paramiko.SSHClient | None = None
        self._sftp: paramiko.SFTPClient | None = None

    # --- connection --------------------------------------------------------------------------------

    def __enter__(self) -> SshSession:
        self.open()
        return self

    def __exit__(
        self, _type: type[BaseException] | None, _value: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.close()

    def open(self) -> None:
        access = self.access
        identity = access.identity_file()  # raises when the named variable is unset
        if identity is not None and not (os.path.isfile(identity) and os.access(identity, os.R_OK)):
            raise ConfigurationError(
                f"inventory: ssh.identity_file_env {access.identity_file_env!r} names {identity!r}, "
                "which is not a readable file"
            )
        client = paramiko.SSHClient()
        try:
            client.load_host_keys(self.known_hosts)
        except FileNotFoundError as error:
            raise ConfigurationError(
                f"known_hosts file {self.known_hosts} (ssh.known_hosts of {self.description}) does not exist; "
                f"verify the host key out of band, then: ssh-keyscan -p {access.port} {access.address} "
                f">> {self.known_hosts}"
            ) from error
        except (OSError, paramiko.SSHException) as error:
            raise ConfigurationError(f"known_hosts file {self.known_hosts} cannot be read: {error}") from error
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        sock = self._tcp_connect()
        try:
            client.connect(
                access.address, port=access.port, username=access.user, sock=sock,
                key_filename=[identity] if identity else None,
                allow_agent=identity is None, look_for_keys=identity is None,
                timeout=access.connect_timeout_s, banner_timeout=access.connect_timeout_s,
                auth_timeout=access.connect_timeout_s, channel_timeout=access.connect_timeout_s,
            )  # fmt: skip
        except BaseException as error:
            client.close()
            sock.close()
            mapped = self._connect_error(error, identity)
            if mapped is error:
                raise  # not an SSH or network fault (KeyboardInterrupt from a cancel, a bug): unchanged
            raise mapped from error
        transport = client.get_transport()
        assert transport is not None
        transport.set_keepalive(KEEPALIVE_S)
        self._client = client

    def _tcp_connect(self) -> socket.socket:
        access = self.access
        try:
            sock = socket.create_connection((access.address, access.port), timeout=access.connect_timeout_s)
        except OSError as error:  # refused, timed out, unreachable, unknown name
            raise InfrastructureError(f"cannot connect to SSH at {self.description}: {error}") from error
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for option, value in TCP_KEEPALIVE.items():
            if hasattr(socket, option):  # Linux names; other systems keep their defaults
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)
        return sock

    def _connect_error(self, error: BaseException, identity: str | None) -> BaseException:
        if isinstance(error, paramiko.BadHostKeyException):
            return ConfigurationError(
                f"SSH host key of {self.endpoint} does not match known_hosts file {self.known_hosts}: "
                f"the server offered {error.key.get_name()} {error.key.fingerprint!r}, known_hosts has "
                f"{error.expected_key.get_name()} {error.expected_key.fingerprint!r}. If the host was "
                "reinstalled, verify its new key out of band and replace the line "
                f"(ssh-keygen -R '{_known_hosts_name(self.access)}' -f {self.known_hosts}); otherwise treat this "
                "as a possible man-in-the-middle"
            )
        if isinstance(error, paramiko.AuthenticationException):
            how = (
                f"key file {identity} (from ${self.access.identity_file_env})"
                if identity
                else "the SSH agent and default keys"
            )
            return ConfigurationError(
                f"SSH authentication as {self.access.user!r} on {self.endpoint} failed with {how}: {error}"
            )
        if isinstance(error, paramiko.SSHException) and "not found in known_hosts" in str(error):
            return ConfigurationError(
                f"SSH host {self.endpoint} ({_known_hosts_name(self.access)}) is not in known_hosts file "
                f"{self.known_hosts}; verify its host key out of band, then add it: "
                f"ssh-keyscan -p {self.access.port} {self.access.address} >> {self.known_hosts}"
            )
        if isinstance(error, NetworkErrors):
            return InfrastructureError(f"SSH handshake with {self.description} failed: {type(error).__name__}: {error}")
        return error

    def close(self) -> None:
        if self._sftp is not None:
            with contextlib.suppress(*NetworkErrors):  # the connection is going away anyway
                self._sftp.close()
            self._sftp = None
        if self._client is not None:
            self._client.close()
            self._client = None

    @property
    def transport(self) -> paramiko.Transport:
        transport = self._client.get_transport() if self._client is not None else None
        if transport is None or not transport.is_active():
            raise InfrastructureError(f"SSH connection to {self.description} dropped (transport closed)")
        return transport

    def _dropped(self, doing: str, error: BaseException | None = None) -> InfrastructureError:
        detail = f": {type(error).__name__}: {error}" if error is not None else ""
        return InfrastructureError(f"SSH connection to {self.description} dropped while {doing}{detail}")

    def _exec(self, argv: list[str], env: dict[str, str] | None) -> paramiko.Channel:
        command = shlex.join([*env_argv(env), *argv])
        try:
            channel = self.transport.open_session(timeout=self.access.connect_timeout_s)
            channel.exec_command(command)
        except NetworkErrors as error:
            raise self._dropped(f"starting {command_label(argv)!r}", error) from error
        return channel

    def _exit_status(self, channel: paramiko.Channel, doing: str) -> int:
        """The command's exit status once stdout has ended; a channel closed without one is a dropped link.

        paramiko reports -1 when the channel closed without an `exit-status` message: the connection
        died, or the remote side went away before the command's end was reported."""
        deadline = time.monotonic() + EXIT_STATUS_WAIT_S
        while not channel.exit_status_ready():
            if time.monotonic() > deadline:
                raise self._dropped(doing + f" (no exit status within {EXIT_STATUS_WAIT_S:g} s of end of output)")
            time.sleep(0.02)
        status = channel.recv_exit_status()
        if status == -1:
            raise self._dropped(doing + " (the channel closed without an exit status)")
        return status

    # --- Commands protocol ---------------------------------------------------------------------------

    def run(
        self,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        input_text: str | None = None,
        timeout_s: float = 60.0,
    ) -> CommandResult:
        channel = self._exec(argv, env)
        deadline = time.monotonic() + timeout_s
        stdout, stderr = bytearray(), bytearray()
        try:
            if input_text:
                channel.sendall(input_text.encode())
            channel.shutdown_write()
            channel.settimeout(POLL_S)
            while not (channel.exit_status_ready() and not channel.recv_ready() and not channel.recv_stderr_ready()):
                if time.monotonic() > deadline:
                    raise InfrastructureError(
                        f"{shlex.join(argv)!r} on {self.description} did not finish within {timeout_s:g} s"
                    )
                if channel.recv_stderr_ready():
                    stderr += channel.recv_stderr(65536)
                try:
                    data = channel.recv(65536)
                except TimeoutError:
                    continue
                if data:
                    stdout += data
                else:
                    time.sleep(0.02)  # end of stdout; the exit status (or the channel's close) is on its way
            code = self._exit_status(channel, f"running {command_label(argv)!r}")
        except NetworkErrors as error:
            raise self._dropped(f"running {command_label(argv)!r}", error) from error
        finally:
            channel.close()
        return CommandResult(argv, code, stdout.decode(errors="replace"), stderr.decode(errors="replace"))

    @property
    def sftp(self) -> paramiko.SFTPClient:
        if self._sftp is None:
            try:
                self._sftp = paramiko.SFTPClient.from_transport(self.transport)
            except NetworkErrors as error:
                raise self._dropped("opening SFTP", error) from error
            if self._sftp is None:
                raise InfrastructureError(f"SFTP is not available on {self.description}")
        return self._sftp

    def write_text(self, path: str, text: str) -> None:
        directory = posixpath.dirname(path)
        if directory:
            self.run(["mkdir", "-p", directory]).check(f"creating {directory} on {self.description}")
        temporary = path + ".tmp"
        try:
            with self.sftp.open(temporary, "w") as handle:
                handle.write(text.encode("utf-8"))
            self.sftp.posix_rename(temporary, path)
        except NetworkErrors as error:
            raise self._dropped(f"writing {path}", error) from error

    def read_text(self, path: str, offset: int = 0) -> str:
        try:
            with self.sftp.open(path, "r") as handle:
                handle.seek(offset)
                return handle.read().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return ""
        except NetworkErrors as error:
            raise self._dropped(f"reading {path}", error) from error

    def fetch(self, remote_path: str, local_path: Path) -> bool:
        temporary = local_path.with_name(local_path.name + ".part")
        try:
            with self.sftp.open(remote_path, "r") as source:
                source.prefetch()
                local_path.parent.mkdir(parents=True, exist_ok=True)
                with open(temporary, "wb") as target:
                    while chunk := source.read(1 << 20):
                        target.write(chunk)
        except FileNotFoundError:
            return False
        except NetworkErrors as error:
            temporary.unlink(missing_ok=True)
            raise self._dropped(f"fetching {remote_path}", error) from error
        os.replace(temporary, local_path)
        return True

    # --- streaming -----------------------------------------------------------------------------------

    def stream_lines(
        self,
        argv: list[str],
        stdin_text: str,
        *,
        env: dict[str, str] | None = None,
        on_stderr: Callable[[str], None] | None = None,
    ) -> Iterator[str]:
        """Start `argv`, send `stdin_text` and keep stdin open; yield stdout lines as they arrive.

        Stdin stays open so a process that watches it (the agent's `--watch-stdin`) sees end of file
        when this connection goes away. Stderr lines go to `on_stderr` and `stderr_tail`. Ends when the
        command exits (`last_exit_status`); raises a retryable InfrastructureError when the channel or
        the connection closes without an exit status. Closing the generator closes the channel.
        """
        self.last_exit_status = None
        self.stderr_tail.clear()
        channel = self._exec(argv, env)
        stdout, stderr = bytearray(), bytearray()
        doing = f"running {command_label(argv)!r}"

        def drain_stderr() -> None:
            while channel.recv_stderr_ready():
                stderr.extend(channel.recv_stderr(65536))
            for line in _split_lines(stderr):
                self.stderr_tail.append(line)
                if on_stderr is not None:
                    on_stderr(line)

        try:
            try:
                channel.sendall(stdin_text.encode())
                channel.settimeout(POLL_S)
                while True:
                    drain_stderr()
                    try:
                        data = channel.recv(65536)
                    except TimeoutError:
                        # The raw transport, not the `transport` property: that raises its own message, which
                        # would not say what was running (which of the two a drop hits is a matter of timing).
                        transport = self._client.get_transport() if self._client is not None else None
                        if transport is None or not transport.is_active():
                            raise self._dropped(doing + " (the connection closed)") from None
                        continue
                    if not data:
                        break  # end of stdout: the command exited, or the channel closed under us
                    stdout.extend(data)
                    yield from _split_lines(stdout)
                self.last_exit_status = self._exit_status(channel, doing)
                drain_stderr()
                if stderr:
                    self.stderr_tail.append(stderr.decode(errors="replace"))
            except NetworkErrors as error:
                raise self._dropped(doing, error) from error
            if stdout:
                yield stdout.decode("utf-8", errors="replace")  # a last line without its newline
        finally:
            channel.close()


def _known_hosts_name(access: SshAccess) -> str:
    """How known_hosts names this host: `host` on port 22, `[host]:port` otherwise."""
    return access.address if access.port == 22 else f"[{access.address}]:{access.port}"
