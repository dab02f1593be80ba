"""The hub's Methodology page (site/views/methodology.py): definitions, rules, cost and price sources."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
from streamlit.testing.v1 import AppTest

from tests.site.conftest import open_page
from tests.site.hub_fixture import B200_OWNING_USD_PER_GPU_HOUR, DAY0, FIXED, _Seeder, _snapshot


def _table(app: AppTest, column: str) -> pd.DataFrame:
    return next(frame.value for frame in app.dataframe if column in frame.value.columns)


def test_empty_database_still_explains_every_metric(hub_database: str) -> None:
    app = open_page("methodology")
    assert not app.exception
    assert "No results in this hub's database yet" in app.info[0].value
    definitions = _table(app, "definition").set_index("metric")["definition"]
    assert definitions["TTFT"] == "first token chunk − sent"
    assert definitions["TPOT"].startswith("(last token chunk − first token chunk) / (output tokens − 1)")
    assert "1000 / TPOT" in definitions["interactivity"]


def test_fixture_lists_the_b200_tco_source_and_date(seeded_hub: str) -> None:
    app = open_page("methodology")
    assert not app.exception and not app.info
    tco = _table(app, "figure")
    b200 = tco[(tco["hardware"] == "b200") & (tco["figure"] == "TCO owning_hyperscaler")].iloc[0]
    assert b200["value"] == B200_OWNING_USD_PER_GPU_HOUR  # the rate the fixture's $0.3204/Mtok is worked from
    assert b200["unit"] == "USD per GPU-hour" and b200["as of"] == "2026-07"
    assert "InferenceX dashboard TCO tables" in b200["source"]
    all_in = tco[(tco["hardware"] == "b200") & (tco["figure"] == "all-in power")].iloc[0]
    assert (all_in["value"], all_in["unit"]) == (1.71, "kW")

    prices = _table(app, "output $/M").set_index("model")
    deepseek = prices.loc["deepseek-ai/DeepSeek-R1-0528"]
    assert (deepseek["input $/M"], deepseek["cached input $/M"], deepseek["output $/M"]) == (0.5, 0.5, 2.15)
    assert deepseek["listing"] == "https://openrouter.ai/deepseek/deepseek-r1-0528" and deepseek["as of"] == "2026-12"
    assert "OpenRouter" in deepseek["source"] and "capture date not stated" in deepseek["note"]


def test_validity_rules_origins_and_palette(seeded_hub: str) -> None:
    app = open_page("methodology")
    rules = _table(app, "applied to").set_index("check")
    assert rules.loc["min-requests", "rule"] == "at least max(10, 2 × concurrency) measured requests"
    assert rules.loc["error-rate", "rule"] == "error rate ≤ 10 %"
    assert rules.loc["figures-in-range", "applied to"] == "measured, replayed, peer-file, inferencex-row, projected"
    recipe_rules = _table(app, "why").set_index("rule")
    assert recipe_rules.loc["prefix-caching-off-for-random-tokens", "group"] == "Methodology rules"
    assert recipe_rules.loc["hardware-exists", "group"] == "Consistency rules"
    origins = _table(app, "shown").set_index("origin")["shown"]
    assert origins.to_dict() == {"measured": "by default", "imported": "by default",
                                 "simulated": "on request, labelled", "dry-run": "never",
                                 "projected": "on request, labelled"}  # fmt: skip
    palette = _table(app, "colour")
    assert palette["colour"].iloc[0] == "#0072B2" and len(palette) == 8
    assert any("Okabe & Ito" in caption.value for caption in app.caption)
    # Formulas come from the analysis library's own documentation; every table is downloadable.
    assert any("cost.py" in expander.label for expander in app.expander)
    assert len(app.get("download_button")) >= 7


def test_query_param_link_reproduces_the_hardware_selection(seeded_hub: str) -> None:
    app = open_page("methodology", {"hardware": ["b200", "h200"]})
    assert not app.exception
    tco = _table(app, "figure")
    assert set(tco["hardware"]) == {"b200", "h200"}
    assert len(tco) == 8  # three TCO tiers and all-in power each


def test_one_hardware_database(hub_database: str) -> None:
    seeder = _Seeder(hub_database)
    recipe = seeder.recipe(_snapshot("b200-only", "b200", "vllm", "deepseek-r1", "fp8", {"tp": 8}, FIXED))
    seeder.points(seeder.sweep("solo"), recipe, DAY0 + timedelta(days=1), [(4, 100.0, 500.0)])
    seeder.engine.dispose()
    app = open_page("methodology")
    assert not app.exception and not app.info
    # The sources cover the whole registry, not only the hardware measured so far.
    assert {"b200", "h200", "mi355x"} <= set(_table(app, "figure")["hardware"])


def test_the_definitions_are_written_once_and_for_the_public(seeded_hub: str) -> None:
    app = open_page("methodology")
    text = next(block.value for block in app.markdown if "Per request" in block.value)
    assert "|---" not in text  # the tables are shown as tables, above, and not again in the text
    assert "seen here" not in text and "this 2-core machine" not in text and "on this machine" not in text
    assert "Validity verdict" in text  # the rest of the document is there
