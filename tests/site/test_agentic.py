"""The hub's Agentic cache page (site/views/agentic.py) with AppTest on the hand-checkable fixture.

The fixture's two arms of one B200/SGLang/DeepSeek-R1 configuration replay the same trace (theoretical hit
rate 97 %): without offload, 80 % then 55 % of prompt tokens hit HBM at concurrency 4 and 16; with a
1024 GiB DRAM tier, HBM hits are the same and DRAM adds 12 % then 35 %, so only 8 % and 10 % are recomputed.
"""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.site.conftest import open_page
from tests.site.hub_fixture import AGENTIC, DAY0, FIXED, _agentic, _Seeder, _snapshot

NO_AGENTIC = "No agentic results yet"


def _table(app: AppTest) -> pd.DataFrame:
    return next(frame.value for frame in app.dataframe if "HBM %" in frame.value.columns)


def _row(table: pd.DataFrame, offload: str, concurrency: int) -> pd.Series:
    rows = table[(table["KV offload"] == offload) & (table["concurrency"] == concurrency)]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def test_empty_database_has_no_agentic_results(hub_database: str) -> None:
    app = open_page("agentic")
    assert not app.exception
    assert NO_AGENTIC in app.info[0].value and "infersweep run" in app.info[0].value


def test_one_hardware_without_replays_says_no_agentic_results_yet(hub_database: str) -> None:
    seeder = _Seeder(hub_database)
    recipe = seeder.recipe(_snapshot("b200-only", "b200", "vllm", "deepseek-r1", "fp8", {"tp": 8}, FIXED))
    seeder.points(seeder.sweep("solo"), recipe, DAY0, [(4, 100.0, 500.0)])
    seeder.engine.dispose()
    app = open_page("agentic")
    assert not app.exception
    assert NO_AGENTIC in app.info[0].value


def test_tier_shares_against_the_ceiling_offload_on_and_off(seeded_hub: str) -> None:
    app = open_page("agentic")
    assert not app.exception
    assert not any(NO_AGENTIC in info.value for info in app.info)
    table = _table(app)
    assert sorted(table["KV offload"].unique()) == ["dram 1024 GiB", "none"]

    dram_16 = _row(table, "dram 1024 GiB", 16)
    assert (dram_16["HBM %"], dram_16["DRAM/CPU offload %"], dram_16["recomputed %"]) == (55.0, 35.0, 10.0)
    assert dram_16["theoretical ceiling %"] == 97.0 and dram_16["headroom (points)"] == 7.0
    # The AgentX harness's definition beside ours, each named (the fixture stores 96 % for it).
    assert dram_16["theoretical, AgentX harness's definition %"] == 96.0
    assert dram_16["realised, counters %"] == 90.0 and dram_16["realised, usage %"] == 90.0

    hbm_16 = _row(table, "none", 16)  # the same HBM hits; what DRAM saved is recomputed here
    assert (hbm_16["HBM %"], hbm_16["DRAM/CPU offload %"], hbm_16["recomputed %"]) == (55.0, 0.0, 45.0)
    dram_4 = _row(table, "dram 1024 GiB", 4)
    assert (dram_4["HBM %"], dram_4["DRAM/CPU offload %"], dram_4["recomputed %"]) == (80.0, 12.0, 8.0)

    # No planner prediction is stored with the fixture's points: said, not invented.
    assert set(table["planner prediction"]) == {"no prediction stored for this point"}
    assert any("no prediction stored for this point" in caption.value for caption in app.caption)
    # Side by side: one panel per arm in the charts, and the table can be downloaded.
    assert len(app.get("vega_lite_chart")) == 4  # tiers, hit rates, and by turn: hit rate and TTFT
    assert any(button.label == "Download CSV" for button in app.get("download_button"))


def _extra_arms(url: str) -> None:
    """An arm with a stored planner prediction, an imported arm and a simulated arm (other hardware)."""
    seeder = _Seeder(url)
    seeder.jobs = 100  # job ids after seed_hub's
    at = DAY0 + timedelta(days=20)
    planned = seeder.recipe(
        _snapshot("b200-vllm-agentic-planned", "b200", "vllm", "deepseek-r1", "fp8", {"tp": 8}, AGENTIC, 512)
    )
    metrics = _agentic(0.60, 0.25, 0.97)
    metrics["replay"]["planner"] = {"block_size": 64, "hbm_blocks": 1000, "dram_blocks": 2000, "requests_per_lane": 50,
                                    "hbm_hit_rate": 0.62, "dram_hit_rate": 0.30, "hit_rate": 0.92}  # fmt: skip
    seeder.points(seeder.sweep("agentic-planned"), planned, at, [(16, 30.0, 800.0)], agentic={16: metrics})
    imported = seeder.recipe(_snapshot("mi355x-agentic", "mi355x", "sglang", "deepseek-r1", "fp8", {"tp": 8}, AGENTIC))
    seeder.points(seeder.sweep("agentic-import"), imported, at, [(4, 30.0, 500.0)], origin="imported",
                  source="agentx: fixture rows", agentic={4: _agentic(0.70, 0.0, 0.90)})  # fmt: skip
    simulated = seeder.recipe(_snapshot("cpu-agentic-sim", "cpu-local", "simulated", "tiny-llama", "bf16", {}, AGENTIC))
    seeder.points(seeder.sweep("agentic-sim"), simulated, at, [(2, 300.0, 50.0)], origin="simulated", accelerators=1,
                  agentic={2: _agentic(0.40, 0.0, 0.86)})  # fmt: skip
    seeder.engine.dispose()


def test_planner_prediction_next_to_the_measurement(seeded_hub: str) -> None:
    _extra_arms(seeded_hub)
    app = open_page("agentic")
    assert not app.exception
    planned = _row(_table(app), "dram 512 GiB", 16)
    assert (planned["HBM %"], planned["DRAM/CPU offload %"], planned["recomputed %"]) == (60.0, 25.0, 15.0)
    assert planned["planner prediction"] == "92.0 % (HBM 62.0 %, DRAM 30.0 %)"
    assert not any("no prediction stored" in caption.value for caption in app.caption)


def test_imported_shown_and_labelled_simulated_only_on_request(seeded_hub: str) -> None:
    _extra_arms(seeded_hub)
    app = open_page("agentic")
    assert not app.exception
    table = _table(app)
    imported = table[table["configuration"].str.contains("mi355x")]
    assert list(imported["configuration"]) == ["mi355x · sglang · deepseek-r1 fp8 · tp8 (imported)"]
    assert list(imported["HBM %"]) == [70.0] and list(imported["theoretical ceiling %"]) == [90.0]
    assert not table["configuration"].str.contains("cpu-local").any()  # simulated: hidden by default
    # Imported is a measurement made elsewhere: said so, never called "not a measurement".
    assert not any("not measurements" in warning.value for warning in app.warning)
    assert any("measured elsewhere" in caption.value for caption in app.caption)

    # A shared link that switches simulated results on shows them, labelled.
    app = open_page("agentic", {"origin": ["imported", "measured", "simulated"]})
    assert not app.exception
    simulated = _table(app)[lambda frame: frame["configuration"].str.contains("cpu-local")]
    assert list(simulated["configuration"]) == ["cpu-local · simulated · tiny-llama bf16 · tp1 (simulated)"]
    assert list(simulated["HBM %"]) == [40.0]
    assert any("simulated" in warning.value for warning in app.warning)


def test_query_param_link_reproduces_a_hardware_selection(seeded_hub: str) -> None:
    _extra_arms(seeded_hub)
    app = open_page("agentic", {"hardware": "mi355x"})
    assert not app.exception
    assert [box.value for box in app.multiselect if box.label == "Hardware"] == [["mi355x"]]
    assert list(_table(app)["concurrency"]) == [4]


def test_each_configuration_says_whether_it_is_comparable_with_agentx(seeded_hub: str) -> None:
    # The fixture's arms replay on AgentX's window and clock but without its 10 warm-up turns per lane and with token
    # ids; one arm here runs exactly as AgentX does (chat), one a short, time-scaled window.
    seeder = _Seeder(seeded_hub)
    seeder.jobs = 200
    at = DAY0 + timedelta(days=21)
    agentx = seeder.recipe(_snapshot("h200-agentic-agentx", "h200", "sglang", "deepseek-r1", "fp8", {"tp": 8},
                                     {**AGENTIC, "warmup_requests_per_lane": 10, "api": "chat",
                                      "join": "after-recorded-gap", "phase_start": "less-phase-minimum",
                                      "chat_text": "corpus"}))  # fmt: skip
    seeder.points(seeder.sweep("agentic-agentx"), agentx, at, [(4, 30.0, 500.0)], agentic={4: _agentic(0.8, 0, 0.9)})
    short = seeder.recipe(_snapshot("h200-agentic-short", "h200", "vllm", "deepseek-r1", "fp8", {"tp": 8},
                                    {**AGENTIC, "duration_s": 600, "time_scale": 0.5}))  # fmt: skip
    seeder.points(seeder.sweep("agentic-short"), short, at, [(4, 30.0, 500.0)], agentic={4: _agentic(0.8, 0, 0.9)})
    seeder.engine.dispose()
    app = open_page("agentic")
    assert not app.exception
    table = _table(app)
    label = dict(zip(table["configuration"], table["comparable with AgentX"], strict=False))
    assert label["h200 · sglang · deepseek-r1 fp8 · tp8"] == "yes"
    assert label["h200 · vllm · deepseek-r1 fp8 · tp8"] == (
        "no: window 600 s (AgentX: 3,600 s); time_scale 0.5 (AgentX: 1.0); warmup_requests_per_lane 0 (AgentX: 10); "
        "api completions (AgentX: chat); join when-subagents-end (AgentX: after-recorded-gap); phase_start "
        "own-think-time (AgentX: less-phase-minimum)"
    )
    b200 = table[table["configuration"] == "b200 · sglang · deepseek-r1 fp8 · tp8"]["comparable with AgentX"]
    assert set(b200) == {"no: warmup_requests_per_lane 0 (AgentX: 10); api completions (AgentX: chat); join "
                         "when-subagents-end (AgentX: after-recorded-gap); phase_start own-think-time (AgentX: "
                         "less-phase-minimum)"}  # fmt: skip
    assert any("Not comparable with InferenceX's AgentX results" in info.value for info in app.info)


def test_tier_traffic_and_figures_by_turn(seeded_hub: str) -> None:
    app = open_page("agentic")
    assert not app.exception
    table = _table(app)
    # 35 % of 1 M prompt tokens came back from DRAM at 1 kB each: 0.35 GB, 0.70 GB went out, at 50 GB/s; over the
    # Point's 60 s that is 1.05 GB / 60 s.
    dram_16 = _row(table, "dram 1024 GiB", 16)
    assert (dram_16["from DRAM (GB)"], dram_16["to DRAM (GB)"], dram_16["host link, from DRAM (GB/s)"]) == (
        0.35, 0.7, 50.0)  # fmt: skip
    assert dram_16["tier traffic over the Point (GB/s)"] == pytest.approx(1.05 / 60, abs=0.001)
    assert pd.isna(_row(table, "none", 16)["from DRAM (GB)"])  # no DRAM tier, no traffic reported
    # The tab by turn: both arms drawn at the largest concurrency; their contexts were not stored, which it says.
    headings = [markdown.value for markdown in app.markdown]
    assert "**By turn in the session** at concurrency 16" in headings
    assert any("No prompt length figures stored" in info.value for info in app.info)
