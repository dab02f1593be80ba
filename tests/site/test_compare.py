"""The Compare page, rendered with Streamlit's AppTest on the hand-checkable hub fixture.

Hand-worked figures (tests/site/hub_fixture.py), latest sweeps, at 50 tok/s/user:
- B200 (nightly-3) measured exactly there in three repeats, 1480/1500/1520: mean 1500, Student-t interval
  1500 ± 4.3027 · 20 / √3 = [1450.32, 1549.68]; at $1.73/GPU-hr, 1.73 / (1500 × 0.0036) = $0.3204/M.
- H200 (nightly-3) has (60, 400) and (30, 900): two knots, so the monotone cubic is the chord,
  400 + (60 − 50)/30 × 500 = 566.67 tok/s/GPU; at $1.22/GPU-hr, 1.22 / (566.67 × 0.0036) = $0.5980/M.
- MI355X (imported) has (80, 600) and (40, 1400): 1400 − (50 − 40)/40 × 800 = 1200.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.site.conftest import assert_says_how_to_get_results, open_page
from tests.site.hub_fixture import COST_B200_AT_50
from tests.site.legacy_seed import _seed

B200 = "b200 · vllm · deepseek-r1 fp8 · tp8·ep8"
H200 = "h200 · vllm · deepseek-r1 fp8 · tp8·ep8"
MI355X = "mi355x · sglang · deepseek-r1 fp8 · tp8"


def at_target(app: AppTest) -> pd.DataFrame:
    return app.dataframe[1].value


def curves(app: AppTest) -> pd.DataFrame:
    return app.dataframe[0].value


def test_empty_database_says_how_to_get_results(hub_database: str) -> None:
    assert_says_how_to_get_results("compare", "Compare", hub_database)


def test_default_compares_two_configurations_of_one_workload(seeded_hub: str) -> None:
    app = open_page("compare")
    assert app.multiselect(key="param-config").value == [B200, H200]
    table = at_target(app)
    assert list(table["configuration"]) == [B200, H200]
    b200, h200 = table.iloc[0], table.iloc[1]
    assert b200["output tok/s/GPU"] == pytest.approx(1500.0) and b200["repeats read"] == 3
    # Figures to three significant figures: 1450.317 and 1549.683 are 1450 and 1550, $0.3204 is $0.320.
    assert (b200["95 % low"], b200["95 % high"]) == (1450, 1550)
    assert b200["$/M output tokens"] == pytest.approx(COST_B200_AT_50, rel=5e-3) and b200["$/M output tokens"] == 0.320
    assert h200["output tok/s/GPU"] == 567  # 566.667
    assert h200["$/M output tokens"] == pytest.approx(1.22 / (1700 / 3 * 0.0036), rel=5e-3)
    assert h200["$/M output tokens"] == 0.598
    assert h200["vs first"] == "-62.2%"
    # The runs that measured each configuration, and what they read at 50: B200 1500 (nightly-1), 1510 (nightly-2),
    # 1500 (nightly-3); H200 600, 601.67, 566.67 (a straight line between its points at 30 and 60).
    assert (b200["runs"], b200["runs' lowest tok/s/GPU"], b200["runs' highest tok/s/GPU"]) == (3, 1500, 1510)
    assert (h200["runs"], h200["runs' lowest tok/s/GPU"], h200["runs' highest tok/s/GPU"]) == (3, 567, 602)
    # Latencies per concurrency, means over the repeats of the latest sweep.
    levels = curves(app)
    b200_16 = levels[(levels["configuration"] == B200) & (levels["concurrency"] == 16)].iloc[0]
    assert b200_16["repeats"] == 3 and b200_16["output tok/s/GPU"] == pytest.approx(1500.0)
    assert b200_16["TTFT p50 (ms)"] == 216.0 and b200_16["TTFT p99 (ms)"] == 416.0 and b200_16["TPOT p50 (ms)"] == 20.0
    assert b200_16["E2E latency p50 (ms)"] == pytest.approx(200 + 1024 * 1000 / 50, rel=5e-3)  # 3 significant figures
    assert b200_16["run"].startswith("/run?sweep=nightly-3&point=") and b200_16["run"].endswith("-c16-x0")
    assert set(levels["sweep"]) == {"nightly-3"}  # each configuration by its latest sweep


def test_out_of_range_is_not_extrapolated(seeded_hub: str) -> None:
    # Ported from the single-page app: a target outside a configuration's measured range gives no figure.
    table = at_target(open_page("compare", {"config": [B200, H200], "target": "100"}))
    h200 = table[table["configuration"] == H200].iloc[0]
    assert pd.isna(h200["output tok/s/GPU"]) and "outside the measured range" in h200["note"]
    assert table[table["configuration"] == B200].iloc[0]["output tok/s/GPU"] == pytest.approx(500.0)  # measured at 100


def test_imported_configuration_is_labelled(seeded_hub: str) -> None:
    app = open_page("compare", {"config": [MI355X, B200], "tier": "rental_3yr"})
    table = at_target(app)
    mi355x = table.iloc[0]  # in the order chosen
    assert mi355x["configuration"] == f"{MI355X} [imported]" and mi355x["origins"] == "imported"
    assert mi355x["output tok/s/GPU"] == pytest.approx(1200.0)
    assert mi355x["$/M output tokens"] == pytest.approx(2.90 / (1200 * 0.0036), rel=5e-3)
    assert table.iloc[1]["vs first"] == "+25.0%"  # B200's 1500 against 1200


def test_custom_rate(seeded_hub: str) -> None:
    table = at_target(open_page("compare", {"config": [B200, H200], "tier": "custom $/GPU-hr", "usd": "2"}))
    assert list(table["$/GPU-hr"]) == [2.0, 2.0]
    assert table.iloc[0]["$/M output tokens"] == pytest.approx(2 / 5.4, rel=5e-3)


def test_simulated_hidden_by_default(seeded_hub: str) -> None:
    app = open_page("compare")
    options = app.multiselect(key="param-config").options
    assert not any(option.startswith("cpu-local") for option in options)
    assert set(options) >= {B200, H200, MI355X}
    shown = open_page("compare", {"origin": ["measured", "simulated"]}).multiselect(key="param-config").options
    assert "cpu-local · simulated · tiny-llama bf16 · tp1" in shown


def test_share_link_reproduces_a_selection_and_the_chart(seeded_hub: str) -> None:
    app = open_page("compare", {"config": [H200, B200], "target": "30", "hardware": ["b200", "h200"]})
    assert app.multiselect(key="param-config").value == [H200, B200]
    table = at_target(app)
    assert list(table["configuration"]) == [H200, B200]
    assert table.iloc[0]["output tok/s/GPU"] == 900.0  # H200's measured point at 30
    assert app.query_params["target"] == "30"
    (chart,) = app.get("vega_lite_chart")
    spec = json.loads(chart.proto.spec)
    assert '"rule"' in json.dumps(spec) and '"href"' in json.dumps(spec)
    assert len(app.get("download_button")) == 2


def test_picking_one_configuration_asks_for_another(seeded_hub: str) -> None:
    app = open_page("compare")
    app.multiselect(key="param-config").set_value([B200]).run()
    assert not app.exception
    assert any("two or more" in info.value for info in app.info)


def test_database_with_one_configuration_says_compare_needs_two(hub_database: str) -> None:
    _seed(hub_database)
    app = open_page("compare")
    assert any("only one matches" in info.value for info in app.info)


def test_many_configurations_colour_by_hardware_and_shape_by_engine(hub_database: str) -> None:
    """Nine configurations chosen: a legend entry each would take the chart's height (as on Trends with the
    dashboard's history), so the chart colours by hardware and shapes by engine, the configuration in the tooltip."""
    from tests.site.hub_fixture import seed_many_configurations

    seed_many_configurations(hub_database)
    (choice,) = [box for box in open_page("compare").multiselect if box.label == "Configurations"]
    options = list(choice.options)
    assert len(options) == 9
    app = open_page("compare", {"config": options, "target": "50"})
    (chart,) = app.get("vega_lite_chart")[:1]
    spec = json.dumps(json.loads(chart.proto.spec))
    assert '"color": {"field": "hardware"' in spec and '"shape": {"field": "engine"' in spec
    assert any("9 configurations: colour shows the hardware" in caption.value for caption in app.caption)
