"""Every table of the hub shows a missing figure as a dash, never Streamlit's grey "None" (issue 42).

Streamlit draws tables on a canvas, so a browser test cannot read their cells: the rule is checked where it is
made. Every table goes through `hubkit.page.table` (no page calls `st.dataframe` itself), and on the pages where
readers met "None" (Trends' history, Compare's reads) the tables hold missing figures and carry the dash.
"""

from __future__ import annotations

import ast
from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT
from tests.site.conftest import open_page

SITE = ROOT / "site"
TABLE_HOME = SITE / "hubkit" / "page.py"
DASH = "—"


def _dataframe_calls(path: Path) -> list[int]:
    """Lines of `st.dataframe(...)` calls in a file."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "dataframe"
        and isinstance(node.func.value, ast.Name) and node.func.value.id == "st"
    ]  # fmt: skip


def test_every_table_goes_through_the_one_helper() -> None:
    elsewhere = {
        str(path.relative_to(ROOT)): lines
        for path in sorted(SITE.rglob("*.py"))
        if path != TABLE_HOME and (lines := _dataframe_calls(path))
    }
    assert not elsewhere, f"st.dataframe called outside hubkit/page.py (use page.table): {elsewhere}"
    assert len(_dataframe_calls(TABLE_HOME)) == 1


def _tables_with_gaps(app: AppTest) -> int:
    """How many of the page's tables hold a missing figure; each table must say it with the dash."""
    assert app.dataframe, "the page drew no table"
    for table in app.dataframe:
        assert table.proto.placeholder == DASH, f"a table without the dash for missing figures: {table.value.head()}"
    return sum(bool(table.value.isna().to_numpy().any()) for table in app.dataframe)


def test_trends_history_shows_a_dash_for_a_single_runs_interval(seeded_hub: str) -> None:
    # A sweep measured once has no 95 % interval: the reader sees a dash there.
    assert _tables_with_gaps(open_page("trends")) >= 1


def test_compare_tables_show_a_dash_for_missing_figures(seeded_hub: str) -> None:
    assert _tables_with_gaps(open_page("compare")) >= 1
