"""The Capacity page on a simulated sweep whose engine serves two requests at a time (the sweep of
tests/integration/orchestrator/test_capacity_cli.py, read at recipes/slo_tiers.yaml's tiers), by hand: at 1, 2 and 4
live agents TTFT p90 is ~20, ~20 and ~230 ms and every request streams at ~100 tok/s/user, so each tier's thresholds
(2 s / 60, 5 s / 40, 20 s / 15 tok/s/user) hold at every level: at least 4 agents, the largest level measured, on one
accelerator; and nearly every request met each tier on its own."""

from __future__ import annotations

from tests.conftest import run_cli
from tests.integration.orchestrator.test_capacity_cli import ENGINE
from tests.site.conftest import open_page


def test_capacity_page_reads_agents_per_tier_and_goodput(hub_database: str, write_recipe) -> None:  # type: ignore[no-untyped-def]
    ran = run_cli("run", str(write_recipe(ENGINE)), "--sweep", "capacity-page")
    assert ran.returncode == 0, ran.stderr
    app = open_page("capacity", {"origin": ["simulated"]})
    assert not app.exception, app.exception
    tables = [frame.value for frame in app.dataframe]
    agents = next(table for table in tables if "agents per accelerator" in table.columns).set_index("tier")
    assert set(agents.index) == {"interactive", "standard", "background"}
    assert agents["agents"].tolist() == [4, 4, 4] and set(agents["read"]) == {"at least"}
    assert agents["agents per accelerator"].tolist() == [4.0, 4.0, 4.0]
    levels = next(table for table in tables if "concurrency" in table.columns)
    assert levels["concurrency"].tolist() == [1, 2, 4]
    assert levels["interactive: serves"].all()
    assert (levels["interactive: goodput %"] >= 90).all(), levels.to_string()
    assert levels.loc[levels["concurrency"] == 4, "TTFT p90 ms"].iloc[0] > 100  # a request waited for a slot


def test_capacity_page_says_why_imported_rows_are_not_read(hub_database: str) -> None:
    from tests.integration.orchestrator.test_public_api import SAMPLE

    imported = run_cli("import", "inferencex", *SAMPLE)
    assert imported.returncode == 0, imported.stderr
    app = open_page("capacity")
    assert not app.exception, app.exception
    said = " ".join(block.value for block in [*app.caption, *app.info])
    assert "state no TTFT p90" in said, said
