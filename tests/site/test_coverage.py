"""The Coverage page on the real InferenceX sample (tests/data/inferencex): TPU v7, which has no result, is named as
missing in a sentence, and its column says so on every row; the chips that have rows show what kind (issue 42)."""

from __future__ import annotations

from tests.conftest import run_cli
from tests.site.conftest import assert_says_how_to_get_results, open_page
from tests.site.test_overview_real_rows import SAMPLE


def test_empty_database_says_how_to_get_results(hub_database: str) -> None:
    assert_says_how_to_get_results("coverage", "Coverage", hub_database, from_overview=True)


def test_tpu_v7_is_missing_in_a_sentence_and_in_its_column(hub_database: str) -> None:
    assert run_cli("import", "inferencex", *SAMPLE).returncode == 0
    app = open_page("coverage", from_overview=True)
    said = " ".join(warning.value for warning in app.warning)
    assert "No result yet for" in said and "(`tpu-v7`: 3 catalogue recipe(s) in `recipes/catalogue/tpu-v7/`)" in said, (
        said
    )
    grid = app.dataframe[0].value
    assert set(grid["tpu-v7"]) == {"missing"}
    # The sample's rows are InferenceX's: imported, never measured here; B200 and MI355X have DeepSeek-R1 FP4 1k/1k.
    row = grid[(grid["model"] == "deepseek-r1") & (grid["precision"] == "fp4") & (grid["workload"] == "1k/1k")]
    assert row.iloc[0]["b200"].startswith("imported · ") and row.iloc[0]["mi355x"].startswith("imported · ")
    assert not any(text.startswith("measured") for text in grid.drop(columns=["model", "precision", "workload"])
                   .to_numpy().ravel())  # fmt: skip
    assert "cpu-local" not in grid.columns  # a local host only where it has results
