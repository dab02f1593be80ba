"""The Overview on real InferenceX rows (tests/data/inferencex): which chip serves DeepSeek-R1 FP4 1k/1k cheapest at
50 tok/s/user, B200 (run 20286929996) against MI355X (run 20248091324), at the owning tier, checked by hand; and
every chip's envelope built by hand from the raw rows against every cell of the whole sample."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks.envelope_check import hand_chip_bracket
from recipes.hardware import hardware_key_for, load_hardware_registry
from recipes.model_registry import model_key_for
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
    # Both to three significant figures.
    assert b200["$/M output tokens"] == pytest.approx(1.73 / (b200["output tok/s/GPU"] * 0.0036), rel=5e-3)
    assert mi355x["$/M output tokens"] == pytest.approx(1.50 / (mi355x["output tok/s/GPU"] * 0.0036), rel=5e-3)
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
    assert cells["cheapest"] == f"b200 ${b200['$/M output tokens']:.3f} [imported]"


def _tooltips(node: object) -> Iterator[dict]:
    """Every tooltip entry of a Vega-Lite spec, in whatever layer it is (the chip envelopes add a layer above)."""
    if isinstance(node, dict):
        tooltip = node.get("encoding", {}).get("tooltip", []) if isinstance(node.get("encoding"), dict) else []
        yield from (item for item in tooltip if isinstance(item, dict))
        for layer in node.get("layer", []):
            yield from _tooltips(layer)


def test_a_point_carries_its_provenance_in_the_pareto_hover(hub_database: str) -> None:
    import json

    assert run_cli("import", "inferencex", *SAMPLE).returncode == 0
    app = open_page("pareto", {"model": "deepseek-r1", "precision": "fp4", "workload": "1k/1k", "hardware": "b200"})
    chart = (app.get("arrow_vega_lite_chart") + app.get("vega_lite_chart"))[0]
    spec = json.loads(chart.proto.spec)
    items = list(_tooltips(spec))
    tooltips = {item["field"] for item in items}
    assert {"origin", "date", "image", "source", "concurrency", "series", "interval"} <= tooltips
    # Vega's tooltip draws an entry titled "image" as a picture (a broken one for an image tag); and a bound that
    # a single run does not have would read "null": the interval is text ("one run: no interval").
    titles = {item.get("title", item["field"]) for item in items}
    assert "image" not in titles and "engine image" in titles and not {"y_low", "y_high"} & tooltips
    data = chart.proto.spec + "".join(str(dataset) for dataset in chart.proto.datasets)
    assert "lmsysorg/sglang:v0.5.6-cu129-amd64" in data and "InferenceX run 20286929996" in data
    assert "one run: no interval" in data
    # The source run links to where it ran: the folder's GitHub Actions run (the rows carry no run_url).
    assert "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/20286929996" in data
    detail = open_page("run_detail", {"sweep": "inferencex-run-20286929996"}, from_overview=True)
    assert "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/20286929996" in detail.info[0].value


def test_the_unfiltered_overview_reads_each_workload_on_its_own_curve(hub_database: str) -> None:
    """Before: B200 TP8·EP8's 1k/1k, 1k/8k and 8k/1k points were one curve (one imported fingerprint), so the first
    screen priced DeepSeek-R1 FP4 1k/1k at 50 tok/s/user from a 1k/8k point: 'b200 $0.7867' instead of $0.9045
    (shown to three significant figures: $0.905)."""
    assert run_cli("import", "inferencex", *SAMPLE).returncode == 0
    app = open_page("overview", {"tiers": ["50"]})
    grid = app.dataframe[0].value.set_index(["model", "precision", "workload", "tok/s/user"])
    assert grid.loc[("deepseek-r1", "fp4", "1k/1k", 50.0)]["cheapest"] == "b200 $0.905 [imported]"


MEASURED = {"conc", "tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu", "median_ttft", "p99_ttft",
            "median_tpot", "mean_tpot", "median_e2el", "p99_intvty", "median_intvty", "std_intvty"}  # fmt: skip


def raw_curves(paths: list[str]) -> dict[tuple[str, str, str, str], list[list[tuple[float, float]]]]:
    """(model, precision, workload, chip) -> each configuration's raw points (tok/s/user, output tok/s per GPU of the
    deployment), a configuration being one run's rows that agree on every field but the concurrency and the figures.

    By the field meanings of the sample's README: interactivity is `median_intvty`; output per GPU is
    `output_tput_per_gpu`, which a disaggregated row states per decode GPU, so × D / (P + D)."""
    names = {1024: "1k", 8192: "8k"}
    curves: dict[tuple[str, str, str, str], dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(
        list))  # fmt: skip
    for path in paths:
        for row in json.loads(Path(path).read_text()):
            output = row["output_tput_per_gpu"]
            if row.get("disagg"):
                output *= row["num_decode_gpu"] / (row["num_prefill_gpu"] + row["num_decode_gpu"])
            # Speculative decoding is a series of its own: '1k/1k · mtp' (db.reads.workload_label).
            spec = row.get("spec_decoding")
            variant = f" · {spec}" if spec not in (None, "", "none") else ""
            key = (model_key_for(row.get("infmax_model_prefix"), row["model"]), row["precision"],
                   f"{names[row['isl']]}/{names[row['osl']]}{variant}", hardware_key_for(row["hw"]))  # fmt: skip
            configuration = path + json.dumps({k: v for k, v in row.items() if k not in MEASURED}, sort_keys=True)
            curves[key][configuration].append((row["median_intvty"], output))
    return {key: list(by_configuration.values()) for key, by_configuration in curves.items()}


def test_every_cell_of_the_sample_is_its_chips_envelope_by_hand(hub_database: str) -> None:
    """Every row and tier of the whole sample, every run pooled (the history toggle off, so the hand envelope takes
    every raw row): each chip's throughput lies within its hand-made bracket (benchmarks/envelope_check.py: the
    envelope of its points, or a configuration's own frontier where higher), a chip has a figure exactly when its
    points reach the tier, and the chip named cheapest is one no other chip beats by hand."""
    assert run_cli("import", "inferencex", *SAMPLE).returncode == 0
    app = open_page("overview", {"latest": "0", "tab": "All figures"})
    table = next(frame.value for frame in app.dataframe if "$/M output tokens" in frame.value.columns)
    grid = app.dataframe[0].value.set_index(["model", "precision", "workload", "tok/s/user"])
    owning = {key: spec.tco("owning_hyperscaler") for key, spec in load_hardware_registry().items()}
    curves = raw_curves(SAMPLE)
    checked = 0
    for _, cell in table.iterrows():
        key = (cell["model"], cell["precision"], cell["workload"], cell["hardware"])
        bracket = hand_chip_bracket(curves[key], float(cell["tok/s/user"]))
        if bracket is None:
            assert pd.isna(cell["$/M output tokens"]), key
            continue
        read = cell["output tok/s/GPU"]
        assert bracket[0] * 0.995 <= read <= bracket[1] * 1.005, (key, read, bracket)  # three significant figures
        checked += 1
    assert checked >= 40
    for (model, precision, workload, tier), row in grid.iterrows():
        cells = table[(table["model"] == model) & (table["precision"] == precision) & (table["workload"] == workload)
                      & (table["tok/s/user"] == tier)]  # fmt: skip
        costs = {}
        for chip in cells["hardware"]:
            bracket = hand_chip_bracket(curves[(model, precision, workload, chip)], tier)
            if bracket is not None and owning.get(chip):
                costs[chip] = (owning[chip] / (bracket[1] * 0.0036), owning[chip] / (bracket[0] * 0.0036))
        if not costs:
            assert row["cheapest"].startswith("–"), row["cheapest"]
            continue
        named = row["cheapest"].split(" ")[0]
        # The named chip's lowest possible cost is no more than any other chip's highest possible cost.
        assert all(costs[named][0] <= high for low, high in costs.values()), (model, workload, tier, costs)


def test_a_chip_measured_only_faster_than_the_tier_still_serves_it(hub_database: str) -> None:
    """gpt-oss-120b FP4 8k/1k: GB200 NVL72 (Dynamo-TRT, run 20786863188) was measured from 67.9 tok/s/user up, B200
    TRT from 72.1: at 50 tok/s/user the Overview said 'no chip: outside the measured range'. Each chip serves 50 with
    its slowest point, faster than asked, and GB200 is the cheaper."""
    assert run_cli("import", "inferencex", *SAMPLE).returncode == 0
    app = open_page("overview", {"model": "gpt-oss-120b", "workload": "8k/1k", "tiers": ["50"]})
    row = app.dataframe[0].value.set_index(["model", "precision", "workload", "tok/s/user"]).iloc[0]
    # GB200's slowest point: concurrency 512 at 67.94 tok/s/user, 11,986.0 output tok/s per decode GPU with P = D = 2:
    # 5,993.0 per GPU of the deployment. B200 TRT's slowest: concurrency 128 at 72.06, 4,495.0 per GPU.
    owning = {key: spec.tco("owning_hyperscaler") for key, spec in load_hardware_registry().items()}
    gb200 = owning["gb200-nvl72"] / (11986.0 * 2 / 4 * 0.0036)
    b200 = owning["b200"] / (4495.0 * 0.0036)
    assert gb200 < b200
    assert row["gb200-nvl72"].startswith(f"${gb200:.3g} ") and "at 67.9 tok/s/user" in row["gb200-nvl72"]
    assert row["b200"].startswith(f"${b200:.3g} ") and "at 72.1 tok/s/user" in row["b200"]
    assert row["cheapest"] == f"gb200-nvl72 ${gb200:.3g} [imported]"


def test_an_imported_aggregate_row_is_not_checked_never_valid(hub_database: str) -> None:
    """An InferenceX row states figures but counts no request and no window: the request rules had nothing to read.
    The hub said 'Valid: every validity rule held' of it; now every page says 'not checked' and counts it apart."""
    from urllib.parse import parse_qs, urlparse

    assert run_cli("import", "inferencex", *SAMPLE).returncode == 0
    app = open_page("pareto", {"model": "deepseek-r1", "precision": "fp4", "workload": "1k/1k", "hardware": "b200",
                               "view": "Table"})  # fmt: skip
    table = next(frame.value for frame in app.dataframe if "validity" in frame.value.columns)
    assert set(table["validity"]) == {"not checked"}
    counts = " ".join(caption.value for caption in app.sidebar.caption)
    assert "not checked point repeats in this view" in counts and " valid" not in counts.split("not checked")[0]
    link = parse_qs(urlparse(table["run"].iloc[0]).query)
    detail = open_page("run_detail", {"sweep": link["sweep"][0], "point": link["point"][0]}, from_overview=True)
    said = " ".join(block.value for block in [*detail.info, *detail.success])
    assert "Not checked" in said and "Valid:" not in said
    assert "at least max(10, 2 × concurrency) measured requests" in said  # a rule that could not be applied
    # The row states no engine version, its image tag does (b200 SGLang: lmsysorg/sglang:v0.5.6-cu129-amd64).
    build = next(block.value for block in detail.markdown if block.value.startswith("Engine build:"))
    assert "0.5.6 (read from the image tag)" in build and "not stated" not in build, build


def test_compare_json_gives_each_chip_the_figures_the_overview_shows(hub_database: str) -> None:
    """`infersweep compare --json` and the Overview read chips by one code path: same chips, same $/M output tokens,
    same runs, on real rows (DeepSeek-R1 FP4 1k/1k at 50 tok/s/user)."""
    assert run_cli("import", "inferencex", *SAMPLE).returncode == 0
    answer = run_cli("compare", "--at-interactivity", "50", "--model", "deepseek-r1", "--precision", "fp4",
                     "--isl", "1024", "--osl", "1024", "--json")  # fmt: skip
    assert answer.returncode == 0, answer.stderr
    chips = json.loads(answer.stdout)
    assert [chip["hardware"] for chip in chips] == ["b200", "mi355x"]  # cheapest first
    assert {key for chip in chips for key in chip} >= {"hardware", "usd_per_million_output",
        "output_throughput_per_gpu", "configurations", "runs", "validity", "origin"}  # fmt: skip
    assert all(chip["validity"] == "not checked" and chip["origin"] == "imported" for chip in chips)
    app = open_page("overview", {**LINK, "tab": "All figures"})
    table = next(frame.value for frame in app.dataframe if "$/M output tokens" in frame.value.columns)
    shown = table.set_index("hardware")
    for chip in chips:
        row = shown.loc[chip["hardware"]]
        assert row["$/M output tokens"] == chip["usd_per_million_output"]
        assert row["output tok/s/GPU"] == chip["output_throughput_per_gpu"] and row["runs"] == chip["runs"]
    # By hand (test_b200_is_the_cheapest_at_50_tok_s_user_by_hand): B200 TP4·EP4 at ~$0.90, MI355X at ~$1.0.
    assert chips[0]["usd_per_million_output"] == pytest.approx(0.9, abs=0.01)
    bad = run_cli("compare", "--at-interactivity", "50", "--precision", "fp16", "--json")
    assert bad.returncode != 0 and "--precision" in bad.stderr and "fp4" in bad.stderr and "Traceback" not in bad.stderr


def test_after_a_filter_change_every_figure_is_what_a_fresh_page_reads(hub_database: str) -> None:
    """The hub keeps chip reads per state of the results and gives them back after a filter change
    (`economics.read_chips`' memo): the figures after removing a chip must be those a page opened afresh on the same
    link reads, with every cache emptied first."""
    import streamlit as st

    imported = run_cli("import", "inferencex", *SAMPLE)
    assert imported.returncode == 0, imported.stderr

    def figures(app: object) -> pd.DataFrame:
        return next(frame.value for frame in app.dataframe if "$/M output tokens" in frame.value.columns)  # type: ignore[attr-defined]

    app = open_page("overview", {"tab": "All figures"})
    chips = list(app.multiselect(key="param-hardware").value)
    assert len(chips) > 2
    app.multiselect(key="param-hardware").set_value(chips[1:]).run()
    changed = figures(app)
    st.cache_resource.clear()
    st.cache_data.clear()
    fresh = figures(open_page("overview", {"tab": "All figures", "hardware": chips[1:]}))
    assert set(changed["hardware"]) == set(chips[1:])
    pd.testing.assert_frame_equal(changed.reset_index(drop=True), fresh.reset_index(drop=True))


MTP_RUN = ROOT / "tests" / "data" / "inferencex" / "run_20806551498" / "agg_bmk.json"  # MI355X DeepSeek-R1 FP8, MTP


def test_speculative_decoding_is_a_labelled_series_of_its_own_on_every_surface(hub_database: str, tmp_path) -> None:
    """The sample's MTP run (MI355X DeepSeek-R1 FP8 1k/1k, disaggregated) beside the same deployment without MTP (its
    rows at half the throughput, as a run of its own): two series, each labelled, never one envelope, on the
    Overview, TCO, Profit, Pareto, the API and `compare --json`. (The sample has no chip measured both ways; on a
    corpus that has, GB200's MTP rows read $0.490/M against $0.742/M without, folded in unlabelled.)"""
    from orchestrator.public_api import build_views

    plain = tmp_path / "run_20806551497" / "agg_bmk.json"
    plain.parent.mkdir()
    plain.write_text(json.dumps([
        {**row, "spec_decoding": "none", **{name: row[name] / 2 for name in
                                            ("tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu")}}
        for row in json.loads(MTP_RUN.read_text())
    ]))  # fmt: skip
    assert run_cli("import", "inferencex", *SAMPLE, str(plain)).returncode == 0
    mtp, without = ("deepseek-r1", "fp8", "1k/1k · mtp"), ("deepseek-r1", "fp8", "1k/1k")

    grid = open_page("overview", {"model": "deepseek-r1", "precision": "fp8", "tiers": ["50"], "hardware": ["mi355x"]})
    rows = grid.dataframe[0].value.set_index(["model", "precision", "workload", "tok/s/user"])
    cost = {key: float(rows.loc[(*key, 50.0)]["mi355x"].split(" ")[0].lstrip("$")) for key in (mtp, without)}
    assert cost[without] == pytest.approx(2 * cost[mtp], rel=0.02), cost  # half the throughput, twice the cost
    assert any("'· mtp'" in caption.value for caption in grid.caption)  # the page says what the label means

    for page_name in ("tco", "profit"):
        app = open_page(page_name, {"model": "deepseek-r1", "precision": "fp8", "hardware": ["mi355x"]},
                        from_overview=True)  # fmt: skip
        shown = app.dataframe[0].value
        shown = shown[(shown["model"] == "deepseek-r1") & (shown["precision"] == "fp8")].set_index(["workload",
                                                                                                  "hardware"])  # fmt: skip
        assert {("1k/1k · mtp", "mi355x"), ("1k/1k", "mi355x")} <= set(shown.index), (page_name, list(shown.index))
        figure = "$/M output tokens" if page_name == "tco" else "revenue $/GPU-hr (100 % utilised)"
        assert shown.loc[("1k/1k · mtp", "mi355x"), figure] != shown.loc[("1k/1k", "mi355x"), figure]

    import pyarrow as pa

    for workload, labelled in (("1k/1k · mtp", True), ("1k/1k", False)):
        pareto = open_page("pareto", {"model": "deepseek-r1", "precision": "fp8", "hardware": "mi355x",
                                      "workload": workload})  # fmt: skip
        charts = pareto.get("arrow_vega_lite_chart") + pareto.get("vega_lite_chart")
        drawn = pd.concat([pa.ipc.open_stream(dataset.data.data).read_pandas() for chart in charts
                           for dataset in chart.proto.datasets if dataset.name == "points"])  # fmt: skip
        series = set(drawn.loc[drawn["hardware"] == "mi355x", "series"])
        assert series and all(("· mtp" in name) == labelled for name in series), (workload, series)

    engine = make_engine_for(hub_database)
    items = [item for item in build_views(engine, None)["envelopes"].items  # type: ignore[attr-defined]
             if item.hardware == "mi355x" and (item.model, item.precision) == ("deepseek-r1", "fp8")
             and item.interactivity == 50.0 and item.tco_tier == "owning_hyperscaler"]  # fmt: skip
    api = {item.workload: item.usd_per_million_output for item in items}
    assert len(items) == 2 and api["1k/1k"] == pytest.approx(2 * api["1k/1k · mtp"], rel=0.02)
    assert {key[2]: round(value, 2) for key, value in cost.items()} == {name: round(value, 2) for name, value in
                                                                        api.items()}  # the Overview's figures  # fmt: skip

    compared = run_cli("compare", "--at-interactivity", "50", "--json", "--model", "deepseek-r1", "--precision", "fp8")
    answers = {(row["hardware"], row["workload"]): row for row in json.loads(compared.stdout)}
    assert answers[("mi355x", "1k/1k · mtp")]["usd_per_million_output"] == pytest.approx(api["1k/1k · mtp"], rel=5e-3)
    assert answers[("mi355x", "1k/1k")]["usd_per_million_output"] == pytest.approx(api["1k/1k"], rel=5e-3)
    assert answers[("mi355x", "1k/1k · mtp")]["configurations"][0].endswith("-mtp")


def make_engine_for(url: str):  # -> sqlalchemy Engine
    from db.session import make_engine

    return make_engine(url)


def _sig(value: float) -> float:
    return float(f"{value:.3g}")


def test_every_cell_reads_the_same_on_every_surface(hub_database: str) -> None:
    """Every (model, precision, workload, chip, tier) of the sample through the Overview, the TCO calculator, the
    Profit estimator, the API's envelopes and `compare --json`: one figure (output tok/s/GPU and $/M output tokens,
    to three significant figures), one run count; and each figure lies within its runs' spread, or its note says
    why it cannot (several runs joined: no run alone gives it)."""
    from orchestrator.public_api import build_views

    assert run_cli("import", "inferencex", *SAMPLE).returncode == 0
    api = {(item.model, item.precision, item.workload, item.hardware, item.interactivity): item
           for item in build_views(make_engine_for(hub_database), None)["envelopes"].items  # type: ignore[attr-defined]
           if item.tco_tier == "owning_hyperscaler" and item.usd_per_million_output is not None}  # fmt: skip
    assert len(api) >= 30
    checked = 0
    overview = open_page("overview", {"tiers": ["30", "50", "100"], "tab": "All figures"})
    every_tier = next(frame.value for frame in overview.dataframe if "$/M output tokens" in frame.value.columns)
    for tier in (30.0, 50.0, 100.0):
        table = every_tier[every_tier["tok/s/user"] == tier]
        surfaces = {
            "overview": {(r["model"], r["precision"], r["workload"], r["hardware"]): r for _, r in table.iterrows()}
        }
        for name in ("tco", "profit"):
            app = open_page(name, {"at": f"{tier:g}"}, from_overview=True)
            shown = app.dataframe[0].value
            surfaces[name] = {
                (r["model"], r["precision"], r["workload"], r["hardware"]): r for _, r in shown.iterrows()
            }
        answers = json.loads(run_cli("compare", "--at-interactivity", f"{tier:g}", "--json").stdout)
        cli = {(a["model"], a["precision"], a["workload"], a["hardware"]): a for a in answers}
        for (model, precision, workload, hardware, at), item in api.items():
            if at != tier:
                continue
            key = (model, precision, workload, hardware)
            figure = _sig(item.output_throughput_per_gpu.mean)
            cost = _sig(item.usd_per_million_output)
            assert cli[key]["output_throughput_per_gpu"] == figure, (key, tier, "compare --json", cli[key])
            assert cli[key]["usd_per_million_output"] == cost and cli[key]["runs"] == item.runs, (key, tier)
            row = surfaces["overview"][key]
            assert _sig(row["output tok/s/GPU"]) == figure and _sig(row["$/M output tokens"]) == cost, (key, tier, row)
            for name in ("tco", "profit"):
                shown = surfaces[name][key]
                assert _sig(shown["output tok/s/GPU"]) == figure and shown["runs"] == item.runs, (name, key, tier)
            spread = cli[key]["runs_output_throughput_per_gpu"]
            if spread is not None and item.runs > 1:
                inside = spread[0] * 0.995 <= figure <= spread[1] * 1.005
                assert inside or "joins" in (row.get("note") or "") + (cli[key]["note"] or ""), (key, tier, spread)
            checked += 1
    assert checked == len(api)


def test_the_pareto_page_draws_the_envelope_the_overview_reads(hub_database: str) -> None:
    """Each chip's pale envelope line on the Pareto explorer passes through the figure the Overview reads at every
    tier (where a configuration's own curve passes above the envelope's points, the line follows it: the headline
    never sits above the band drawn under it)."""
    import pyarrow as pa

    assert run_cli("import", "inferencex", *SAMPLE).returncode == 0
    link = {"model": "deepseek-r1", "precision": "fp4", "workload": "1k/1k"}
    pareto = open_page("pareto", link)
    charts = pareto.get("arrow_vega_lite_chart") + pareto.get("vega_lite_chart")
    [drawn] = [pa.ipc.open_stream(dataset.data.data).read_pandas() for chart in charts
               for dataset in chart.proto.datasets if dataset.name == "envelopes"]  # fmt: skip
    overview = open_page("overview", {**link, "tiers": ["30", "50", "100"], "tab": "All figures"})
    table = next(frame.value for frame in overview.dataframe if "$/M output tokens" in frame.value.columns)
    checked = 0
    for _, cell in table[table["output tok/s/GPU"].notna()].iterrows():
        line = drawn[drawn["hardware"] == cell["hardware"]].sort_values("x")
        at = max(float(cell["tok/s/user"]), float(line["x"].min()))  # below the slowest point: that point
        drawn_there = float(np.interp(at, line["x"], line["y"]))
        assert drawn_there == pytest.approx(float(cell["output tok/s/GPU"]), rel=0.01), (cell["hardware"], at)
        checked += 1
    assert checked >= 4
