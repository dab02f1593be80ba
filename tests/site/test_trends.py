"""The Trends page, rendered with Streamlit's AppTest on the hand-checkable hub fixture.

Hand-worked figures (tests/site/hub_fixture.py), sweep by sweep:
- H200 at 30 tok/s/user measured 1000, 1005, then 900. History 1000, 1005: mean 1002.5, s = 3.536, the
  95 % prediction interval for one new run is 1002.5 ± t(1, 0.975) · s · √1.5 = [947.48, 1057.52]; 900 is
  below it and 10.2 % down: regressed. At 50 (the default) its two-knot frontier reads 600, 601.67 and
  566.67 (chord between (30, y) and (60, 400)): below [582.49, 619.17] and 5.7 % down, regressed too.
- B200 at 50 measured 1500, 1510, then three repeats with mean 1500 (interval [1450.32, 1549.68]):
  not below [1394.96, 1615.04], so not a regression.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.site.conftest import assert_says_how_to_get_results, open_page
from tests.site.legacy_seed import _seed


def history(app: AppTest) -> pd.DataFrame:
    return app.dataframe[0].value


def verdicts(app: AppTest) -> pd.DataFrame:
    return app.dataframe[1].value.set_index("hardware", drop=False)


def only(frame: pd.DataFrame, start: str) -> pd.Series:
    match = frame[frame["configuration"].str.startswith(start)]
    assert len(match) == 1, match
    return match.iloc[0]


def test_empty_database_says_how_to_get_results(hub_database: str) -> None:
    assert_says_how_to_get_results("trends", "Trends", hub_database)


def test_h200_drop_is_a_regression_and_b200_is_not(seeded_hub: str) -> None:
    app = open_page("trends")
    table = verdicts(app)
    h200, b200 = only(table, "h200"), only(table, "b200 · vllm")
    assert h200["verdict"] == "regressed" and b200["verdict"] == "ok"
    assert h200["latest sweep"] == "nightly-3" and h200["latest"] == pytest.approx(566.667, abs=1e-3)
    assert h200["history mean"] == pytest.approx(600.833, abs=1e-3) and h200["change"] == "-5.7%"
    assert h200["prediction low"] == pytest.approx(582.49, abs=0.01)
    assert b200["latest"] == pytest.approx(1500.0) and b200["change"] == "-0.3%"
    assert table.iloc[0]["verdict"] == "regressed"  # regressions listed first
    assert any("h200" in error.value and "regressed" in error.value for error in app.error)

    # Every sweep, not only the latest: B200's three nightly values, the last with its repeats' interval.
    rows = history(app)
    b200_rows = rows[rows["configuration"].str.startswith("b200 · vllm")]
    assert list(b200_rows["sweep"]) == ["nightly-1", "nightly-2", "nightly-3"]
    assert list(b200_rows["output tok/s/GPU"]) == pytest.approx([1500.0, 1510.0, 1500.0])
    latest = b200_rows.iloc[-1]
    assert latest["repeats read"] == 3 and latest["95 % low"] == pytest.approx(1450.32, abs=0.01)
    assert list(rows.loc[rows["configuration"].str.startswith("h200"), "regressed"]) == [False, False, True]
    assert not b200_rows["regressed"].any()
    # One type per column, so Arrow draws the table (a column of dates and words made it log a traceback on every
    # visit): the finish time as text, every figure a number.
    assert all(isinstance(value, str) and value.endswith(" UTC") for value in rows["finished"])
    assert rows["95 % low"].dtype == float and rows["95 % low"].isna().any()  # the single-repeat sweeps have none
    assert "at" not in rows.columns


def test_measured_point_target_from_a_link(seeded_hub: str) -> None:
    app = open_page("trends", {"target": "30"})
    table = verdicts(app)
    h200 = only(table, "h200")
    assert h200["verdict"] == "regressed" and h200["latest"] == 900.0 and h200["change"] == "-10.2%"
    assert h200["prediction low"] == pytest.approx(947.48, abs=0.01)
    assert only(table, "b200 · vllm")["verdict"] == "ok"
    # The imported MI355X was measured from 40 tok/s/user up: no figure at 30, never extrapolated.
    assert only(table, "mi355x")["verdict"] == "no figure at 30"


def test_minimum_drop_from_a_link(seeded_hub: str) -> None:
    # A 10.2 % drop is not flagged when the viewer asks for 20 % or more.
    table = verdicts(open_page("trends", {"target": "30", "drop": "20"}))
    assert only(table, "h200")["verdict"] == "ok"
    assert "smaller than the 20.0% minimum" in only(table, "h200")["reason"]


def test_share_link_shows_only_the_chosen_hardware(seeded_hub: str) -> None:
    app = open_page("trends", {"hardware": "h200"})
    table = verdicts(app)
    assert list(table["hardware"]) == ["h200"] and list(table["verdict"]) == ["regressed"]
    assert set(history(app)["sweep"]) == {"nightly-1", "nightly-2", "nightly-3"}
    assert app.multiselect(key="param-hardware").value == ["h200"]


def test_imported_visible_and_labelled_simulated_hidden(seeded_hub: str) -> None:
    table = verdicts(open_page("trends"))
    mi355x = only(table, "mi355x")
    assert mi355x["configuration"].endswith("[imported]") and mi355x["origin"] == "imported"
    assert mi355x["latest"] == pytest.approx(1200.0) and mi355x["verdict"] == "not enough history"
    assert "cpu-local" not in set(table["hardware"])
    shown = verdicts(open_page("trends", {"origin": ["measured", "imported", "simulated"], "target": "350"}))
    simulated = only(shown, "cpu-local")
    assert simulated["configuration"].endswith("[simulated]") and simulated["latest"] == pytest.approx(65.0)


def test_chart_marks_the_regression(seeded_hub: str) -> None:
    app = open_page("trends")
    (chart,) = app.get("vega_lite_chart")
    spec = json.dumps(json.loads(chart.proto.spec))
    assert '"triangle-down"' in spec and '"errorbar"' in spec
    assert '"color": {"field": "configuration"' in spec  # few configurations: a legend entry each
    assert len(app.get("download_button")) == 2


def test_one_hardware_database(hub_database: str) -> None:
    _seed(hub_database)
    app = open_page("trends", {"target": "500"})
    (row,) = verdicts(app).itertuples(index=False)
    assert row.hardware == "cpu-local" and row.latest == 100.0 and row.verdict == "not enough history"
    # One sweep only: nothing could be compared, so no green "all clear" (it used to say "No configuration
    # regressed").
    assert not app.success
    assert any("No configuration could be compared at 500 tok/s/user" in info.value for info in app.info)


def test_undated_imports_are_date_unknown_in_run_order_and_off_the_time_axis(hub_database: str, tmp_path) -> None:
    """Two InferenceX runs of one configuration without dates: the later run id is the latest whatever the import
    order, the history says 'date unknown', and the chart says why it has nothing to draw."""
    from tests.conftest import run_cli

    # One b200 configuration at 100, 50 and 25 tok/s/user (TPOT 10, 20, 40 ms), as agg_bmk.json rows state it.
    rows = [{"hw": "b200", "conc": conc, "model": "deepseek-r1", "framework": "sglang", "precision": "fp8",
             "isl": 1024, "osl": 1024, "tp": 8, "tput_per_gpu": tput * 2, "output_tput_per_gpu": tput,
             "median_ttft": 0.2, "median_tpot": tpot}
            for conc, tpot, tput in [(4, 0.010, 500.0), (16, 0.020, 1500.0), (64, 0.040, 3000.0)]]  # fmt: skip
    for run, factor in (("300", 1.2), ("200", 1.0)):  # the newer run imported first
        path = tmp_path / f"run_{run}" / "agg_bmk.json"
        path.parent.mkdir()
        path.write_text(
            json.dumps(
                [
                    dict(
                        row,
                        tput_per_gpu=row["tput_per_gpu"] * factor,
                        output_tput_per_gpu=row["output_tput_per_gpu"] * factor,
                    )
                    for row in rows
                ]
            )
        )
        assert run_cli("import", "inferencex", str(path)).returncode == 0
    app = open_page("trends")
    table = history(app)
    assert set(table["finished"]) == {"date unknown"}
    assert list(table["sweep"]) == ["inferencex-run-200", "inferencex-run-300"]  # run order, not import order
    assert verdicts(app).iloc[0]["latest sweep"] == "inferencex-run-300"
    assert any("has 'date unknown'" in info.value for info in app.info), [info.value for info in app.info]


def test_many_configurations_colour_by_hardware_and_shape_by_engine(hub_database: str) -> None:
    """The dashboard's history imported gave 44 configurations on the chart: a legend entry each filled the chart's
    420 pixels and left the plot no height (seen in Chromium: axes, no points). Past the palette's eight colours the
    chart colours by hardware and shapes by engine, as the Pareto explorer does; each configuration keeps its line."""
    from tests.site.hub_fixture import seed_many_configurations

    seed_many_configurations(hub_database)
    app = open_page("trends", {"target": "50"})
    (chart,) = app.get("vega_lite_chart")
    spec = json.dumps(json.loads(chart.proto.spec))
    assert '"color": {"field": "hardware"' in spec and '"shape": {"field": "engine"' in spec
    assert '"detail": {"field": "configuration"' in spec  # one line per configuration still
    assert any("9 configurations: colour shows the hardware" in caption.value for caption in app.caption)
