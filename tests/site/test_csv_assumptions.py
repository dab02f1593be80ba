"""A table taken away as CSV starts with the assumptions its numbers hold under (issue 42): the view's link, every
control's value on the page and, where the page reads costs, each chip's $/GPU-hr with its source and month; and it
holds numbers, not text (a missing figure is an empty cell, never a dash)."""

from __future__ import annotations

import io
import sys

import pandas as pd

from recipes.hardware import load_hardware_registry
from tests.conftest import ROOT
from tests.site.conftest import open_page

# The pages import `hubkit` from site/ (app.py puts it on sys.path); so does this test, without a page run first.
if str(ROOT / "site") not in sys.path:
    sys.path.insert(0, str(ROOT / "site"))
from hubkit import controls


def test_a_page_run_notes_every_control_and_the_tco_tier(seeded_hub: str) -> None:
    app = open_page("overview", {"tier": "neocloud", "tiers": ["50"]})
    assert not app.exception, app.exception
    noted = app.session_state[controls.ASSUMPTIONS]
    assert noted["TCO tier"] == "neocloud" and noted["Interactivity tiers (tok/s/user)"] == "50"
    assert noted["Origins"] and noted["Latest sweep of each configuration"] == "on"
    assert noted["Model"] == "all (1)" and noted["Hardware"] == "all (3)"  # the fixture's deepseek-r1 on 3 chips
    assert app.session_state[controls.RATE] == ("neocloud", None)


def test_the_csv_starts_with_the_assumptions_and_holds_numbers() -> None:
    table = pd.DataFrame({"hardware": ["b200", "mi355x"], "$/M output tokens": [0.905, None],
                          "configuration": ["b200 · sglang", "mi355x · sglang"]})  # fmt: skip
    head = controls.preamble(table, "overview", {"TCO tier": "owning_hyperscaler", "Origins": "imported"},
                             ("owning_hyperscaler", None), "?tier=owning_hyperscaler")  # fmt: skip
    text = controls.csv_bytes(table, head).decode()
    lines = text.splitlines()
    registry = load_hardware_registry()
    b200 = registry["b200"].tco_usd_per_gpu_hour["owning_hyperscaler"]
    assert lines[0].startswith("# InferSweep hub: overview, taken ")
    assert "# view: ?tier=owning_hyperscaler" in lines and "# Origins: imported" in lines
    assert f"# $/GPU-hr b200 at owning_hyperscaler: {b200.value:g} ({b200.source}, {b200.as_of})" in lines
    assert any(line.startswith("# $/GPU-hr mi355x at owning_hyperscaler: ") for line in lines)
    read = pd.read_csv(io.StringIO(text), comment="#")
    assert list(read.columns) == list(table.columns)
    assert read["$/M output tokens"].dtype == float and read["$/M output tokens"].isna().tolist() == [False, True]
    assert "–" not in text and "—" not in text  # a missing figure is an empty cell
