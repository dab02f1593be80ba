"""Projected points in the database: stored once, never as measurements, and replaced (retracted) when the same
configuration is projected again from other source points."""

from __future__ import annotations

from pathlib import Path

from sqlmodel import select

from analysis.curves import Curve, CurveKey, CurvePoint
from analysis.projection import DISAGG_MODEL, project_between
from db import reads
from db.models import RecipeRow
from db.session import make_engine, migrate, open_session
from orchestrator.projections import store_projection
from recipes.hardware import load_hardware_registry
from recipes.model_registry import load_model_registry


def h200_curve(speed: float, workload: str = "1k/1k", isl: int = 1024) -> Curve:
    points = [CurvePoint("tp8", c, speed / (1 + c / 32), speed * c / (1 + c / 32) / 8, 0.0, (f"k{c}-{workload}",))
              for c in (4, 16, 64)]  # fmt: skip
    return Curve(CurveKey("deepseek-r1", "fp8", "sglang", workload), "h200", points, {"img:1"}, isl, 1024, {"tp8": 8})


def test_projecting_again_from_new_source_points_replaces_the_old_projection(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'p.db'}")
    migrate(engine)
    registry, models = load_hardware_registry(), load_model_registry()
    first = project_between(h200_curve(100.0), registry["h200"], registry["b200"], models["deepseek-r1"])
    stored = store_projection(engine, h200_curve(100.0), first)
    assert (stored.stored, stored.present, stored.superseded) == (3, 0, 0)
    again = store_projection(engine, h200_curve(100.0), first)
    assert (again.stored, again.present, again.superseded) == (0, 3, 0)  # the same inputs: stored once

    newer = project_between(h200_curve(120.0), registry["h200"], registry["b200"], models["deepseek-r1"])
    replaced = store_projection(engine, h200_curve(120.0), newer)
    assert (replaced.stored, replaced.superseded) == (3, 3)
    with open_session(engine) as session:
        shown = reads.list_results(session, sweep="projection-h200-to-b200")
        everything = reads.list_results(session, sweep="projection-h200-to-b200", include_retracted=True)
    assert len(shown) == 3 and len(everything) == 6
    assert {row.origin for row in everything} == {"projected"}
    assert {row.parallelism for row in shown} == {"tp8 · projected from h200"}
    # The newer projection's points: speed 120 at 4 sequences, 120 / 1.125 tok/s/user before the chip's speedup.
    newest = min(shown, key=lambda row: row.concurrency)
    assert newest.interactivity_p50 > 120.0 / 1.125
    engine.dispose()


def test_projecting_a_second_workload_keeps_the_first_workloads_projection(tmp_path: Path) -> None:
    """Found projecting B300's DeepSeek-R1 FP4 curves (InferenceX's dashboard rows) to Vera Rubin: the 8k/1k
    curve's projection retracted the 1k/1k one just stored, as 'superseded' (one name for both workloads)."""
    engine = make_engine(f"sqlite:///{tmp_path / 'p.db'}")
    migrate(engine)
    registry, models = load_hardware_registry(), load_model_registry()
    for workload, isl in (("1k/1k", 1024), ("8k/1k", 8192)):
        curve = h200_curve(100.0, workload, isl)
        stored = store_projection(engine, curve, project_between(curve, registry["h200"], registry["b200"],
                                                                 models["deepseek-r1"]))  # fmt: skip
        assert (stored.stored, stored.superseded) == (3, 0), workload
    with open_session(engine) as session:
        shown = reads.list_results(session, sweep="projection-h200-to-b200")
    assert sorted({row.workload for row in shown}) == ["1k/1k", "8k/1k"] and len(shown) == 6
    engine.dispose()


def test_a_disaggregated_chip_is_projected_from_the_real_sample_split_by_split() -> None:
    """GB200's disaggregated Dynamo-TRT rows of the real InferenceX sample (run 20786863188): each read with its
    split, projected to Vera Rubin point by point (no fit), stored as projected with the re-sized prefill pool."""
    from tests.conftest import ROOT, run_cli

    sample = sorted(str(path) for path in (ROOT / "tests/data/inferencex").glob("run_*/agg_bmk.json"))
    assert run_cli("import", "inferencex", *sample).returncode == 0
    with open_session(make_engine()) as session:
        imported = [v for v in reads.list_results(session) if v.hardware == "gb200-nvl72" and v.engine == "dynamo-trt"]
    assert len(imported) == 10 and all(v.disaggregated and v.parallelism.startswith("disagg") for v in imported)
    # The row's own split: GPUs of the prefill and decode workers, and the decode workers (run 20786863188).
    assert {(v.decode_gpus, v.decode_workers) for v in imported} == {(4, 1), (4, 2), (2, 1), (8, 1)}
    assert all(v.prefill_gpus and v.decode_dp_attention is not None for v in imported)

    projected = run_cli("project", "--from", "gb200", "--to", "vera-rubin", "--engine", "dynamo-trt")
    assert projected.returncode == 0, projected.stdout + projected.stderr
    with open_session(make_engine()) as session:
        shown = reads.list_results(session, sweep="projection-gb200-nvl72-to-vr200-nvl72")
        recipes = {recipe.name: recipe.snapshot for recipe in session.exec(select(RecipeRow)).all()}
    assert shown and {v.origin for v in shown} == {"projected"}
    assert all("projected from gb200-nvl72" in v.parallelism and v.parallelism.startswith("disagg") for v in shown)
    assert all(v.disaggregated for v in shown)  # the fact, from the projected fit's split
    # A band (Rubin's bandwidth is published as a range): each point once per end, never more than measured.
    assert len(shown) == 2 * len(imported)
    snapshots = [snapshot for name, snapshot in recipes.items() if name.startswith("projected-")]
    fits = [snapshot["projection"]["fit"] for snapshot in snapshots]
    assert {fit["model_version"] for fit in fits} == {DISAGG_MODEL}
    for snapshot in snapshots:
        for point in snapshot["projection"]["source_points"]:
            assert point["prefill_gpus"] is not None and point["prefill_gpus"] > 0
