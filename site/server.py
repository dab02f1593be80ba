"""The hub's server: Streamlit's own (the pages of `app.py`), and, when the hub serves a published snapshot, the
read-only API's views of it as static JSON files at `/api/v1/<view>.json` (`orchestrator/public_api.py`).

`infersweep site` runs this file; it writes the views of the snapshot it serves into a folder and names it in
`INFERSWEEP_API_DIR`. Without it (a hub on a results database, which changes while the hub runs), there is no API.
"""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

HERE = Path(__file__).resolve().parent
API_ROUTE = "/api/v1"
API_DIR = os.environ.get("INFERSWEEP_API_DIR")

# Public, read-only data: any web page may fetch it (GET only, no credentials).
routes = (
    [Mount(API_ROUTE, app=CORSMiddleware(StaticFiles(directory=API_DIR), allow_origins=["*"], allow_methods=["GET"]))]
    if API_DIR
    else []
)
app = st.App(HERE / "app.py", routes=routes)
