"""Does every scorecard cell equal its chip's envelope built by hand? And where did the answer change?

What runs: the InferenceX result files given (default: the real sample in tests/data/inferencex) are imported into a
new SQLite database; the latest run of each configuration is read as the hub reads it, and the Overview's scorecard
(`economics.scorecard`, each chip along its envelope) is worked out at 30, 50 and 100 tok/s/user. Beside it, an
independent hand check of every cell: the chip's envelope is built pair by pair from the raw points (a point no other
point beats on both speed and throughput), and so is each configuration's own frontier; the figure must lie within
the highest of their brackets around the tier (a monotone read never leaves its two points; the chip takes the
highest read), equal the slowest point's where every point is faster than the tier, and be absent where every
point is slower; the chip named cheapest must be one no other chip beats on those brackets.
The peer in the same run is the rule the hub used before: each configuration read on its own, those whose own range
misses the tier dropped, the cheapest of the rest per chip. The script prints each row where the two name another
chip, and the counts.

Run: .venv/bin/python -m benchmarks.envelope_check [DIR_OR_FILE ...]
The public corpus: the 35 InferenceX result files (fetch repository gminneci/mantile and pass the directories
`reconcile/sources/inferencemax/raw/run_*`).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from analysis.economics import GpuHourRate, best_per, cost_of, read_configurations, scorecard
from analysis.recency import latest_sweeps_of, sweep_keys
from db import reads
from db.session import make_engine, migrate, open_session
from orchestrator.importers.store import import_inferencex
from recipes.hardware import load_hardware_registry

ROOT = Path(__file__).resolve().parents[1]
TIERS = (30.0, 50.0, 100.0)
Point = tuple[float, float]


def hand_envelope(points: list[Point]) -> list[Point]:
    """The points no other point beats on both speed and throughput, by speed: checked pair by pair."""
    kept = [p for p in points if not any(q != p and q[0] >= p[0] and q[1] >= p[1] for q in points)]
    return sorted(set(kept))


def hand_bracket(envelope: list[Point], target: float) -> tuple[float, float] | None:
    """Where a chip's throughput at `target` must lie: its slowest point's when all are faster (served faster),
    between the two envelope points around it (a monotone read never leaves them), None when all are slower."""
    if not envelope or target > envelope[-1][0]:
        return None
    if target <= envelope[0][0]:
        return (envelope[0][1], envelope[0][1])
    right = next(i for i, (x, _y) in enumerate(envelope) if x >= target)
    return (envelope[right][1], envelope[right - 1][1])


def hand_chip_bracket(curves: list[list[Point]], target: float) -> tuple[float, float] | None:
    """Where a chip's throughput at `target` must lie, given each configuration's points: the envelope of them all,
    or a configuration's own frontier where it passes higher (a monotone read of each stays in its bracket, and the
    chip takes the highest): from the highest of the brackets' low ends to the highest of their high ends."""
    brackets = [hand_bracket(hand_envelope([p for curve in curves for p in curve]), target)]
    if brackets[0] is None:
        return None
    brackets += [hand_bracket(hand_envelope(curve), target) for curve in curves]
    known = [bracket for bracket in brackets if bracket is not None]
    return (max(low for low, _high in known), max(high for _low, high in known))


def _files(arguments: list[str]) -> list[Path]:
    paths = [Path(a) for a in arguments] or [ROOT / "tests" / "data" / "inferencex"]
    found: list[Path] = []
    for path in paths:
        found += sorted(path.rglob("*.json")) if path.is_dir() else [path]
    return found


def _row_key(row: Any) -> tuple[str, str, str]:
    return (row.model, row.precision, row.workload)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="InferenceX result files or directories (default: the sample)")
    files = _files(parser.parse_args().paths)
    registry = load_hardware_registry()
    rate = GpuHourRate()
    with tempfile.TemporaryDirectory() as directory:
        engine = make_engine(f"sqlite:///{Path(directory) / 'envelopes.db'}")
        migrate(engine)
        summary = import_inferencex(engine, files, sweep=None, run_date=None)
        with open_session(engine) as session:
            history = [row for row in reads.list_results(session) if row.valid]
        engine.dispose()
    latest = latest_sweeps_of(sweep_keys(history))
    rows = [row for row in history if row.sweep in latest[row.fingerprint]]
    print(f"{len(files)} file(s), {summary.total('imported')} row(s) imported; {len(rows)} of the latest runs read "
          f"(load average {os.getloadavg()[0]:.2f})")  # fmt: skip
    points: dict[tuple[str, ...], dict[tuple[str, str], list[Point]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if row.interactivity_p50:
            curve = points[(*_row_key(row), row.hardware)][(row.fingerprint, row.sweep)]
            curve.append((row.interactivity_p50, row.output_throughput_per_gpu))
    curves = {key: list(by_configuration.values()) for key, by_configuration in points.items()}
    cells = scorecard(rows, registry, rate, TIERS, history=history)
    checked = wrong = changed = answers = 0
    by_row: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
    for cell in cells:
        by_row[(cell.model, cell.precision, cell.workload, cell.interactivity)].append(cell)
        bracket = hand_chip_bracket(curves.get((cell.model, cell.precision, cell.workload, cell.hardware), [[]]),
                                    cell.interactivity)  # fmt: skip
        figure = cell.best.read.output.mean if cell.best is not None and cell.best.read.output else None
        # A bracket exists exactly when a figure does: the second half only runs with both present.
        ok = (figure is None) == (bracket is None) and (
            figure is None or bracket is None or bracket[0] * (1 - 1e-9) <= figure <= bracket[1] * (1 + 1e-9)
        )
        checked += 1
        if not ok:
            wrong += 1
            print(f"  MISMATCH {cell.model} {cell.precision} {cell.workload} @ {cell.interactivity:g} "
                  f"{cell.hardware}: figure {figure}, hand bracket {bracket}")  # fmt: skip
    print("\nrow | the envelope's cheapest | the old rule's (each configuration alone)")
    for (model, precision, workload, tier), row_cells in sorted(by_row.items()):
        priced = [c for c in row_cells if c.best is not None and c.best.output is not None]
        if not priced:
            continue
        answers += 1
        best = min(priced, key=lambda c: c.best.output.usd_per_million)
        # By hand: the chip named cheapest can cost no more than any other chip's dearest end of its bracket.
        costs = {}
        for cell in priced:
            bracket = hand_chip_bracket(curves[(model, precision, workload, cell.hardware)], tier)
            usd = cell.best.usd_per_gpu_hour
            if bracket is not None and usd:
                costs[cell.hardware] = (usd / (bracket[1] * 0.0036), usd / (bracket[0] * 0.0036))
        if best.hardware in costs and any(costs[best.hardware][0] > high for _low, high in costs.values()):
            wrong += 1
            print(f"  MISMATCH {model} {precision} {workload} @ {tier:g}: {best.hardware} named cheapest, {costs}")
        group = [r for r in rows if _row_key(r) == (model, precision, workload)]
        old, _ = best_per([cost_of(read, registry, rate) for read in read_configurations(group, tier)])
        old_best = min(old.values(), key=lambda c: c.output.usd_per_million, default=None)  # type: ignore[union-attr]  # cost_of prices every read it is given a rate for
        old_text = "no chip" if old_best is None else (
            f"{old_best.read.hardware} ${old_best.output.usd_per_million:.3g}")  # type: ignore[union-attr]  # cost_of prices every read it is given a rate for  # fmt: skip
        new_text = f"{best.hardware} ${best.best.output.usd_per_million:.3g}"
        differs = old_best is None or old_best.read.hardware != best.hardware
        changed += differs
        mark = "   <- changed" if differs else ""
        print(f"{model} {precision} {workload} @ {tier:g} | {new_text} | {old_text}{mark}")
    print(f"\n{checked} cells checked against hand-made envelopes: {wrong} mismatch(es) (target 0). {answers} rows "
          f"answered; the cheapest chip changed from the old rule in {changed}.")  # fmt: skip


if __name__ == "__main__":
    main()
