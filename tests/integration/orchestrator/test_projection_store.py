"""Projected points in the database: stored once, never as measurements, and replaced (retracted) when the same
configuration is projected again from other source points."""

from __future__ import annotations

from pathlib import Path

import pytest

from db import reads
from db.session import make_engine, migrate, open_session
from orchestrator.analysis.projection import Curve, CurveKey, CurvePoint, project_between
from orchestrator.projections import store_projection
from recipes.hardware import load_hardware_registry
from recipes.model_registry import load_model_registry

pytestmark = pytest.mark.integration


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
