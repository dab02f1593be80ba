"""The hub's Memory tiers page (site/views/memory_tiers.py) with AppTest: the Engram what-if of
tests/unit/analysis/test_engram.py (a case worked by hand) is what its defaults show."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.site.conftest import open_page


def _table(app: AppTest) -> pd.DataFrame:
    return next(frame.value for frame in app.dataframe if "fetch µs" in frame.value.columns)


def _row(table: pd.DataFrame, chip: str, tier: str) -> pd.Series:
    return table[(table["hardware"] == chip) & (table["tier"] == tier)].iloc[0]


def test_defaults_are_the_hand_worked_case_and_need_no_results(hub_database: str) -> None:
    app = open_page("memory_tiers", from_overview=True)
    assert "Model-based, not measured" in app.info[0].value and "2601.07372" in app.info[0].value
    table = _table(app)
    dram, ssd = _row(table, "b200", "host-dram"), _row(table, "b200", "local-ssd")
    assert dram["fetch µs"] == pytest.approx(51.61, abs=0.05) and dram["verdict"] == "hidden"
    assert dram["budget µs"] == pytest.approx(327.87, abs=0.05)
    assert ssd["fetch µs"] == pytest.approx(459.26, abs=0.05) and ssd["verdict"] == "not hidden"
    assert _row(table, "tpu-v7", "host-dram")["verdict"] == "unknown"  # Google publishes no host-link figure
    assert _row(table, "gb300-nvl72", "host-dram")["link GB/s"] == 225.0  # NVLink-C2C, per GPU and direction
    assert "PCI-SIG PCIe 5.0" in dram["sources"]


def test_a_later_first_layer_hides_the_ssd_fetch(hub_database: str) -> None:
    app = open_page("memory_tiers", {"layer": "2", "chips": "b200"}, from_overview=True)
    assert set(_table(app)["hardware"]) == {"b200"}
    assert _row(_table(app), "b200", "local-ssd")["verdict"] == "hidden"


def test_stored_points_are_each_chips_nearest_and_labelled_by_origin(seeded_hub: str) -> None:
    app = open_page(
        "memory_tiers", {"stored": "1", "chips": ["b200", "mi355x", "h100"], "at": "50"}, from_overview=True
    )
    table = _table(app)
    b200, mi355x = _row(table, "b200", "host-dram"), _row(table, "mi355x", "host-dram")
    # The chips' frontier points (fast_tokens.operating_points), labelled as everywhere: origin named unless measured.
    assert b200["operating point"] == "50 tok/s/user, batch 16 (b200 (vllm) at 50 tok/s/user, c=16)"
    assert mi355x["operating point"] == "40 tok/s/user, batch 16 (mi355x (sglang, imported) at 40 tok/s/user, c=16)"
    assert "h100" not in set(table["hardware"])
    assert any("No stored point of deepseek-r1 on h100" in caption.value for caption in app.caption)
