"""`infersweep site`: which database the hub reads, read-only, and a Streamlit that starts and stops cleanly."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlmodel import col, select

from db import recording
from db.models import PointResultRow, SweepRow
from db.session import make_engine, migrate, open_session
from orchestrator.artifacts import LocalArtifactStore
from orchestrator.cli import site as site_cli
from orchestrator.publish import publish_snapshot
from orchestrator.site_warmup import warm
from recipes.errors import ConfigurationError
from runners.host.process import pick_free_port
from tests.conftest import ROOT, run_cli
from tests.site.hub_fixture import seed_hub


def _start(*args: str, env: dict[str, str]) -> tuple[subprocess.Popen[str], int]:
    port = pick_free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "site", "--port", str(port), *args],
        cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,  # its own process group, so a Ctrl-C can be sent to it and its Streamlit
    )  # fmt: skip
    return process, port


def _healthy(process: subprocess.Popen[str], port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stdout.read() if process.stdout else ""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1) as answer:
                assert answer.read() == b"ok"
                return
        except OSError:
            time.sleep(0.25)
    pytest.fail(f"the hub did not answer /_stcore/health on port {port} within {timeout} s")


def _children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT of our own requests is no listener
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _stop(process: subprocess.Popen[str], port: int, how: signal.Signals) -> str:
    streamlit = _children(process.pid)
    assert len(streamlit) == 1
    if how == signal.SIGINT:
        os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    else:
        process.send_signal(how)
    output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    assert not Path(f"/proc/{streamlit[0]}").exists() or "zombie" in Path(f"/proc/{streamlit[0]}/status").read_text()
    assert _port_free(port)
    return output


def test_site_migrates_the_configured_database_starts_and_stops_on_sigterm(tmp_path: Path) -> None:
    database = tmp_path / "fresh" / "infersweep.db"
    database.parent.mkdir()
    process, port = _start(env={"INFERSWEEP_DATABASE_URL": f"sqlite:///{database}"})
    try:
        _healthy(process, port)
        # The app itself is served (not just the health endpoint), by this machine only.
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as page:
            assert b"<html" in page.read().lower()
    finally:
        if process.poll() is None:
            output = _stop(process, port, signal.SIGTERM)
    assert f"InferSweep hub: http://127.0.0.1:{port}" in output
    assert f"database sqlite:///{database}" in output
    # A brand-new database was brought to the current schema before the (read-only) hub opened it.
    assert inspect(make_engine(f"sqlite:///{database}")).has_table("point_result")


def test_site_on_a_published_snapshot_stops_on_ctrl_c(tmp_path: Path) -> None:
    source = f"sqlite:///{tmp_path / 'results.db'}"
    seed_hub(source)
    store = LocalArtifactStore(tmp_path / "store")
    publish_snapshot(make_engine(source), store)
    first = json.loads((tmp_path / "store" / "api" / "v1" / "results.json").read_text())
    # One Point retracted and published again: the hub's API answers `asof` reads from the chain (issue 64).
    with open_session(make_engine(source)) as session:
        point, sweep = session.exec(
            select(PointResultRow, SweepRow).join(SweepRow, col(SweepRow.id) == col(PointResultRow.sweep_id))
        ).first() or (None, None)
        assert point is not None and sweep is not None
        assert recording.retract(session, "a test", sweep.name, point.point_key) >= 1
    publish_snapshot(make_engine(source), store)
    history = json.loads((tmp_path / "store" / "api" / "v1" / "snapshots.json").read_text())["snapshots"]
    home = tmp_path / "home"
    process, port = _start("--snapshot", str(tmp_path / "store"), env={"INFERSWEEP_HOME": str(home)})
    try:
        _healthy(process, port)
        hub_env = Path(f"/proc/{_children(process.pid)[0]}/environ").read_bytes().split(b"\0")
        # A version or view the API does not have is its 404 in JSON, never the hub's page answering 200.
        for path in ("/api/v2/index.json", "/api/v1/no-such-view.json"):
            with pytest.raises(urllib.error.HTTPError) as missing:
                urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10)
            assert missing.value.code == 404 and missing.value.headers["Content-Type"] == "application/json"
            assert json.loads(missing.value.read()) == {
                "error": "not found", "path": path, "versions": ["v1"], "index": "/api/v1/index.json",
                "serves": "the views of the published snapshot this hub serves",
            }  # fmt: skip
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/index.json", timeout=10) as index:
            assert json.loads(index.read())["api_version"] == "v1"
        for asof, items in ((history[1]["snapshot"][:10], len(first["items"])), (None, len(first["items"]) - 1)):
            query = f"?asof={asof}" if asof else ""
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/results.json{query}", timeout=10) as read:
                assert len(json.loads(read.read())["items"]) == items, asof
        with pytest.raises(urllib.error.HTTPError) as early:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/results.json?asof=2001-01-01", timeout=10)
        assert (
            early.value.code == 400 and "no snapshot was published by then" in json.loads(early.value.read())["error"]
        )
    finally:
        if process.poll() is None:
            output = _stop(process, port, signal.SIGINT)
    fetched = list((home / "snapshots").glob("*.db"))
    assert len(fetched) == 1
    assert f"snapshot {fetched[0]} (from {tmp_path / 'store'})" in output
    # The hub reads the fetched copy read-only, never the orchestrator's database.
    assert f"INFERSWEEP_DATABASE_URL=sqlite:///file:{fetched[0]}?mode=ro&uri=true".encode() in hub_env


def test_snapshot_forms_resolve_to_a_local_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFERSWEEP_HOME", str(tmp_path / "home"))
    source = make_engine(f"sqlite:///{tmp_path / 'results.db'}")
    migrate(source)
    store = LocalArtifactStore(tmp_path / "store")
    uri, _ = publish_snapshot(source, store)
    one_file = Path(uri.removeprefix("file://"))
    assert site_cli.snapshot_file(str(one_file)) == one_file
    assert site_cli.snapshot_file(uri) == one_file
    from_store = site_cli.snapshot_file((tmp_path / "store").as_uri())
    assert from_store.parent == tmp_path / "home" / "snapshots"
    assert from_store.read_bytes() == one_file.read_bytes()
    monkeypatch.setenv("INFERSWEEP_ARTIFACTS", str(tmp_path / "store"))
    assert site_cli.snapshot_file("latest") == from_store  # content-addressed: the same file again


def test_the_hub_url_refuses_writes_to_sqlite(tmp_path: Path) -> None:
    database = tmp_path / "results.db"
    migrate(make_engine(f"sqlite:///{database}"))
    hub = make_engine(site_cli.given_database(f"sqlite:///{database}").url)
    with hub.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM point_result")).scalar() == 0
        with pytest.raises(OperationalError, match="readonly"):
            connection.execute(text("DELETE FROM point_result"))


def test_a_postgres_url_is_read_without_migrating_and_refuses_writes(empty_postgres_url: str) -> None:
    postgres_url = empty_postgres_url  # the session's shared database already has tables by the time this runs
    with pytest.raises(ConfigurationError, match="has no InferSweep tables"):
        site_cli.given_database(postgres_url)  # never migrated: the orchestrator owns the schema
    migrate(make_engine(postgres_url))
    hub = make_engine(site_cli.given_database(postgres_url).url)
    with hub.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM point_result")).scalar() == 0
        with pytest.raises(DBAPIError, match="read-only transaction"):
            connection.execute(text("DELETE FROM point_result"))
    hub.dispose()


def test_bad_values_are_named_with_what_was_expected(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.db"
    result = run_cli("site", "--snapshot", str(missing))
    assert result.returncode == 2
    assert f"--snapshot '{missing}': no file at {missing}" in result.stderr
    assert "expected a SQLite snapshot file" in result.stderr

    result = run_cli("site", "--database-url", "mysql://root@localhost/results")
    assert result.returncode == 2
    assert "'mysql://root@localhost/results' is not supported: expected sqlite:///PATH or postgresql://" in (
        result.stderr
    )

    result = run_cli("site", "--database-url", "postgresql://reader:s3cret@127.0.0.1:1/results")
    assert result.returncode == 2
    assert "'postgresql://reader:***@127.0.0.1:1/results' cannot be read" in result.stderr
    assert "s3cret" not in result.stderr + result.stdout

    not_sqlite = tmp_path / "notes.db"
    not_sqlite.write_text("not a database")
    result = run_cli("site", "--snapshot", str(not_sqlite))
    assert result.returncode == 2
    assert f"{not_sqlite} is not a SQLite file" in result.stderr


def test_a_busy_port_is_refused_before_streamlit_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("site", "--port", str(port), env={"INFERSWEEP_DATABASE_URL": f"sqlite:///{tmp_path / 'a.db'}"})
    assert result.returncode == 2
    assert f"--port {port} --address '127.0.0.1': cannot listen there" in result.stderr


def test_the_hub_runs_its_busiest_pages_before_the_first_viewer(tmp_path: Path) -> None:
    database = tmp_path / "results.db"
    seed_hub(f"sqlite:///{database}")
    process, port = _start("--database-url", f"sqlite:///{database}", env={})
    lines: list[str] = []
    try:
        _healthy(process, port)
        assert process.stdout is not None
        while not any("hub ready" in line or "not warmed" in line for line in lines):
            line = process.stdout.readline()
            assert line, f"the hub's output ended before it said whether it was warmed: {lines}"
            lines.append(line)
    finally:
        if process.poll() is None:
            _stop(process, port, signal.SIGTERM)
    (ready,) = [line for line in lines if "hub ready" in line]
    assert re.search(r"\(/ [\d.]+ s, /pareto [\d.]+ s;", ready), ready


def test_warming_runs_each_page_script_to_its_end(tmp_path: Path) -> None:
    """`site_warmup.warm` opens sessions the way a browser does: each page's script really runs, to its end."""
    runs = tmp_path / "runs.txt"
    (tmp_path / "app.py").write_text(
        "import streamlit as st\n"
        "def page(name):\n"
        "    def run():\n"
        "        st.title(name)\n"
        f"        open({str(runs)!r}, 'a').write(name + ' started\\n')\n"
        "        import time; time.sleep(0.5)\n"
        f"        open({str(runs)!r}, 'a').write(name + ' finished\\n')\n"
        "    return run\n"
        "st.navigation([st.Page(page('home'), title='Home', url_path='home', default=True),\n"
        "               st.Page(page('second'), title='Second', url_path='second')]).run()\n"
    )
    port = pick_free_port()
    streamlit = subprocess.Popen(site_cli.streamlit_argv(port, "127.0.0.1", tmp_path / "app.py"), cwd=tmp_path,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        warmed = warm(f"http://127.0.0.1:{port}", ("", "second"))
    finally:
        streamlit.terminate()
        streamlit.wait(timeout=30)
    assert warmed.problem is None and all(seconds is not None for seconds in warmed.seconds.values())
    assert runs.read_text().split("\n")[:-1] == ["home started", "home finished", "second started", "second finished"]


def test_warming_a_hub_that_never_answers_says_so() -> None:
    port = pick_free_port()
    warmed = warm(f"http://127.0.0.1:{port}", health_wait_s=1)
    assert warmed.problem == f"the hub did not answer http://127.0.0.1:{port}/_stcore/health within 1 s"
    assert warmed.seconds == {"": None, "pareto": None}


def test_a_non_loopback_address_needs_public(tmp_path: Path) -> None:
    database = {"INFERSWEEP_DATABASE_URL": f"sqlite:///{tmp_path / 'a.db'}"}
    result = run_cli("site", "--address", "0.0.0.0", env=database)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--address '0.0.0.0' is reachable from other machines" in result.stderr and "--public" in result.stderr
    assert "Traceback" not in result.stderr
    assert site_cli.listen_address(None, public=False) == "127.0.0.1"
    assert site_cli.listen_address(None, public=True) == "0.0.0.0"
    assert site_cli.listen_address("::1", public=False) == "::1"
    assert site_cli.listen_address("10.0.0.5", public=True) == "10.0.0.5"


def _outward_address() -> str:
    """This machine's address on its outward interface (no packet is sent: a UDP socket's connect only routes)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.254", 9))
        return str(probe.getsockname()[0])


def test_a_public_hub_refuses_one_client_more_pages_than_its_limit(tmp_path: Path) -> None:
    """The fault tour: without the documented proxy, a 51st reader waited 8.6-10.3 s behind 50 sessions one client
    held open. The hub keeps its own per-address limit: past it a page's session is refused at its handshake, and
    every other reader (this machine's own, a proxy in front included) is not counted."""
    import asyncio

    import websockets

    outward = _outward_address()
    assert outward not in {"127.0.0.1", "::1"}, outward
    database = tmp_path / "infersweep.db"
    process, port = _start("--public", "--sessions-per-client", "2",
                           env={"INFERSWEEP_DATABASE_URL": f"sqlite:///{database}"})  # fmt: skip

    async def sessions(host: str, tries: int) -> tuple[int, list[int]]:
        opened, refused = [], []
        for _ in range(tries):
            try:
                opened.append(await websockets.connect(f"ws://{host}:{port}/_stcore/stream", open_timeout=20))
            except websockets.InvalidStatus as error:
                refused.append(error.response.status_code)
        again = None
        if opened:  # one page closed: its place is free again
            await opened.pop().close()
            again = await websockets.connect(f"ws://{host}:{port}/_stcore/stream", open_timeout=20)
            opened.append(again)
        for connection in opened:
            await connection.close()
        return len(opened), refused

    try:
        _healthy(process, port)
        assert asyncio.run(sessions(outward, 4)) == (2, [403, 403])
        assert asyncio.run(sessions("127.0.0.1", 4)) == (4, [])
    finally:
        if process.poll() is None:
            _stop(process, port, signal.SIGTERM)
