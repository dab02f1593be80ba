"""How wrong projections to other chips have been, against its target: a median absolute error of at
most 15 % over same-vendor pairs (H100 -> H200 -> B200, MI300X -> MI325X -> MI355X), cross-vendor pairs apart.

What runs: the InferenceX result files given (default: the real sample in tests/data/inferencex) are imported into
a new SQLite database and `analysis.backtest.backtest` projects every chip's curve to every other
chip that measured the same model, precision, engine, workload and parallelism, read at 30, 50 and 100 tok/s/user.
The peers in the same run are the plain roofline (every second of a step follows a hardware figure), the
unchanged-curve baseline (the source chip's own curve, as if the chips were equal) and a variant of the model whose
overhead follows the FLOP/s ratio too (where the model keeps it as measured).

Run: .venv/bin/python -m benchmarks.projection_backtest [DIR_OR_FILE ...]
The public corpora (docs/BENCHMARKS.md, "Projection backtest"): the InferenceX result files (35 files, 1,622
rows; fetch repository gminneci/mantile and pass the directories `reconcile/sources/inferencemax/raw/run_*`), and
the dashboard API's response as InferenceX-app's tests captured it (435 rows of 73 runs; pass the file
`packages/app/cypress/fixtures/api/benchmarks.json` of vngcloud/InferenceX-app at 7fe6d62), and the dashboard's
history of DeepSeek-R1 beside it (`benchmarks-history.json`: 1,462 rows of 133 runs naming no image; each run is a
curve of its own and runs of one day are compared, marked "image unknown").
Two diagnostics beside the peers, never projections: the overhead following FLOP/s (above), and the model given
the target's own fitted overhead (it reads the target; what error is left is what no per-step overhead explains).
After the table: the overhead the model fits per chip and curve family, where a projection carries one chip's
overhead to another; then, model-free, how each same-vendor pair's step changes at 4 users (its floor) and from 4
to 64 users (its growth) under one configuration and engine release, beside the datasheet ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

from analysis.backtest import backtest, fitted_overheads, groups, medians, step_changes
from db import reads
from db.session import make_engine, migrate, open_session
from orchestrator.importers.store import import_inferencex
from recipes.hardware import load_hardware_registry
from recipes.model_registry import load_model_registry

ROOT = Path(__file__).resolve().parents[1]
TARGET_PCT = 15.0


def files_of(arguments: list[str]) -> list[Path]:
    paths = [Path(argument) for argument in arguments] or [ROOT / "tests" / "data" / "inferencex"]
    found: list[Path] = []
    for path in paths:
        found += sorted(path.glob("**/agg_bmk.json")) if path.is_dir() else [path]
    return found


def main() -> None:
    summary = (__doc__ or "").split("\n\n")[0]
    parser = argparse.ArgumentParser(description=summary, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("paths", nargs="*", help="InferenceX result files or directories holding agg_bmk.json files, "
                        "or the dashboard API's JSON (default: the sample in tests/data/inferencex)")  # fmt: skip
    files = files_of(parser.parse_args().paths)
    missing = [path for path in files if not path.exists()]
    if missing:
        parser.error(f"no such file: {missing[0]} (expected an InferenceX result file or a directory of them)")
    with tempfile.TemporaryDirectory() as directory:
        os.environ["INFERSWEEP_HOME"] = directory
        engine = make_engine(f"sqlite:///{Path(directory) / 'backtest.db'}")
        migrate(engine)
        imported = import_inferencex(engine, files, sweep=None, run_date=None)
        with open_session(engine) as session:
            rows = reads.list_results(session)
        engine.dispose()
    registry = load_hardware_registry()
    result = backtest(rows, registry, load_model_registry(), with_diagnostics=True)
    print(f"{imported.total('imported')} rows from {len(files)} files; {len(result.rows)} (pair, level) rows compared")
    for name, members in groups(result.rows, registry).items():
        group = medians(members)
        projected = group.projection
        verdict = ""
        if name.startswith("same-vendor") and projected is not None:
            verdict = f" (target {TARGET_PCT:g} %: {'MET' if projected <= TARGET_PCT else 'NOT MET'})"
        peers = []
        for label, (value, n) in (
            ("plain roofline", group.plain),
            ("unchanged curve", group.unchanged),
            ("overhead following FLOP/s", group.overhead_on_compute),
            ("target's own overhead (diagnostic)", group.target_overhead),
        ):
            if value is not None and projected is not None:
                peers.append(f"{label} {value:.1f} % over {n} (ratio {projected / value:.2f})")
        dense, dense_count = group.dense
        if dense is not None:
            peers.append(f"without sparse readings {dense:.1f} % over {dense_count}")
        print(f"{name}: median |error| {projected:.1f} % over {group.rows} pairs{verdict}; " + "; ".join(peers))
    for kind, disaggregated in (("worst", False), ("worst disaggregated", True)):
        worst = result.worst(disaggregated=disaggregated)
        if worst is not None:
            where = f"{worst.curve.label()} {worst.source} -> {worst.target} at {worst.level:g} tok/s/user"
            figures = f"projected {worst.projected:,.0f}, measured {worst.measured:,.0f}"
            print(f"{kind}: {where}: {worst.error_pct:+.1f} % ({figures})")
    print_overheads(rows)
    print_step_changes(rows, registry)


def print_overheads(rows: list) -> None:
    """The overhead the model fits per chip and family: it keeps it as measured on the source, so chips whose
    overheads differ are where it misses."""
    for fitted in fitted_overheads(rows, load_model_registry()):
        print(f"fitted overhead, {fitted.family} on {fitted.hardware}: median {fitted.median_ms:.1f} ms per step over "
              f"{fitted.fits} curve(s) of 4+ points (range {fitted.low_ms:.1f}-{fitted.high_ms:.1f} ms)")  # fmt: skip


def print_step_changes(rows: list, registry: dict) -> None:
    """Model-free: each same-vendor pair's step at few users (the floor) and its growth to many, target over source,
    over the curves (workloads, configurations, releases) both measured, beside the datasheet ratios: what a
    projection has to reproduce."""
    changes: dict[tuple[str, str, str], list] = defaultdict(list)
    for change in step_changes(rows, registry):
        key = change.curve
        family = f"{key.model} {key.precision} · {key.engine}" + (f" · {key.speculative}" if key.speculative else "")
        changes[(family, change.source, change.target)].append(change)
    for (family, source, target), members in sorted(changes.items()):
        floors, growths = [c.floor for c in members], [c.growth for c in members]
        compute = "-" if members[0].compute is None else f"{members[0].compute:.2f}x"
        print(f"step change, {family}: {source} -> {target}: floor {statistics.median(floors):.2f}x "
              f"({min(floors):.2f}-{max(floors):.2f}), growth {statistics.median(growths):.2f}x "
              f"({min(growths):.2f}-{max(growths):.2f}) over {len(members)} curve(s); bandwidth "
              f"{members[0].bandwidth:.2f}x, FLOP/s {compute}")  # fmt: skip


if __name__ == "__main__":
    main()
