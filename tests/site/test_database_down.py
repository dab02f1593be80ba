"""A hub whose database is unavailable (restarting, failing over) says so on every page, with no traceback."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql

from db.session import make_engine, migrate
from tests.conftest import POSTGRES_ADMIN_URL
from tests.site.conftest import open_page

PAGES = ["overview", "pareto", "tco", "runs"]


@pytest.fixture
def refusing_postgres(empty_postgres_url: str, monkeypatch: pytest.MonkeyPatch):
    """A real PostgreSQL database with the hub's schema that has stopped accepting connections."""
    engine = make_engine(empty_postgres_url)
    migrate(engine)
    engine.dispose()
    name = sql.Identifier(empty_postgres_url.rsplit("/", 1)[1])
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(name))
    monkeypatch.setenv("INFERSWEEP_DATABASE_URL", empty_postgres_url)
    yield empty_postgres_url
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS true").format(name))


@pytest.mark.parametrize("page", PAGES)
def test_every_page_says_the_database_is_unavailable(refusing_postgres: str, page: str) -> None:
    app = open_page(page)  # fails on any exception the page leaves unhandled
    assert any("The results database is unavailable right now" in error.value for error in app.error), page
