"""The reverse-proxy recipe of docs/DEPLOY.md (packaging/hub/nginx.conf) in a real nginx in front of a real hub:
one client holds at most 8 hub sessions at once and gets 429 beyond, gets them again once it lets some go, and
cannot flood the pages with requests. (Before: 50 sessions from one client slowed every page from 0.5 s to 24-30 s,
and DEPLOY.md had no limit to offer.)"""

from __future__ import annotations

import base64
import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.cli.site import streamlit_argv
from runners.host.process import pick_free_port
from tests.conftest import ROOT
from tests.integration.services import ensure_package

pytestmark = pytest.mark.system  # a real nginx in front of a real hub

NGINX = Path("/usr/sbin/nginx")
RECIPE = ROOT / "packaging" / "hub" / "nginx.conf"
SESSIONS_PER_CLIENT = 8


def wait_healthy(url: str, process: subprocess.Popen[bytes], within_s: float = 60) -> None:
    deadline = time.monotonic() + within_s
    while True:
        assert process.poll() is None, f"exited with {process.returncode}"
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            assert time.monotonic() < deadline, f"{url} did not answer within {within_s:g} s"
            time.sleep(0.25)


@pytest.fixture
def proxied_hub(tmp_path: Path) -> Iterator[int]:
    """A hub (a one-line Streamlit app, served as `infersweep site` serves it) behind nginx running the recipe;
    yields the proxy's port."""
    ensure_package("nginx", NGINX, "the reverse-proxy recipe's test")
    (tmp_path / "app.py").write_text("import streamlit as st\nst.title('Hub')\n")
    hub_port, proxy_port = pick_free_port(), pick_free_port()
    hub = subprocess.Popen(streamlit_argv(hub_port, "127.0.0.1", tmp_path / "app.py", public=True), cwd=tmp_path,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    recipe = RECIPE.read_text()
    recipe, moved = re.subn(r"server 127\.0\.0\.1:8501;", f"server 127.0.0.1:{hub_port};", recipe)
    recipe, listened = re.subn(r"listen 8080;", f"listen 127.0.0.1:{proxy_port};", recipe)
    assert moved == listened == 1, "the recipe's upstream or listen line changed: update this test"
    (tmp_path / "hub.conf").write_text(recipe)
    temporary = tmp_path / "nginx-temp"
    temporary.mkdir()
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nworker_processes 1;\n"
        + ("user root;\n" if os.geteuid() == 0 else "")
        + "events { worker_connections 256; }\n"
        f"http {{\n  access_log off;\n  client_body_temp_path {temporary}/body;\n  proxy_temp_path {temporary}/proxy;\n"
        f"  fastcgi_temp_path {temporary}/fastcgi;\n  uwsgi_temp_path {temporary}/uwsgi;\n  scgi_temp_path {temporary}/scgi;\n"
        f"  include {tmp_path}/hub.conf;\n}}\n"
    )
    proxy = subprocess.Popen([str(NGINX), "-c", str(tmp_path / "nginx.conf"), "-g", "daemon off;"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        wait_healthy(f"http://127.0.0.1:{hub_port}/_stcore/health", hub)
        wait_healthy(f"http://127.0.0.1:{proxy_port}/_stcore/health", proxy)
        yield proxy_port
    finally:
        for process in (proxy, hub):
            process.terminate()
            process.wait(timeout=30)


def open_session(port: int) -> tuple[socket.socket, int]:
    """A hub session as a browser opens it (the WebSocket upgrade of /_stcore/stream); the socket and the status."""
    connection = socket.create_connection(("127.0.0.1", port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    connection.sendall(
        (f"GET /_stcore/stream HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()
    )  # fmt: skip
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = connection.recv(4096)
        if not chunk:
            break
        answer += chunk
    return connection, int(answer.split(b" ", 2)[1])


def test_one_client_holds_at_most_eight_sessions_and_cannot_flood_the_pages(proxied_hub: int) -> None:
    held = [open_session(proxied_hub) for _ in range(SESSIONS_PER_CLIENT)]
    try:
        assert [status for _, status in held] == [101] * SESSIONS_PER_CLIENT
        extra, status = open_session(proxied_hub)
        extra.close()
        assert status == 429, f"session {SESSIONS_PER_CLIENT + 1} of one client was answered {status}"
    finally:
        for connection, _ in held[:2]:
            connection.close()
    time.sleep(0.5)  # nginx sees the two closed
    again = [open_session(proxied_hub) for _ in range(2)]
    try:
        assert [status for _, status in again] == [101, 101], "sessions let go are not given back"
    finally:
        for connection, _ in [*held[2:], *again]:
            connection.close()

    statuses = []
    for _ in range(80):  # far beyond 5 a second with a burst of 40
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{proxied_hub}/_stcore/health", timeout=5) as answer:
                statuses.append(answer.status)
        except urllib.error.HTTPError as error:
            statuses.append(error.code)
    assert statuses[:30] == [200] * 30 and statuses.count(429) >= 20, statuses
