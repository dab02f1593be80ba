"""InferSweep hub: the entry point only declares the pages; each page lives in `views/`.

Presentation only: pages read through `db.reads` and `analysis` (via `hubkit`), never
write. Open it with `infersweep site` (or `make hub`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st
from sqlalchemy.exc import InterfaceError, OperationalError

# `streamlit run` puts this folder on sys.path; AppTest does not, and the pages import `hubkit` from here.
HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from hubkit import controls  # noqa: E402 (needs the folder on sys.path, above)

PAGES = {
    "Results": [
        st.Page(HERE / "views" / "overview.py", title="Overview", default=True),
        st.Page(HERE / "views" / "pareto.py", title="Pareto explorer", url_path="pareto"),
        st.Page(HERE / "views" / "tco.py", title="TCO calculator", url_path="tco"),
        st.Page(HERE / "views" / "profit.py", title="Profit estimator", url_path="profit"),
        st.Page(HERE / "views" / "agentic.py", title="Agentic cache", url_path="agentic"),
        st.Page(HERE / "views" / "capacity.py", title="Capacity", url_path="capacity"),
        st.Page(HERE / "views" / "offload_map.py", title="DRAM offload map", url_path="offload"),
        st.Page(HERE / "views" / "fast_tokens.py", title="Fast tokens", url_path="fast-tokens"),
        st.Page(HERE / "views" / "memory_tiers.py", title="Memory tiers", url_path="memory-tiers"),
        st.Page(HERE / "views" / "trends.py", title="Trends", url_path="trends"),
        st.Page(HERE / "views" / "compare.py", title="Compare", url_path="compare"),
        st.Page(HERE / "views" / "coverage.py", title="Coverage", url_path="coverage"),
    ],
    "Runs": [
        st.Page(HERE / "views" / "run_detail.py", title="Run detail", url_path="run"),
        st.Page(HERE / "views" / "runs.py", title="Runs", url_path="runs"),
    ],
    "About": [
        st.Page(HERE / "views" / "methodology.py", title="Methodology", url_path="methodology"),
    ],
}

# No page icons: a Material icon becomes the favicon, which the browser fetches from a font CDN, and the
# hub makes no request off the machine.
st.set_page_config(page_title="InferSweep", layout="wide")
try:
    navigation = st.navigation(PAGES)
    controls.new_page_run()  # what this run's controls choose (its CSV downloads) and reads (the results' version)
    controls.copy_link_button()  # above every page's controls: the link holds them all
    navigation.run()
except (OperationalError, InterfaceError) as error:
    # A database restarting or failing over: the reader gets a sentence, not a traceback. Connections are
    # checked on checkout, so the next view after the database is back reads normally.
    st.error(
        "The results database is unavailable right now (it may be restarting); reload this page in a moment. "
        f"Detail: {str(error).splitlines()[0][:300]}"
    )
