"""`infersweep verify` of a 1,000-Point bundle with its records, against its target (<= 10 s).

A simulated sweep of recipes/examples/tiny-llama-simulated.yaml measures real Points (records and figures from the
load generator); its Point rows are then copied in bulk under new point keys until the sweep holds 1,000 Points,
each naming its records artifact (the same bytes: what verify does per Point does not depend on which records).
Then, as a user runs them (subprocesses, start-up included): `infersweep bundle make` and `infersweep verify`. The
peer figure in the same run is the floor of any verification: reading every file of the bundle and hashing it
(sha256), nothing recomputed.

Run: .venv/bin/python -m benchmarks.verify_scale [--points 1000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import insert, select

from orchestrator.bundles import new_key

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "recipes" / "examples" / "tiny-llama-simulated.yaml"
TARGET_S = 10.0


def infersweep(env: dict[str, str], *argv: str) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "orchestrator.cli", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"infersweep {' '.join(argv[:2])} failed ({done.returncode}): {done.stdout[-1500:]}"
                         f"{done.stderr[-1500:]}")  # fmt: skip
    return time.perf_counter() - started


def grow(url: str, points: int) -> None:
    """Copy the sweep's Point rows under new keys (with their 'recorded' transitions) until it holds `points`."""
    from sqlmodel import SQLModel

    import db.models  # noqa: F401  (the tables, into SQLModel's metadata)
    from db.session import make_engine

    table = SQLModel.metadata.tables["point_result"]
    engine = make_engine(url)
    with engine.begin() as connection:
        rows = [dict(row) for row in connection.execute(select(table)).mappings()]
        copies = []
        for index in range(points - len(rows)):
            original = rows[index % len(rows)]
            copies.append({**{name: value for name, value in original.items() if name != "id"},
                           "point_key": f"{original['point_key']}-copy{index}"})  # fmt: skip
        if copies:
            connection.execute(insert(table), copies)


def hash_floor(folder: Path) -> float:
    started = time.perf_counter()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            hashlib.sha256(path.read_bytes()).hexdigest()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--keep", type=Path, help="Build in this new folder and keep it (to profile verify).")
    args = parser.parse_args()
    print(f"load average at the start: {os.getloadavg()[0]:.2f} (2 cores)")
    with tempfile.TemporaryDirectory() as directory:
        folder = args.keep or Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        url = f"sqlite:///{folder / 'results.db'}"
        env = {**os.environ, "INFERSWEEP_HOME": str(folder / "home"), "INFERSWEEP_DATABASE_URL": url,
               "INFERSWEEP_ARTIFACTS": str(folder / "artifacts")}  # fmt: skip
        infersweep(env, "run", str(RECIPE), "--sweep", "verify-scale")
        grow(url, args.points)
        key = folder / "signer.pem"
        public = new_key(key)  # what `infersweep bundle keygen` writes and prints
        trusted = folder / "trusted.yaml"
        trusted.write_text(f"keys:\n  - owner: benchmark\n    public_key: {public}\n")
        bundle = folder / "bundle"
        make_s = infersweep(env, "bundle", "make", "verify-scale", "--key", str(key), "--out", str(bundle))
        verify_s = infersweep(env, "verify", str(bundle), "--keys", str(trusted))
        floor_s = hash_floor(bundle)
        size = sum(path.stat().st_size for path in bundle.rglob("*") if path.is_file())
        print(f"bundle make of {args.points:,} Points: {make_s:.1f} s ({size / 1e6:.1f} MB)")
        print(f"verify of {args.points:,} Points, every figure recomputed from its records: {verify_s:.1f} s (target "
              f"<= {TARGET_S:g} s): {'MET' if verify_s <= TARGET_S else 'NOT MET'}; floor (read and hash every file, "
              f"nothing recomputed) {floor_s:.2f} s, verify {verify_s / floor_s:.0f}x it")  # fmt: skip
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
