"""A real, throwaway OpenSSH server on loopback for the ssh and tpu-vm runners (see local-services.md)."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from runners.fleet.inventory import RemoteInstall, SshAccess
from tests.integration.services import ensure_package

SSHD = Path("/usr/sbin/sshd")
KEY_ENV = "INFERSWEEP_TEST_SSH_KEY"
PROJECT = Path(__file__).resolve().parents[3]


def _ensure_openssh_server() -> None:
    ensure_package("openssh-server", SSHD, "the ssh runner tests")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True, capture_output=True)


def _parents() -> dict[int, int]:
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # gone while we looked
        # The command name sits in parentheses and may hold spaces: fields after the last ')'.
        parents[int(stat.parent.name)] = int(text[text.rindex(")") + 2 :].split()[1])
    return parents


def descendants(pid: int) -> list[int]:
    parents = _parents()
    found, frontier = [], [pid]
    while frontier:
        current = frontier.pop()
        children = [child for child, parent in parents.items() if parent == current]
        found.extend(children)
        frontier.extend(children)
    return found


def command_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


@dataclass
class Sshd:
    address: str
    port: int
    user: str
    key_path: Path
    known_hosts: Path
    host_public_key: str
    directory: Path
    process: subprocess.Popen[bytes]

    def access(self, **changes: object) -> SshAccess:
        fields: dict[str, object] = {
            "address": self.address, "port": self.port, "user": self.user,
            "known_hosts": str(self.known_hosts), "identity_file_env": KEY_ENV, "connect_timeout_s": 5,
        }  # fmt: skip
        return SshAccess.model_validate({**fields, **changes})

    def install(self, workdir: Path) -> RemoteInstall:
        env = {"PYTHONPATH": str(PROJECT)}
        if os.environ.get("INFERSWEEP_CACHE"):
            env["INFERSWEEP_CACHE"] = os.environ["INFERSWEEP_CACHE"]
        return RemoteInstall(python=str(PROJECT / ".venv" / "bin" / "python"), workdir=str(workdir), env=env)

    def session_pids(self) -> list[int]:
        """sshd processes serving connections (children of the listener; not what they started)."""
        return [pid for pid in descendants(self.process.pid) if command_name(pid).startswith("sshd")]

    def log_text(self) -> str:
        return (self.directory / "sshd.log").read_text(errors="replace")


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    _ensure_openssh_server()
    directory = tmp_path_factory.mktemp("sshd")
    _keygen(directory / "hostkey")
    _keygen(directory / "userkey")
    shutil.copy(directory / "userkey.pub", directory / "authorized_keys")
    port = _free_port()
    config = directory / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {directory / 'hostkey'}\n"
        f"AuthorizedKeysFile {directory / 'authorized_keys'}\nPidFile {directory / 'sshd.pid'}\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
        "StrictModes no\nUsePAM no\nSubsystem sftp internal-sftp\nLogLevel VERBOSE\n"
    )
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)
    log = directory / "sshd.log"
    process = subprocess.Popen([str(SSHD), "-D", "-f", str(config), "-E", str(log)])
    deadline = time.monotonic() + 15
    while True:
        if process.poll() is not None:
            pytest.fail(
                f"sshd exited with {process.returncode}: {log.read_text(errors='replace') if log.exists() else ''}"
            )
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"sshd did not listen on 127.0.0.1:{port} within 15 s")
            time.sleep(0.1)
    host_key = (directory / "hostkey.pub").read_text().split()
    known_hosts = directory / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n")
    previous = os.environ.get(KEY_ENV)
    os.environ[KEY_ENV] = str(directory / "userkey")
    server = Sshd(
        address="127.0.0.1", port=port, user="root", key_path=directory / "userkey", known_hosts=known_hosts,
        host_public_key=f"{host_key[0]} {host_key[1]}", directory=directory, process=process,
    )  # fmt: skip
    try:
        yield server
    finally:
        if previous is None:
            os.environ.pop(KEY_ENV, None)
        else:
            os.environ[KEY_ENV] = previous
        # Stopping the listener leaves its sessions alive: collect them first, stop them after.
        leftovers = server.session_pids()
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for pid in leftovers:
            with contextlib.suppress(ProcessLookupError):  # already gone
                os.kill(pid, signal.SIGKILL)


# --- a real Docker daemon and a registry-free test image --------------------------------------------

SKELETON_IMAGE = "infersweep-test/skeleton:1"


def _skeleton_rootfs() -> bytes:
    """An image with no files of its own: the host's /usr, interpreter, venv and project are mounted read-only.

    /sbin must be a real directory: the runtime bind-mounts its init at /sbin/docker-init, which fails
    through a symlink into the read-only /usr mount."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in ("usr", "etc", "tmp", "root", "proc", "sys", "dev", "var", "var/tmp", "sbin", "work"):
            info = tarfile.TarInfo(name)
            info.type = tarfile.DIRTYPE
            info.mode = 0o1777 if name in ("tmp", "var/tmp") else 0o755
            tar.addfile(info)
        for name, target in (("bin", "usr/bin"), ("lib", "usr/lib"), ("lib64", "usr/lib64")):
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
    return buffer.getvalue()


@dataclass
class DockerHost:
    image: str
    mounts: list[str]  # host paths the test image needs mounted (read-only, same path)
    python: str  # the project's interpreter, as seen inside the container

    def environment(self) -> dict[str, object]:
        return {"kind": "container", "image": self.image, "python": self.python, "mounts": self.mounts}


@pytest.fixture(scope="session")
def docker_host(docker_daemon: None) -> Iterator[DockerHost]:
    """The Docker daemon (tests/integration/conftest.py) with the skeleton test image imported."""
    present = subprocess.run(["docker", "image", "inspect", SKELETON_IMAGE], capture_output=True, timeout=30)
    if present.returncode != 0:  # imported once per daemon: a re-import would leave a dangling image each session
        imported = subprocess.run(
            ["docker", "import", "-", SKELETON_IMAGE], input=_skeleton_rootfs(), capture_output=True, timeout=60,
            check=False,
        )  # fmt: skip
        assert imported.returncode == 0, imported.stderr.decode(errors="replace")
    venv = Path(sys.prefix)
    mounts = sorted({"/usr", sys.base_prefix, str(venv), str(PROJECT)})
    yield DockerHost(image=SKELETON_IMAGE, mounts=mounts, python=str(venv / "bin" / "python"))
