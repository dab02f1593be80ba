"""Nothing a reader meets names a path of the machine that imported, ran or published, or a file outside the
repository (issue: the Pareto CSV and Run detail showed the importing machine's absolute path of each source file,
every cost source read 'via shared/reference/hardware.md'). Results imported from, and a sweep run from, a folder
of a marked name; then every hub page's text and tables, and every file `publish --snapshot` writes for the API."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import yaml
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT, SIMULATED_RECIPE, run_cli
from tests.site.conftest import open_page

SAMPLE = sorted((ROOT / "tests" / "data" / "inferencex").glob("run_*/agg_bmk.json"))


def page_text(app: AppTest) -> str:
    """Everything a page shows: its text elements, every table's cells, every JSON block."""
    parts = [str(element.value) for kind in ("markdown", "caption", "info", "warning", "error", "success", "code",
                                             "subheader", "header", "title", "json") for element in app.get(kind)]  # fmt: skip
    parts += [frame.value.to_csv() for frame in app.dataframe]
    return "\n".join(parts)


def test_no_page_table_or_api_file_names_a_local_path_or_a_file_outside_the_repository(
    hub_database: str, tmp_path: Path
) -> None:
    marker = f"importing-machine-{uuid.uuid4().hex[:8]}"
    folder = tmp_path / marker
    for path in SAMPLE:
        (folder / path.parent.name).mkdir(parents=True)
        shutil.copy(path, folder / path.parent.name / path.name)
    assert run_cli("import", "inferencex", *map(str, sorted(folder.glob("run_*/agg_bmk.json")))).returncode == 0
    recipe = folder / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(SIMULATED_RECIPE, sort_keys=False))
    ran = run_cli("run", str(recipe), "--sweep", "local-run", env={"INFERSWEEP_HOME": str(folder / "home")})
    assert ran.returncode == 0, ran.stdout + ran.stderr

    shown = []
    for name, link in (("overview", {}), ("pareto", {"model": "deepseek-r1", "precision": "fp4", "workload": "1k/1k"}),
                       ("tco", {}), ("profit", {}), ("coverage", {}),
                       ("run_detail", {"sweep": "inferencex-run-20286929996"}),
                       ("run_detail", {"sweep": "local-run"})):  # fmt: skip
        app = open_page(name, link, from_overview=name != "pareto")
        shown.append((name, page_text(app)))
    assert "InferenceX run 20286929996" in dict(shown)["run_detail"] or any("20286929996" in t for _, t in shown)
    store = tmp_path / "store"
    published = run_cli("publish", "--snapshot", env={"INFERSWEEP_ARTIFACTS": str(store)})
    assert published.returncode == 0, published.stdout + published.stderr
    api = sorted((store / "api" / "v1").glob("*.json"))
    assert api
    shown += [(str(path.name), path.read_text()) for path in api]
    json.loads((store / "api" / "v1" / "results.json").read_text())  # the files are what readers fetch, whole
    for where, text in shown:
        for foreign in (marker, str(tmp_path), str(ROOT), "shared/"):
            assert foreign not in text, f"{where} names {foreign!r}"
