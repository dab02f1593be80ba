"""One bad number must not poison the results: real files with NaN, infinity, a negative latency or an impossible
throughput are refused row by row (InferenceX) or level by level (peers), naming the field and the value, and what
is stored stays readable. Before, such rows were stored valid, and on SQLite one NaN made `infersweep results`,
`export` and every hub page fail ("malformed JSON")."""

from __future__ import annotations

import json
import math
from pathlib import Path

from db import reads
from db.session import make_engine, migrate, open_session
from orchestrator.importers.store import import_inferencex
from tests.conftest import ROOT, run_cli

SAMPLE = ROOT / "tests" / "data" / "inferencex" / "run_20316427102" / "agg_bmk.json"  # gpt-oss, 11 real rows
AIPERF = ROOT / "tests" / "data" / "peers" / "aiperf" / "aiperf-c4.json"
POISONS = {  # row index -> (field, value): each a mutation seen in the fuzz run of real files
    0: ("median_ttft", math.nan),
    1: ("tput_per_gpu", math.inf),
    2: ("p99_ttft", -1e12),
    3: ("output_tput_per_gpu", 1e30),
    4: ("median_tpot", 1e308),  # seconds: 1e311 ms, infinity once stored in milliseconds
}


def poisoned(tmp_path: Path) -> Path:
    rows = json.loads(SAMPLE.read_text())
    for index, (name, value) in POISONS.items():
        rows[index][name] = value
    path = tmp_path / "run_20316427102" / "agg_bmk.json"
    path.parent.mkdir()
    path.write_text(json.dumps(rows))  # Python writes NaN and Infinity as JSON's extension does
    return path


def finite(view: reads.ResultView) -> bool:
    numbers = [value for value in vars(view).values() if isinstance(value, float)]
    return all(math.isfinite(value) for value in numbers)


def test_inferencex_rows_with_bad_numbers_are_refused_alone(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'results.db'}")
    migrate(engine)
    summary = import_inferencex(engine, [poisoned(tmp_path)], None, None)
    (file,) = summary.files
    refused = {index: (name, value) for index, name, value, _expected in file.refused}
    assert set(refused) == set(POISONS), file.refused
    assert refused[0][0] == "median_ttft" and refused[2] == ("p99_ttft", -1e12)
    assert refused[3] == ("output_tput_per_gpu", 1e30)
    assert refused[4][0] == "stored tpot_ms.p50" and refused[4][1] == math.inf  # caught where it became infinite
    assert file.imported == 11 - len(POISONS)
    with open_session(engine) as session:
        views = reads.list_results(session)
    assert len(views) == 11 - len(POISONS) and all(finite(view) for view in views)
    engine.dispose()


def test_the_cli_names_each_refusal_and_the_results_stay_readable(write_recipe, tmp_path: Path) -> None:
    imported = run_cli("import", "inferencex", str(poisoned(tmp_path)))
    assert imported.returncode == 0, imported.stderr
    assert "row 1 refused: field 'tput_per_gpu': got inf" in imported.stderr, imported.stderr
    assert "Traceback" not in imported.stderr
    export = json.loads(AIPERF.read_text())
    export["time_to_first_token"]["p50"] = math.nan
    bad_peer = tmp_path / "aiperf-nan.json"
    bad_peer.write_text(json.dumps(export))
    peer = run_cli("import", "aiperf", str(bad_peer), "--recipe", str(write_recipe()), "--sweep", "bad-peer")
    assert "Traceback" not in peer.stderr and "time_to_first_token" in peer.stderr and "nan" in peer.stderr.lower()
    results = run_cli("results")  # every stored row read back: one NaN used to fail this for good
    assert results.returncode == 0, results.stderr
    assert "imported" in results.stdout  # the six rows that were fine


def test_a_text_longer_than_any_real_one_refuses_its_row_without_being_stored_or_quoted(tmp_path: Path) -> None:
    rows = json.loads(SAMPLE.read_text())
    rows[0]["image"] = "vllm/vllm-openai:" + "x" * 1_000_000  # a 1 MB image reference (100 MB was stored whole)
    path = tmp_path / "run_20316427102" / "agg_bmk.json"
    path.parent.mkdir()
    path.write_text(json.dumps(rows))
    engine = make_engine(f"sqlite:///{tmp_path / 'results.db'}")
    migrate(engine)
    (file,) = import_inferencex(engine, [path], None, None).files
    assert [(index, name) for index, name, _value, _expected in file.refused] == [(0, "image")]
    (_index, _name, value, expected) = file.refused[0]
    assert "4096" in expected and str(value).startswith("vllm/vllm-openai:xxx")
    assert file.imported == 10
    engine.dispose()
    assert not any(b"x" * 10_000 in part.read_bytes() for part in tmp_path.glob("results.db*"))  # nothing of it kept
