"""Screenshots of the answer pages as a reader sees them: the Overview (scorecard and chart), the Pareto explorer, TCO
and Profit on the real InferenceX sample, and Capacity on the hand-checked fixture (tests/site/hub_fixture.py: the
InferenceX rows state no TTFT p90, which every SLO tier reads), at 1,400 and 390 px, light beside dark, each taken
once the page finished running (`test_browser._settled`); what runs past the right edge is printed
(`CUT_AT_THE_RIGHT`: nothing may).

Run: .venv/bin/python -m tests.site.answer_screens OUT_DIR [PAGE ...]   (docs/screenshots/ holds the last ones
looked at; PAGE: only these, by screenshot name)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image
from playwright.sync_api import sync_playwright

from tests.conftest import ROOT
from tests.site import test_browser as browser_test
from tests.site.hub_fixture import seed_hub

PAGES = (("", "Overview", "overview"), ("?tab=Chart", "Overview", "overview-chart"),
         ("pareto", "Pareto explorer", "pareto"), ("tco", "TCO calculator", "tco"),
         ("profit", "Profit estimator", "profit"))  # fmt: skip
FIXTURE_PAGES = (("capacity", "Capacity", "capacity"),)
WIDTHS = (1400, 390)
SCALE = {1400: 0.4, 390: 0.5}  # of the side-by-side picture kept


def side_by_side(light: Path, dark: Path, out: Path, scale: float) -> None:
    """Light and dark next to each other, scaled down, in 128 colours (a few hundred KB at most)."""
    left, right = (Image.open(path).convert("RGB") for path in (light, dark))
    both = Image.new("RGB", (left.width + right.width + 20, max(left.height, right.height)), (128, 128, 128))
    both.paste(left, (0, 0))
    both.paste(right, (left.width + 20, 0))
    both = both.resize((int(both.width * scale), int(both.height * scale)), Image.Resampling.LANCZOS)
    both.quantize(colors=128, method=Image.Quantize.FASTOCTREE).save(out, optimize=True)


def main(out: Path, only: set[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp())
    sample = work / "sample.db"
    files = sorted(str(path) for path in (ROOT / "tests" / "data" / "inferencex").glob("run_*/agg_bmk.json"))
    env = {**os.environ, "INFERSWEEP_HOME": str(work / "home"), "INFERSWEEP_DATABASE_URL": f"sqlite:///{sample}"}
    subprocess.run([sys.executable, "-m", "orchestrator.cli", "import", "inferencex", *files], cwd=ROOT, env=env,
                   check=True, capture_output=True)  # fmt: skip
    fixture = work / "fixture.db"
    seed_hub(f"sqlite:///{fixture}")
    for database, pages in ((sample, PAGES), (fixture, FIXTURE_PAGES)):
        chosen = [page for page in pages if not only or page[2] in only]
        if chosen:
            _shoot(database, chosen, work)
            for _, _, name in chosen:
                for width in WIDTHS:
                    side_by_side(work / f"{name}-{width}-light.png", work / f"{name}-{width}-dark.png",
                                 out / f"{name}-{width}.png", SCALE[width])  # fmt: skip


def _shoot(database: Path, pages: list[tuple[str, str, str]], work: Path) -> None:
    """Each of `pages` served from `database`, at each width, light and dark, into `work`."""
    served = browser_test._serve(database)
    base = next(served)
    assert browser_test.CHROMIUM is not None, "needs Debian's chromium (make browser)"
    with sync_playwright() as driver:
        chromium = driver.chromium.launch(executable_path=browser_test.CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        for width in WIDTHS:
            for scheme in ("light", "dark"):
                context = chromium.new_context(viewport={"width": width, "height": 2400}, color_scheme=scheme)
                page = context.new_page()
                for path, title, name in pages:
                    page.goto(f"{base}/{path}")
                    browser_test._settled(page, title)
                    cut = page.evaluate(browser_test.CUT_AT_THE_RIGHT)
                    page.screenshot(path=str(work / f"{name}-{width}-{scheme}.png"), full_page=True)
                    print(
                        f"{name} at {width} px, {scheme}: "
                        + (f"runs past the right edge: {cut[:3]}" if cut else "whole")
                    )
                context.close()
        chromium.close()
    next(served, None)


if __name__ == "__main__":
    main(Path(sys.argv[1]), set(sys.argv[2:]))
