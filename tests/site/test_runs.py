"""The hub's Runs page (site/views/runs.py), rendered with Streamlit's AppTest against a real database."""

from __future__ import annotations

from datetime import UTC, datetime

from db import recording
from db.lifecycle import JobState
from db.session import make_engine, migrate, open_session
from tests.site.conftest import open_page
from tests.site.legacy_seed import _seed


def test_runs_page_shows_each_job_lifecycle_and_hides_embargoed_sweeps(hub_database: str) -> None:
    _seed(hub_database, first_only=True)  # sweep 'nightly', job 'job-1' with one point
    engine = make_engine(hub_database)
    with open_session(engine) as session:
        for state in (JobState.PLACED, JobState.MEASURING, JobState.SUCCEEDED):
            recording.update_job(session, "job-1", state, reason=f"to {state.value}", host="node-a")
        secret, _ = recording.get_or_create_sweep(session, "vendor-launch")
    app = open_page("runs")
    assert not app.exception
    assert list(app.dataframe[0].value["sweep"]) == ["nightly", "vendor-launch"]
    app.selectbox[0].set_value("nightly").run()
    jobs = app.dataframe[1].value
    assert list(jobs["job"]) == ["job-1"] and list(jobs["state"]) == ["succeeded"] and list(jobs["host"]) == ["node-a"]
    assert list(jobs["points"]) == ["1/3"]
    lifecycle = app.dataframe[2].value
    assert list(lifecycle["state"]) == ["queued", "placed", "measuring", "succeeded"]
    assert app.query_params["sweep"] == "nightly"  # the URL now opens this sweep

    # Once the sweep's results are under embargo, the page no longer lists it.
    with open_session(engine) as session:
        recording.embargo(session, "nightly", datetime(2100, 1, 1, tzinfo=UTC))
    app = open_page("runs")
    assert list(app.dataframe[0].value["sweep"]) == ["vendor-launch"]
    assert secret.name == "vendor-launch"


def test_runs_page_without_sweeps_says_how_to_start_one(hub_database: str) -> None:
    app = open_page("runs")
    assert not app.exception and "infersweep run RECIPE" in app.info[0].value

    migrate(make_engine(hub_database))  # tables, but no sweep in them
    app = open_page("runs")
    assert not app.exception and "infersweep run RECIPE" in app.info[0].value


def test_fixture_sweeps_newest_first_without_the_embargoed_one(seeded_hub: str) -> None:
    app = open_page("runs")
    assert not app.exception
    listed = list(app.dataframe[0].value["sweep"])
    assert "vendor-launch" not in listed
    # Retracted results disappear from the result pages, but the sweep that ran still happened.
    assert {"nightly-1", "nightly-2", "nightly-3", "inferencex-import", "agentic-1", "bad-driver"} <= set(listed)
    assert app.selectbox[0].value == "bad-driver"  # newest first
    assert "vendor-launch" not in app.selectbox[0].options
    # Each table can be downloaded.
    assert len(app.get("download_button")) == 3
    # When the results finished, by their own dates (the fixture's nightly-1 ran on 2026-11-01 from 02:00; its points
    # finished up to 64 minutes later), apart from when the sweep was recorded here (the test's own time).
    sweeps = app.dataframe[0].value.set_index("sweep")
    assert sweeps.loc["nightly-1", "results finished"] == "2026-11-01 03:04 UTC"
    assert sweeps.loc["nightly-1", "origin"] == "measured" and sweeps.loc["inferencex-import", "origin"] == "imported"
    assert sweeps.loc["bad-driver", "results finished"] == "no public result"  # retracted


def test_query_param_link_opens_that_sweep_with_its_jobs(seeded_hub: str) -> None:
    app = open_page("runs", {"sweep": "nightly-3"})
    assert not app.exception
    assert app.selectbox[0].value == "nightly-3"
    jobs = app.dataframe[1].value
    # Three B200 repeats (3 concurrencies each) and one H200 job (2 concurrencies), all finished on node-1.
    assert list(jobs["points"]) == ["3/3", "3/3", "3/3", "2/2"]
    assert set(jobs["state"]) == {"succeeded"} and set(jobs["host"]) == {"node-1"}
    assert any("Run detail" in link.label for link in app.get("page_link"))

    # A link to an embargoed sweep falls back to a listed one: it never opens.
    app = open_page("runs", {"sweep": "vendor-launch"})
    assert not app.exception and app.selectbox[0].value != "vendor-launch"
    assert "vendor-launch" not in " ".join(app.dataframe[1].value["job"].astype(str))


def test_the_timeline_ticks_read_at_the_span_shown() -> None:
    import pandas as pd

    from hubkit.page import time_format

    at = pd.Timestamp("2026-12-01 10:00:00", tz="UTC")
    assert time_format(pd.Series([at, at + pd.Timedelta(seconds=2)])) == "%H:%M:%S.%L"  # not ".500" on every tick
    assert time_format(pd.Series([at, at + pd.Timedelta(minutes=5)])) == "%H:%M:%S"
    assert time_format(pd.Series([at, at + pd.Timedelta(days=3)])) == "%b %d %H:%M"


def test_imported_runs_are_finished_and_empty_cells_say_so(hub_database: str) -> None:
    """Real InferenceX rows imported with the CLI: each source run is a finished sweep (it was never dispatched, so
    'planned' would read as waiting forever), and a job with no host or error shows '–', never 'None'."""
    from tests.conftest import ROOT, run_cli

    files = sorted(str(path) for path in (ROOT / "tests" / "data" / "inferencex").glob("run_*/agg_bmk.json"))
    imported = run_cli("import", "inferencex", *files, env={"INFERSWEEP_DATABASE_URL": hub_database})
    assert imported.returncode == 0, imported.stdout + imported.stderr
    app = open_page("runs")
    sweeps = app.dataframe[0].value
    assert len(sweeps) >= 6 and set(sweeps["state"]) == {"finished"}, sweeps
    jobs = app.dataframe[1].value
    assert set(jobs["state"]) == {"imported"}
    assert set(jobs["host"]) == {"–"} and set(jobs["error"]) == {"–"} and set(jobs["message"]) == {"–"}
    assert not jobs.isna().any().any()
