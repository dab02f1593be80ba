"""The Pareto explorer with thousands of points, and the hub's results cache.

4,000 public points (40 configurations x 100 concurrency levels, one measured sweep) are written in bulk
the way benchmarks/hub_render.py writes its 50,000. Above `CHART_POINTS` the chart draws a thinned set that
keeps every frontier point (the frontiers here hold fewer than the budget); the table lists `TABLE_ROWS`
rows, frontier points first; the CSV has every point. The results are read once per change of the
database: a second viewer reads the cache, a new point is read at once.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
import streamlit
from streamlit.testing.v1 import AppTest

from benchmarks.hub_render import seed
from db import reads, recording
from db.session import make_engine, open_session
from tests.conftest import ROOT
from tests.site.hub_fixture import DAY0, FIXED, _Seeder, _snapshot, seed_hub

APP = str(ROOT / "site" / "app.py")
PAGE = "views/pareto.py"
POINTS, CONFIGURATIONS = 4000, 40
CHART_POINTS, TABLE_ROWS = 2500, 1000  # site/views/pareto.py


@pytest.fixture
def many_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'hub.db'}"
    monkeypatch.setenv("INFERSWEEP_DATABASE_URL", url)
    seed(url, POINTS, CONFIGURATIONS)
    return url


@pytest.fixture
def csv_downloads(monkeypatch: pytest.MonkeyPatch) -> dict[str, Callable[[], Any]]:
    """What each download button would hand over, by file name (the real button defers it to a click)."""
    downloads: dict[str, Callable[[], Any]] = {}

    def download_button(label: str, data: Any, file_name: str, **_: Any) -> bool:
        downloads[file_name] = data
        return False

    monkeypatch.setattr(streamlit, "download_button", download_button)
    return downloads


def open_page(link: dict[str, str] | None = None) -> AppTest:
    app = AppTest.from_file(APP, default_timeout=120)
    app.switch_page(PAGE)
    app.query_params.update(link or {})
    app.run()
    assert not app.exception, app.exception
    return app


def drawn(app: AppTest) -> pd.DataFrame:
    """The rows the chart sends to the browser."""
    (chart,) = app.get("vega_lite_chart")
    # The points' rows (each with its configuration), not the chip envelopes' drawn under them.
    frames = [pa.ipc.open_stream(dataset.data.data).read_all().to_pandas() for dataset in chart.proto.datasets]
    (points,) = [frame for frame in frames if "series" in frame.columns]
    return points


def test_the_chart_draws_every_frontier_point_and_a_spread_of_the_rest(
    many_points: str, csv_downloads: dict[str, Callable[[], Any]]
) -> None:  # fmt: skip
    app = open_page()
    taken = csv_downloads["pareto.csv"]()
    assert taken.startswith(b"# InferSweep hub: pareto, taken ") and b"\n# Origins: " in taken  # its assumptions
    every = pd.read_csv(io.BytesIO(taken), comment="#")
    assert len(every) == POINTS  # the CSV has every point
    frontier_runs = set(every.loc[every["on frontier"], "run"])
    assert 1000 < len(frontier_runs) < CHART_POINTS  # so every one of them fits the budget
    chart = drawn(app)
    assert len(chart) <= CHART_POINTS and frontier_runs <= set(chart["run"])
    assert len(chart) > len(frontier_runs)  # room left for other points, spread over every configuration
    others = chart[~chart["run"].isin(frontier_runs)]
    assert others["series"].nunique() == CONFIGURATIONS
    captions = [caption.value for caption in app.caption]
    assert any(f"Drawn: {len(chart):,} of {POINTS:,} points" in text and "every frontier point" in text
               for text in captions)  # fmt: skip
    # 40 configurations: colour by hardware, shape by engine (ten and five legend entries, not forty).
    assert any("colour shows the hardware and shape the engine" in text for text in captions)
    spec = app.get("vega_lite_chart")[0].proto.spec
    assert '"field": "hardware"' in spec and '"field": "engine"' in spec


def test_the_table_lists_the_frontier_first_and_the_csv_has_every_point(
    many_points: str, csv_downloads: dict[str, Callable[[], Any]]
) -> None:  # fmt: skip
    app = open_page({"y": "$ per million output tokens", "view": "Table"})
    table = app.dataframe[0].value
    assert len(table) == TABLE_ROWS and table["on frontier"].all()  # the frontiers hold more than 1,000
    assert any(f"The first {TABLE_ROWS:,} of {POINTS:,} points" in caption.value for caption in app.caption)
    every = pd.read_csv(io.BytesIO(csv_downloads["pareto.csv"]()), comment="#")
    assert len(every) == POINTS and list(every.columns) == list(table.columns)
    assert set(table["run"]) <= set(every["run"])


def test_few_points_are_all_drawn_and_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'hub.db'}"
    monkeypatch.setenv("INFERSWEEP_DATABASE_URL", url)
    seed(url, 400, 4)
    app = open_page()
    assert len(drawn(app)) == 400
    assert not any("Drawn:" in caption.value for caption in app.caption)
    # Four configurations: one legend entry each, colour and shape by configuration.
    assert '"field": "series"' in app.get("vega_lite_chart")[0].proto.spec
    assert not app.dataframe  # the table is the chart's alternative, one click away
    app.radio(key="param-view").set_value("Table").run()
    assert len(app.dataframe[0].value) == 400
    assert not any("The first" in caption.value for caption in app.caption)


def test_results_are_read_once_per_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # fmt: skip
    url = f"sqlite:///{tmp_path / 'hub.db'}"
    monkeypatch.setenv("INFERSWEEP_DATABASE_URL", url)
    seed_hub(url)
    calls: list[str] = []
    read = reads.result_columns

    def counted(*args: Any, **kwargs: Any) -> dict[str, list[Any]]:
        calls.append(url)
        return read(*args, **kwargs)

    monkeypatch.setattr(reads, "result_columns", counted)
    link = {"hardware": "b300", "view": "Table"}
    assert "b300" not in open_page(link).multiselect(key="param-hardware").options
    open_page(link)  # another viewer: from the cache
    assert len(calls) == 1

    # A sweep records a point: the next viewer sees it (no waiting for a timer).
    seeder = _Seeder(url)
    seeder.jobs = 100
    recipe = seeder.recipe(_snapshot("b300-vllm-8k1k", "b300", "vllm", "deepseek-r1", "fp8", {"tp": 8}, FIXED))
    seeder.points(seeder.sweep("new"), recipe, DAY0, [(16, 50.0, 2000.0)])
    app = open_page(link)
    assert len(calls) == 2
    assert list(app.dataframe[0].value["Output tok/s per GPU"]) == [2000.0]  # link asks for the table

    # Retracting it hides it from the next viewer too.
    with open_session(make_engine(url)) as session:
        assert recording.retract(session, "wrong driver", "new") == 1
    assert "b300" not in open_page(link).multiselect(key="param-hardware").options
    assert len(calls) == 3
