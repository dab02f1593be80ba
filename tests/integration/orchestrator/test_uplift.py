"""`infersweep uplift`: how each chip's frontier moved between two snapshots, checked by hand from the raw rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from db.session import make_engine
from orchestrator.publish import write_snapshot
from tests.conftest import ROOT, run_cli

SAMPLE = sorted((ROOT / "tests" / "data" / "inferencex").glob("run_*/agg_bmk.json"))
# MI355X measured the same four configurations again in this run; without it they are read from run 20248091324.
REMOVED, EARLIER = "20384527243", "20248091324"


def _snapshot(tmp_path: Path, name: str, files: list[Path]) -> Path:
    url = f"sqlite:///{tmp_path / name}.db"
    imported = run_cli("import", "inferencex", *map(str, files), env={"INFERSWEEP_DATABASE_URL": url})
    assert imported.returncode == 0, imported.stderr
    snapshot = tmp_path / f"{name}.snapshot.db"
    write_snapshot(make_engine(url), snapshot)
    return snapshot


def _area_by_hand(run: str, isl: int, osl: int) -> float:
    """The area the run's MI355X DeepSeek-R1 FP4 frontier dominates: points (1 / median TPOT, output tok/s/GPU);
    walking from the fastest, a point is on the frontier when it serves more than every faster one; then the
    rectangles from the origin, slowest first: x1·y1 + (x2 − x1)·y2 + ..."""
    rows = json.loads((ROOT / "tests/data/inferencex" / f"run_{run}" / "agg_bmk.json").read_text())
    points = sorted((1 / row["median_tpot"], row["output_tput_per_gpu"]) for row in rows
                    if (row["isl"], row["osl"]) == (isl, osl))  # fmt: skip
    frontier, best = [], -1.0
    for speed, output in reversed(points):
        if output > best:
            frontier.append((speed, output))
            best = output
    area, previous = 0.0, 0.0
    for speed, output in reversed(frontier):
        area += (speed - previous) * output
        previous = speed
    return area


def test_removing_a_run_moves_only_its_chips_frontiers_by_the_area_worked_by_hand(tmp_path: Path) -> None:
    head = _snapshot(tmp_path, "head", SAMPLE)
    base = _snapshot(tmp_path, "base", [path for path in SAMPLE if REMOVED not in str(path)])
    result = run_cli("uplift", "--base", str(base), "--head", str(head), "--json")
    assert result.returncode == 0, result.stderr
    moved = {(item["hardware"], item["workload"]): item for item in json.loads(result.stdout)}
    # Only the chip whose configurations that run measured moved: MI355X at its three lengths.
    assert set(moved) == {("mi355x", "1k/1k"), ("mi355x", "1k/8k"), ("mi355x", "8k/1k")}
    for (_, workload), item in moved.items():
        isl, osl = ({"1k": 1024, "8k": 8192}[part] for part in workload.split("/"))
        assert item["status"] == "moved" and item["model"] == "deepseek-r1" and item["precision"] == "fp4"
        assert item["base_area"] == pytest.approx(_area_by_hand(EARLIER, isl, osl), rel=1e-3)
        assert item["head_area"] == pytest.approx(_area_by_hand(REMOVED, isl, osl), rel=1e-3)
        assert item["area_change"] == pytest.approx(item["head_area"] / item["base_area"] - 1, abs=1e-3)
    # By hand from the two runs' rows, (tok/s/user)·(tok/s/GPU): 1k/8k 29,275 -> 29,636 (+1.23 %); 8k/1k
    # 13,387 -> 13,344 (-0.32 %): the same configurations measured again, a frontier that moved both ways.
    assert moved["mi355x", "1k/8k"]["area_change"] == pytest.approx(0.01233, abs=1e-4)
    assert moved["mi355x", "8k/1k"]["area_change"] == pytest.approx(-0.00320, abs=1e-4)
    # The same snapshot on both sides: nothing moved.
    same = run_cli("uplift", "--base", str(head), "--head", str(head))
    assert same.returncode == 0 and "no chip's frontier moved" in same.stdout
    missing = run_cli("uplift", "--base", str(tmp_path / "nowhere.db"), "--head", str(head))
    assert missing.returncode == 2 and "nowhere.db" in missing.stderr and "Traceback" not in missing.stderr
