"""The hub in a real headless Chromium (Debian's `chromium`, driven by Playwright for Python).

`infersweep site` serves the hand-checkable fixture database (`tests/site/hub_fixture.py`); every page of
the navigation (read from `site/app.py`'s `PAGES`) is opened and must show its title with no Streamlit
exception, no browser console error outside `ALLOWED_CONSOLE_ERRORS`, and no request leaving the machine.
On the Pareto explorer a hardware filter is changed, the URL's query string must follow, and that share
link opened in a new tab must show the same selection. The real InferenceX sample is read twice: from a database (in
the dark theme on a phone, and the answer pages at 1,400 and 390 px) and as the public reads it, from a snapshot
published and served by a copy of the project at another path, whose path no page, CSV or API file may name.

Artifacts: a full-page screenshot of every page (and of the share link) is written to
`$INFERSWEEP_TEST_ARTIFACTS/hub-browser/` (default: a pytest temporary directory, printed in the log), so
CI can keep them.

One Streamlit server and one browser serve the whole module (2 cores: starting them once saves time).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
import yaml
from playwright.sync_api import BrowserContext, ConsoleMessage, Page, Route, sync_playwright

from runners.host.process import pick_free_port
from tests.conftest import ROOT, SIMULATED_RECIPE, run_cli
from tests.site.hub_fixture import seed_hub

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(
        CHROMIUM is None and os.environ.get("CI") != "true", reason="Chromium not installed (make test installs it)"
    ),
]
APP = ROOT / "site" / "app.py"
PAGE_TIMEOUT_MS = 60_000  # a cold first run imports pandas, Altair and the analysis library on 2 busy cores
SETTLE_S = 0.5  # how long the app must stay idle to count as drawn

# Console errors that are Streamlit's own behaviour, not a fault of the hub. Keep this list short.
ALLOWED_CONSOLE_ERRORS = (
    # Opening a page by its URL (/pareto): the frontend first probes /pareto/_stcore/{health,host-config} in
    # case the app is served under that base path, gets 404 and falls back to / (Streamlit's base-path discovery).
    re.compile(r"^http://127\.0\.0\.1:\d+/[\w-]+/_stcore/(health|host-config)$"),
)


@dataclass(frozen=True)
class HubPage:
    url_path: str  # "" for the default page
    file: str
    title: str  # what the page's st.title shows (or the navigation title when it is not a literal)


def _literal(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _st_title(view: Path) -> str | None:
    """The first `st.title("...")` literal of a page file."""
    for node in ast.walk(ast.parse(view.read_text())):
        is_title = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "title"
        if is_title and node.args and (text := _literal(node.args[0])):
            return text
    return None


def navigation_pages() -> list[HubPage]:
    """Every `st.Page(...)` declared in site/app.py, parsed (not imported: importing would run Streamlit)."""
    pages = []
    for node in ast.walk(ast.parse(APP.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "Page"):
            continue
        keywords = {keyword.arg: keyword.value for keyword in node.keywords}
        # The page file is HERE / "views" / "name.py" (or a plain "views/name.py"): its string parts, in order.
        parts = [part for part in ast.walk(node.args[0]) if isinstance(part, ast.Constant)]
        file = "/".join(part.value for part in sorted(parts, key=lambda part: (part.lineno, part.col_offset)))
        default = isinstance(keywords.get("default"), ast.Constant) and keywords["default"].value is True
        url_path = "" if default else (_literal(keywords.get("url_path")) or Path(file).stem)
        title = _st_title(APP.parent / file) or _literal(keywords.get("title")) or Path(file).stem
        pages.append(HubPage(url_path, file, title))
    return pages


PAGES = navigation_pages()


@dataclass
class Observed:
    """What the browser reported while a page was open."""

    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)

    def clear(self) -> None:
        self.console_errors.clear()
        self.page_errors.clear()
        self.external_requests.clear()


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = os.environ.get("INFERSWEEP_TEST_ARTIFACTS")
    directory = (Path(root) if root else tmp_path_factory.mktemp("artifacts")) / "hub-browser"
    directory.mkdir(parents=True, exist_ok=True)
    print(f"hub screenshots: {directory}")
    return directory


# Each hub's server log (stdout and stderr), by its base URL: a page may draw cleanly and still log a traceback (the
# Trends page logged Arrow's on every visit), so every page check reads it too.
SERVER_LOGS: dict[str, Path] = {}


def _serve(database: Path, *source: str, root: Path = ROOT, env: dict[str, str] | None = None) -> Iterator[str]:
    """`infersweep site` (of the checkout at `root`) on the SQLite file `database`, or on `source` (e.g. `--snapshot
    STORE`); yields the hub's base URL and stops it after."""
    port = pick_free_port()
    log_path = database.with_suffix(".log")
    log = log_path.open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "site",
         *(source or ("--database-url", f"sqlite:///{database}")), "--port", str(port)],
        cwd=root, stdout=log, stderr=subprocess.STDOUT, text=True,
        # Nobody edits the pages during the test: no file watcher competing for the 2 cores.
        env={**os.environ, **(env or {}), "STREAMLIT_SERVER_FILE_WATCHER_TYPE": "none"},
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    SERVER_LOGS[base] = log_path
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            pytest.fail(f"infersweep site exited with {process.returncode}:\n{log_path.read_text()}")
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=1):
                break
        except OSError:
            if time.monotonic() > deadline:
                process.kill()
                pytest.fail("the hub did not become healthy within 60 s")
            time.sleep(0.25)
    yield base
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    log.close()


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`infersweep site` on the fixture database; yields the hub's base URL."""
    database = tmp_path_factory.mktemp("hub") / "hub.db"
    seed_hub(f"sqlite:///{database}")
    yield from _serve(database)


@pytest.fixture(scope="module")
def imported_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`infersweep site` on the real InferenceX sample (tests/data/inferencex), imported with the CLI."""
    database = tmp_path_factory.mktemp("imported") / "hub.db"
    files = sorted(str(path) for path in (ROOT / "tests" / "data" / "inferencex").glob("run_*/agg_bmk.json"))
    imported = run_cli("import", "inferencex", *files, env={"INFERSWEEP_DATABASE_URL": f"sqlite:///{database}"})
    assert imported.returncode == 0, imported.stdout + imported.stderr
    yield from _serve(database)


def _local_only(observed: Observed) -> Callable[[Route], None]:
    """A route handler: this machine's hubs only (the fixture's and the imported sample's), and what pages make in the
    browser; any other request is recorded and refused."""

    def route(request_route: Route) -> None:
        if request_route.request.url.startswith(("http://127.0.0.1:", "data:", "blob:")):
            request_route.continue_()
        else:
            observed.external_requests.append(request_route.request.url)
            request_route.abort()

    return route


@pytest.fixture(scope="module")
def browser_context(hub: str) -> Iterator[tuple[BrowserContext, Observed]]:
    """One headless Chromium for the module; every request that would leave 127.0.0.1 is recorded and refused."""
    assert CHROMIUM is not None, "make test installs Debian's chromium; CI must have it"
    observed = Observed()

    with sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--no-first-run", "--disable-sync", "--disable-dev-shm-usage"],
        )  # fmt: skip
        # Tall enough that a whole page fits: Streamlit scrolls inside its own container, which a
        # full-page screenshot does not unroll.
        context = browser.new_context(viewport={"width": 1400, "height": 2400})
        context.route("**/*", _local_only(observed))
        yield context, observed
        context.close()
        browser.close()


def _watch(page: Page, observed: Observed) -> None:
    def on_console(message: ConsoleMessage) -> None:
        if message.type != "error":
            return
        where = message.location.get("url", "")
        if any(pattern.match(where) for pattern in ALLOWED_CONSOLE_ERRORS):
            return
        observed.console_errors.append(f"{message.text} ({where})")

    page.on("console", on_console)
    page.on("pageerror", lambda error: observed.page_errors.append(str(error)))


@pytest.fixture(scope="module")
def tab(browser_context: tuple[BrowserContext, Observed]) -> Page:
    context, observed = browser_context
    page = context.new_page()
    _watch(page, observed)
    return page


def _settled(page: Page, title: str) -> None:
    """Wait until the page's title is shown, its script run has finished and its charts are drawn.

    The app reports `notRunning` before every element is drawn: widgets load their code lazily and stand
    as skeletons meanwhile. So the idle state must hold for a short while, with no skeleton and no
    element left over from a previous run (`data-stale`).
    """
    page.locator("h1").filter(has_text=title).first.wait_for(timeout=PAGE_TIMEOUT_MS)
    app = page.locator('[data-testid="stApp"]')
    deadline = time.monotonic() + PAGE_TIMEOUT_MS / 1000
    idle_since: float | None = None
    while True:
        idle = app.get_attribute("data-test-script-state") == "notRunning"
        idle = idle and page.locator('[data-stale="true"], [data-testid="stSkeleton"]').count() == 0
        now = time.monotonic()
        idle_since = (idle_since or now) if idle else None
        if idle_since is not None and now - idle_since >= SETTLE_S:
            break
        assert now < deadline, f"{page.url}: the app was still running after {PAGE_TIMEOUT_MS / 1000:.0f} s"
        page.wait_for_timeout(100)
    charts = page.locator(".vega-embed")
    for index in range(charts.count()):
        chart = charts.nth(index)
        if chart.is_visible():  # charts in a tab not shown are drawn only when it is opened
            chart.locator("canvas, svg").first.wait_for(timeout=PAGE_TIMEOUT_MS)


# What a reader must never read on a page: a missing value written as Python or JavaScript writes it ("None of the
# N configurations..." is a sentence, not a value), and a path of the machine that made the page.
MISSING_WORDS = re.compile(r"\bNone\b(?! of\b)|\bNaN\b|\bnull\b|\bundefined\b")
# The clone's own root too: the suite runs from /tmp/fresh in CI but from anywhere on a developer's machine.
NETWORK_CHANGED = "net::ERR_NETWORK_CHANGED"
# A chart label Vega had to shorten to fit its limit ends in an ellipsis: a legend or axis label cut. (Charts are drawn
# as SVG below 2,000 marks, as every chart of these fixtures is; a canvas keeps its text to itself.)
CUT_LABELS = (
    "() => [...document.querySelectorAll('.vega-embed svg text')].map(t => t.textContent).filter(t => t.endsWith('…'))"
)
LOCAL_PATH = re.compile(r"file://|(?<![\w.])/(?:tmp|home|root|srv|var)/|" + re.escape(str(ROOT)))


# Pages whose prose is documentation about these very values ("a row with NaN ... is refused"): not checked for them.
DOCUMENTS_MISSING_VALUES = frozenset({"methodology"})


def _assert_clean(page: Page, observed: Observed, what: str, words: bool = True) -> None:
    exceptions = page.locator('[data-testid="stException"]')
    shown = [exceptions.nth(i).inner_text() for i in range(exceptions.count())]
    assert not shown, f"{what}: Streamlit exception on the page:\n" + "\n".join(shown)
    body = page.inner_text("body")
    assert "Traceback" not in body, f"{what}: a traceback is shown:\n{body[:2000]}"
    # The page's prose, captions and widgets: not its code blocks and JSON (a stored Point's raw JSON says null, as
    # JSON does) nor its tables (drawn on a canvas; tests/site/test_tables.py holds their missing-value rule).
    main = page.evaluate(
        """() => {
            const root = document.querySelector('[data-testid="stMain"]') || document.body;
            const copy = root.cloneNode(true);
            copy.querySelectorAll('[data-testid="stCode"], [data-testid="stJson"], pre, code')
                .forEach(node => node.remove());
            return copy.innerText;
        }"""
    )
    assert not (words and MISSING_WORDS.findall(main)), f"{what}: a missing value shown as a word: " + "; ".join(
        main[max(0, m.start() - 60) : m.end() + 60] for m in list(MISSING_WORDS.finditer(main))[:3]
    )
    assert not LOCAL_PATH.search(main), f"{what}: a local path shown: {LOCAL_PATH.findall(main)}"
    cut = page.evaluate(CUT_LABELS)
    assert not cut, f"{what}: chart labels cut short: {cut[:5]}"
    base = "/".join(page.url.split("/")[:3])
    if base in SERVER_LOGS:
        logged = SERVER_LOGS[base].read_text(errors="replace")
        assert "Traceback" not in logged, f"{what}: the hub's server log holds a traceback:\n{logged[-3000:]}"
    assert not observed.page_errors, f"{what}: uncaught JavaScript errors: {observed.page_errors}"
    assert not observed.console_errors, f"{what}: browser console errors: {observed.console_errors}"
    assert not observed.external_requests, f"{what}: requests left the machine: {observed.external_requests}"


def test_the_navigation_lists_every_page() -> None:
    paths = {page.url_path for page in PAGES}
    assert paths >= {"", "pareto", "tco", "profit", "agentic", "trends", "compare", "run", "runs", "methodology"}


@pytest.mark.parametrize("hub_page", PAGES, ids=lambda page: page.url_path or "overview")
def test_every_page_renders_without_errors(
    hub: str, tab: Page, browser_context: tuple[BrowserContext, Observed], artifacts: Path, hub_page: HubPage
) -> None:  # fmt: skip
    _open_and_check(tab, hub, hub_page, browser_context[1], artifacts, "on the fixture")


def _open_and_check(
    page: Page, base: str, hub_page: HubPage, observed: Observed, shots: Path, where: str, query: str = ""
) -> None:
    """Open `hub_page` of the hub at `base` (with `query`), wait until it is drawn, keep its screenshot in `shots`,
    check it."""
    address = f"{base}/{hub_page.url_path}" + (f"?{query}" if query else "")
    observed.clear()
    page.goto(address)
    _settled(page, hub_page.title)
    if any(NETWORK_CHANGED in error for error in observed.console_errors):
        # The machine's network changed under the browser (a Docker test beside this one adds a container's
        # interface), which aborts the page's script loads: not the page's fault; opened once more.
        observed.clear()
        page.goto(address)
        _settled(page, hub_page.title)
    shots.mkdir(exist_ok=True)
    name = (hub_page.url_path or "overview") + (f"-{query.replace('=', '-')}" if query else "")
    page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
    _assert_clean(page, observed, f"/{hub_page.url_path} {where}", hub_page.url_path not in DOCUMENTS_MISSING_VALUES)


@pytest.fixture(scope="module")
def dark_phone(browser_context: tuple[BrowserContext, Observed]) -> Page:
    """A second reader: dark theme (the system's, which Streamlit follows) on a 390 px wide phone screen."""
    context, observed = browser_context
    browser = context.browser
    assert browser is not None
    phone = browser.new_context(viewport={"width": 390, "height": 2400}, color_scheme="dark", device_scale_factor=2)
    phone.route("**/*", _local_only(observed))
    page = phone.new_page()
    _watch(page, observed)
    return page


@pytest.mark.parametrize("hub_page", PAGES, ids=lambda page: page.url_path or "overview")
def test_every_page_in_the_dark_theme_on_a_phone(
    imported_hub: str, dark_phone: Page, browser_context: tuple[BrowserContext, Observed], artifacts: Path,
    hub_page: HubPage,
) -> None:  # fmt: skip
    """The real InferenceX sample read in the dark theme at 390 px: the same checks as every page, screenshot kept."""
    _open_and_check(dark_phone, imported_hub, hub_page, browser_context[1], artifacts / "dark-390",
                    "in the dark theme at 390 px")  # fmt: skip
    assert dark_phone.evaluate("matchMedia('(prefers-color-scheme: dark)').matches")


# What runs past the page's right edge in the main area, as "testid-or-tag right-edge text": nothing may, but a code
# block, a tab bar and a table scroll in their own box, by design. A chart does not count as such a box: a chart
# wider than the page is cut for a reader who does not think to scroll inside it (the Pareto legend at 390 px was).
CUT_AT_THE_RIGHT = """() => {
    const width = document.documentElement.clientWidth, found = [];
    const scrolls = '[data-testid="stDataFrame"], [data-testid="stCode"], [data-testid="stJson"], pre, [role="tablist"]';
    for (const element of document.querySelectorAll('[data-testid="stMain"] *')) {
        const box = element.getBoundingClientRect();
        if (box.width > 0 && box.height > 0 && box.right > width + 1 && !element.closest(scrolls)) {
            const name = element.getAttribute('data-testid') || element.tagName;
            found.push(`${name} ${Math.round(box.right)} ${(element.textContent || '').slice(0, 40)}`);
        }
    }
    return found;
}"""
# Where a reader looks for the answer: the Overview's cards and its chart, the Pareto explorer, TCO and Profit.
ANSWER_PAGES = (("", "Overview"), ("?tab=Chart", "Overview"), ("pareto", "Pareto explorer"),
                ("tco", "TCO calculator"), ("profit", "Profit estimator"))  # fmt: skip


@pytest.mark.parametrize("width", [1400, 390])
def test_the_answer_is_whole_on_a_desktop_and_on_a_phone(
    imported_hub: str, browser_context: tuple[BrowserContext, Observed], artifacts: Path, width: int
) -> None:  # fmt: skip
    """On the real sample at 1,400 and 390 px, nothing on the answer pages runs past the right edge (the scorecard
    table showed two chips of five at 1,400 px, facets cut the 100 tok/s/user panel), and the Overview names each
    chip with its figure as text a reader sees (cards, not a wide table)."""
    context, observed = browser_context
    assert context.browser is not None
    reader = context.browser.new_context(viewport={"width": width, "height": 2400})
    reader.route("**/*", _local_only(observed))
    page = reader.new_page()
    try:
        for path, title in ANSWER_PAGES:
            page.goto(f"{imported_hub}/{path}")
            _settled(page, title)
            page.screenshot(path=str(artifacts / f"answer-{path.strip('?').replace('=', '-') or 'overview'}-{width}.png"),
                            full_page=True)  # fmt: skip
            cut = page.evaluate(CUT_AT_THE_RIGHT)
            assert not cut, f"/{path} at {width} px: runs past the right edge: {cut[:5]}"
            if not path:
                shown = page.inner_text('[data-testid="stMain"]')
                # The sample's gpt-oss-120b fp4 1k/1k at 50 tok/s/user: four chips, each with a cost.
                for chip in ("b200", "gb200-nvl72", "h100", "h200", "mi355x"):
                    assert f"{chip}: $" in shown, f"{chip}'s figure is not shown at {width} px"
                assert "cheapest: gb200-nvl72 $" in shown
    finally:
        reader.close()


@dataclass(frozen=True)
class ClonedHub:
    """The hub as somebody else publishes and serves it: from a copy of the project at another path."""

    base: str  # the served hub's address
    clone: Path  # where the copy lies
    marker: str  # a name in that path no page may repeat


def _copy_of_the_checkout(target: Path) -> None:
    """What a clone of this working tree holds (tracked files as they are now, and new files git does not ignore)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():  # a file deleted in the working tree is still listed as tracked
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


@pytest.fixture(scope="module")
def cloned_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClonedHub]:
    """The project copied to a path of a marked name, the InferenceX sample imported from the copy and a simulated
    sweep run there, `publish --snapshot` into a store in it, and the copy's own `infersweep site --public` serving
    that snapshot (pages and the read-only API): every step runs the copy's code, from the copy."""
    marker = f"elsewhere-{os.getpid()}"
    clone = tmp_path_factory.mktemp("publisher") / marker / "infersweep"
    _copy_of_the_checkout(clone)
    # The results database is the default one, in the home.
    env = {"PYTHONPATH": str(clone), "INFERSWEEP_HOME": str(clone / "home"), "INFERSWEEP_ARTIFACTS": str(clone / "store"),
           "COLUMNS": "200"}  # fmt: skip

    def cli(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], cwd=clone, env={**os.environ, **env},
                              capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
        assert done.returncode == 0, f"infersweep {' '.join(args)}:\n{done.stdout}{done.stderr}"
        return done.stdout

    which = subprocess.run([sys.executable, "-c", "import db, orchestrator; print(db.__file__, orchestrator.__file__)"],
                           cwd=clone, env={**os.environ, **env}, capture_output=True, text=True, check=True)  # fmt: skip
    assert all(Path(file).is_relative_to(clone) for file in which.stdout.split()), which.stdout
    cli("import", "inferencex", *map(str, sorted((clone / "tests" / "data" / "inferencex").glob("run_*/agg_bmk.json"))))
    recipe = clone / "recipes" / "local-run.yaml"
    recipe.write_text(yaml.safe_dump(SIMULATED_RECIPE, sort_keys=False))
    cli("run", str(recipe), "--sweep", "local-run")
    cli("publish", "--snapshot")
    served = _serve(clone / "home" / "hub", "--snapshot", str(clone / "store"), "--public", "--address", "127.0.0.1",
                    root=clone, env=env)  # fmt: skip
    yield ClonedHub(next(served), clone, marker)
    next(served, None)


def _everything_shown(page: Page) -> str:
    """The main area's whole text (code and JSON blocks included) in each of its tabs, with every expander open, and
    every file its download buttons give."""
    main = page.locator('[data-testid="stMain"]')
    shown: list[str] = []
    tabs = main.locator('[role="tab"]')
    for tab in [None, *(tabs.nth(index) for index in range(tabs.count()))]:
        if tab is not None:
            tab.click()
        closed = main.locator("details:not([open]) > summary:visible")
        while closed.count():
            closed.first.click()
        shown.append(main.inner_text())
        buttons = main.locator('[data-testid="stDownloadButton"] button:visible')
        for index in range(buttons.count()):
            with page.expect_download(timeout=PAGE_TIMEOUT_MS) as download:
                buttons.nth(index).click()
            shown.append(Path(download.value.path()).read_bytes().decode(errors="replace"))
    return "\n".join(shown)


def test_a_hub_published_and_served_from_a_clone_elsewhere_names_no_path_of_it(
    cloned_hub: ClonedHub, browser_context: tuple[BrowserContext, Observed], artifacts: Path
) -> None:  # fmt: skip
    """The real InferenceX sample and a simulated sweep as a public hub serves them (a published snapshot): every page
    draws cleanly (the checks of every page above) and its screenshot is kept; and no page, no CSV or file its buttons
    give and no file of its API names the path of the copy of the project that published and serves it (the Pareto CSV
    and Run detail gave the importing machine's path of each source file) nor `shared/` (every cost source read 'via
    shared/reference/hardware.md')."""
    context, observed = browser_context
    observed.clear()
    page = context.new_page()
    _watch(page, observed)
    shown: list[tuple[str, str]] = []
    links = {"run": ["sweep=inferencex-run-20286929996", "sweep=local-run"]}
    try:
        for hub_page in PAGES:
            for query in links.get(hub_page.url_path, [""]):
                _open_and_check(page, cloned_hub.base, hub_page, observed, artifacts / "published-snapshot",
                                "on the published snapshot", query)  # fmt: skip
                assert "No results yet" not in page.inner_text('[data-testid="stMain"]'), hub_page.url_path
                shown.append((f"/{hub_page.url_path}?{query}", _everything_shown(page)))
    finally:
        page.close()
    with urllib.request.urlopen(f"{cloned_hub.base}/api/v1/index.json", timeout=30) as answer:
        index = json.loads(answer.read())
    files = [index_view["path"] for index_view in index["views"]] + [index["openapi"]]
    assert {"results.json", "envelopes.json"} <= set(files), files
    for name in files:
        with urllib.request.urlopen(f"{cloned_hub.base}/api/v1/{name}", timeout=30) as answer:
            shown.append((f"/api/v1/{name}", answer.read().decode()))
    assert any("20286929996" in text for _, text in shown), "the imported run is shown nowhere: nothing was checked"
    assert any("local-run" in text for _, text in shown), "the sweep run from the clone is shown nowhere"
    downloads = sum(text.count("\n") for where, text in shown if not where.startswith("/api"))
    assert downloads > 100, "the pages and their files hold almost nothing"
    for where, text in shown:
        for foreign in (str(cloned_hub.clone), cloned_hub.marker, str(ROOT), "shared/"):
            assert foreign not in text, f"{where} names {foreign!r}: …{text[max(0, text.find(foreign) - 80) :][:200]}…"


def _hardware_tags(page: Page) -> list[str]:
    """The values shown as chosen in the sidebar's Hardware multiselect."""
    widget = page.locator('[data-testid="stSidebar"] [data-testid="stMultiSelect"]').filter(
        has=page.get_by_text("Hardware", exact=True)
    )
    return sorted(widget.locator("[data-tag]").evaluate_all("tags => tags.map(t => t.getAttribute('aria-label'))"))


def _texts(page: Page) -> list[str]:
    """The written content of the main area (not the charts: their tick labels depend on the drawn size)."""
    return page.locator('[data-testid="stMain"] [data-testid="stMarkdownContainer"]').evaluate_all(
        "blocks => blocks.map(block => block.innerText)"
    )


def _hardware_in(url: str) -> list[str]:
    return sorted(parse_qs(urlparse(url).query).get("hardware", []))


def test_a_pareto_filter_lands_in_a_share_link_that_reproduces_the_view(
    hub: str, browser_context: tuple[BrowserContext, Observed], artifacts: Path
) -> None:  # fmt: skip
    context, observed = browser_context
    observed.clear()
    title = next(page.title for page in PAGES if page.url_path == "pareto")
    page = context.new_page()
    _watch(page, observed)
    page.goto(f"{hub}/pareto")
    _settled(page, title)
    before = page.url
    # Every control at its default: the link holds only the comparison picked at the top (model, precision and
    # workload: their default depends on the data, so the link says which); a filter without a parameter shows
    # every option.
    assert set(parse_qs(urlparse(before).query)) == {"model", "precision", "workload"}, before
    every = _hardware_tags(page)
    assert "h200" in every

    page.locator('[data-testid="stSidebar"] button[aria-label="Remove h200"]').click()
    page.wait_for_url(lambda url: bool(_hardware_in(url)), timeout=PAGE_TIMEOUT_MS)
    _settled(page, title)
    share = page.url
    chosen = [hardware for hardware in every if hardware != "h200"]
    assert sorted(_hardware_in(share)) == sorted(chosen)
    assert _hardware_tags(page) == chosen
    # Only the filter the viewer touched is added to the link.
    assert set(parse_qs(urlparse(share).query)) == {"hardware", "model", "precision", "workload"}
    page.screenshot(path=str(artifacts / "pareto-filtered.png"), full_page=True)
    filtered_text = _texts(page)

    shared = context.new_page()  # a new tab: a new Streamlit session
    _watch(shared, observed)
    shared.goto(share)
    _settled(shared, title)
    shared.screenshot(path=str(artifacts / "pareto-share-link.png"), full_page=True)
    assert _hardware_tags(shared) == chosen
    assert sorted(_hardware_in(shared.url)) == sorted(chosen)
    # The same view: every heading, caption, notice and label of the main area reads the same.
    assert _texts(shared) == filtered_text
    _assert_clean(page, observed, "pareto")
    _assert_clean(shared, observed, "pareto share link")
    shared.close()
    page.close()


def test_the_copy_link_button_copies_the_view_shown(
    hub: str, browser_context: tuple[BrowserContext, Observed], artifacts: Path
) -> None:  # fmt: skip
    """The sidebar's button puts the page's current address (every control in it) on the clipboard."""
    context, observed = browser_context
    observed.clear()
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=hub)
    title = next(page.title for page in PAGES if page.url_path == "pareto")
    page = context.new_page()
    _watch(page, observed)
    page.goto(f"{hub}/pareto?hardware=b200&frontier=1")
    _settled(page, title)
    button = page.frame_locator('[data-testid="stSidebar"] iframe').first.get_by_role("button")
    button.click()
    result = page.frame_locator('[data-testid="stSidebar"] iframe').first.locator("#copy-result")
    result.filter(has_text="copied").wait_for(timeout=10_000)
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == page.url and "hardware=b200" in copied and "frontier=1" in copied, (copied, page.url)
    _assert_clean(page, observed, "copy link")
    page.close()


def test_a_link_cannot_deface_the_page_with_markdown(
    hub: str, tab: Page, browser_context: tuple[BrowserContext, Observed]
) -> None:  # fmt: skip
    """A share link's value is repeated back in the 'not in these results' warning and on the run detail. Rendered
    as Markdown, `?hardware=[Session expired](https://evil.example/login) ![p](https://evil.example/p.png)` drew a
    live link and made the browser fetch a third-party image. Now it reads as its characters: no link, no image, no
    request leaving the machine (the browser context aborts and records any)."""
    from urllib.parse import quote

    _, observed = browser_context
    observed.clear()
    planted = "[Session expired](https://evil.example/login) ![p](https://evil.example/p.png)"
    for path, title in ((f"pareto?hardware={quote(planted)}", "Pareto explorer"),
                        (f"run?sweep={quote(planted)}&point={quote(planted)}", "Run detail")):  # fmt: skip
        tab.goto(f"{hub}/{path}")
        _settled(tab, title)
        assert tab.locator('a[href^="https://evil.example"]').count() == 0, path  # not a query value of our own links
        assert tab.locator('img[src^="https://evil.example"]').count() == 0, path
        assert "Session expired" in tab.inner_text("body"), path  # shown, as text
        _assert_clean(tab, observed, path)


@contextmanager
def _streamlit(entry: Path, public: bool = False) -> Iterator[str]:
    """A Streamlit app of the test's own (`entry`), served as `infersweep site` serves the hub (`streamlit_argv`);
    yields its address once it answers, stops it after."""
    from orchestrator.cli.site import streamlit_argv
    from orchestrator.site_warmup import wait_until_healthy

    port = pick_free_port()
    server = subprocess.Popen(streamlit_argv(port, "127.0.0.1", entry, public=public), cwd=entry.parent,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        assert wait_until_healthy(base, timeout_s=60), f"{entry} was not served within 60 s"
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)


@contextmanager
def _new_page(browser_context: tuple[BrowserContext, Observed]) -> Iterator[Page]:
    page = browser_context[0].new_page()
    try:
        yield page
    finally:
        page.close()


@pytest.mark.parametrize("public", [False, True], ids=["this-machine", "public"])
def test_a_public_hub_shows_no_error_details(
    browser_context: tuple[BrowserContext, Observed], tmp_path: Path, public: bool
) -> None:
    """A page that fails on a public hub says that it failed, never the exception, its message or the server's
    file paths (the traceback goes to the server's log); on this machine the details help whoever runs it."""

    (tmp_path / "app.py").write_text(
        "import streamlit as st\nst.title('Failing page')\n"
        "raise RuntimeError('database at /srv/private-store/results.db refused the query')\n"
    )
    # Served as `infersweep site` serves the hub: through an st.App entry, as site/server.py does.
    (tmp_path / "server.py").write_text("import streamlit as st\napp = st.App('app.py')\n")
    with _streamlit(tmp_path / "server.py", public) as base, _new_page(browser_context) as page:
        page.goto(base, timeout=PAGE_TIMEOUT_MS)
        shown = page.locator('[data-testid="stException"]').first
        shown.wait_for(timeout=PAGE_TIMEOUT_MS)
        text = shown.inner_text()
    if public:
        assert "private-store" not in text and "RuntimeError" not in text and "app.py" not in text, text
    else:
        assert "private-store" in text and "RuntimeError" in text


def test_the_cut_label_check_sees_a_legend_cut_short(
    browser_context: tuple[BrowserContext, Observed], tmp_path: Path
) -> None:
    """The check every page passes can fail: a chart whose legend labels are longer than their limit."""

    (tmp_path / "app.py").write_text(
        "import altair as alt\nimport pandas as pd\nimport streamlit as st\n"
        "data = pd.DataFrame({'x': [1, 2], 'y': [1, 2], 'chip': ['gb200-nvl72 · dynamo-trt · deepseek-r1 fp4', 'b200']})\n"
        "st.altair_chart(alt.Chart(data).mark_point().encode(x='x', y='y', color=alt.Color('chip', legend="
        "alt.Legend(labelLimit=60))))\n"
    )
    with _streamlit(tmp_path / "app.py") as base, _new_page(browser_context) as page:
        page.goto(base, timeout=PAGE_TIMEOUT_MS)
        page.locator(".vega-embed svg text").first.wait_for(timeout=PAGE_TIMEOUT_MS)
        cut = page.evaluate(CUT_LABELS)
    assert cut and cut[0].startswith("gb200") and "b200" not in cut, cut
