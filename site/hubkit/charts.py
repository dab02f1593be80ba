"""Charts in a colour-blind-safe palette (Okabe & Ito), with error bars where intervals exist.

Altair ships with Streamlit; charts render in the browser with nothing fetched from the network.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import altair as alt
import pandas as pd
from altair.utils.schemapi import disable_debug_mode

# Altair checks every part of a chart against the Vega-Lite schema as it is built, then the whole spec again when
# Streamlit turns the chart into it: the parts' checks were a third of the Pareto explorer's page run (profiled on
# the public corpus, docs/BENCHMARKS.md). The whole chart is still checked, once, where Streamlit converts it.
disable_debug_mode()

# Okabe & Ito (2008), "Color Universal Design": distinguishable with every common colour-vision deficiency.
# Okabe & Ito's eight, with their black as a mid grey: black marks vanish on the dark theme.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#888888")
# Reference marks (targets, ceilings, error bars, a zero line, labels on bars): a grey that reads on the light and the
# dark theme alike (L* 57; black vanished on the dark theme's #0E1117).
INK = "#888888"
# Curves between measured points are drawn as the figures are read between them: a monotone cubic, never straight
# segments (a straight line drawn 591 tok/s/GPU at 50 tok/s/user where the table beside it read 560 on the public
# corpus: B200 SGLang TP8·EP8, DeepSeek-R1 FP4 1k/1k, on Compare).
CURVE = "monotone"


# One colour per chip, the same on every page (a chip's colour used to depend on which chips a chart held). Chosen
# from Okabe & Ito's and Paul Tol's colour-blind-safe sets for distance, not vendor family (the family palette drew
# gb200/vr200 and b200/gb300 nearly alike): every two chips differ by at least 20 CIELAB units, and by 12 under a
# simulated deuteranopia, protanopia or tritanopia; every colour's lightness reads on the light and the dark theme
# (tests/site/test_chip_colours.py checks all three). Points and bars also differ in shape or position and label, so
# no chart relies on colour alone.
CHIP_COLOURS: dict[str, str] = {
    "h100": "#33BBEE", "h200": "#882255", "b200": "#228833", "b300": "#999933", "gb200-nvl72": "#AA4499",
    "gb300-nvl72": "#225522", "vr200-nvl72": "#EE3377", "mi300x": "#DDCC77", "mi325x": "#E69F00",
    "mi355x": "#CC3311", "tpu-v7": "#CC79A7", "cpu-local": "#7F7F7F",
}  # fmt: skip
UNKNOWN_CHIP = "#BBBBBB"
# A bar's label ("gb200-nvl72 [imported]") on two lines, never cut: at a bar's fixed width the one-line label was
# truncated to "gb200-nvl72 [imp…".
BAR_LABELS = alt.Axis(labelAngle=0, labelExpr="split(datum.value, ' ')", labelLimit=0)


def colour(field: str, title: str | None = None) -> alt.Color:
    return alt.Color(field, title=title or field, scale=alt.Scale(range=list(PALETTE)))


def chip_colour(chips: Iterable[object], field: str = "hardware:N", title: str = "hardware") -> alt.Color:
    """Colour by chip with each chip's fixed colour (`CHIP_COLOURS`); the legend lists only the chips shown."""
    present = sorted({str(chip) for chip in chips})
    scale = alt.Scale(domain=present, range=[CHIP_COLOURS.get(chip, UNKNOWN_CHIP) for chip in present])
    return alt.Color(field, title=title, scale=scale)


def is_many(series_count: int) -> bool:
    """Past the palette's eight colours a legend entry per series repeats colours and, under a chart, takes the
    height its plot needs (the dashboard's history on Trends: 44 entries, no plot): such charts colour by hardware
    and shape by engine (`scatter`'s `colour_by`, `shape_by`) and put the configuration in the tooltip."""
    return series_count > len(PALETTE)


def legend_of(many: bool) -> dict[str, object]:
    """The legend under a chart: configuration labels are long, so one whole label a row when few; the short
    hardware and engine entries side by side when many (`is_many`)."""
    return {"orient": "bottom", "columns": 6} if many else {"orient": "bottom", "labelLimit": 0, "columns": 1}


def many_caption(series_count: int) -> str:
    return (f"{series_count} configurations: colour shows the hardware and shape the engine; hover a point for its "
            "configuration, or narrow the filters to see one legend entry each.")  # fmt: skip


def scatter(
    frame: pd.DataFrame, x: str, y: str, series: str, tooltip: Sequence[str], x_title: str, y_title: str,
    error_low: str | None = None, error_high: str | None = None, connect: bool = False,
    colour_by: str | None = None, shape_by: str | None = None, y_scale: alt.Scale | None = None,
) -> alt.Chart:  # fmt: skip
    """Points per series (shape and colour both vary, so print and colour-blind readers can tell them apart).

    With many series, a legend entry each is unreadable (and the palette repeats after eight): `colour_by`
    and `shape_by` name coarser fields (e.g. hardware and engine) instead; lines and error bars still
    follow each series. `connect` draws each series' line; where the frame has a boolean `frontier` column, only
    through its frontier points (the other points stay, unconnected). `y_scale` replaces the default y scale.
    """
    colour_field, shape_field = colour_by or series, shape_by or series
    by_chip = colour_field == "hardware"
    series_colour = chip_colour(frame[colour_field], colour_field) if by_chip else colour(colour_field)
    # A shape legend of its own (the engine, beside the chip's colours) draws its symbols in the theme-neutral grey:
    # Vega's default black vanished on the dark theme. Sharing the colour's field, the one legend keeps the colours.
    shape = alt.Shape(shape_field, title=shape_field)
    if shape_field != colour_field:
        shape = alt.Shape(shape_field, title=shape_field, legend=alt.Legend(symbolFillColor=INK, symbolStrokeColor=INK))
    base = alt.Chart(frame)
    # Projected points (a model's, not a measurement) are hollow and their lines dashed, on every chart.
    projected = "origin" in frame.columns and bool((frame["origin"] == "projected").any())
    is_projected = "datum.origin === 'projected'"
    fill = alt.condition(is_projected, alt.value("transparent"), series_colour) if projected else None
    points = base.mark_point(filled=not projected, size=70).encode(
        # Padding keeps the points at the edges whole (the scale would otherwise end at their centres).
        x=alt.X(x, title=x_title, scale=alt.Scale(zero=False, padding=12)),
        y=alt.Y(y, title=y_title, scale=y_scale or alt.Scale(padding=12)),
        color=series_colour,
        shape=shape,
        tooltip=list(tooltip),
    )
    if fill is not None:
        points = points.encode(fill=fill)
    layers: list[alt.Chart] = [points]
    if connect:
        lined = base.transform_filter("datum.frontier") if "frontier" in frame.columns else base
        line = lined.mark_line(opacity=0.7, interpolate=CURVE).encode(x=x, y=y, color=series_colour, order=x,
                                                                      detail=series)  # fmt: skip
        if projected:
            line = line.encode(strokeDash=alt.condition(is_projected, alt.value([6, 4]), alt.value([1, 0])))
        layers.insert(0, line)
    if error_low and error_high and (frame[error_low].notna() & frame[error_high].notna()).any():
        # Only points with an interval (several repeats) get a bar: the others would be empty marks to lay out,
        # and with no interval at all there is no layer (the browser evaluates every layer for every point).
        bars = base.transform_filter(f"isValid(datum['{error_low}']) && isValid(datum['{error_high}'])")
        layers.insert(
            0,
            bars.mark_errorbar().encode(
                x=x, y=alt.Y(error_low, title=y_title), y2=error_high, color=series_colour, detail=series
            ),
        )
    return alt.layer(*layers).interactive()


def chip_curves(curve: pd.DataFrame, y: alt.Y, tooltip: Sequence[str | alt.Tooltip], target: float,
                rules: Sequence[alt.Chart] = ()) -> alt.LayerChart:  # fmt: skip
    """Each chip's figure (`y`) over interactivity, one line per chip and model · workload row (`curve`'s columns
    tok/s/user, hardware, row), the target speed as a dashed rule, and any other `rules`."""
    several = curve["row"].nunique() > 1
    base = alt.Chart(curve).encode(
        x=alt.X("tok/s/user:Q", title="interactivity (tok/s/user)"), y=y, color=chip_colour(curve["hardware"]),
        detail="row:N", tooltip=["hardware", "row", "configuration", alt.Tooltip("tok/s/user:Q", format=",.1f"),
                                 *tooltip],
    )  # fmt: skip
    # Lines and their points are two layers: the dash legend then draws each dash as a line (a line with points
    # gets point symbols in its legend, which hide the dash).
    lines = base.mark_line(interpolate=CURVE).encode(
        # labelLimit 0: a model · workload label is long, and the default 160 px cut it to "deepseek-r1 fp8 · 8…".
        strokeDash=alt.StrokeDash("row:N", title="model · workload", legend=alt.Legend(labelLimit=0))
        if several
        else alt.value([1, 0])
    )
    points = base.mark_point(filled=True, size=30)
    target_rule = alt.Chart().mark_rule(strokeDash=[4, 4], color=INK).encode(x=alt.datum(target))
    return alt.layer(lines, points, *rules, target_rule).properties(height=380)
