"""The hub's DRAM offload map (site/views/offload_map.py) with AppTest.

One B200 serving gpt-oss-120b in FP4 keeps 48,932 blocks of 64 tokens of KV in HBM after its 58 GB of weights
(tests/unit/analysis/test_offload.py checks the map itself on a corpus worked by hand). The shipped
sample session re-sends a prompt of about 34,000 tokens (about 535 blocks), so HBM holds every live session up to
about 48,932 / 535 = 91 of them: at 64 the DRAM tier adds nothing, at 128 and 256 HBM alone thrashes while 1 TiB of
DRAM (466,033 blocks) still holds them all, and at the given rates (prefill 10,000, decode 1,000 tokens/s per
GPU) the recomputed prompts dominate each request's time: offload pays.
"""

from __future__ import annotations

import pandas as pd

from tests.site.conftest import open_page

LINK = {"stored": "0", "chip": "b200", "llm": "gpt-oss-120b", "weights": "fp4", "gpus": "1", "dram": "1024",
        "concurrency": ["64", "128", "256"]}  # fmt: skip


def _table(app) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    return next(frame.value for frame in app.dataframe if "saving %" in frame.value.columns).set_index("concurrency")


def test_offload_pays_only_once_hbm_cannot_hold_the_sessions(hub_database: str) -> None:
    app = open_page("offload_map", LINK, from_overview=True)
    assert "Model-based, not measured" in app.info[0].value
    # 180 GB of HBM read as binary (GiB, as the driver reports it) x 0.9, less 58.5 GB of weights, over 2.36 MB a block.
    assert any("48,932 blocks of 64 tokens in HBM" in caption.value for caption in app.caption)
    table = _table(app)
    assert table.loc[64, "saving %"] == 0.0 and not table.loc[64, "offload pays"]
    for concurrency in (128, 256):
        assert table.loc[concurrency, "HBM-only hit %"] < 10 < 70 < table.loc[concurrency, "with DRAM hit %"]
        assert table.loc[concurrency, "saving %"] >= 10 and table.loc[concurrency, "offload pays"]
    assert any("in **2 of 3** cells" in block.value and "from concurrency 128" in block.value
               for block in app.markdown)  # fmt: skip


def test_stored_rates_need_a_stored_point(hub_database: str) -> None:
    app = open_page("offload_map", {**LINK, "stored": "1"}, from_overview=True)
    assert "No stored valid fixed-length point of gpt-oss-120b on b200" in app.warning[0].value


def test_weights_that_leave_no_room_are_said(hub_database: str) -> None:
    app = open_page("offload_map", {**LINK, "llm": "deepseek-r1", "weights": "bf16"}, from_overview=True)
    assert "leave no HBM for the KV cache on 1× b200" in app.warning[0].value


def test_the_dram_default_is_inferencex_rule_on_the_registry(hub_database: str) -> None:
    """B200 nodes hold 2 TB (DGX B200): min(2 TB, 3 TB) x 0.8 x 1 GPU / 8 per node = 204.8 GB = 190.7 GiB."""
    app = open_page("offload_map", {key: value for key, value in LINK.items() if key != "dram"}, from_overview=True)
    assert any("in 191 GiB of DRAM" in caption.value for caption in app.caption), [c.value for c in app.caption]


def test_the_synthetic_agentx_corpus_is_a_choice(hub_database: str) -> None:
    """AgentX sizes (~90k-token prompts): 8 B200s with DeepSeek-R1 FP8 (160k blocks of KV) hold 16 live sessions in
    HBM (1.5M tokens) but not 128 (~12M): the 1.5 TiB DRAM default (23M tokens more) then pays."""
    link = {"stored": "0", "trace": "synthetic: agentx", "chip": "b200", "llm": "deepseek-r1", "weights": "fp8",
            "gpus": "8", "concurrency": ["16", "128"]}  # fmt: skip
    table = _table(open_page("offload_map", link, from_overview=True))
    assert not table.loc[16, "offload pays"] and table.loc[128, "offload pays"]


def test_measured_replays_of_the_same_corpus_are_overlaid(hub_database: str) -> None:
    """Two measured arms replaying the shipped sample session on b200, with and without a DRAM tier: their realised
    hit rates are drawn beside the prediction and listed; a replay of another trace is not."""
    from datetime import UTC, datetime

    from tests.site.hub_fixture import _agentic, _Seeder, _snapshot

    seeder = _Seeder(hub_database)
    sweep = seeder.sweep("replays")
    at = datetime(2026, 11, 20, tzinfo=UTC)
    workload = {"kind": "agentic-replay", "trace": "traces/claude-code-weka/sample_trace.json", "concurrency": [64]}
    other = {**workload, "trace": "elsewhere/another.json"}
    for name, offload, shares, trace in (("hbm", None, (0.5, 0.0), workload), ("dram", 1024, (0.5, 0.25), workload),
                                         ("other", None, (0.1, 0.0), other)):  # fmt: skip
        recipe = seeder.recipe(_snapshot(f"b200-{name}", "b200", "sglang", "gpt-oss-120b", "fp4", {"tp": 1}, trace,
                                         offload))  # fmt: skip
        seeder.points(sweep, recipe, at, [(64, 30.0, 100.0)], accelerators=1, agentic={64: _agentic(*shares, 0.76)})
    seeder.engine.dispose()
    app = open_page("offload_map", {**LINK, "concurrency": ["64", "128"]}, from_overview=True)
    listed = next(frame.value for frame in app.dataframe if "realized_hit_rate" in frame.value.columns)
    assert sorted(listed["realized_hit_rate"]) == [0.5, 0.75]  # the other trace's replay is left out
    assert not any("No agentic replay" in caption.value for caption in app.caption)
