"""Overview page (the hub's default): the scorecard of models × hardware at interactivity tiers, on the fixture.

Expected figures are worked by hand from the fixture's points (tests/site/hub_fixture.py) and the TCO
figures of recipes/hardware.yaml: cost per million output tokens = $/GPU-hr / (tok/s/GPU × 3600 / 10⁶).
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from recipes.hardware import load_hardware_registry
from tests.conftest import run_cli
from tests.site.conftest import assert_says_how_to_get_results, open_page

OWNING = {key: spec.tco("owning_hyperscaler") for key, spec in load_hardware_registry().items()}
# Throughput (output tok/s/GPU) at 50 tok/s/user, read off the fixture's latest sweeps by hand:
B200_AT_50 = 1500.0  # mean of 1480, 1500, 1520 measured exactly at 50
H200_AT_50 = 900 + (50 - 30) / (60 - 30) * (400 - 900)  # straight line between its two points: 566.67
MI355X_AT_50 = 1400 + (50 - 40) / (80 - 40) * (600 - 1400)  # imported, between (40, 1400) and (80, 600): 1200


def cost(usd_per_gpu_hour: float, tokens_per_s: float) -> float:
    return usd_per_gpu_hour / (tokens_per_s * 3600 / 1e6)


def scorecard(app: AppTest) -> pd.DataFrame:
    return app.dataframe[0].value.set_index(["model", "precision", "workload", "tok/s/user"])


def figures(app: AppTest) -> pd.DataFrame:
    """The 'All figures' tab, opened as its link does (only the open tab is drawn)."""
    open_tab(app, "All figures")
    return app.dataframe[1].value


def open_tab(app: AppTest, name: str) -> None:
    app.query_params["tab"] = name
    app.run()
    assert not app.exception, app.exception


def test_empty_database_says_what_to_do(hub_database: str) -> None:
    assert_says_how_to_get_results("overview", "Overview", hub_database)


def test_scorecard_costs_and_change_vs_reference(seeded_hub: str) -> None:
    app = open_page("overview")
    assert "What is this?" in app.markdown[0].value
    assert {link.proto.page for link in app.get("page_link")} == {"pareto", "methodology"}
    grid = scorecard(app)
    row = grid.loc[("deepseek-r1", "fp8", "8k/1k", 50.0)]
    # B200 at the owning tier: $1.73 / (1500 × 3600 / 10⁶) = $0.3204 per million output tokens, shown to three
    # significant figures. It is the default reference (measured in the most rows: 8k/1k and agentic). Its three
    # nightly runs read 1500, 1510 and 1500 at 50: $0.3182 to $0.3204.
    assert OWNING["b200"] == 1.73 and f"{cost(1.73, B200_AT_50):.4f}" == "0.3204"
    assert f"{cost(1.73, 1510):.4f}" == "0.3182"
    assert row["b200"] == "$0.320 (reference) · 3 runs $0.318–0.320"
    # H200: $1.22 / (566.67 × 0.0036) = $0.5980, +86.7 % against the B200; its runs read 600, 601.67 and 566.67 at 50
    # (1000 or 1005 at 30, 400 at 60): $0.5633 to $0.5980. MI355X (imported, one run, labelled):
    # $1.50 / (1200 × 0.0036) = $0.3472, +8.4 %.
    h200, mi355x = cost(OWNING["h200"], H200_AT_50), cost(OWNING["mi355x"], MI355X_AT_50)
    assert f"{h200:.4f} {h200 / cost(1.73, 1500) - 1:+.1%}" == "0.5980 +86.7%"
    assert f"{cost(1.22, 1005 - 20 / 30 * 605):.4f}" == "0.5633"
    assert row["h200"] == "$0.598 +86.7% · 3 runs $0.563–0.598"
    assert f"{mi355x:.4f} {mi355x / cost(1.73, 1500) - 1:+.1%}" == "0.3472 +8.4%"
    assert row["mi355x"] == "$0.347 +8.4% · 1 run [imported]"
    assert row["cheapest"] == "b200 $0.320"  # against MI355X $0.3472 and H200 $0.5980
    # At 100 tok/s/user only the B200 was measured (its 100 tok/s/user point: 500 tok/s/GPU → $1.73 / 1.8);
    # the others are not extrapolated.
    fast = grid.loc[("deepseek-r1", "fp8", "8k/1k", 100.0)]
    assert f"{cost(1.73, 500):.4f}" == "0.9611"
    assert fast["b200"].startswith("$0.961 (reference) · 3 runs")
    assert fast["h200"] == "– (outside the measured range)"
    assert fast["mi355x"] == "– (outside the measured range) [imported]"

    table = figures(app)
    b200 = table[(table["hardware"] == "b200") & (table["workload"] == "8k/1k") & (table["tok/s/user"] == 50)].iloc[0]
    assert b200["output tok/s/GPU"] == pytest.approx(1500.0) and b200["repeats"] == 3
    # Student-t over 1480/1500/1520: 1500 ± 4.3027 × 20 / √3 = 1500 ± 49.68; the cost at those ends.
    # Three significant figures: 1450 and 1550.
    assert (b200["95 % low"], b200["95 % high"]) == (1450, 1550)
    # Figures to three significant figures: $0.320370 is 0.320; the interval's ends likewise.
    assert b200["$/M output tokens"] == 0.320
    assert (b200["$/M output, low"], b200["$/M output, high"]) == (
        float(f"{cost(1.73, 1549.683):.3g}"),
        float(f"{cost(1.73, 1450.317):.3g}"),
    )
    assert b200["runs"] == 3 and (b200["runs' lowest tok/s/GPU"], b200["runs' highest tok/s/GPU"]) == (1500, 1510)
    assert b200["sweep"] == "nightly-3"  # the latest sweep (nightly-2 read 1510)
    h200_row = table[(table["hardware"] == "h200") & (table["tok/s/user"] == 50)].iloc[0]
    assert h200_row["vs reference"] == pytest.approx(h200 / cost(1.73, 1500) - 1, rel=1e-3)
    assert not app.get("vega_lite_chart")  # drawn only when its tab is opened
    open_tab(app, "Chart")
    # A chart per model, precision and workload (8k/1k and agentic), each on one cost scale across its tiers, every
    # bar's chip and cost written at its end (bars in facets cut the chips past the third at 1,400 px).
    charts = app.get("vega_lite_chart")
    assert len(charts) == 2 and len(app.get("download_button")) == 1
    spec = json.loads(charts[0].proto.spec)
    assert "resolve" not in spec and "facet" not in spec
    assert spec["layer"][0]["encoding"]["y"]["field"] == "tier"
    (data,) = [pa.ipc.open_stream(d.data.data).read_all().to_pandas() for d in charts[0].proto.datasets]
    assert "b200 $0.320" in set(data["shown"]), set(data["shown"])


def test_share_link_reproduces_tier_reference_and_speeds(seeded_hub: str) -> None:
    app = open_page("overview", {"tier": "rental_3yr", "reference": "h200", "tiers": ["50"]})
    assert app.selectbox(key="param-tier").value == "rental_3yr"
    assert app.selectbox(key="param-reference").value == "h200"
    grid = scorecard(app)
    assert list(grid.index.get_level_values("tok/s/user")) == [50.0, 50.0]  # 8k/1k and agentic rows
    rental = {key: spec.tco("rental_3yr") for key, spec in load_hardware_registry().items()}
    b200, h200 = cost(rental["b200"], 1500), cost(rental["h200"], H200_AT_50)
    row = grid.loc[("deepseek-r1", "fp8", "8k/1k", 50.0)]
    assert row["b200"].startswith(f"${b200:.3g} {b200 / h200 - 1:+.1%} · 3 runs")
    assert row["h200"].startswith(f"${h200:.3g} (reference) · 3 runs")
    # At the owning tier the B200 is 46.4 % cheaper than the H200: 0.32037 / 0.59804 − 1.
    owning = open_page("overview", {"reference": "h200", "tiers": ["30", "50"]})
    assert scorecard(owning).loc[("deepseek-r1", "fp8", "8k/1k", 50.0)]["b200"].startswith("$0.320 -46.4%")
    # The agentic row has no H200 result: its cost shows without a change (only comparable cells get one).
    # Cheapest agentic arm at 30 (DRAM offload): 820 + (30 − 28) / (42 − 28) × (320 − 820) = 748.57 tok/s/GPU.
    agentic = scorecard(owning).loc[("deepseek-r1", "fp8", "agentic", 30.0)]["b200"]
    assert f"{cost(1.73, 820 + 2 / 14 * -500):.4f}" == "0.6420" and agentic.startswith("$0.642 · ")


def test_simulated_hidden_by_default_and_labelled_when_asked(seeded_hub: str) -> None:
    app = open_page("overview")
    assert "tiny-llama" not in set(scorecard(app).index.get_level_values("model"))
    assert "cpu-local" not in scorecard(app).columns
    assert "dry-run" not in app.multiselect(key="param-origin").options
    # Asked for (a link with the origins; new options are not added to a selection already made).
    app = open_page("overview", {"origin": ["imported", "measured", "simulated"]})
    grid = scorecard(app)
    # The simulated CPU's slowest point is at 300 tok/s/user: it serves 50 faster than asked, and says so.
    cpu = grid.loc[("tiny-llama", "bf16", "8k/1k", 50.0)]["cpu-local"]
    assert cpu.startswith("$") and cpu.endswith("· 1 run · at 300 tok/s/user [simulated]")
    assert any("simulated" in warning.value for warning in app.sidebar.warning)
    # Dry runs are never offered, even on request.
    assert "dry-run" not in app.multiselect(key="param-origin").options


def test_history_toggle_reads_every_sweep(seeded_hub: str) -> None:
    app = open_page("overview", {"tiers": ["50"]})
    app.toggle(key="param-latest").set_value(False).run()
    row = scorecard(app).loc[("deepseek-r1", "fp8", "8k/1k", 50.0)]
    # Every sweep counts now, so the cheapest B200 read is nightly-2's 1510 tok/s/GPU: $1.73 / 5.436.
    assert f"{cost(1.73, 1510):.4f}" == "0.3182" and row["b200"].startswith("$0.318 (reference)")
    # Three nightly sweeps per chip; the embargoed B200 sweep and the retracted H200 one never count.
    table = figures(app)
    compared = table[table["workload"] == "8k/1k"].set_index("hardware")["configurations in the envelope"]
    assert compared["b200"] == 3 and compared["h200"] == 3


def test_one_hardware_only(b200_only_hub: str) -> None:
    app = open_page("overview")
    grid = scorecard(app)
    assert list(grid.columns) == ["cheapest", "b200"]
    assert grid.loc[("deepseek-r1", "fp8", "8k/1k", 50.0)]["cheapest"] == "b200 $0.320"
    assert grid.loc[("deepseek-r1", "fp8", "8k/1k", 50.0)]["b200"] == "$0.320 (reference) · 1 run"
    below = grid.loc[("deepseek-r1", "fp8", "8k/1k", 30.0)]["b200"]
    assert below.startswith("$") and below.endswith("· at 50 tok/s/user")  # served by its slowest point, at 50


def test_the_local_demo_shows_a_cost_on_the_first_page(hub_database: str) -> None:
    """`make demo` measures tiny-llama on the CPU at 260-645 tok/s/user, above every fixed tier: the Overview offers
    tiers from the data and prices the CPU at its illustrative figure ($0.10 per host-hour)."""
    from tests.site.hub_fixture import DAY0, FIXED, _Seeder, _snapshot

    seeder = _Seeder(hub_database)
    recipe = seeder.recipe(_snapshot("tiny-llama-cpu", "cpu-local", "vllm", "tiny-llama", "bf16", {}, FIXED))
    seeder.points(seeder.sweep("demo"), recipe, DAY0, [(1, 645.0, 600.0), (4, 420.0, 1500.0), (16, 260.0, 3200.0)],
                  accelerators=1)  # fmt: skip
    seeder.engine.dispose()
    app = open_page("overview")
    assert any("tiers from the data" in caption.value for caption in app.caption)
    assert any("Illustrative TCO, not a published figure: cpu-local" in caption.value for caption in app.caption)
    grid = scorecard(app)
    cells = list(grid["cpu-local"])
    assert any(cell.startswith("$") for cell in cells), cells
    # A quarter, half and three quarters of the way from 260 to 645: 356.25, 452.5, 548.75, to two figures.
    assert {tier for *_, tier in grid.index} == {360.0, 450.0, 550.0}
    # Each cost is the illustrative $0.10 per host-hour over the throughput read there, per million tokens.
    table = figures(app).set_index("tok/s/user")
    read = table.loc[450.0, "output tok/s/GPU"]
    assert 600 < read < 1500  # between the 1-sequence (645 tok/s/user) and 4-sequence (420) points
    assert table.loc[450.0, "$/M output tokens"] == pytest.approx(0.10 / (read * 3600 / 1e6), rel=5e-3)


def test_a_local_hosts_results_are_hidden_beside_accelerators_and_shown_on_request(seeded_hub: str) -> None:
    # The demo's tiny model measured on the local CPU host (hardware of vendor 'local'), beside the chips: it has an
    # illustrative $0.10 per host-hour, so it would top the scorecard as the "cheapest" of its own model.
    from datetime import timedelta

    from tests.site.hub_fixture import DAY0, FIXED, _Seeder, _snapshot

    seeder = _Seeder(seeded_hub)
    seeder.jobs = 100  # job ids after the fixture's
    demo = seeder.recipe(_snapshot("tiny-llama-cpu", "cpu-local", "vllm", "tiny-llama", "bf16", {}, FIXED))
    seeder.points(seeder.sweep("local-demo"), demo, DAY0 + timedelta(days=14), [(4, 50.0, 80.0)], accelerators=1)
    seeder.engine.dispose()

    hidden = open_page("overview")
    assert "cpu-local" not in set(figures(hidden)["hardware"])
    assert any("1 local-host result(s) hidden" in caption.value for caption in hidden.sidebar.caption)
    shown = open_page("overview", {"local": "1"})
    assert "cpu-local" in set(figures(shown)["hardware"])
    assert any("not an accelerator" in warning.value for warning in shown.sidebar.warning)


def test_a_figure_that_joins_two_runs_says_so_with_what_the_runs_read_alone() -> None:
    """On the public corpus MI355X DeepSeek-R1 FP4 1k/1k at 100 tok/s/user read "$5.16 · 3 runs $6.51–6.51": a figure
    outside its own spread. It joins two runs' configurations; alone, one run reaches 100 (at $6.51)."""
    from analysis.economics import GpuHourRate, cost_of, read_chips
    from analysis.envelope import read_chip
    from hubkit.page import runs_text
    from recipes.hardware import load_hardware_registry
    from tests.unit.analysis.test_envelope import joined_runs

    rows = joined_runs()
    (read,) = read_chips(rows, 100.0, history=rows)
    cost = cost_of(read, load_hardware_registry(), GpuHourRate(custom_usd=2.0))
    alone = read_chip([row for row in rows if row.sweep == "run-2"], 100.0).output.mean
    assert runs_text(read, cost.usd_per_gpu_hour) == f"joins 2 runs · alone: 1 run ${2.0 / (alone * 0.0036):.3g}"
    one_run = read_chips(rows[2:], 100.0, history=rows)[0]
    assert runs_text(one_run, 2.0) == "1 run"
    (unreachable,) = read_chips(rows, 100.0, history=[])  # no run's own rows: nothing read alone
    assert runs_text(unreachable, 2.0) == "joins 2 runs · no run alone reaches this speed"


def test_as_of_a_date_reads_the_results_as_they_stood_then_on_every_scorecard_page(seeded_hub: str) -> None:
    """`asof=2026-11-08` (nightly-2 finished on the 8th, nightly-3 and the MI355X import on the 15th): each chip's
    latest sweep by then is nightly-2, and the runs behind a figure are nightly-1 and nightly-2 only."""
    link = {"asof": "2026-11-08", "tiers": ["50"], "reference": "b200"}
    row = scorecard(open_page("overview", link)).loc[("deepseek-r1", "fp8", "8k/1k", 50.0)]
    # B200 by hand: nightly-2 read 1510 at 50 → $1.73 / (1510 × 0.0036) = $0.3182; its runs read 1500 and 1510.
    assert f"{cost(1.73, 1510):.4f}" == "0.3182" and f"{cost(1.73, 1500):.4f}" == "0.3204"
    assert row["b200"] == "$0.318 (reference) · 2 runs $0.318–0.320"
    # H200: nightly-2's (30, 1005)–(60, 400) gives 1005 − 20/30 × 605 = 601.67 at 50; nightly-1's 600.
    h200 = cost(OWNING["h200"], 1005 - 20 / 30 * 605)
    assert f"{h200:.4f} {h200 / cost(1.73, 1510) - 1:+.1%}" == "0.5633 +77.0%"
    assert row["h200"] == "$0.563 +77.0% · 2 runs $0.563–0.565"
    assert "mi355x" not in row.index  # imported from a run of the 15th: not yet a chip of the page
    assert row["cheapest"] == "b200 $0.318"

    # The same day on TCO: the same figure, the same runs.
    tco = open_page("tco", {"asof": "2026-11-08"}).dataframe[0].value.set_index(["workload", "hardware"])
    assert tco.loc[("8k/1k", "b200"), "$/M output tokens"] == 0.318 and tco.loc[("8k/1k", "b200"), "runs"] == 2
    assert tco.loc[("8k/1k", "b200"), "sweep"] == "nightly-2"

    # The same day through `compare --json --as-of`: the same figures and runs.
    answer = run_cli("compare", "--at-interactivity", "50", "--workload", "8k/1k", "--json", "--as-of", "2026-11-08")
    assert answer.returncode == 0, answer.stderr
    chips = {chip["hardware"]: chip for chip in json.loads(answer.stdout)}
    assert sorted(chips) == ["b200", "h200"]
    assert (chips["b200"]["usd_per_million_output"], chips["b200"]["runs"]) == (0.318, 2)
    assert (chips["h200"]["usd_per_million_output"], chips["h200"]["runs"]) == (0.563, 2)

    # Now (no date): nightly-3, as before. A link's date before the first result, or no date, says so and shows now.
    now = scorecard(open_page("overview", {"tiers": ["50"]}))
    assert now.loc[("deepseek-r1", "fp8", "8k/1k", 50.0), "b200"].startswith("$0.320 (reference) · 3 runs")
    for asked, said in (("2020-01-01", "before the first dated result (2026-11-01)"), ("yesterday", "is not a date")):
        app = open_page("overview", {"asof": asked, "tiers": ["50"]})
        assert any(said in warning.value for warning in app.sidebar.warning), [w.value for w in app.sidebar.warning]
        assert scorecard(app).loc[("deepseek-r1", "fp8", "8k/1k", 50.0), "b200"].startswith("$0.320 (reference)")
