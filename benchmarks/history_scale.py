"""The field's whole history at speed: import, read and publish 1.6k, 10k and 100k InferenceX rows.

The public sample (tests/data/inferencex, 125 real rows in 7 runs) is repeated as runs of their own, new run ids,
each throughput figure jittered (x U(0.9, 1.1), one factor a row), until the size asked: run_<id>/agg_bmk.json files
as InferenceX's artifacts are laid out. Then, as a user runs them (subprocesses, start-up included), on SQLite and on
PostgreSQL (a database of its own, dropped after):

- `infersweep import inferencex` of every file into an empty database: rows/s against the target (>= 3,300 rows/s,
  100k rows in <= 30 s) and against the floor measured in the same run: the very rows the import stored, copied into
  an empty database's same tables with one bare `executemany` per table in one transaction (SQLAlchemy Core);
- `infersweep compare --json` (target <= 1 s at 100k rows), `infersweep results`, `infersweep publish --snapshot`
  (the snapshot and its static API; target <= 60 s at 100k rows);
- `infersweep --help` (target <= 1 s).

Run: .venv/bin/python -m benchmarks.history_scale [--sizes 1622,10000,100000] [--backends sqlite,postgresql]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, insert, select, text

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "data" / "inferencex"
FIRST_RUN_ID = 9_100_000_000
FIGURE = re.compile(r"tput|ttft|tpot|intvty|itl|e2el")  # a row's measured figures (the rest: what was measured)
POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432"
IMPORT_ROWS_PER_S, IMPORT_FLOOR_RATIO, COMPARE_S, PUBLISH_S, HELP_S = 3300, 5.0, 1.0, 60.0, 1.0
# Every table an import writes, parents first (the floor copies them in this order).
TABLES = ("hardware", "model", "sweep", "engine", "recipe", "job", "provenance", "transition", "point_result",
          "artifact")  # fmt: skip


def sample_rows() -> list[dict[str, Any]]:
    """The sample's rows, each measurement once: two of its runs measured the same MI355X configurations again, and
    one run's rows of one configuration, length and concurrency are one Point (the second would be 'present')."""
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for path in sorted(SAMPLE.glob("run_*/agg_bmk.json")):
        for row in json.loads(path.read_text()):
            rows[tuple(sorted((name, str(value)) for name, value in row.items() if not FIGURE.search(name)))] = row
    return list(rows.values())


def write_history(folder: Path, rows: int, seed: int = 0) -> list[Path]:
    """`rows` rows of history in `folder`: the sample again and again, a run id each time, throughputs jittered."""
    rng, sample, files = random.Random(seed), sample_rows(), []
    run = FIRST_RUN_ID
    while rows > 0:
        part = sample[:rows]
        jittered = []
        for row in part:
            factor = rng.uniform(0.9, 1.1)
            jittered.append({name: value * factor if "tput" in name else value for name, value in row.items()})
        path = folder / f"run_{run}" / "agg_bmk.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(jittered))
        files.append(path)
        rows -= len(part)
        run += 1
    return files


def infersweep(home: Path, database: str, *argv: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    env = {**os.environ, "INFERSWEEP_HOME": str(home), "INFERSWEEP_ARTIFACTS": str(home / "artifacts"),
           "INFERSWEEP_DATABASE_URL": database}  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "orchestrator.cli", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, check=False)  # fmt: skip
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"infersweep {' '.join(argv[:3])} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, done


def executemany_floor(source_url: str, target_url: str) -> tuple[float, int]:
    """Seconds to insert the rows the import stored into an empty database's same tables, one `executemany` a
    table, one transaction; and the rows of point_result."""
    from sqlmodel import SQLModel

    import db.models  # noqa: F401  (the tables, into SQLModel's metadata)
    from db.session import make_engine, migrate

    source, target = make_engine(source_url), make_engine(target_url)
    migrate(target)
    with source.connect() as reading:
        tables = {name: [dict(row) for row in reading.execute(select(SQLModel.metadata.tables[name])).mappings()]
                  for name in TABLES}  # fmt: skip
    started = time.perf_counter()
    with target.begin() as writing:
        for name in TABLES:
            if tables[name]:
                writing.execute(insert(SQLModel.metadata.tables[name]), tables[name])
    elapsed = time.perf_counter() - started
    with target.connect() as reading:
        count = reading.execute(select(SQLModel.metadata.tables["point_result"].c.id)).all()
    return elapsed, len(count)


def fresh_database(backend: str, folder: Path, name: str) -> str:
    if backend == "sqlite":
        return f"sqlite:///{folder / (name + '.db')}"
    admin = create_engine(f"{POSTGRES}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return f"{POSTGRES}/{name}"


def drop_database(backend: str, name: str) -> None:
    if backend == "postgresql":
        admin = create_engine(f"{POSTGRES}/postgres", isolation_level="AUTOCOMMIT")
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def verdict(measured: float, target: float, below: bool = True) -> str:
    met = measured <= target if below else measured >= target
    return "MET" if met else "NOT MET"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1622,10000,100000")
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    print(f"load average at the start: {os.getloadavg()[0]:.2f} (2 cores)")
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "orchestrator.cli", "--help"], cwd=ROOT, capture_output=True, check=True)
        help_s = time.perf_counter() - started
        print(f"infersweep --help: {help_s:.2f} s (target <= {HELP_S:g} s): {verdict(help_s, HELP_S)}")
        for size in (int(size) for size in args.sizes.split(",")):
            files = write_history(folder / f"history-{size}", size)
            for backend in args.backends.split(","):
                name = f"history_{size}_{backend}"
                home = folder / name
                url = fresh_database(backend, folder, name)
                floor_url = fresh_database(backend, folder, name + "_floor")
                try:
                    elapsed, _ = infersweep(home, url, "import", "inferencex", *map(str, files))
                    floor_s, stored = executemany_floor(url, floor_url)
                    rate = stored / elapsed
                    print(
                        f"{backend} {size:,} rows: import {elapsed:.1f} s, {rate:,.0f} rows/s (target >= "
                        f"{IMPORT_ROWS_PER_S:,} rows/s): {verdict(rate, IMPORT_ROWS_PER_S, below=False)}; floor "
                        f"(bare executemany of the same rows) {floor_s:.2f} s, the import {elapsed / floor_s:.1f}x "
                        f"it (target <= {IMPORT_FLOOR_RATIO:g}x): {verdict(elapsed / floor_s, IMPORT_FLOOR_RATIO)}"
                    )
                    compare_s, _ = infersweep(home, url, "compare", "--json", "--at-interactivity", "50")
                    results_s, _ = infersweep(home, url, "results")
                    publish_s, _ = infersweep(home, url, "publish", "--snapshot")
                    print(
                        f"{backend} {size:,} rows: compare --json {compare_s:.2f} s (target <= {COMPARE_S:g} s): "
                        f"{verdict(compare_s, COMPARE_S)}; results {results_s:.2f} s; publish --snapshot "
                        f"{publish_s:.1f} s (target <= {PUBLISH_S:g} s): {verdict(publish_s, PUBLISH_S)}"
                    )
                finally:
                    drop_database(backend, name)
                    drop_database(backend, name + "_floor")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
