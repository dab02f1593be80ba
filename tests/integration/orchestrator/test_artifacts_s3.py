"""Artifacts on a real S3 endpoint (moto in server mode, started here): uploads, outages, snapshots."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import boto3
import pytest

from db import reads, recording
from db.session import make_engine, migrate, open_session
from orchestrator.artifacts import S3ArtifactStore
from orchestrator.publish import fetch_latest_snapshot
from runners.host.process import pick_free_port
from tests.conftest import ROOT, run_cli

BUCKET = "infersweep-artifacts"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    port = pick_free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(url + "/moto-api/", timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    previous = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = "testing", "testing"
    boto3.client("s3", endpoint_url=url, region_name="us-east-1").create_bucket(Bucket=BUCKET)
    yield url
    server.terminate()
    server.wait(timeout=10)
    for key, value in previous.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def s3_env(endpoint: str, prefix: str) -> dict[str, str]:
    return {"INFERSWEEP_ARTIFACTS": f"s3://{BUCKET}/{prefix}", "INFERSWEEP_S3_ENDPOINT_URL": endpoint}


def objects(endpoint: str, prefix: str) -> list[str]:
    listing = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").list_objects_v2(
        Bucket=BUCKET, Prefix=prefix
    )
    return sorted(item["Key"] for item in listing.get("Contents", []))


def test_upload_is_idempotent(s3_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFERSWEEP_S3_ENDPOINT_URL", s3_endpoint)
    store = S3ArtifactStore(BUCKET, "idem")
    file = tmp_path / "a.txt"
    file.write_text("hello")
    first = store.put(file, "records/abc.txt")
    second = store.put(file, "records/abc.txt")
    assert first == second == f"s3://{BUCKET}/idem/records/abc.txt"
    assert objects(s3_endpoint, "idem/") == ["idem/records/abc.txt"]
    assert store.get("records/abc.txt", tmp_path / "back.txt").read_text() == "hello"


def test_sweep_uploads_records_and_logs(
    s3_endpoint: str, write_recipe, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_cli("run", str(write_recipe()), "--sweep", "s3-sweep", env=s3_env(s3_endpoint, "sweep"))
    assert result.returncode == 0, result.stderr
    keys = objects(s3_endpoint, "sweep/")
    assert sum(key.startswith("sweep/records/") and key.endswith(".parquet") for key in keys) == 2
    assert sum(key.startswith("sweep/engine-log/") for key in keys) == 1
    # Each Point's result as the runner reported it, and the engine's raw /metrics before and after it.
    assert sum(key.startswith("sweep/result/") and key.endswith(".json") for key in keys) == 2
    assert sum(key.startswith("sweep/server-metrics/") and key.endswith(".json") for key in keys) == 2
    engine = make_engine()
    with open_session(engine) as session:
        assert recording.pending_artifacts(session) == []
        (view, *_) = reads.list_results(session, sweep="s3-sweep")
        (result,) = [a for a in recording.artifacts_of_point(session, view_sweep_id(session), view.point_key)
                     if a.kind == "result"]  # fmt: skip
        scrapes = [a for a in recording.artifacts_of_point(session, view_sweep_id(session), view.point_key)
                   if a.kind == "server-metrics"]  # fmt: skip
    monkeypatch.setenv("INFERSWEEP_S3_ENDPOINT_URL", s3_endpoint)
    store = S3ArtifactStore(BUCKET, "sweep")
    document = json.loads(store.get(result.key, tmp_path / "result.json").read_text())
    assert document["point_key"] == view.point_key and document["metrics"]["completed"] == view.completed
    (scrape,) = scrapes
    raw = json.loads(store.get(scrape.key, tmp_path / "scrape.json").read_text())
    assert "vllm:prompt_tokens_total" in raw["before"] and "vllm:prompt_tokens_total" in raw["after"]


def view_sweep_id(session) -> int:
    sweep, _ = recording.get_or_create_sweep(session, "s3-sweep")
    return int(sweep.id)


def test_endpoint_down_keeps_rows_and_publish_finishes(s3_endpoint: str, write_recipe) -> None:
    down = s3_env(f"http://127.0.0.1:{pick_free_port()}", "outage")  # nothing listens there
    result = run_cli("run", str(write_recipe()), "--sweep", "s3-outage", env=down)
    assert result.returncode == 0, result.stderr  # the sweep itself succeeded
    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        assert len(reads.list_results(session, sweep="s3-outage")) == 2
        pending = recording.pending_artifacts(session)
    # Per Point its records, result and raw /metrics; and the engine log: 2 x 3 + 1. The first upload failed (its
    # error kept); after it, uploads paused and the rest were left pending untried.
    assert len(pending) == 7 and any(item.error and "failed" in item.error for item in pending)
    assert all(Path(item.local_path).exists() for item in pending)

    still_down = run_cli("publish", env=down)
    assert still_down.returncode == 1 and "7 still pending" in still_down.stdout
    published = run_cli("publish", env=s3_env(s3_endpoint, "outage"))
    assert published.returncode == 0, published.stderr
    assert "7 uploaded, 0 still pending" in published.stdout
    assert len(objects(s3_endpoint, "outage/")) == 7


@contextlib.contextmanager
def endpoint(serve: Callable[[socket.socket], None]) -> Iterator[tuple[str, list[socket.socket]]]:
    """A local endpoint: each connection it accepts is kept (closed at the end) and handed to `serve` in a thread of
    its own; yields its URL and the connections taken."""
    listener = socket.create_server(("127.0.0.1", 0))
    taken: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            taken.append(connection)
            threading.Thread(target=serve, args=(connection,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", taken
    finally:
        listener.close()
        for connection in taken:
            connection.close()


@contextlib.contextmanager
def black_hole() -> Iterator[tuple[str, list[socket.socket]]]:
    """An endpoint that accepts every connection and never answers; yields its URL and the connections taken."""
    with endpoint(lambda connection: None) as found:
        yield found


@contextlib.contextmanager
def answers_heads_only() -> Iterator[tuple[str, list[str]]]:
    """An endpoint that answers every HEAD at once (no such object: upload it) and never answers a PUT, so uploads
    reach boto3's transfer; yields its URL and the request lines it saw."""
    seen: list[str] = []

    def serve(connection: socket.socket) -> None:
        with contextlib.suppress(OSError):
            reader = connection.makefile("rb")
            while True:
                line = reader.readline().decode(errors="replace").strip()
                if not line:
                    return
                seen.append(line)
                while reader.readline() not in {b"\r\n", b"\n", b""}:  # the headers
                    pass
                if not line.startswith("HEAD "):
                    return  # a PUT: its body is never read and it is never answered
                connection.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")

    with endpoint(serve) as (url, _taken):
        yield url, seen


def test_an_endpoint_that_never_answers_costs_one_upload_not_one_per_artifact(write_recipe) -> None:
    """Before: each of a Point's artifacts waited 3 attempts x 30 s on such an endpoint (4.5 min per Point, the
    lease unrenewed). Now an upload is bounded (INFERSWEEP_S3_TIMEOUT_S, two attempts), and after one fails the
    sweep leaves the rest pending without trying: the endpoint sees the connections of one upload only."""
    with black_hole() as (endpoint, taken):
        env = {**s3_env(endpoint, "hole"), "INFERSWEEP_S3_TIMEOUT_S": "1", "AWS_ACCESS_KEY_ID": "testing",
               "AWS_SECRET_ACCESS_KEY": "testing"}  # fmt: skip
        started = time.monotonic()
        result = run_cli("run", str(write_recipe()), "--sweep", "s3-black-hole", env=env)
        elapsed = time.monotonic() - started
        connections = len(taken)
    assert result.returncode == 0, result.stderr
    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        assert len(reads.list_results(session, sweep="s3-black-hole")) == 2
        sweep, _ = recording.get_or_create_sweep(session, "s3-black-hole")
        pending = [item for item in recording.pending_artifacts(session) if item.sweep_id == sweep.id]
    assert len(pending) == 7 and all(Path(item.local_path).exists() for item in pending)
    assert 1 <= connections <= 4, f"{connections} connections: uploads were tried after the store failed"
    assert elapsed < 120, elapsed


def test_snapshot_serves_a_hub_without_the_database(
    s3_endpoint: str, write_recipe, tmp_path: Path, monkeypatch
) -> None:
    run = run_cli("run", str(write_recipe()), "--sweep", "s3-snapshot", env=s3_env(s3_endpoint, "snap"))
    assert run.returncode == 0, run.stderr
    engine = make_engine()
    with open_session(engine) as session:
        views = reads.list_results(session)
        sweep, _ = recording.get_or_create_sweep(session, "s3-snapshot")
        from sqlmodel import select

        from db.models import PointResultRow

        retracted = session.exec(select(PointResultRow).where(PointResultRow.sweep_id == sweep.id)).first()
        retracted.retracted, retracted.retraction_reason = True, "test retraction"
        session.add(retracted)
        session.commit()
    published = run_cli("publish", "--snapshot", env=s3_env(s3_endpoint, "snap"))
    assert published.returncode == 0, published.stderr
    assert f"snapshot of {len(views) - 1} point(s) published" in published.stdout

    monkeypatch.setenv("INFERSWEEP_S3_ENDPOINT_URL", s3_endpoint)
    snapshot = fetch_latest_snapshot(S3ArtifactStore(BUCKET, "snap"), tmp_path / "public.db")
    public = make_engine(f"sqlite:///{snapshot}")
    with open_session(public) as session:
        public_views = reads.list_results(session)
    assert len(public_views) == len(views) - 1
    assert all(view.sweep != "s3-snapshot" or view.concurrency != retracted.concurrency for view in public_views)


def test_two_sweeps_of_one_recipe_during_an_outage_publish_their_own_bytes(
    s3_endpoint: str, write_recipe, tmp_path: Path
) -> None:
    import hashlib

    from sqlmodel import col, select

    from db.models import ArtifactRow, SweepRow

    home = tmp_path / "home"  # a home of its own: its staging holds this test's files only
    own = {"INFERSWEEP_HOME": str(home)}
    down = {**s3_env(f"http://127.0.0.1:{pick_free_port()}", "twice"), **own}  # S3 unreachable during both sweeps
    recipe = write_recipe({"name": "s3-twice"})
    for sweep in ("s3-twice-a", "s3-twice-b"):  # same recipe, same Point keys, other bytes
        result = run_cli("run", str(recipe), "--sweep", sweep, env=down)
        assert result.returncode == 0, result.stderr
    published = run_cli("publish", env={**s3_env(s3_endpoint, "twice"), **own})
    assert published.returncode == 0, published.stdout + published.stderr

    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    with open_session(make_engine(f"sqlite:///{home / 'infersweep.db'}")) as session:
        sweep_ids = session.exec(select(SweepRow.id).where(col(SweepRow.name).in_(["s3-twice-a", "s3-twice-b"]))).all()
        rows = session.exec(select(ArtifactRow).where(col(ArtifactRow.sweep_id).in_(sweep_ids))).all()
        still_pending = {row.local_path for row in recording.pending_artifacts(session)}
    assert len(rows) == 2 * 7 and {row.status for row in rows} == {"stored"}
    for row in rows:
        body = client.get_object(Bucket=BUCKET, Key=f"twice/{row.key}")["Body"].read()
        assert hashlib.sha256(body).hexdigest() == row.sha256, f"{row.key} holds another artifact's bytes"
        assert not Path(row.local_path).exists() or row.kind == "engine-log", f"{row.local_path} left in staging"
    assert still_pending == set()
    assert [path for path in (home / "staging").rglob("*") if path.is_file()] == [], "staging is not empty"
    assert len({row.key for row in rows if row.kind == "result"}) == 4  # each sweep's results are its own


def test_a_staged_file_that_changed_is_never_uploaded(s3_endpoint: str, tmp_path: Path, monkeypatch) -> None:
    from db.artifacts import sha256_of
    from db.models import ArtifactRow
    from orchestrator.uploads import upload_artifacts

    monkeypatch.setenv("INFERSWEEP_S3_ENDPOINT_URL", s3_endpoint)
    staged = tmp_path / "result.json"
    staged.write_text('{"point": 1}')
    digest = sha256_of(staged)
    staged.write_text('{"point": 2}')  # other bytes under the staged name
    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        sweep, _ = recording.get_or_create_sweep(session, "s3-tampered")
        artifact = recording.add_artifact(session, ArtifactRow(
            sweep_id=sweep.id, kind="result", key=f"result/{digest}.json", local_path=str(staged), sha256=digest,
            size_bytes=staged.stat().st_size,
        ))  # fmt: skip
        assert upload_artifacts(session, S3ArtifactStore(BUCKET, "tampered"), [artifact]) == (0, 1)
        assert artifact.status == "pending" and "holds other bytes" in (artifact.error or "")
        session.delete(artifact)  # the session's later publish runs have nothing of this test's to upload
        session.commit()
    assert objects(s3_endpoint, "tampered/") == []


def test_the_read_only_api_is_served_by_the_bucket_alone(s3_endpoint: str, tmp_path: Path) -> None:
    """After `publish --snapshot`, a reader with nothing but the bucket gets every view as JSON, valid against the
    OpenAPI description beside it, and the same figures the folder store and the hub have (test_public_api.py)."""
    from tests.conftest import ROOT
    from tests.integration.public_api_contract import FILES, check_views, envelope, strict_json

    sample = sorted(str(path) for path in (ROOT / "tests" / "data" / "inferencex").glob("run_*/agg_bmk.json"))
    env = {**s3_env(s3_endpoint, "public"), "INFERSWEEP_DATABASE_URL": f"sqlite:///{tmp_path / 'results.db'}"}
    for argv in (["import", "inferencex", *sample], ["publish", "--snapshot"]):
        completed = run_cli(*argv, env=env)
        assert completed.returncode == 0, completed.stdout + completed.stderr
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    keys = [key.removeprefix("public/api/v1/") for key in objects(s3_endpoint, "public/api/")]
    # Every view, the chain's index, and the views again under the snapshot's hash (`asof` reads, DEPLOY.md).
    digest = json.loads(client.get_object(Bucket=BUCKET, Key="public/api/v1/index.json")["Body"].read())[
        "snapshot_sha256"]  # fmt: skip
    assert keys == sorted([*FILES, "snapshots.json", *(f"asof/{digest}/{name}" for name in FILES)])
    documents = {}
    for name in FILES:
        stored = client.get_object(Bucket=BUCKET, Key=f"public/api/v1/{name}")
        assert stored["ContentType"] == "application/json", name
        documents[name] = strict_json(stored["Body"].read(), f"s3 {name}")
    check_views(documents, "moto S3")
    latest = json.loads(client.get_object(Bucket=BUCKET, Key="public/snapshot/latest.json")["Body"].read())
    assert latest["key"] == f"snapshot/{documents['index.json']['snapshot_sha256']}.db"
    b200 = envelope(documents, tco_tier="owning_hyperscaler", model="deepseek-r1", precision="fp4", workload="1k/1k",
                    interactivity=50.0, hardware="b200")  # fmt: skip
    assert f"{b200['usd_per_million_output']:.3g}" == "0.905"  # the Overview's cell (test_public_api.py)


def test_ctrl_c_while_the_store_hangs_stops_at_once_and_leaves_the_uploads_pending(write_recipe) -> None:
    """Before: with a long S3 timeout and an endpoint that never answers, Ctrl-C waited for boto3's upload thread to
    give up its read (300 s, until SIGTERM), and the stop then tried the uploads again."""
    recipe = write_recipe({"engine": {"simulated": {"ttft_ms": 10, "itl_ms": 20}}, "workload": {"concurrency": [1, 2]}})
    with answers_heads_only() as (endpoint, taken):
        env = {**s3_env(endpoint, "hang"), "INFERSWEEP_S3_TIMEOUT_S": "300", "AWS_ACCESS_KEY_ID": "testing",
               "AWS_SECRET_ACCESS_KEY": "testing", "COLUMNS": "200"}  # fmt: skip
        process = subprocess.Popen(
            [sys.executable, "-m", "orchestrator.cli", "run", str(recipe), "--sweep", "s3-hang-ctrl-c"],
            cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,  # its own process group: Ctrl-C reaches it and what it started, as in a terminal
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline and not any(line.startswith("PUT ") for line in taken):
                assert process.poll() is None, process.communicate(timeout=30)
                time.sleep(0.2)
            assert any(line.startswith("PUT ") for line in taken), f"no upload reached the store: {taken}"
            time.sleep(1.0)  # the upload is waiting on the endpoint's answer now
            connections, interrupted_at = len(taken), time.monotonic()
            os.killpg(process.pid, signal.SIGINT)
            stdout, stderr = process.communicate(timeout=150)
            stopped_s = time.monotonic() - interrupted_at
            tried_after = len(taken) - connections
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
    assert process.returncode == 130, stdout + stderr
    assert stopped_s < 60, f"Ctrl-C took {stopped_s:.0f} s to stop the sweep"
    assert tried_after == 0, f"{tried_after} uploads were tried while stopping"
    assert "Traceback" not in stderr, stderr
    with open_session(make_engine()) as session:
        sweep, _ = recording.get_or_create_sweep(session, "s3-hang-ctrl-c")
        stored = reads.list_results(session, sweep="s3-hang-ctrl-c")
        pending = [item for item in recording.pending_artifacts(session) if item.sweep_id == sweep.id]
    assert stored and pending and all(Path(item.local_path).exists() for item in pending)
