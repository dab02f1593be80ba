"""The read-only API (orchestrator/public_api.py) on the real InferenceX sample, published with the CLI into a folder
store: every view valid against the OpenAPI description published beside it, and its figures the hub's (the Overview's
scorecard cell, the Coverage page's missing chips), read from the snapshot the hub serves."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from orchestrator.cli.site import read_only_url
from tests.conftest import ROOT, run_cli
from tests.integration.public_api_contract import FILES, check_views, envelope, response_schema, strict_json
from tests.site.conftest import open_page

SAMPLE = sorted(str(path) for path in (ROOT / "tests" / "data" / "inferencex").glob("run_*/agg_bmk.json"))
# DeepSeek-R1 FP4 1k/1k at 50 tok/s/user, owning tier: B200 is the cheapest there (tests/site/test_overview_real_rows.py
# works it by hand: $0.897 by the line, $0.905 along the hub's monotone cubic).
CELL = {"tco_tier": "owning_hyperscaler", "model": "deepseek-r1", "precision": "fp4", "workload": "1k/1k",
        "interactivity": 50.0}  # fmt: skip


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The sample imported and published (`infersweep publish --snapshot`) into a folder store; yields the store
    and the API's files by name, parsed."""
    home = tmp_path_factory.mktemp("public-api")
    store = home / "store"
    env = {"INFERSWEEP_DATABASE_URL": f"sqlite:///{home / 'results.db'}", "INFERSWEEP_ARTIFACTS": str(store)}
    for argv in (["import", "inferencex", *SAMPLE], ["publish", "--snapshot"]):
        completed = run_cli(*argv, env=env)
        assert completed.returncode == 0, completed.stdout + completed.stderr
    folder = store / "api" / "v1"
    yield store, {name: strict_json((folder / name).read_bytes(), str(folder / name)) for name in FILES}


def test_every_view_is_valid_against_the_published_openapi_description(published: tuple[Path, dict]) -> None:
    store, documents = published
    check_views(documents, "folder store")
    latest = json.loads((store / "snapshot" / "latest.json").read_text())
    assert latest["key"] == f"snapshot/{documents['index.json']['snapshot_sha256']}.db"
    assert documents["index.json"]["points"] == len(documents["results.json"]["items"]) == 125


def test_the_description_refuses_a_view_that_breaks_it(published: tuple[Path, dict]) -> None:
    """The validation above can fail: a result whose concurrency is text, or with a field the API does not have."""
    _, documents = published
    validator = jsonschema.Draft202012Validator(response_schema(documents["openapi.json"], "results"))
    item = documents["results.json"]["items"][0]
    for broken in (
        {**item, "concurrency": "4"},
        {**item, "surprise": 1},
        {k: v for k, v in item.items() if k != "origin"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            validator.validate({**documents["results.json"], "items": [broken]})


def test_the_envelope_is_the_overview_cell(published: tuple[Path, dict], monkeypatch: pytest.MonkeyPatch) -> None:
    store, documents = published
    b200 = envelope(documents, **CELL, hardware="b200")
    assert "tp4·ep4" in b200["configuration"] and b200["origins"] == ["imported"]
    throughput = b200["output_throughput_per_gpu"]["mean"]
    assert 330.9 <= throughput <= 549.9  # between the two rows that bracket 50 tok/s/user (worked by hand)
    assert b200["usd_per_gpu_hour"] == 1.73
    assert b200["usd_per_million_output"] == pytest.approx(1.73 / (throughput * 3600 / 1e6), rel=1e-9)
    # The Overview, on the very snapshot the API was read from, shows the same figure (to its three significant figures)
    snapshot = store / "snapshot" / f"{documents['index.json']['snapshot_sha256']}.db"
    monkeypatch.setenv("INFERSWEEP_DATABASE_URL", read_only_url(f"sqlite:///{snapshot}", immutable=True))
    app = open_page("overview", {"model": "deepseek-r1", "precision": "fp4", "workload": "1k/1k", "tiers": ["50"],
                                 "tier": "owning_hyperscaler", "tab": "All figures"})  # fmt: skip
    table = next(frame.value for frame in app.dataframe if "$/M output tokens" in frame.value.columns)
    shown = table.set_index("hardware").loc["b200"]
    assert shown["$/M output tokens"] == float(f"{b200['usd_per_million_output']:.3g}") == 0.905
    assert shown["output tok/s/GPU"] == float(f"{throughput:.3g}")


def test_coverage_names_the_chips_without_results(published: tuple[Path, dict]) -> None:
    _, documents = published
    coverage = documents["coverage.json"]
    assert "tpu-v7" in coverage["chips_without_results"] and "b200" not in coverage["chips_without_results"]
    tpu = [item for item in coverage["items"] if item["hardware"] == "tpu-v7"]
    assert tpu and {item["status"] for item in tpu} == {"missing"}


def test_an_imported_result_links_to_its_source_run(published: tuple[Path, dict]) -> None:
    _, documents = published
    for item in documents["results.json"]["items"]:
        assert item["source_url"].startswith("https://github.com/SemiAnalysisAI/InferenceX/actions/runs/"), item
        assert item["hub_path"].startswith("/run?sweep=") and "/tmp" not in json.dumps(item), item
        assert item["verification"] == "cannot be verified", item  # another tool's figures, without their records


def test_an_items_id_is_the_same_after_another_publish_of_the_same_data(
    published: tuple[Path, dict], tmp_path: Path
) -> None:
    """Ids come from what the item is (its series and point), not where it stands: publishing the same results again,
    into another store from another database, gives every item the same id; every id is one item's."""
    _, documents = published
    env = {"INFERSWEEP_DATABASE_URL": f"sqlite:///{tmp_path / 'again.db'}", "INFERSWEEP_ARTIFACTS": str(tmp_path / "s")}
    for argv in (["import", "inferencex", *reversed(SAMPLE)], ["publish", "--snapshot"]):
        completed = run_cli(*argv, env=env)
        assert completed.returncode == 0, completed.stdout + completed.stderr
    for name in ("results.json", "envelopes.json", "coverage.json", "capacity.json"):
        before = {item["id"]: item for item in documents[name]["items"]}
        again = strict_json((tmp_path / "s" / "api" / "v1" / name).read_bytes(), name)["items"]
        assert len(before) == len(documents[name]["items"]), f"{name}: two items share an id"
        after = {item["id"]: item for item in again}
        assert after.keys() == before.keys(), name
        if name != "results.json":  # a result's sweep-local figures are the same; its import time is not shown
            assert all(after[key] == before[key] for key in before), name


def test_an_absent_figure_is_null_never_zero_or_empty(published: tuple[Path, dict]) -> None:
    _, documents = published
    results = documents["results.json"]["items"]
    assert results and all(item["request_throughput"] is None for item in results if item["origin"] == "imported")
    # Hit rates are a trace replay's: null on fixed-length rows, never 0.
    rates = ("realized_hit_rate", "theoretical_hit_rate", "agentx_theoretical_hit_rate")
    assert all(item[rate] is None for item in results for rate in rates)
    envelopes = documents["envelopes.json"]["items"]
    assert all((item["usd_per_million_output"] is None) == (item["no_figure_because"] is not None)
               for item in envelopes)  # fmt: skip
    assert any(item["no_figure_because"] for item in envelopes) and "" not in {
        i["no_figure_because"] for i in envelopes
    }
