"""Hub render time in headless Chromium: the Pareto explorer with 50,000 points (target: under 2 s) and the
Overview's first render on the real InferenceX sample (target: under 3 s).

A temporary SQLite database gets 50,000 public points (500 configurations x 100 concurrency levels, one
measured sweep, one repeat each), written in bulk with SQLAlchemy Core. `infersweep site` serves it;
Debian's Chromium, driven by Playwright, opens /pareto and the clock runs from navigation until the
chart has drawn: a non-blank canvas (Streamlit switches Vega to canvas above 2,000 marks) or an SVG with
marks inside `.vega-embed`. Along the way it notes when the title appeared (the script is running) and
when the chart element was added (Vega has the spec and data).

Each run starts a fresh hub, then opens the page twice, each time in a new tab (a new Streamlit
session): the first view pays the database read and the imports; the second reads the results from
the hub's cache (`hubkit.data.results`, kept until the results change), as every later
viewer does.

The Overview part imports tests/data/inferencex (125 real rows) with `infersweep import inferencex`, starts a
fresh hub per run and opens / in a new tab: the clock runs from navigation until the scorecard table is drawn
and the script has finished. The Pareto explorer's first view of the same sample is timed in the same run,
as the peer figure, and so is the floor: a bare Streamlit page holding a title, the sidebar's Hardware filter and
one table, served the same way. A filter change (one chip removed from Hardware) is timed on all three pages.

Run: .venv/bin/python -m benchmarks.hub_render [--points 50000] [--configurations 500] [--runs 3]
     [--app COPY/app.py]  (a copy of site/ with a page changed, to measure the change before making it)
     [--only pareto|overview] [--inferencex DIR]  (rows for the Overview part; the sample by default)
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

TARGET_S = 2.0
OVERVIEW_TARGET_S = 3.0
PUBLIC_FIRST_RENDER_S = 1.5  # target: the Overview and the Pareto explorer, first render on the whole real corpus
FILTER_CHANGE_S = 0.3  # target: the same pages, a filter changed (the script run again and finished)
ROOT = Path(__file__).resolve().parents[1]
HARDWARE = ("h100", "h200", "b200", "b300", "gb200-nvl72", "mi300x", "mi325x", "mi355x", "tpu-v7", "gb300-nvl72")
ENGINES = ("vllm", "sglang", "trtllm", "dynamo", "vllm-tpu")
PRECISIONS = ("fp8", "fp4")
PARALLELISM = ({"tp": 8}, {"tp": 8, "ep": 8}, {"tp": 4}, {"tp": 4, "dp": 2}, {"tp": 2, "ep": 2})

# Milestones, recorded in the page in ms since navigation started (performance.now()): the title shown
# (the script is running), the chart element added (Vega has the spec and the data), the script run
# finished, the chart drawn. Installed before any of the page's own scripts run.
MILESTONES = """
window.__hub = {};
const mark = (name) => { if (!(name in window.__hub)) window.__hub[name] = performance.now(); };
new MutationObserver(() => {
    if (document.querySelector('h1')) mark('title');
    if (document.querySelector('.vega-embed')) mark('chart');
    const app = document.querySelector('[data-testid="stApp"]');
    const state = app ? app.getAttribute('data-test-script-state') : null;
    if (state === 'running') mark('running');
    if (state === 'notRunning' && 'running' in window.__hub) mark('finished');
    // The answer shown: a table drawn, or the Overview's scorecard cards (their text names the cheapest chip).
    const cards = [...document.querySelectorAll('[data-testid="stMarkdownContainer"]')];
    if (document.querySelector('[data-testid="stDataFrame"] canvas') || cards.some((card) =>
        card.textContent.includes('cheapest:'))) mark('table');
}).observe(document, {subtree: true, childList: true, attributes: true, attributeFilter: ['data-test-script-state']});
"""
# The chart has drawn: a canvas with anything but background on it (downscaled first, so the check is
# cheap enough to run every frame), or an SVG renderer's marks.
DRAWN = """() => {
    const chart = document.querySelector('.vega-embed');
    if (!chart) return false;
    const drawn = () => { window.__hub.drawn = performance.now(); return true; };
    // Any layer with marks: a layer can be empty (e.g. error bars when no point has repeats).
    const svgMarks = [...chart.querySelectorAll('svg .role-mark')].some((layer) => layer.childElementCount > 0);
    if (svgMarks) return drawn();
    const canvas = chart.querySelector('canvas');
    if (!canvas || !canvas.width || !canvas.height) return false;
    const probe = document.createElement('canvas');
    probe.width = 96; probe.height = 96;
    const context = probe.getContext('2d');
    context.drawImage(canvas, 0, 0, 96, 96);
    const pixels = context.getImageData(0, 0, 96, 96).data;
    for (let i = 0; i < pixels.length; i += 4) {
        if (pixels[i + 3] > 0 && (pixels[i] < 240 || pixels[i + 1] < 240 || pixels[i + 2] < 240)) return drawn();
    }
    return false;
}"""


# A filter change as a reader makes it: one chip removed from the sidebar's Hardware filter. The clock runs from the
# reader's press on the chip's remove button (the pointerdown event's own time stamp) until the page's script has run
# again and finished (Streamlit's script state: running, then notRunning). Playwright's click first checks the button
# is visible, stable over two animation frames and not covered, with round trips to the browser between: that time is
# the driver's, not the page's, and is reported beside as "from the driver's call".
RERUN = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    window.__change = {called: performance.now()};
    document.addEventListener('pointerdown', (event) => { window.__change.clicked = event.timeStamp; },
                              {capture: true, once: true});
    // Every state the page passed through since the last callback, in order (each record's old value, then the
    // current one): a run short enough to start and finish between two callbacks is still seen running.
    new MutationObserver((records) => {
        const now = performance.now();
        const states = [...records.slice(1).map((record) => record.oldValue),
                        app.getAttribute('data-test-script-state')];
        for (const state of states) {
            if (state === 'running' && !('running' in window.__change)) window.__change.running = now;
            if (state === 'notRunning' && 'running' in window.__change && !('finished' in window.__change)) {
                window.__change.finished = now;
            }
        }
    }).observe(app, {attributes: true, attributeFilter: ['data-test-script-state'], attributeOldValue: true});
}"""


def filter_change(page: Any, timeout_s: float = 120) -> tuple[float, float]:
    """Seconds from the press on the last chip's remove button of the Hardware filter until the page's script
    finished again, and from the driver's call to click it."""
    hardware = page.locator('[data-testid="stSidebar"] [data-testid="stMultiSelect"]').filter(has_text="Hardware")
    remove = hardware.first.locator('button[aria-label^="Remove "]').last
    remove.wait_for(timeout=timeout_s * 1000)
    page.evaluate(RERUN)
    remove.click()
    page.wait_for_function("() => 'finished' in window.__change", timeout=timeout_s * 1000)
    change = page.evaluate("window.__change")
    return (change["finished"] - change["clicked"]) / 1000, (change["finished"] - change["called"]) / 1000


def _configurations(count: int) -> list[dict[str, Any]]:
    """`count` distinct configurations (hardware x engine x precision x parallelism), as recipe snapshots."""
    snapshots = []
    for index in range(count):
        hardware = HARDWARE[index % len(HARDWARE)]
        engine = ENGINES[(index // len(HARDWARE)) % len(ENGINES)]
        precision = PRECISIONS[(index // (len(HARDWARE) * len(ENGINES))) % len(PRECISIONS)]
        parallelism = PARALLELISM[(index // (len(HARDWARE) * len(ENGINES) * len(PRECISIONS))) % len(PARALLELISM)]
        model = f"model-{index // (len(HARDWARE) * len(ENGINES) * len(PRECISIONS) * len(PARALLELISM))}"
        name = f"bench-{index:04d}-{hardware}-{engine}-{precision}"
        snapshots.append({
            "schema_version": 1, "name": name, "hardware": hardware, "engine": {"kind": engine, "version": "1.0"},
            "model": {"name": model}, "precision": precision, "parallelism": parallelism,
            "methodology": {"prefix_caching": False},
            "workload": {"kind": "fixed-length", "sequences": [{"isl": 8192, "osl": 1024}]},
        })  # fmt: skip
    return snapshots


def seed(url: str, points: int, configurations: int) -> None:
    """Write `points` public results in bulk (Core inserts: one statement per table, executemany)."""
    import numpy as np
    from sqlalchemy import insert

    from db.models import JobRow, PointResultRow, RecipeRow, SweepRow, table_of
    from db.session import make_engine, migrate

    engine = make_engine(url)
    migrate(engine)
    levels = -(-points // configurations)
    finished = datetime(2026, 11, 1, 2, 0, tzinfo=UTC)
    snapshots = _configurations(configurations)
    rng = np.random.default_rng(0)
    with engine.begin() as connection:
        sweep = {"name": "bench-sweep", "status": "succeeded", "created_at": finished, "updated_at": finished}
        (sweep_id,) = connection.execute(insert(table_of(SweepRow)).values(**sweep)).inserted_primary_key or (None,)
        connection.execute(insert(table_of(RecipeRow)), [
            {"id": index + 1, "fingerprint": f"fp-{snapshot['name']}", "name": snapshot["name"],
             "path": f"{snapshot['name']}.yaml", "schema_version": 1, "hardware_key": snapshot["hardware"],
             "engine_kind": snapshot["engine"]["kind"], "snapshot": snapshot, "created_at": finished}
            for index, snapshot in enumerate(snapshots)
        ])  # fmt: skip
        connection.execute(insert(table_of(JobRow)), [
            {"id": f"bench-job-{index}", "sweep_id": sweep_id, "recipe_id": index + 1, "attempt": 1,
             "status": "succeeded", "points_planned": levels, "log_dir": "", "created_at": finished}
            for index in range(configurations)
        ])  # fmt: skip
        rows: list[dict[str, Any]] = []
        for index in range(points):
            config, level = divmod(index, levels)
            concurrency = level + 1
            # A plausible curve: interactivity falls and throughput per GPU rises with concurrency, with noise.
            interactivity = float(400.0 / (1 + 0.08 * concurrency) * rng.uniform(0.9, 1.1))
            per_gpu = float((200.0 + 40.0 * concurrency) * (1 + config % 7 / 10) * rng.uniform(0.95, 1.05))
            rows.append({
                "sweep_id": sweep_id, "job_id": f"bench-job-{config}", "recipe_id": config + 1,
                "point_key": f"r{config + 1}-c{concurrency}-x0", "repeat_index": 0, "workload_kind": "fixed-length",
                "isl": 8192, "osl": 1024, "concurrency": concurrency, "origin": "measured", "valid": True,
                "validity_reasons": [],
                "completed": 10 * concurrency, "failed": 0, "duration_s": 60.0, "request_throughput": 1.0,
                "output_throughput": per_gpu * 8, "total_token_throughput": per_gpu * 72, "accelerators": 8,
                "output_throughput_per_gpu": per_gpu, "total_token_throughput_per_gpu": per_gpu * 9,
                "ttft_p50_ms": 200.0 + concurrency, "ttft_p99_ms": 400.0 + concurrency,
                "tpot_p50_ms": 1000.0 / interactivity, "tpot_p90_ms": 1100.0 / interactivity,
                "e2el_p50_ms": 200.0 + 1024 * 1000.0 / interactivity, "interactivity_p50": interactivity,
                "interactivity_p90": interactivity * 0.9, "metrics": {}, "retracted": False,
                "started_at": finished - timedelta(minutes=1), "finished_at": finished,
            })  # fmt: skip
        connection.execute(insert(table_of(PointResultRow)), rows)
    engine.dispose()


def start_hub(url: str, app: Path | None = None) -> tuple[subprocess.Popen[bytes], str, float]:
    """`infersweep site` on `url` (with `app`, that Streamlit script instead, to try a change to a page), once it
    has warmed itself (`orchestrator.site_warmup`); also the seconds from start until then."""
    from orchestrator.cli.site import read_only_url, streamlit_argv
    from orchestrator.site_warmup import warm
    from runners.host.process import pick_free_port

    port = pick_free_port()
    env = {**os.environ, "STREAMLIT_SERVER_FILE_WATCHER_TYPE": "none"}
    if app is None:
        argv = [sys.executable, "-m", "orchestrator.cli", "site", "--database-url", url, "--port", str(port)]
    else:
        argv = streamlit_argv(port, "127.0.0.1", app)
        env["INFERSWEEP_DATABASE_URL"] = read_only_url(url)
    started = time.perf_counter()
    log = Path(tempfile.mkdtemp(prefix="hub-render-")) / "site.log"
    with open(log, "wb") as output:  # the hub keeps its own descriptor
        hub = subprocess.Popen(argv, cwd=ROOT, stdout=output, stderr=subprocess.DEVNULL, env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if hub.poll() is not None:
            raise SystemExit(f"infersweep site exited with {hub.returncode}")
        if app is not None:
            # What `infersweep site` does once the server answers, in a thread of its own as there (Playwright's
            # synchronous API keeps an event loop running in this one).
            with ThreadPoolExecutor(1) as thread:
                warmed = thread.submit(warm, base).result()
            if warmed.problem:
                raise SystemExit(f"warming the hub failed: {warmed.problem}")
            return hub, base, time.perf_counter() - started
        if b"hub ready" in log.read_bytes():
            return hub, base, time.perf_counter() - started
        time.sleep(0.2)
    hub.kill()
    raise SystemExit("the hub did not say it was ready within 300 s")


def stop_hub(hub: subprocess.Popen[bytes]) -> None:
    hub.send_signal(signal.SIGTERM)
    try:
        hub.wait(timeout=30)
    except subprocess.TimeoutExpired:
        hub.kill()
        hub.wait()


def view(context: Any, base: str, timeout_s: float = 300, then_filter: bool = False) -> dict[str, float]:
    """Open /pareto in a new tab; seconds from navigation to each milestone (see MILESTONES and DRAWN), and with
    `then_filter`, of a filter change after it (`filter_change`)."""
    page = context.new_page()
    page.add_init_script(MILESTONES)
    page.goto(f"{base}/pareto", wait_until="commit")
    page.wait_for_function(DRAWN, polling="raf", timeout=timeout_s * 1000)
    page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(timeout=timeout_s * 1000)
    milestones = {name: ms / 1000 for name, ms in page.evaluate("window.__hub").items()}
    milestones["canvas"] = float(page.locator(".vega-embed canvas").count() > 0)
    if then_filter:
        milestones["filter_change"], milestones["filter_change_call"] = filter_change(page, timeout_s)
    page.close()
    return milestones


def overview_view(context: Any, base: str, timeout_s: float = 300, then_filter: bool = False) -> dict[str, float]:
    """Open / (the Overview) in a new tab; seconds from navigation to its scorecard drawn and its script finished, and
    with `then_filter`, of a filter change after it (`filter_change`)."""
    page = context.new_page()
    page.add_init_script(MILESTONES)
    page.goto(base, wait_until="commit")
    page.get_by_text("cheapest:").first.wait_for(timeout=timeout_s * 1000)  # the scorecard's cards
    page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(timeout=timeout_s * 1000)
    page.wait_for_function("() => 'finished' in window.__hub && 'table' in window.__hub", timeout=timeout_s * 1000)
    milestones = {name: ms / 1000 for name, ms in page.evaluate("window.__hub").items()}
    milestones["rendered"] = max(milestones["table"], milestones["finished"])
    if then_filter:
        milestones["filter_change"], milestones["filter_change_call"] = filter_change(page, timeout_s)
    page.close()
    return milestones


# The floor any Streamlit page pays in this browser: a title, the sidebar's Hardware filter, the answer as a line of
# text (as the Overview's cards give it: the clock waits for "cheapest:"; without it the floor waited out its 300 s
# timeout once the Overview's table became cards) and a table of the scorecard's size that it filters, nothing else.
FLOOR_APP = """
import pandas as pd
import streamlit as st
st.title("Overview")
chips = ["b200", "gb200-nvl72", "mi355x"]
chosen = st.sidebar.multiselect("Hardware", chips, default=chips)
table = pd.DataFrame({"hardware": chips * 9, "cost": [0.9045] * 27})
st.markdown(f"cheapest: {chosen[0] if chosen else 'none'} $0.9045")
st.dataframe(table[table["hardware"].isin(chosen)], hide_index=True)
"""


def floor_view(browser: Any, home: Path) -> tuple[float, float]:
    """Seconds until a bare Streamlit page's table is drawn (its second view: the server started and warm), and of a
    filter change on it."""
    from orchestrator.cli.site import streamlit_argv
    from orchestrator.site_warmup import wait_until_healthy
    from runners.host.process import pick_free_port

    app = home / "floor" / "app.py"
    app.parent.mkdir(exist_ok=True)
    app.write_text(FLOOR_APP)
    port = pick_free_port()
    env = {**os.environ, "STREAMLIT_SERVER_FILE_WATCHER_TYPE": "none"}
    server = subprocess.Popen(streamlit_argv(port, "127.0.0.1", app), cwd=app.parent, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        if not wait_until_healthy(base, timeout_s=120):
            raise SystemExit("the bare Streamlit page did not start within 120 s")
        for _ in range(2):  # the first view imports pandas in the server; the second is the floor
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            times = overview_view(context, base, then_filter=True)
            context.close()
        return times["rendered"], times["filter_change"]
    finally:
        stop_hub(server)


def overview_on_the_sample(browser: Any, home: Path, runs: int, rows: Path) -> None:
    """The Overview's first render on imported InferenceX rows (`rows`: a folder of run folders holding agg_bmk.json,
    the sample by default), with the Pareto explorer's as the peer."""
    url = f"sqlite:///{home / 'sample.db'}"
    files = sorted(str(path) for path in rows.glob("**/agg_bmk.json"))
    imported = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "import", "inferencex", *files], cwd=ROOT, capture_output=True,
        text=True, check=False, env={**os.environ, "INFERSWEEP_DATABASE_URL": url},
    )  # fmt: skip
    if imported.returncode != 0:
        raise SystemExit(f"importing the InferenceX sample failed:\n{imported.stdout}{imported.stderr}")
    for run in range(1, runs + 1):
        hub, base, ready = start_hub(url)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            times = overview_view(context, base, then_filter=True)
            peer = view(context, base, then_filter=True)
            context.close()
        finally:
            stop_hub(hub)
        verdict = "MET" if times["rendered"] <= OVERVIEW_TARGET_S else "NOT MET"
        public = "MET" if max(times["rendered"], peer["drawn"]) <= PUBLIC_FIRST_RENDER_S else "NOT MET"
        changes = (times["filter_change"], peer["filter_change"])
        changed = "MET" if max(changes) <= FILTER_CHANGE_S else "NOT MET"
        # The page's own figures first: a floor that fails to time (its rerun can finish unseen) must not lose them.
        print(
            f"run {run}: hub warmed in {ready:.1f} s; Overview on the InferenceX rows ({len(files)} files) "
            f"rendered in {times['rendered']:.2f} s (target {OVERVIEW_TARGET_S:g} s): {verdict} "
            f"[title {times['title']:.2f} s, scorecard {times['table']:.2f} s, script finished "
            f"{times['finished']:.2f} s]; Pareto explorer on the same sample drawn in {peer['drawn']:.2f} s "
            f"(ratio Overview/Pareto {times['rendered'] / peer['drawn']:.2f}); both first renders within "
            f"{PUBLIC_FIRST_RENDER_S:g} s: {public}; a filter change (one chip removed from Hardware) ran and "
            f"finished in {changes[0]:.2f} s on the Overview and {changes[1]:.2f} s on the Pareto explorer from the "
            f"reader's press (target {FILTER_CHANGE_S:g} s each): {changed} [from the driver's call to click: "
            f"{times['filter_change_call']:.2f} s and {peer['filter_change_call']:.2f} s]; load average "
            f"{os.getloadavg()[0]:.2f}",
            flush=True,
        )
        try:
            floor, floor_change = floor_view(browser, home)
        except PlaywrightTimeoutError as error:
            print(f"run {run}: the bare page (the floor) was not timed: {str(error).splitlines()[0]}")
            continue
        print(
            f"run {run}: a bare Streamlit page with one table drawn in {floor:.2f} s (ratio Overview/bare page "
            f"{times['rendered'] / floor:.2f}); its filter change {floor_change:.2f} s (ratio Overview/bare "
            f"{changes[0] / floor_change:.2f}, Pareto/bare {changes[1] / floor_change:.2f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=50_000)
    parser.add_argument("--configurations", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--app", type=Path, help="Serve this Streamlit script instead of site/app.py (experiments).")
    parser.add_argument("--only", choices=("pareto", "overview"), help="Time one of the two pages only.")
    parser.add_argument("--inferencex", type=Path, default=ROOT / "tests" / "data" / "inferencex",
                        help="InferenceX rows for the Overview part: a folder of run folders holding agg_bmk.json "
                        "(e.g. the whole public corpus, 35 files).")  # fmt: skip
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("Debian's chromium is needed: make browser")
    with tempfile.TemporaryDirectory() as home:
        os.environ["INFERSWEEP_HOME"] = home  # `infersweep site` keeps nothing else of ours here
        url = f"sqlite:///{Path(home) / 'hub.db'}"
        with sync_playwright() as driver:
            browser = driver.chromium.launch(
                executable_path=chromium,
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
            )
            if args.only != "pareto":
                overview_on_the_sample(browser, Path(home), args.runs, args.inferencex)
            if args.only != "overview":
                started = time.perf_counter()
                seed(url, args.points, args.configurations)
                print(f"seeded {args.points:,} points ({args.configurations} configurations) in "
                      f"{time.perf_counter() - started:.1f} s")  # fmt: skip
            for run in range(1, args.runs + 1 if args.only != "overview" else 1):
                hub, base, ready = start_hub(url, args.app)
                print(f"run {run}: hub started and warmed in {ready:.1f} s")
                try:
                    context = browser.new_context(viewport={"width": 1400, "height": 1000})
                    for label in ("first view", "second view"):
                        times = view(context, base)
                        verdict = "MET" if times["drawn"] <= TARGET_S else "NOT MET"
                        renderer = "canvas" if times["canvas"] else "svg"
                        steps = (
                            f"title {times['title']:.2f} s, chart added {times['chart']:.2f} s, "
                            f"script finished {times.get('finished', float('nan')):.2f} s, {renderer}"
                        )
                        print(f"run {run}, {label}: Pareto explorer with {args.points:,} points drawn in "
                              f"{times['drawn']:.2f} s (target {TARGET_S:g} s): {verdict} [{steps}]")  # fmt: skip
                    context.close()
                finally:
                    stop_hub(hub)
            browser.close()


if __name__ == "__main__":
    main()
