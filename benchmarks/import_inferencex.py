"""Importing real InferenceX rows, against its target: the whole public corpus (1,622 rows in 35
files) in under 10 s, i.e. at least 162 rows/s.

What runs: `infersweep import inferencex` over the real sample in tests/data/inferencex (125 rows in 7 files)
into a new SQLite database, as a user runs it (a subprocess, startup included), and a second time (every row
already present). The baseline in the same script is reading and validating the same rows without storing
them (json + the importer's pydantic row model): the part no database can make faster.

Run: .venv/bin/python -m benchmarks.import_inferencex
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from orchestrator.importers.inferencex import read_row_file

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted(str(path) for path in (ROOT / "tests" / "data" / "inferencex").glob("run_*/agg_bmk.json"))
CORPUS_ROWS, TARGET_S = 1622, 10.0


def import_once(home: Path, files: list[str] = FILES) -> float:
    env = {**os.environ, "INFERSWEEP_HOME": str(home), "INFERSWEEP_ARTIFACTS": str(home / "artifacts")}
    env.pop("INFERSWEEP_DATABASE_URL", None)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "orchestrator.cli", "import", "inferencex", *files], cwd=ROOT, env=env,
                   check=True, capture_output=True)  # fmt: skip
    return time.perf_counter() - started


def parse_only() -> tuple[float, int]:
    started = time.perf_counter()
    rows = sum(len(read_row_file(Path(file)).rows) for file in FILES)
    return time.perf_counter() - started, rows


def main() -> None:
    parse_s, rows = parse_only()
    empty = [file for file in FILES if Path(file).read_text().strip() == "[]"]
    with tempfile.TemporaryDirectory() as directory:
        fixed = import_once(Path(directory) / "empty", empty)  # start, migrate, registries: paid once per command
        first = import_once(Path(directory) / "sample")
        again = import_once(Path(directory) / "sample")
    per_row = (first - fixed) / rows
    projected = fixed + CORPUS_ROWS * per_row
    print(f"import of {rows} real rows into a new database: {first:.2f} s ({fixed:.2f} s of it the command's fixed "
          f"cost, then {per_row * 1000:.1f} ms per row); the same files again, all present: {again:.2f} s")  # fmt: skip
    print(f"projected for the whole public corpus ({CORPUS_ROWS:,} rows): {projected:.1f} s (target {TARGET_S:g} s): "
          f"{'MET' if projected <= TARGET_S else 'NOT MET'}")  # fmt: skip
    print(
        f"parse-only baseline (json + the row model, no database): {parse_s * 1000:.0f} ms for {rows} rows; the "
        f"import takes {(first - fixed) / parse_s:,.0f}x that per row"
    )


if __name__ == "__main__":
    main()
