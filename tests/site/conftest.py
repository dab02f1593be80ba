"""What every hub page test shares: a database the hub reads, the fixtures seeded into it, a page opened by link.

`hub_database` (empty), `seeded_hub` (tests/site/hub_fixture.py) and `b200_only_hub` (one configuration)
are named apart from test_pareto.py's own `database` and `hub` fixtures, which that module keeps.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from db.session import make_engine, migrate
from tests.conftest import ROOT
from tests.site.hub_fixture import DAY0, FIXED, _Seeder, _snapshot, seed_hub

APP = str(ROOT / "site" / "app.py")


@pytest.fixture
def hub_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The URL of an empty SQLite database (no tables yet), which the hub reads for this test."""
    url = f"sqlite:///{tmp_path / 'hub.db'}"
    monkeypatch.setenv("INFERSWEEP_DATABASE_URL", url)
    return url


@pytest.fixture
def seeded_hub(hub_database: str) -> str:
    """`hub_database` holding the hand-checkable results of tests/site/hub_fixture.py."""
    seed_hub(hub_database)
    return hub_database


@pytest.fixture
def b200_only_hub(hub_database: str) -> str:
    """`hub_database` with one configuration only, B200 vLLM DeepSeek-R1 fp8 tp8 8k/1k in sweep 'only': three
    repeats at (100 tok/s/user, 500 tok/s/GPU) and (50, 1480 / 1500 / 1520), so 1500 tok/s/GPU at 50."""
    seeder = _Seeder(hub_database)
    recipe = seeder.recipe(_snapshot("b200-vllm-8k1k", "b200", "vllm", "deepseek-r1", "fp8", {"tp": 8}, FIXED))
    sweep = seeder.sweep("only")
    for repeat, middle in enumerate((1480.0, 1500.0, 1520.0)):
        seeder.points(sweep, recipe, DAY0, [(4, 100.0, 500.0), (16, 50.0, middle)], repeat=repeat)
    seeder.engine.dispose()
    return hub_database


def open_page(page: str, link: dict[str, str | list[str]] | None = None, from_overview: bool = False) -> AppTest:
    """`views/<page>.py` as a share link opens it: straight onto the page, with only `link`'s query parameters.

    Switching before the first run opens the page the way a browser opening /<page>?... does; running the
    Overview first would leave its sidebar choices in the session. `from_overview` runs the Overview first
    all the same, as a viewer navigating there does (and as a page whose url_path is not its file name,
    such as Run detail's 'run', needs: AppTest finds it only once st.navigation has registered the pages).
    """
    app = AppTest.from_file(APP, default_timeout=60)
    if from_overview:
        app.run()
        assert not app.exception, app.exception
    app.switch_page(f"views/{page}.py")
    app.query_params.update(link or {})
    app.run()
    assert not app.exception, app.exception
    return app


def assert_says_how_to_get_results(page: str, title: str, url: str, from_overview: bool = False) -> None:
    """On a database without tables, then with tables but no results, `page` says how to measure some."""

    def check(app: AppTest) -> None:
        assert app.title[0].value == title
        assert "No results yet" in app.info[0].value and "infersweep run" in app.info[0].value, app.info[0].value

    check(open_page(page, from_overview=from_overview))
    engine = make_engine(url)
    migrate(engine)  # tables, but no results
    engine.dispose()
    check(open_page(page, from_overview=from_overview))


def dropped_notes(app: AppTest) -> str:
    """What a page says about chips it dropped: the warning naming them and the folded reasons under it."""
    return "\n".join([*(warning.value for warning in app.warning), *(block.value for block in app.markdown)])
