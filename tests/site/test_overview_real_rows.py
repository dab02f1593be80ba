"""The Overview on real InferenceX rows (tests/data/inferencex): which chip serves DeepSeek-R1 FP4 1k/1k cheapest at
50 tok/s/user, B200 (run 20286929996) against MI355X (run 20248091324), at the owning tier, checked by hand."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT, run_cli
from tests.site.conftest import open_page

SAMPLE = sorted(str(path) for path in (ROOT / "tests" / "data" / "inferencex").glob("run_*/agg_bmk.json"))
LINK = {"model": "deepseek-r1", "precision": "fp4", "workload": "1k/1k", "tiers": ["50"],
        "tier": "owning_hyperscaler", "hardware": ["b200", "mi355x"]}  # fmt: skip


def linear(x: float, left: tuple[float, float], right: tuple[float, float]) -> float:
    (x0, y0), (x1, y1) = left, right
    return y0 + (x - x0) * (y1 - y0) / (x1 - x0)


def test_b200_is_the_cheapest_at_50_tok_s_user_by_hand(hub_database: str) -> None:
    imported = run_cli("import", "inferencex", *SAMPLE)
    assert imported.returncode == 0, imported.stderr
    app = open_page("overview", {**LINK, "tab": "All figures"})
    table = next(frame.value for frame in app.dataframe if "$/M output tokens" in frame.value.columns)
    rows = table.set_index("hardware")
    # By hand from the rows (1000 / median TPOT, output tok/s/GPU):
    # - B200 TP4·EP4 brackets 50 between (62.25, 330.9) at 32 sequences and (49.14, 549.9) at 64; its TP8·EP8
    #   curve ends at 75.1 tok/s/user, so it does not reach 50. Linear between the two: 535.5 tok/s/GPU.
    # - MI355X TP4 brackets 50 between (51.21, 396.4) at 32 and (38.20, 595.6) at 64: linear 414.9; its TP8 point
    #   at exactly 50.0 gives 386.6, less. So TP4 is MI355X's cheapest.
    b200_linear = linear(50.0, (62.25, 330.9), (49.14, 549.9))
    mi355x_linear = linear(50.0, (51.21, 396.4), (38.20, 595.6))
    b200, mi355x = rows.loc["b200"], rows.loc["mi355x"]
    assert "tp4" in b200["configuration"] and "tp4" in mi355x["configuration"]
    # The hub reads along a monotone cubic, not a line: within the bracket, and within 1.5 % of the line here (0.8 % and 0.9 %).
    assert 330.9 <= b200["output tok/s/GPU"] <= 549.9
    assert b200["output tok/s/GPU"] == pytest.approx(b200_linear, rel=0.015)
    assert 396.4 <= mi355x["output tok/s/GPU"] <= 595.6
    assert mi355x["output tok/s/GPU"] == pytest.approx(mi355x_linear, rel=0.015)
    # $/M output = $/GPU-hr / (tok/s/GPU x 3600 / 1e6): B200 $1.73, MI355X $1.50 at the owning tier.
    assert b200["$/M output tokens"] == pytest.approx(1.73 / (b200["output tok/s/GPU"] * 0.0036))
    assert mi355x["$/M output tokens"] == pytest.approx(1.50 / (mi355x["output tok/s/GPU"] * 0.0036))
    # By the lines: B200 1.73 / (535.5 x 0.0036) = $0.897, MI355X 1.50 / (414.9 x 0.0036) = $1.004 per M tokens.
    assert b200["$/M output tokens"] < mi355x["$/M output tokens"]
    assert 1.73 / (b200_linear * 0.0036) == pytest.approx(0.897, abs=0.001)
    assert 1.50 / (mi355x_linear * 0.0036) == pytest.approx(1.004, abs=0.001)
    # The scorecard's first-screen cells say the same.
    grid = next(
        frame.value
        for frame in app.dataframe
        if "cpu-local" not in frame.value.columns and "b200" in frame.value.columns
    )
    cells = grid.iloc[0]
    assert cells["b200"].startswith("$") and cells["mi355x"].startswith("$")
    # The answer on the first screen: the cheapest chip and its cost.
    assert cells["cheapest"] == f"b200 ${b200['$/M output tokens']:.4f} [imported]"


def test_a_point_carries_its_provenance_in_the_pareto_hover(hub_database: str) -> None:
    import json

    assert run_cli("import", "inferencex", *SAMPLE).returncode == 0
    app = open_page("pareto", {"model": "deepseek-r1", "precision": "fp4", "workload": "1k/1k", "hardware": "b200"})
    chart = (app.get("arrow_vega_lite_chart") + app.get("vega_lite_chart"))[0]
    spec = json.loads(chart.proto.spec)
    tooltips = {item["field"] for layer in spec["layer"] for item in layer["encoding"].get("tooltip", [])}
    assert {"origin", "date", "image", "source", "concurrency", "series"} <= tooltips
    data = chart.proto.spec + "".join(str(dataset) for dataset in chart.proto.datasets)
    assert "lmsysorg/sglang:v0.5.6-cu129-amd64" in data and "InferenceX run 20286929996" in data
    # The source run links to where it ran: the folder's GitHub Actions run (the rows carry no run_url).
    assert "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/20286929996" in data
    detail = open_page("run_detail", {"sweep": "inferencex-run-20286929996"}, from_overview=True)
    assert "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/20286929996" in detail.info[0].value


def test_the_unfiltered_overview_reads_each_workload_on_its_own_curve(hub_database: str) -> None:
    """Before: B200 TP8·EP8's 1k/1k, 1k/8k and 8k/1k points were one curve (one imported fingerprint), so the first
    screen priced DeepSeek-R1 FP4 1k/1k at 50 tok/s/user from a 1k/8k point: 'b200 $0.7867' instead of $0.9045."""
    assert run_cli("import", "inferencex", *SAMPLE).returncode == 0
    app = open_page("overview", {"tiers": ["50"]})
    grid = app.dataframe[0].value.set_index(["model", "precision", "workload", "tok/s/user"])
    assert grid.loc[("deepseek-r1", "fp4", "1k/1k", 50.0)]["cheapest"] == "b200 $0.9045 [imported]"
