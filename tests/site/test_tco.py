"""TCO calculator page: $/M tokens per hardware at a target interactivity, on the hub's fixture database.

Expected figures are worked by hand from the fixture's points (tests/site/hub_fixture.py) and the figures
of recipes/hardware.yaml: $/M tokens = $/GPU-hr / (tok/s/GPU × 3600 / 10⁶).
"""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from recipes.hardware import load_hardware_registry
from tests.site.conftest import assert_says_how_to_get_results, dropped_notes, open_page

REGISTRY = load_hardware_registry()
OWNING = {key: spec.tco("owning_hyperscaler") for key, spec in REGISTRY.items()}


def cost(usd_per_gpu_hour: float, tokens_per_s: float) -> float:
    return usd_per_gpu_hour / (tokens_per_s * 3600 / 1e6)


def bars(app: AppTest) -> pd.DataFrame:
    """The table behind the bars: one row per model, workload and hardware."""
    return app.dataframe[0].value.set_index(["workload", "hardware"])


def test_empty_database_says_what_to_do(hub_database: str) -> None:
    # Opened as a viewer navigates there, from the Overview.
    assert_says_how_to_get_results("tco", "TCO calculator", hub_database, from_overview=True)


def test_cost_per_hardware_at_50_tok_s_user(seeded_hub: str) -> None:
    app = open_page("tco", from_overview=True)
    table = bars(app)
    assert list(table.index) == [("8k/1k", "b200"), ("8k/1k", "h200"), ("8k/1k", "mi355x")]
    b200 = table.loc[("8k/1k", "b200")]
    # B200 vLLM 8k/1k, owning tier: 1500 tok/s/GPU (mean of 1480/1500/1520 measured at 50 tok/s/user) →
    # $1.73 / 5.4 = $0.3204 per million output tokens.
    assert b200["output tok/s/GPU"] == pytest.approx(1500.0) and b200["repeats"] == 3
    assert OWNING["b200"] == 1.73 and f"{cost(1.73, 1500):.4f}" == "0.3204"
    assert b200["$/M output tokens"] == 0.320  # three significant figures
    assert b200["runs"] == 3  # nightly-1 to nightly-3 measured this configuration
    # Error bar from the Student-t interval 1500 ± 4.3027 × 20 / √3 = [1450.317, 1549.683].
    assert (b200["$/M, low"], b200["$/M, high"]) == pytest.approx(
        (cost(1.73, 1549.683), cost(1.73, 1450.317)), rel=5e-3
    )
    # Input and total tokens: 8 and 9 times the output (8k in, 1k out) → $1.73 / 43.2 and $1.73 / 48.6.
    assert b200["$/M input tokens"] == pytest.approx(1.73 / 43.2, rel=5e-3)
    assert b200["$/M total tokens"] == pytest.approx(1.73 / 48.6, rel=5e-3)
    # 1500 tok/s/GPU × 1000 / 1.71 all-in kW per GPU.
    assert b200["output tok/s per all-in MW"] == pytest.approx(1500 * 1000 / REGISTRY["b200"].all_in_kw.value,
                                                              rel=5e-3)  # fmt: skip
    assert b200["sweep"] == "nightly-3"
    # H200: (30, 900)–(60, 400), a straight line: 566.67 at 50 → $1.22 / 2.04; single run, no error bar.
    h200 = table.loc[("8k/1k", "h200")]
    assert h200["output tok/s/GPU"] == 567  # 566.67 to three significant figures
    assert h200["$/M output tokens"] == pytest.approx(cost(OWNING["h200"], 900 - 20 * 500 / 30), rel=5e-3)
    assert pd.isna(h200["$/M, low"])
    # Imported MI355X, labelled with its origin and source: (40, 1400)–(80, 600) → 1200 at 50 → $1.50 / 4.32.
    mi355x = table.loc[("8k/1k", "mi355x")]
    assert mi355x["origin"] == "imported" and mi355x["source"] == "inferencex: fixture rows"
    assert mi355x["$/M output tokens"] == pytest.approx(cost(OWNING["mi355x"], 1200), rel=5e-3)
    # The agentic arms were measured at 25–42 tok/s/user only: the chip cannot serve 50, dropped with a visible note.
    note = dropped_notes(app)
    assert "**b200** (deepseek-r1 fp8 · agentic)" in app.warning[0].value
    assert "**b200** (deepseek-r1 fp8 · agentic)" in note
    assert "faster than every configuration measured (fastest 42); not extrapolated" in note  # the two arms: 40, 42
    # The bars, each chip's cost over the measured range; CSVs of the bars, the chip-over-chip ratio and every
    # configuration.
    assert len(app.get("vega_lite_chart")) == 2 and len(app.get("download_button")) == 3


def test_share_link_reproduces_target_custom_rate_and_token_kind(seeded_hub: str) -> None:
    app = open_page(
        "tco", {"at": "100", "tier": "custom $/GPU-hr", "usd": "3.6", "tokens": "total", "workload": "8k/1k"}
    )
    assert app.number_input(key="param-at").value == 100.0
    assert app.selectbox(key="param-tier").value == "custom $/GPU-hr"
    assert app.number_input(key="param-usd").value == 3.6
    table = bars(app)
    # Only the B200 reaches 100 tok/s/user: 500 output → 4500 total tok/s/GPU → $3.6 / 16.2 = $0.2222.
    assert list(table.index) == [("8k/1k", "b200")]
    assert table.loc[("8k/1k", "b200")]["total tok/s/GPU"] == pytest.approx(4500.0)
    assert table.loc[("8k/1k", "b200")]["$/M total tokens"] == pytest.approx(3.6 / 16.2, rel=5e-3)
    note = dropped_notes(app)
    assert "**h200**" in note and "faster than every configuration measured (fastest 60)" in note
    assert "**mi355x**" in note and "agentic" not in note  # the workload filter from the link holds

    rental = open_page("tco", {"tier": "rental_3yr", "at": "30"})
    b200 = bars(rental).loc[("8k/1k", "b200")]
    assert b200["$/GPU-hr"] == REGISTRY["b200"].tco("rental_3yr")
    assert b200["$/M output tokens"] == pytest.approx(cost(b200["$/GPU-hr"], b200["output tok/s/GPU"]), rel=1e-2)


def test_simulated_hidden_by_default_and_labelled_when_asked(seeded_hub: str) -> None:
    app = open_page("tco", {"at": "350", "tier": "custom $/GPU-hr", "usd": "1"})
    assert "cpu-local" not in set(app.dataframe[-1].value["hardware"])  # every configuration: none simulated
    app = open_page("tco", {"at": "350", "tier": "custom $/GPU-hr", "usd": "1", "origin": ["measured", "simulated"]})
    table = app.dataframe[0].value
    cpu = table[table["hardware"] == "cpu-local"].iloc[0]
    # Simulated points (400, 50) and (300, 80): 65 tok/s/GPU at 350 → $1 / (65 × 0.0036) = $4.2735.
    assert cpu["origin"] == "simulated" and cpu["$/M output tokens"] == pytest.approx(1 / (65 * 0.0036), rel=5e-3)
    assert any("simulated" in warning.value for warning in app.sidebar.warning)


def test_one_hardware_only(b200_only_hub: str) -> None:
    app = open_page("tco", from_overview=True)
    table = bars(app)
    assert list(table.index) == [("8k/1k", "b200")]
    assert table.loc[("8k/1k", "b200")]["$/M output tokens"] == pytest.approx(cost(1.73, 1500), rel=5e-3)
    assert not app.warning
    # At 20 tok/s/user the B200 serves faster than asked, with its slowest point (50 tok/s/user): not 'not measured'.
    slow = bars(open_page("tco", {"at": "20"})).loc[("8k/1k", "b200")]
    assert slow["read at tok/s/user"] == 50 and slow["$/M output tokens"] == pytest.approx(cost(1.73, 1500), rel=5e-3)
    far = open_page("tco", {"at": "200"})
    assert "No configuration was measured around 200 tok/s/user" in far.warning[0].value


def test_cost_over_interactivity_reads_each_chip_across_its_measured_range(seeded_hub: str) -> None:
    import json

    app = open_page("tco", {"workload": "8k/1k"}, from_overview=True)
    curves = [json.loads(chart.proto.spec) for chart in app.get("vega_lite_chart")]
    lines = [spec for spec in curves if "layer" in spec and spec["layer"][0]["mark"]["type"] == "line"]
    assert len(lines) == 1
    colour = lines[0]["layer"][0]["encoding"]["color"]
    # The legend lists the chips that have a cost somewhere in the range (taken from the curve's own rows).
    assert colour["field"] == "hardware" and set(colour["scale"]["domain"]) == {"b200", "h200", "mi355x"}
    assert lines[0]["layer"][0]["encoding"]["y"]["scale"]["type"] == "log"
