"""One fixed colour per chip on every page: the Pareto explorer, TCO and Profit (and the Overview) agree, whatever
other chips a chart holds, and every chip of the hardware registry has its colour."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from streamlit.testing.v1 import AppTest

from recipes.hardware import load_hardware_registry
from tests.site.conftest import open_page

PAGES = ("overview", "pareto", "tco", "profit")


def _scales(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        colour = node.get("color")
        if isinstance(colour, dict) and colour.get("field") == "hardware" and "domain" in colour.get("scale", {}):
            yield colour["scale"]
        for value in node.values():
            yield from _scales(value)
    elif isinstance(node, list):
        for value in node:
            yield from _scales(value)


def chip_colours(app: AppTest) -> dict[str, str]:
    """Chip -> colour in every chart on the page (refusing a page that draws one chip in two colours)."""
    found: dict[str, str] = {}
    for chart in app.get("arrow_vega_lite_chart") + app.get("vega_lite_chart"):
        for scale in _scales(json.loads(chart.proto.spec)):
            for chip, colour in zip(scale["domain"], scale["range"], strict=True):
                assert found.setdefault(chip, colour) == colour, (chip, found[chip], colour)
    return found


def test_a_chip_has_the_same_colour_on_every_page(seeded_hub: str) -> None:
    # The Overview draws its chart when its tab is open.
    links: dict[str, dict[str, str | list[str]]] = {"overview": {"tab": "Chart"}}
    by_page = {page: chip_colours(open_page(page, links.get(page), from_overview=page != "overview")) for page in PAGES}
    for page, colours in by_page.items():
        assert {"b200", "h200"} <= set(colours), (page, colours)
    for chip in ("b200", "h200"):
        assert len({colours[chip] for colours in by_page.values()}) == 1, (chip, by_page)
    # The same chip alone on a page keeps its colour (it used to take the palette's first colour).
    alone = chip_colours(open_page("pareto", {"hardware": "h200"}))
    assert alone == {"h200": by_page["tco"]["h200"]}


def test_every_registry_chip_has_a_colour_and_no_two_share_one() -> None:
    from hubkit.charts import CHIP_COLOURS

    registry = load_hardware_registry()
    assert set(registry) <= set(CHIP_COLOURS), set(registry) - set(CHIP_COLOURS)
    assert len(set(CHIP_COLOURS.values())) == len(CHIP_COLOURS)
