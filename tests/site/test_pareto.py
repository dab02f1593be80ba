"""The Pareto explorer, rendered with Streamlit's AppTest on the hand-checkable hub fixture.

Hand-worked figures (tests/site/hub_fixture.py): B200 at concurrency 16 in `nightly-3` ran three
repeats at 1480, 1500 and 1520 output tok/s/GPU, so the point is their mean 1500 with the Student-t
interval 1500 ± t(2, 0.975) · 20 / √3 = 1500 ± 49.68; at the owning-hyperscaler TCO of $1.73/GPU-hr that
costs 1.73 / (1500 × 3600 / 10⁶) = $0.3204 per million output tokens. The page's own older tests (of the
single-page app) run here on the small one-host database of `legacy_seed`.
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT, run_cli
from tests.site.conftest import open_page
from tests.site.hub_fixture import COST_B200_AT_50
from tests.site.legacy_seed import _seed

PAGE = "views/pareto.py"
T_2 = 4.302652729749464  # Student-t 97.5 % quantile, 2 degrees of freedom
HALF_WIDTH = T_2 * 20 / math.sqrt(3)  # 49.68
COST = "$ per million output tokens"
THROUGHPUT = "Output tok/s per GPU"


def open_pareto(link: dict[str, str | list[str]] | None = None) -> AppTest:
    """The page as a share link opens it (tests/site/conftest.py `open_page`)."""
    return open_page("pareto", link)


def raw_rows_of(run: str) -> list[dict]:
    import json

    return json.loads((ROOT / "tests" / "data" / "inferencex" / f"run_{run}" / "agg_bmk.json").read_text())


def table(app: AppTest) -> pd.DataFrame:
    """The points as a table: the view's alternative to the chart (one radio click away, kept in the link)."""
    if not app.dataframe:
        app.radio(key="param-view").set_value("Table").run()
        assert not app.get("vega_lite_chart") and app.query_params["view"] == "Table"
    return app.dataframe[0].value


def row(frame: pd.DataFrame, configuration_start: str, sweep: str, concurrency: int) -> pd.Series:
    match = frame[
        frame["configuration"].str.startswith(configuration_start)
        & (frame["sweep"] == sweep)
        & (frame["concurrency"] == concurrency)
    ]
    assert len(match) == 1, match
    return match.iloc[0]


def test_empty_database_says_how_to_get_results(hub_database: str) -> None:
    app = open_pareto()
    assert app.title[0].value == "Pareto explorer"
    assert "make demo" in app.info[0].value
    assert not app.dataframe


def test_repeats_give_the_mean_and_its_interval(seeded_hub: str) -> None:
    frame = table(open_pareto())
    b200 = row(frame, "b200 · vllm", "nightly-3", 16)
    assert b200["repeats"] == 3
    assert b200[THROUGHPUT] == pytest.approx(1500.0)
    # The table shows three significant figures: 1450.32 and 1549.68 are 1450 and 1550.
    assert b200["95 % low"] == pytest.approx(1500 - HALF_WIDTH, rel=5e-3) and b200["95 % low"] == 1450
    assert b200["95 % high"] == 1550
    assert b200["Interactivity p50 (tok/s/user)"] == pytest.approx(50.0)
    # The third repeat at concurrency 64 failed a validity rule: two repeats remain.
    assert row(frame, "b200 · vllm", "nightly-3", 64)["repeats"] == 2
    # Latest sweep of each configuration only, by default: no earlier nightly, and a single run has no interval.
    assert set(frame.loc[frame["configuration"].str.startswith("b200 · vllm"), "sweep"]) == {"nightly-3"}
    h200 = row(frame, "h200", "nightly-3", 16)
    assert h200[THROUGHPUT] == 900.0 and pd.isna(h200["95 % low"])
    # Each point links to its run detail page.
    assert b200["run"].startswith("/run?sweep=nightly-3&point=r") and b200["run"].endswith("-c16-x0")
    assert b200["tp/ep"] == "tp8·ep8" and b200["offload"] == "none"


def test_cost_at_a_tier_and_at_a_custom_rate(seeded_hub: str) -> None:
    app = open_pareto({"y": COST})
    b200 = row(table(app), "b200 · vllm", "nightly-3", 16)
    assert b200[COST] == pytest.approx(COST_B200_AT_50, rel=5e-3) and b200[COST] == 0.320
    assert b200["$/GPU-hr"] == 1.73
    # The interval maps through: the cheap end is the high throughput.
    assert b200["95 % low"] == pytest.approx(1.73 / ((1500 + HALF_WIDTH) * 0.0036), rel=5e-3)
    assert b200["95 % high"] == pytest.approx(1.73 / ((1500 - HALF_WIDTH) * 0.0036), rel=5e-3)
    assert any("owning (hyperscaler scale) TCO tier" in caption.value for caption in app.caption)

    rental = row(table(open_pareto({"y": COST, "tier": "rental_3yr"})), "b200 · vllm", "nightly-3", 16)
    assert rental[COST] == pytest.approx(3.70 / 5.4, rel=5e-3)

    app = open_pareto({"y": COST, "tier": "custom $/GPU-hr", "usd": "2"})
    assert row(table(app), "h200", "nightly-3", 16)[COST] == pytest.approx(2 / (900 * 0.0036), rel=5e-3)
    assert row(table(app), "b200 · vllm", "nightly-3", 16)[COST] == pytest.approx(2 / 5.4, rel=5e-3)


def test_tokens_per_dollar_and_per_megawatt(seeded_hub: str) -> None:
    per_dollar = row(table(open_pareto({"y": "Output tokens per $"})), "b200 · vllm", "nightly-3", 16)
    assert per_dollar["Output tokens per $"] == pytest.approx(1500 * 3600 / 1.73, rel=5e-3)  # 3,121,387
    per_mw = row(table(open_pareto({"y": "Output tok/s per all-in MW"})), "b200 · vllm", "nightly-3", 16)
    assert per_mw["Output tok/s per all-in MW"] == pytest.approx(1500 * 1000 / 1.71, rel=5e-3)  # B200: 1.71 kW
    assert per_mw["all-in kW/GPU"] == 1.71


def test_frontier_toggle_removes_dominated_points(seeded_hub: str) -> None:
    link = {"latest": "0", "hardware": "b200", "workload": "8k/1k"}
    every_sweep = table(open_pareto(link))
    assert len(every_sweep) == 9  # three nightly sweeps × concurrencies 4, 16, 64
    assert list(every_sweep["on frontier"]).count(True) == 3

    app = open_pareto(link)
    app.toggle(key="param-frontier").set_value(True).run()
    assert not app.exception
    frontier = table(app).sort_values("concurrency")
    # At 50 tok/s/user nightly-2's 1510 beats nightly-1's 1500 and nightly-3's mean 1500; equal points
    # (concurrency 4 and 64 gave the same figures every night) keep the newest sweep.
    assert list(frontier["concurrency"]) == [4, 16, 64]
    assert list(frontier["sweep"]) == ["nightly-3", "nightly-2", "nightly-3"]
    assert list(frontier[THROUGHPUT]) == [500.0, 1510.0, 3000.0]
    assert app.query_params["frontier"] == "1"

    # Cost is minimised: the frontier on cost keeps the same (cheapest) points.
    cheapest = table(open_pareto({**link, "y": COST, "frontier": "1"})).sort_values("concurrency")
    assert list(cheapest["sweep"]) == ["nightly-3", "nightly-2", "nightly-3"]
    assert cheapest[COST].iloc[1] == pytest.approx(1.73 / (1510 * 0.0036), rel=5e-3)


def test_imported_results_are_shown_and_labelled(seeded_hub: str) -> None:
    frame = table(open_pareto())
    imported = frame[frame["origin"] == "imported"]
    assert list(imported["concurrency"]) == [4, 16] and list(imported[THROUGHPUT]) == [600.0, 1400.0]
    assert all(name.endswith("[imported]") and name.startswith("mi355x") for name in imported["configuration"])
    assert set(imported["source"]) == {"inferencex: fixture rows"}


EVERYTHING = {"model": "all", "precision": "all", "workload": "all"}


def test_simulated_hidden_by_default_dry_runs_retracted_and_embargoed_never(seeded_hub: str) -> None:
    app = open_pareto(EVERYTHING)
    frame = table(app)
    assert set(frame["origin"]) == {"measured", "imported"}
    assert not frame["hardware"].eq("cpu-local").any()
    assert frame[THROUGHPUT].max() < 9000  # the retracted 9999 and the embargoed 9000 never appear
    origins = app.multiselect(key="param-origin")
    assert "dry-run" not in origins.options and "simulated" in origins.options

    app = open_pareto({**EVERYTHING, "origin": ["measured", "imported", "simulated"]})
    simulated = table(app)[lambda f: f["origin"] == "simulated"]
    assert list(simulated["concurrency"]) == [1, 2]
    assert all(name.endswith("[simulated]") for name in simulated["configuration"])
    assert any("not measurements" in warning.value for warning in app.sidebar.warning)


def test_share_link_reproduces_a_selection(seeded_hub: str) -> None:
    app = open_pareto({"hardware": "h200", "x": "TTFT p50 (ms)"})
    frame = table(app)
    assert set(frame["hardware"]) == {"h200"} and list(frame["concurrency"]) == [4, 16]
    assert list(frame["TTFT p50 (ms)"]) == [204.0, 216.0] and list(frame[THROUGHPUT]) == [400.0, 900.0]
    assert app.multiselect(key="param-hardware").value == ["h200"]
    assert app.selectbox(key="param-x").value == "TTFT p50 (ms)"
    # The page writes the view back into the URL, so copying it shares the same view.
    assert app.query_params["hardware"] == "h200" and app.query_params["x"] == "TTFT p50 (ms)"


def test_one_model_precision_and_workload_at_a_time_by_default(seeded_hub: str) -> None:
    app = open_pareto({"view": "Table"})
    # The comparison with the most configurations placed on the x axis: DeepSeek-R1 FP8 8k/1k (B200, H200, MI355X).
    assert {name: app.selectbox(key=f"param-{name}").value for name in ("model", "precision", "workload")} == {
        "model": "deepseek-r1",
        "precision": "fp8",
        "workload": "8k/1k",
    }
    frame = table(app)
    assert set(frame["workload"]) == {"8k/1k"} and set(frame["hardware"]) == {"b200", "h200", "mi355x"}
    # 'all' shows every workload (the agentic replays among them) and says so in each configuration's name.
    app.selectbox(key="param-workload").set_value("all").run()
    assert set(table(app)["workload"]) == {"8k/1k", "agentic"}
    assert app.query_params["workload"] == "all"
    # The precision offered follows the model chosen.
    app.selectbox(key="param-model").set_value("tiny-llama").run()
    assert app.selectbox(key="param-precision").options == ["bf16", "all"]


def test_a_default_view_adds_only_the_comparison_to_the_link_and_a_choice_only_itself(seeded_hub: str) -> None:
    app = open_pareto()
    comparison = {"model": "deepseek-r1", "precision": "fp8", "workload": "8k/1k"}
    # Every other control at its default; the comparison depends on the data, so the link says which.
    assert not app.exception and dict(app.query_params) == comparison
    app.toggle(key="param-frontier").set_value(True).run()
    app.multiselect(key="param-hardware").set_value(["b200"]).run()
    assert dict(app.query_params) == {**comparison, "frontier": "1", "hardware": "b200"}
    # Back to the default: a parameter the link already holds follows the widget rather than vanishing.
    app.toggle(key="param-frontier").set_value(False).run()
    assert app.query_params["frontier"] == "0"
    assert len(open_pareto({"frontier": "0", "hardware": "b200"}).get("vega_lite_chart")) == 1


def test_date_range_from_a_link(seeded_hub: str) -> None:
    later = table(open_pareto({"latest": "0", "from": "2026-11-05", "hardware": "b200", "workload": "8k/1k"}))
    assert set(later["sweep"]) == {"nightly-2", "nightly-3"}
    first = table(open_pareto({"latest": "0", "to": "2026-11-02", "workload": "8k/1k"}))
    assert set(first["sweep"]) == {"nightly-1"}


def test_e2e_normalised_interactivity_is_an_agentic_axis(seeded_hub: str) -> None:
    app = open_pareto({"x": "E2E-normalised interactivity p90 (tok/s/user)"})
    frame = table(app)
    assert set(frame["workload"]) == {"agentic"}  # the default comparison is one the x axis can place
    assert set(frame["E2E-normalised interactivity p90 (tok/s/user)"]) == {20.0}  # the replay's recorded p90
    every = open_pareto({**EVERYTHING, "x": "E2E-normalised interactivity p90 (tok/s/user)"})
    assert any("Left out" in caption.value for caption in every.caption)

    fixed_only = open_pareto({"x": "E2E-normalised interactivity p90 (tok/s/user)", "workload": "8k/1k"})
    assert any("agentic" in info.value for info in fixed_only.info)


def test_chart_has_error_bars_and_run_links(seeded_hub: str) -> None:
    app = open_pareto()
    (chart,) = app.get("vega_lite_chart")
    spec = json.dumps(json.loads(chart.proto.spec))
    assert '"errorbar"' in spec and '"href"' in spec and '"run"' in spec
    assert app.get("download_button"), "the table has a CSV download"


def test_one_hardware_database_hides_simulated_and_invalid_by_default(hub_database: str) -> None:
    """Ported from the single-page app: the one-host database, its invalid point and its simulated one."""
    _seed(hub_database)
    app = open_pareto()
    frame = table(app)
    assert list(frame["origin"]) == ["measured"] and list(frame["concurrency"]) == [1]

    app.toggle(key="param-valid").set_value(False).run()
    frame = table(app)
    assert sorted(frame["concurrency"]) == [1, 2]
    assert "error rate 50.0%" in frame.loc[frame["concurrency"] == 2, "validity reasons"].iloc[0]

    app.multiselect(key="param-origin").set_value(["measured", "simulated"]).run()
    assert sorted(table(app)["origin"]) == ["measured", "measured", "simulated"]
    # Dry runs (plumbing checks on a stand-in engine) are not even offered.
    assert "dry-run" not in app.multiselect(key="param-origin").options

    # The host has no 3-year rental figure (only an illustrative owning one): there is no cost to show at that
    # tier, and the page says so instead of failing.
    app = open_pareto({"y": COST, "tier": "rental_3yr"})
    assert any("No point has a figure" in warning.value for warning in app.warning)
    # At the owning tier the illustrative figure prices the measured point.
    assert not any("No point has a figure" in warning.value for warning in open_pareto({"y": COST}).warning)


def test_energy_per_token_where_power_was_sampled(seeded_hub: str) -> None:
    from db.session import make_engine, open_session
    from tests.site.hub_fixture import DAY0, FIXED, _Seeder, _snapshot

    seeder = _Seeder(seeded_hub)
    seeder.jobs = 100
    recipe = seeder.recipe(_snapshot("b300-vllm-8k1k", "b300", "vllm", "deepseek-r1", "fp8", {"tp": 8}, FIXED))
    job = seeder.points(seeder.sweep("powered"), recipe, DAY0, [(16, 50.0, 2000.0)])
    with open_session(make_engine(seeded_hub)) as session:
        from sqlmodel import select

        from db.models import PointResultRow

        point = session.exec(select(PointResultRow).where(PointResultRow.job_id == job)).one()
        # nvidia-smi's total over 8 GPUs: 8 x 1000 W, so 1000 W per GPU at 2000 tok/s/GPU = 0.5 J per token.
        point.metrics = {"host": {"telemetry": {"source": "nvidia-smi", "samples": 10, "interval_s": 1.0,
                                                "power_w_mean": 8000.0}}}  # fmt: skip
        session.add(point)
        session.commit()
    shown = table(open_pareto({"hardware": "b300"}))
    assert list(shown["J per output token"]) == [0.5]
    # Where no host sampled power the column is left out rather than shown empty.
    assert "J per output token" not in table(open_pareto({"hardware": "h200"})).columns


def test_real_inferencex_rows_put_b200_and_mi355x_on_one_deepseek_fp4_chart(hub_database: str) -> None:
    """The imported sample of real InferenceX rows (tests/data/inferencex): DeepSeek-R1 FP4 1k/1k was measured on
    B200 (run 20286929996, model 'nvidia/DeepSeek-R1-0528-FP4-V2') and on MI355X (run 20248091324, model
    'amd/DeepSeek-R1-0528-MXFP4-Preview'); both are one model here, so one chart holds both chips."""
    files = sorted(str(path) for path in (ROOT / "tests" / "data" / "inferencex").glob("run_*/agg_bmk.json"))
    imported = run_cli("import", "inferencex", *files, env={"INFERSWEEP_DATABASE_URL": hub_database})
    assert imported.returncode == 0, imported.stdout + imported.stderr
    link = {"model": "deepseek-r1", "precision": "fp4", "workload": "1k/1k", "origin": "imported"}
    app = open_pareto(link)
    assert len(app.get("vega_lite_chart")) == 1
    frame = table(app)
    assert set(frame["hardware"]) == {"b200", "mi355x"}, set(frame["hardware"])
    assert set(frame["workload"]) == {"1k/1k"} and set(frame["precision"]) == {"fp4"}
    # The rows state no date: none is given the import's time as its finish (the table is the page's CSV).
    assert frame["finished"].isna().all() and set(frame["date"]) == {"date unknown"}
    # Total (input + output) and input tok/s per GPU as the y axis, TTFT p90 as the x axis, as InferenceX's dashboard
    # draws them: B200's point at concurrency 64 (run 20286929996, TP4·EP4) is its row's tput_per_gpu and its input part.
    # TTFT p90 is not in the rows (they state median and p99): such points have no x, and the page says so.
    [row] = [r for r in raw_rows_of("20286929996") if r["conc"] == 64 and r["tp"] == 4 and r["isl"] == r["osl"] == 1024
             and r["precision"] == "fp4"]  # fmt: skip
    for label, expected in (("Total (input + output) tok/s per GPU", row["tput_per_gpu"]),
                            ("Input tok/s per GPU", row["tput_per_gpu"] - row["output_tput_per_gpu"])):  # fmt: skip
        shown = table(open_pareto({**link, "hardware": "b200", "y": label}))
        point = shown[(shown["concurrency"] == 64) & shown["configuration"].str.contains("tp4")]
        assert float(point[label].iloc[0]) == pytest.approx(expected, rel=5e-3), (label, point[label].tolist())
    later = open_pareto({**link, "x": "TTFT p90 (ms)"})
    assert [w.value for w in later.warning] == ["None of these results has a figure for the x axis (TTFT p90 (ms))."]


def test_frontier_lines_are_drawn_by_default_on_a_log_y_and_a_linear_option_from_zero(seeded_hub: str) -> None:
    import json

    def spec(app: AppTest) -> dict:
        charts = app.get("arrow_vega_lite_chart") + app.get("vega_lite_chart")
        assert len(charts) == 1
        return json.loads(charts[0].proto.spec)

    # The configurations' own layers (the chip envelopes, a layer above them, are test_each_chip_envelope_...).
    layers = spec(open_pareto({"envelopes": "0"}))["layer"]
    lines = [layer for layer in layers if layer["mark"]["type"] == "line"]
    assert len(lines) == 1 and lines[0]["transform"] == [{"filter": "datum.frontier"}]
    # Drawn as the figures are read between points (a monotone cubic), not as straight segments.
    assert lines[0]["mark"]["interpolate"] == "monotone"
    # Every y axis is a throughput or a cost: log by default (issue 42), linear from 0 on request.
    points = next(layer for layer in layers if layer["mark"]["type"] == "point")
    assert points["encoding"]["y"]["scale"]["type"] == "log"
    linear = next(layer for layer in spec(open_pareto({"logy": "0", "envelopes": "0"}))["layer"]
                  if layer["mark"]["type"] == "point")  # fmt: skip
    assert linear["encoding"]["y"]["scale"]["zero"] is True and "type" not in linear["encoding"]["y"]["scale"]


def test_each_chip_envelope_is_the_frontier_over_all_its_configurations(hub_database: str) -> None:
    """Issue 42: a pale wide line per chip under the configurations' own. Nine configurations on five chips, each
    measuring (80 tok/s/user, 400 tok/s/GPU) and (40, 900): B200 has two configurations (ep1 and ep6), whose four
    points make an envelope of two (equal points count once), and so does every chip."""
    import json

    from tests.site.hub_fixture import seed_many_configurations

    seed_many_configurations(hub_database)
    app = open_pareto()
    chart = (app.get("arrow_vega_lite_chart") + app.get("vega_lite_chart"))[0]
    spec = json.loads(chart.proto.spec)
    (envelope,) = [layer for layer in spec["layer"] if layer.get("mark", {}).get("strokeWidth") == 7]
    (dataset,) = [data for data in chart.proto.datasets if data.name == envelope["data"]["name"]]
    rows = pa.ipc.open_stream(dataset.data.data).read_all().to_pandas()
    by_chip: dict[str, list[tuple[float, float]]] = {}
    for row in rows.itertuples():
        by_chip.setdefault(row.hardware, []).append((row.x, row.y))
    assert set(by_chip) == {"b200", "h200", "mi355x", "b300", "h100"}
    # Drawn as the Overview reads it (`envelope.envelope_curve`): from the slowest envelope point to the fastest, through
    # both; between two points, the monotone cubic, here the straight line.
    for points in by_chip.values():
        points.sort()
        assert points[0] == (40.0, 900.0) and points[-1] == (80.0, 400.0) and len(points) > 2, points
        assert all(y == pytest.approx(900.0 - (x - 40.0) * 12.5) for x, y in points), points
    hidden = open_pareto({"envelopes": "0"})
    spec = json.loads((hidden.get("arrow_vega_lite_chart") + hidden.get("vega_lite_chart"))[0].proto.spec)
    assert not [layer for layer in spec.get("layer", []) if layer.get("mark", {}).get("strokeWidth") == 7]


def test_chip_envelope_only_keeps_the_points_no_configuration_of_the_chip_beats(hub_database: str) -> None:
    """Issue 42's "frontier only" per chip. B200's two configurations (ep1, ep6) measure the same two points, (80
    tok/s/user, 400 tok/s/GPU) and (40, 900): each configuration's frontier holds both of its points, the chip's
    envelope one of each pair of equal points (the newest)."""
    from tests.site.hub_fixture import seed_many_configurations

    seed_many_configurations(hub_database)
    every = table(open_pareto({"hardware": "b200"}))
    assert len(every) == 4 and every["on frontier"].all() and every["on chip envelope"].sum() == 2
    assert table(open_pareto({"hardware": "b200", "frontier": "1"}))["on frontier"].sum() == 4
    envelope = table(open_pareto({"hardware": "b200", "envelope-only": "1"}))
    assert envelope["on chip envelope"].all()
    points = sorted(zip(envelope["Interactivity p50 (tok/s/user)"], envelope[THROUGHPUT], strict=True))
    assert points == [(40.0, 900.0), (80.0, 400.0)]
