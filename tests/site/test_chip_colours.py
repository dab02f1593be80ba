"""One fixed colour per chip on every page: the Pareto explorer, TCO and Profit (and the Overview) agree, whatever
other chips a chart holds, and every chip of the hardware registry has its colour."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterator, Sequence
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


# --- Telling chips apart: CIELAB distances (CIE 1976) in normal vision and under simulated colour-vision deficiency -
# Machado, Oliveira & Fernandes (2009), severity 1.0, applied to linear RGB.
DEFICIENCIES = {
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)),
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "tritanopia": ((1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602), (0.004733, 0.691367, 0.303900)),
}
MIN_DISTANCE = 20.0  # CIELAB units between any two chips, normal vision (the old palette had 15.5: gb200 vs h200)
MIN_DISTANCE_DEFICIENT = 12.0  # under each simulated deficiency (the old palette: 2.8, b200 vs gb300, tritanopia)
LIGHTNESS = (28.0, 85.0)  # L*: not lost on white (L* 100) nor on the dark theme's #0E1117 (L* 5)


def _linear_rgb(colour: str) -> tuple[float, ...]:
    channels = (int(colour[index : index + 2], 16) / 255 for index in (1, 3, 5))
    return tuple(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)


def _lab(rgb: Sequence[float]) -> tuple[float, float, float]:
    """Linear sRGB -> CIELAB (D65)."""
    xyz_matrix = ((0.4124, 0.3576, 0.1805), (0.2126, 0.7152, 0.0722), (0.0193, 0.1192, 0.9505))
    white = (0.95047, 1.0, 1.08883)
    x, y, z = (sum(m * c for m, c in zip(row, rgb, strict=True)) / w for row, w in zip(xyz_matrix, white, strict=True))

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def _seen(colour: str, deficiency: str | None) -> tuple[float, float, float]:
    rgb = _linear_rgb(colour)
    if deficiency is not None:
        rgb = tuple(min(1.0, max(0.0, sum(m * c for m, c in zip(row, rgb, strict=True))))
                    for row in DEFICIENCIES[deficiency])  # fmt: skip
    return _lab(rgb)


def _closest_pair(deficiency: str | None) -> tuple[float, str, str]:
    from hubkit.charts import CHIP_COLOURS

    seen = {chip: _seen(colour, deficiency) for chip, colour in CHIP_COLOURS.items()}
    return min((math.dist(seen[a], seen[b]), a, b) for a, b in itertools.combinations(seen, 2))


def test_no_two_chips_look_alike_with_or_without_colour_vision_deficiency() -> None:
    assert _closest_pair(None)[0] >= MIN_DISTANCE, _closest_pair(None)
    for deficiency in DEFICIENCIES:
        assert _closest_pair(deficiency)[0] >= MIN_DISTANCE_DEFICIENT, (deficiency, _closest_pair(deficiency))


def test_every_chip_colour_reads_on_the_light_and_the_dark_theme() -> None:
    from hubkit.charts import CHIP_COLOURS

    low, high = LIGHTNESS
    lightness = {chip: round(_lab(_linear_rgb(colour))[0], 1) for chip, colour in CHIP_COLOURS.items()}
    assert all(low <= value <= high for value in lightness.values()), lightness


def test_the_colour_check_knows_near_alike_colours() -> None:
    # The check itself: the family palette's gb200 and h200 blues were 15.5 apart, b200 and gb300 2.8 for a tritanope.
    assert math.dist(_seen("#1B4F8A", None), _seen("#0072B2", None)) < MIN_DISTANCE
    assert math.dist(_seen("#009E73", "tritanopia"), _seen("#2A9D8F", "tritanopia")) < MIN_DISTANCE_DEFICIENT
