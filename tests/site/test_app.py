"""The hub's results page, rendered with Streamlit's AppTest against a real database."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from db import queries
from db.models import PointResultRow
from db.session import make_engine, migrate, open_session
from tests.conftest import ROOT

APP = str(ROOT / "site" / "app.py")


def _seed(url: str, agentic: bool = False) -> None:
    engine = make_engine(url)
    migrate(engine)
    now = datetime.now(UTC)
    with open_session(engine) as session:
        sweep, _ = queries.get_or_create_sweep(session, "nightly")
        recipe = queries.upsert_recipe(session, "fp1", "tiny", "tiny.yaml", "cpu-local", "vllm", {"schema_version": 1})
        queries.create_job(session, "job-1", sweep.id, recipe.id, 1, 3, "")
        rows = [
            ("a", "measured", 1, True), ("b", "measured", 2, False), ("c", "simulated", 4, True),
            ("e", "dry-run", 8, True),
        ]  # fmt: skip
        if agentic:
            rows.append(("d", "measured", 3, True))
        for key, origin, concurrency, valid in rows:
            replay = key == "d"
            queries.record_point(
                session,
                PointResultRow(
                    sweep_id=sweep.id, job_id="job-1", recipe_id=recipe.id, point_key=key, repeat_index=0,
                    workload_kind="agentic-replay" if replay else "fixed-length", isl=None if replay else 128,
                    osl=None if replay else 16, concurrency=concurrency, origin=origin, valid=valid,
                    validity_reasons=[] if valid else ["error rate 50.0% above 10%"], completed=10, failed=0,
                    duration_s=1.0, request_throughput=1.0, output_throughput=100.0 * concurrency,
                    total_token_throughput=1000.0, accelerators=1, output_throughput_per_gpu=100.0 * concurrency,
                    total_token_throughput_per_gpu=1000.0, ttft_p50_ms=10.0, tpot_p50_ms=2.0, interactivity_p50=500.0,
                    metrics={"replay": {"realized_hit_rate": 0.8, "theoretical_hit_rate": 0.9}} if replay else {},
                    started_at=now, finished_at=now,
                ),
            )  # fmt: skip


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'hub.db'}"
    monkeypatch.setenv("INFERSWEEP_DATABASE_URL", url)
    return url


def test_empty_database_says_how_to_get_results(database: str) -> None:
    app = AppTest.from_file(APP, default_timeout=60).run()
    assert not app.exception
    assert "make demo" in app.info[0].value


def test_results_hide_simulated_and_invalid_by_default(database: str) -> None:
    _seed(database)
    app = AppTest.from_file(APP, default_timeout=60).run()
    assert not app.exception
    table = app.dataframe[-1].value
    assert list(table["origin"]) == ["measured"] and list(table["concurrency"]) == [1]

    app.checkbox[0].uncheck().run()
    table = app.dataframe[-1].value
    assert sorted(table["concurrency"]) == [1, 2]
    assert any("error rate 50.0%" in md.value for md in app.markdown)

    app.multiselect[1].set_value(["measured", "simulated"]).run()
    assert sorted(app.dataframe[-1].value["origin"]) == ["measured", "measured", "simulated"]
    # Dry runs (plumbing checks on a stand-in engine) are not even offered.
    assert "dry-run" not in app.multiselect[1].options


def test_agentic_section_says_when_there_is_nothing_and_charts_hits(database: str, tmp_path: Path, monkeypatch) -> None:
    _seed(database)
    app = AppTest.from_file(APP, default_timeout=60).run()
    assert any("No agentic results yet" in info.value for info in app.info)

    agentic_db = f"sqlite:///{tmp_path / 'agentic.db'}"
    monkeypatch.setenv("INFERSWEEP_DATABASE_URL", agentic_db)
    _seed(agentic_db, agentic=True)
    app = AppTest.from_file(APP, default_timeout=60).run()
    assert not app.exception
    assert not any("No agentic results yet" in info.value for info in app.info)
    assert any("Realized" in caption.value for caption in app.caption)
    assert 3 in list(app.dataframe[-1].value["concurrency"])


def test_target_interactivity_table(database: str) -> None:
    _seed(database)
    app = AppTest.from_file(APP, default_timeout=60).run()
    compare = app.dataframe[0].value
    assert list(compare["recipe"]) == ["tiny"]
    assert "outside the measured range" in compare["note"][0]  # target 50, measured only at 500: no extrapolation
    app.number_input[0].set_value(500.0).run()
    assert app.dataframe[0].value["output tok/s/GPU"][0] == 100.0


RUNS = str(ROOT / "site" / "pages" / "1_Runs.py")


def test_runs_page_shows_each_job_lifecycle_and_hides_embargoed_sweeps(database: str) -> None:
    from db.lifecycle import JobState

    _seed(database)
    engine = make_engine(database)
    with open_session(engine) as session:
        for state in (JobState.PLACED, JobState.MEASURING, JobState.SUCCEEDED):
            queries.update_job(session, "job-1", state, reason=f"to {state.value}", host="node-a")
        secret, _ = queries.get_or_create_sweep(session, "vendor-launch")
    app = AppTest.from_file(RUNS, default_timeout=60).run()
    assert not app.exception
    assert list(app.dataframe[0].value["sweep"]) == ["nightly", "vendor-launch"]
    app.selectbox[0].set_value("nightly").run()
    jobs = app.dataframe[1].value
    assert list(jobs["job"]) == ["job-1"] and list(jobs["state"]) == ["succeeded"] and list(jobs["host"]) == ["node-a"]
    lifecycle = app.dataframe[2].value
    assert list(lifecycle["state"]) == ["queued", "placed", "measuring", "succeeded"]

    # Once the sweep's results are under embargo, the page no longer lists it.
    with open_session(engine) as session:
        queries.embargo(session, "nightly", datetime(2100, 1, 1, tzinfo=UTC))
    app = AppTest.from_file(RUNS, default_timeout=60).run()
    assert list(app.dataframe[0].value["sweep"]) == ["vendor-launch"]
    assert secret.name == "vendor-launch"


def test_runs_page_without_sweeps_says_how_to_start_one(database: str) -> None:
    app = AppTest.from_file(RUNS, default_timeout=60).run()
    assert not app.exception and "infersweep run RECIPE" in app.info[0].value
