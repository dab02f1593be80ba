"""Projected points (origin `projected`) on the real InferenceX sample: written by `infersweep project`, never in a
measured-only view of any results page or of `compare`, drawn and labelled when switched on; the backtest runs."""

from __future__ import annotations

import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT, run_cli
from tests.site.conftest import open_page

SAMPLE = sorted(str(path) for path in (ROOT / "tests" / "data" / "inferencex").glob("run_*/agg_bmk.json"))
RESULT_PAGES = ("overview", "pareto", "tco", "profit", "compare", "trends")


@pytest.fixture
def projected_hub(hub_database: str) -> str:
    """The real sample imported, and H200's curves projected to B200 (both measured it in the sample)."""
    imported = run_cli("import", "inferencex", *SAMPLE)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    projected = run_cli("project", "--from", "h200", "--to", "b200")
    assert projected.returncode == 0, projected.stdout + projected.stderr
    assert "origin `projected`" in projected.stdout
    again = run_cli("project", "--from", "h200", "--to", "b200")
    assert again.returncode == 0 and re.search(r"│ 0 +│ [1-9]", again.stdout), again.stdout  # stored once
    return hub_database


def shown_text(app: AppTest) -> str:
    """Everything a reader sees of results on the page: its tables and its charts' data."""
    parts = [frame.value.to_csv() for frame in app.dataframe]
    parts += [
        json.dumps(chart.spec if hasattr(chart, "spec") else str(chart.proto)) for chart in app.get("vega_lite_chart")
    ]
    parts += [str(chart.proto) for chart in app.get("arrow_vega_lite_chart")]
    return "\n".join(parts)


def test_projected_points_never_appear_in_a_measured_only_view(projected_hub: str) -> None:
    for page in RESULT_PAGES:
        app = open_page(page, from_overview=page != "overview")
        text = shown_text(app)
        assert "projected" not in text, page
    compare = run_cli("compare", "--at-interactivity", "50")
    assert compare.returncode == 0, compare.stderr
    assert "projected" not in compare.stdout and "inferencex-" in compare.stdout


def test_projected_points_are_labelled_with_their_source_chip_when_switched_on(projected_hub: str) -> None:
    app = open_page("pareto", {"origin": ["imported", "projected"], "hardware": "b200", "view": "Table"})
    frame = app.dataframe[0].value
    projected = frame[frame["origin"] == "projected"]
    assert not projected.empty
    assert all("projected from h200" in name for name in projected["configuration"])
    assert any("projected" in warning.value for warning in app.sidebar.warning)
    compare = run_cli("compare", "--at-interactivity", "50", "--include-projected")
    assert compare.returncode == 0 and "projected" in compare.stdout


def test_the_backtest_prints_its_pairs_and_the_median_error_on_the_sample(projected_hub: str) -> None:
    result = run_cli("project", "backtest", "--at-interactivity", "50", "--at-interactivity", "100")
    assert result.returncode == 0, result.stdout + result.stderr
    summary = re.search(r"median absolute error ([\d.]+) % over (\d+) pairs", result.stdout)
    assert summary is not None, result.stdout
    assert int(summary.group(2)) >= 2  # gpt-oss-120b on H100/H200/B200 and DeepSeek-R1 fp8 on H200/B200
    # Projected points are results of a model: they never enter the backtest as measurements.
    assert "projected from" not in result.stdout
    ratio = run_cli("project", "ratio", "--from", "b200", "--to", "vera-rubin", "--over", "gb300",
                    "--model", "deepseek-r1", "--at-interactivity", "50")  # fmt: skip
    assert ratio.returncode == 0, ratio.stdout + ratio.stderr
    assert "vr200-nvl72 over gb300-nvl72" in ratio.stdout and re.search(r"│ low +│.*│ \d+\.\d\dx", ratio.stdout)
    unknown = run_cli("project", "ratio", "--from", "b200", "--to", "rubin-ultra", "--over", "gb300")
    assert unknown.returncode == 2 and "'rubin-ultra'" in unknown.stderr and "Traceback" not in unknown.stderr


def test_methodology_publishes_the_backtest_and_a_projected_point_shows_what_it_came_from(projected_hub: str) -> None:
    app = open_page("methodology", from_overview=True)
    backtests = [frame.value for frame in app.dataframe if "unchanged %" in frame.value.columns]
    assert len(backtests) == 1 and len(backtests[0]) >= 2, [list(f.value.columns) for f in app.dataframe]
    assert set(backtests[0]["source"]) <= {"h100", "h200", "b200"}
    # The hub's medians are the CLI's (from the unrounded errors, not the table's rounded column).
    printed = run_cli("project", "backtest")
    median = re.search(r"^median absolute error ([\d.]+) % over", printed.stdout, re.MULTILINE)
    assert median is not None, printed.stdout
    assert any(f"Median absolute error **{median.group(1)} %**" in block.value for block in app.markdown)
    # The medians by group, as the backtest benchmark and the CLI print them.
    by_group = [frame.value for frame in app.dataframe if "median abs. error %" in frame.value.columns]
    assert len(by_group) == 1, [list(f.value.columns) for f in app.dataframe]
    same_vendor = re.search(r"^same-vendor: median absolute error ([\d.]+) % over (\d+) pairs", printed.stdout,
                            re.MULTILINE)  # fmt: skip
    assert same_vendor is not None, printed.stdout
    row = by_group[0].set_index("pairs").loc["same-vendor"]
    assert row["median abs. error %"] == pytest.approx(float(same_vendor.group(1)), abs=0.05)
    assert row["rows"] == int(same_vendor.group(2))
    overheads = [frame.value for frame in app.dataframe if "overhead ms/step" in frame.value.columns]
    assert len(overheads) == 1 and not overheads[0].empty
    assert {"h200", "b200"} <= set(overheads[0]["hardware"]) and (overheads[0]["overhead ms/step"] >= 0).all()

    sweep = "projection-h200-to-b200"
    detail = open_page("run_detail", {"sweep": sweep}, from_overview=True)
    assert any("projected from h200" in block.value for block in detail.markdown), [b.value for b in detail.markdown]
    assert detail.json and "roofline-overhead-2" in detail.json[0].value
    # How wrong projections like it have been: its backtest group, as `infersweep project` prints it when it stores.
    stored = run_cli("project", "--from", "h200", "--to", "b200")
    told = re.search(r"h200 -> b200 \(same-vendor, NVIDIA\): median absolute error ([\d.]+) % over (\d+) rows",
                     stored.stdout)  # fmt: skip
    assert told is not None, stored.stdout
    # The group it names is one the backtest prints, with the same figure (it printed only the top-level groups).
    assert f"same-vendor, NVIDIA: median absolute error {told.group(1)} % over {told.group(2)} pairs" in printed.stdout
    expected = f"(same-vendor, NVIDIA, the backtest on this hub's measured and imported results): median absolute " \
               f"error **{told.group(1)} %** over {told.group(2)} rows"  # fmt: skip
    assert any(expected in block.value for block in detail.markdown), [b.value for b in detail.markdown]


def test_a_projection_with_a_band_shows_its_band_never_one_end_silently(hub_database: str) -> None:
    """VR200's registry figures are ranges (HBM bandwidth 13-22 TB/s): `project` stores a low and a high edge, no
    central one. Read as two configurations of one chip, the envelope took the optimistic edge as VR200's figure.
    Now the figure is the low (conservative) edge, the band is drawn and printed, and the backtest's median error
    of the projection's group stands beside it."""
    assert run_cli("import", "inferencex", *SAMPLE).returncode == 0
    projected = run_cli("project", "--from", "b200", "--to", "vera-rubin", "--model", "deepseek-r1")
    assert projected.returncode == 0, projected.stdout + projected.stderr
    link = {"origin": ["imported", "projected"], "model": "deepseek-r1", "precision": "fp4", "workload": "1k/1k",
            "tiers": ["50"], "hardware": ["b200", "vr200-nvl72"]}  # fmt: skip
    overview = open_page("overview", link)
    cell = overview.dataframe[0].value.iloc[0]["vr200-nvl72"]
    assert re.search(r"· band \$[\d.]+–[\d.]+", cell) and "backtest median error" in cell and "[projected]" in cell
    tco = open_page("tco", {**{k: v for k, v in link.items() if k != "tiers"}, "at": "50", "tab": "Table"})
    bars = next(frame.value for frame in tco.dataframe if "$/M output, band low" in frame.value.columns)
    vr200 = bars.set_index("hardware").loc["vr200-nvl72"]
    low, high = vr200["$/M output, band low"], vr200["$/M output, band high"]
    assert low < high
    # The bar is the conservative end (the low figures: the higher cost), not the cheap end.
    assert vr200["$/M output tokens"] == pytest.approx(high, rel=5e-3) and vr200["$/M output tokens"] > low
    assert len(tco.get("vega_lite_chart")) >= 1


def test_the_tco_page_gives_a_chip_over_chip_ratio_at_the_speed_and_at_peak(hub_database: str) -> None:
    """The ratio `infersweep project ratio` computes, on the hub: VR200 (projected, a band) over B200 (imported) for
    DeepSeek-R1 FP4 1k/1k, at 50 tok/s/user and at peak, each along its envelope, the band the ratio's range."""
    assert run_cli("import", "inferencex", *SAMPLE).returncode == 0
    assert run_cli("project", "--from", "b200", "--to", "vera-rubin", "--model", "deepseek-r1").returncode == 0
    app = open_page("tco", {"origin": ["imported", "projected"], "model": "deepseek-r1", "precision": "fp4",
                            "workload": "1k/1k", "hardware": ["b200", "vr200-nvl72"], "ratio": "vr200-nvl72",
                            "over": "b200"})  # fmt: skip
    table = next(frame.value for frame in app.dataframe if "ratio" in frame.value.columns)
    assert list(table["at"]) == ["50 tok/s/user", "peak"]
    for _, row in table.iterrows():
        assert row["ratio"] == pytest.approx(row["vr200-nvl72 tok/s/GPU"] / row["b200 tok/s/GPU"], rel=1e-2)
        assert row["ratio band low"] <= row["ratio"] <= row["ratio band high"]
