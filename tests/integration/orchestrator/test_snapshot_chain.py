"""Append-only publishing (issue 64, acceptance 2): a published Point never changes; one leaves only by a retraction
recorded in the next snapshot, whose chain `infersweep verify STORE` checks; `asof` reads give the figures as they
were. Through the CLI, on real InferenceX rows (tests/data/inferencex)."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from analysis.asof import resolve_asof
from recipes.errors import ConfigurationError
from tests.conftest import ROOT, run_cli

RUN = ROOT / "tests" / "data" / "inferencex" / "run_20316427102" / "agg_bmk.json"  # 11 rows of one run


def cli(env: dict[str, str], *argv: str, code: int = 0) -> str:
    completed = run_cli(*argv, env=env)
    assert completed.returncode == code, completed.stdout + completed.stderr
    return completed.stdout + completed.stderr


def api(store: Path, name: str) -> dict:
    return json.loads((store / "api" / "v1" / name).read_text())


def test_a_changed_point_is_refused_a_retraction_chains_and_asof_reads_the_earlier_figures(tmp_path: Path) -> None:
    database, store = tmp_path / "results.db", tmp_path / "store"
    env = {"INFERSWEEP_DATABASE_URL": f"sqlite:///{database}", "INFERSWEEP_ARTIFACTS": str(store)}
    cli(env, "import", "inferencex", str(RUN))
    cli(env, "publish", "--snapshot")
    first = (store / "snapshot" / "latest.json").read_text()
    published = {item["point_key"]: item for item in api(store, "results.json")["items"]}
    assert len(published) == 11

    # Someone changes a published figure in the database: the next publish is refused, naming the Point and field.
    with sqlite3.connect(database) as connection:
        point_id, key, sweep, throughput = connection.execute(
            "SELECT p.id, p.point_key, s.name, p.output_throughput FROM point_result p JOIN sweep s ON s.id = p.sweep_id "
            "ORDER BY p.id LIMIT 1"
        ).fetchone()
        connection.execute("UPDATE point_result SET output_throughput = ? WHERE id = ?", (throughput * 2, point_id))
    refused = cli(env, "publish", "--snapshot", code=1)
    assert f"Point {point_id} ({key!r}" in refused and "changed since it was published" in refused, refused
    assert f"output_throughput: {throughput!r} -> {throughput * 2!r}" in refused, refused
    assert "Traceback" not in refused
    assert (store / "snapshot" / "latest.json").read_text() == first  # the pointer did not move

    # The change undone and the Point retracted instead: published, with the retraction recorded in the snapshot.
    with sqlite3.connect(database) as connection:
        connection.execute("UPDATE point_result SET output_throughput = ? WHERE id = ?", (throughput, point_id))
    cli(env, "retract", "--sweep", sweep, "--point", key, "--reason", "wrong engine image recorded")
    cli(env, "publish", "--snapshot")
    history = api(store, "snapshots.json")["snapshots"]
    assert [entry["points"] for entry in history] == [10, 11]
    assert history[0]["parent"] == history[1]["snapshot"] and history[1]["parent"] is None
    assert api(store, "index.json")["parent_sha256"] == history[1]["snapshot"]  # the API's index names it too
    [retraction] = history[0]["retractions"]
    assert (retraction["point_result_id"], retraction["reason"]) == (point_id, "wrong engine image recorded")
    assert key not in {item["point_key"] for item in api(store, "results.json")["items"]}

    verified = cli(env, "verify", str(store))
    assert "verified: 2 snapshot(s)" in verified and "(1 retraction(s))" in verified, verified

    # asof: by the first snapshot's hash (a prefix) and by a time between the two, the retracted Point as it was.
    for asof in (history[1]["snapshot"][:12], history[1]["published_at"]):
        entry = resolve_asof(history, asof)
        assert entry["snapshot"] == history[1]["snapshot"], asof
        earlier = api(store, f"asof/{entry['snapshot']}/results.json")["items"]
        assert {item["point_key"]: item for item in earlier}[key] == published[key]
    assert resolve_asof(history, history[0]["snapshot"])["points"] == 10
    before = (datetime.fromisoformat(history[1]["published_at"]) - timedelta(days=1)).date().isoformat()
    with pytest.raises(ConfigurationError, match="no snapshot was published by then"):
        resolve_asof(history, before)

    # A snapshot of the chain changed in the store: verify names it.
    parent = store / "snapshot" / f"{history[1]['snapshot']}.db"
    parent.write_bytes(parent.read_bytes() + b"\0")
    broken = cli(env, "verify", str(store), code=1)
    assert f"snapshot {history[1]['snapshot']}: the store holds other bytes" in broken, broken
