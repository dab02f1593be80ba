"""Warm the hub before its first viewer: open its busiest pages once, headless, as a browser would.

Streamlit keeps its caches in the server process, and a page's first run pays the imports (pandas, Altair,
SQLAlchemy, the analysis library), the read of every public result and the page's own work for its default
view: seconds at 50,000 points (docs/BENCHMARKS.md, "Hub render"). `infersweep site` therefore opens a
session on each page in `WARM_PAGES` once the server answers, over Streamlit's own websocket protocol
(the protobuf messages Streamlit ships), and waits for each script run to finish. Nothing is rendered and
nothing is written: the page runs exactly as for a viewer, filling the caches every later viewer reads.
The results cache is keyed by the results' version, so a viewer after a new Point still sees it.
"""

from __future__ import annotations

import asyncio
import time
import urllib.request
from dataclasses import dataclass

# The default page (Overview) and the Pareto explorer: the pages people open first.
WARM_PAGES = ("", "pareto")
HEALTH_WAIT_S = 60.0


@dataclass(frozen=True)
class Warmed:
    """What the warm-up did: seconds per page (None where it did not finish) and the reason if it stopped."""

    seconds: dict[str, float | None]
    problem: str | None = None


def wait_until_healthy(base_url: str, timeout_s: float = HEALTH_WAIT_S) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base_url}/_stcore/health", timeout=1):  # noqa: S310 - the hub it started
                return True
        except OSError:
            time.sleep(0.2)
    return False


async def open_page(base_url: str, page: str, timeout_s: float) -> None:
    """One headless session: ask for a run of `page` ("" = the default page) and wait until it finishes."""
    import websockets
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    stream = base_url.replace("http", "ws", 1) + "/_stcore/stream"
    async with asyncio.timeout(timeout_s):
        async with websockets.connect(stream, subprotocols=["streamlit"], max_size=None) as socket:  # type: ignore[list-item]  # websockets types subprotocols as its Subprotocol NewType
            request = BackMsg()
            request.rerun_script.page_name = page
            request.rerun_script.query_string = ""
            await socket.send(request.SerializeToString())
            async for data in socket:
                message = ForwardMsg()
                message.ParseFromString(data)
                if message.WhichOneof("type") == "script_finished":
                    return


def warm(
    base_url: str, pages: tuple[str, ...] = WARM_PAGES, timeout_s: float = 300.0, health_wait_s: float = HEALTH_WAIT_S
) -> Warmed:
    """Open each page once (best effort: a failure only means the first viewer pays for that page)."""
    from websockets.exceptions import WebSocketException

    seconds: dict[str, float | None] = dict.fromkeys(pages)
    if not wait_until_healthy(base_url, health_wait_s):
        return Warmed(seconds, f"the hub did not answer {base_url}/_stcore/health within {health_wait_s:.0f} s")
    for page in pages:
        started = time.perf_counter()
        try:
            asyncio.run(open_page(base_url, page, timeout_s))
        except (OSError, TimeoutError, WebSocketException) as error:
            return Warmed(seconds, f"page /{page}: {type(error).__name__}: {error}")
        seconds[page] = time.perf_counter() - started
    return Warmed(seconds)
