"""The hub's server: Streamlit's own (the pages of `app.py`), and, when the hub serves a published snapshot, the
read-only API's views of it as static JSON files at `/api/v1/<view>.json` (`orchestrator/public_api.py`).

`infersweep site` runs this file; it writes the views of the snapshot it serves into a folder and names it in
`INFERSWEEP_API_DIR`. Without it (a hub on a results database, which changes while the hub runs), there is no API.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from urllib.parse import parse_qs

import streamlit as st
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from analysis.asof import resolve_asof
from recipes.errors import ConfigurationError

HERE = Path(__file__).resolve().parent
API_ROUTE = "/api/v1"
API_DIR = os.environ.get("INFERSWEEP_API_DIR")


def not_found(scope: Scope) -> JSONResponse:
    """404 with a JSON body saying what the API serves: for any path under /api/ that names no view."""
    body = {"error": "not found", "path": Request(scope).url.path, "versions": ["v1"] if API_DIR else [],
            "index": f"{API_ROUTE}/index.json" if API_DIR else None,
            "serves": "the views of the published snapshot this hub serves" if API_DIR
            else "nothing: this hub reads a results database, not a published snapshot"}  # fmt: skip
    return JSONResponse(body, status_code=404)


async def api_not_found(scope: Scope, receive: Receive, send: Send) -> None:
    await not_found(scope)(scope, receive, send)


class ApiFiles(StaticFiles):
    """The API's static views; a name that is none of them answers `not_found`, not Starlette's text."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        try:
            return await super().get_response(path, scope)
        except HTTPException as error:
            if error.status_code != 404:
                raise
            return not_found(scope)


# How many session streams one client address may hold open at once (`infersweep site --sessions-per-client`).
SESSIONS_PER_CLIENT = int(os.environ.get("INFERSWEEP_HUB_SESSIONS_PER_CLIENT") or 0)
TRUSTED_CLIENTS = {"127.0.0.1", "::1"}  # this machine: a reader here, or the documented proxy in front


class SessionsPerClient:
    """At most `limit` open session streams (`/_stcore/stream`, one WebSocket per browser tab, whose session runs
    the page's script on the server) per client address; one more is refused at its handshake (HTTP 403), so one
    client's 50 tabs cannot make every other reader wait (8.6-10.3 s behind 50 sessions from one client, measured on
    a 2-core hub). This machine's own clients are not counted: a reverse proxy in front (packaging/hub/nginx.conf)
    applies its own per-client limits, and all its requests come from here."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit
        self.open: Counter[str] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = (scope.get("client") or ("",))[0]
        if scope["type"] != "websocket" or not scope["path"].endswith("/_stcore/stream") or client in TRUSTED_CLIENTS:
            await self.app(scope, receive, send)
            return
        if self.open[client] >= self.limit:
            await receive()  # the handshake's websocket.connect; closing before accepting refuses it
            await send({"type": "websocket.close", "code": 1008, "reason": "too many open sessions from one address"})
            return
        self.open[client] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.open[client] -= 1
            if not self.open[client]:
                del self.open[client]


class AsofReads:
    """`/api/v1/<view>.json?asof=DATE|HASH`: the view as the snapshot published then gave it, `asof/<sha256>/<view>`
    (analysis/asof.py), from the chain's index the hub fetched with a store's newest snapshot (`snapshots.json`)."""

    def __init__(self, app: ASGIApp, directory: Path) -> None:
        self.app, self.history = app, directory / "snapshots.json"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        asof = parse_qs(scope.get("query_string", b"").decode()).get("asof") if scope["type"] == "http" else None
        view = scope["path"].removeprefix(f"{API_ROUTE}/") if scope["type"] == "http" else ""
        if not asof or not scope["path"].startswith(f"{API_ROUTE}/") or "/" in view:
            await self.app(scope, receive, send)
            return
        if not self.history.is_file():
            body = {"error": "no asof reads here", "asof": asof[0], "serves": "one snapshot; serve a store "
                    "(`infersweep site --snapshot STORE`) for the chain of its snapshots"}  # fmt: skip
            await JSONResponse(body, status_code=404)(scope, receive, send)
            return
        try:
            entry = resolve_asof(json.loads(self.history.read_text())["snapshots"], asof[0])
        except ConfigurationError as error:
            await JSONResponse({"error": str(error), "asof": asof[0]}, status_code=400)(scope, receive, send)
            return
        path = f"{API_ROUTE}/asof/{entry['snapshot']}/{view}"
        await self.app({**scope, "path": path, "raw_path": path.encode()}, receive, send)


# Public, read-only data: any web page may fetch it (GET only, no credentials). The /api mount after the views': an
# unknown version or path is the API's 404, never Streamlit's page answering 200.
views = [Mount(API_ROUTE, app=CORSMiddleware(ApiFiles(directory=API_DIR), allow_origins=["*"],
                                             allow_methods=["GET"]))] if API_DIR else []  # fmt: skip
routes = [*views, Mount("/api", app=api_not_found)]
middleware = [Middleware(SessionsPerClient, limit=SESSIONS_PER_CLIENT)] if SESSIONS_PER_CLIENT > 0 else []
if API_DIR:
    middleware.append(Middleware(AsofReads, directory=Path(API_DIR)))
app = st.App(HERE / "app.py", routes=routes, middleware=middleware)
