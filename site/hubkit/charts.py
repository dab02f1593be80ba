"""Charts in a colour-blind-safe palette (Okabe & Ito), with error bars where intervals exist.

Altair ships with Streamlit; charts render in the browser with nothing fetched from the network. The charts a
filter change redraws on a large page (`scatter`: the Pareto explorer, Compare, Trends) are written as Vega-Lite
specs directly; the others are built through Altair.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st
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
# A Vega-Lite spec, or a part of one, as a dict (`scatter`).
Spec = dict[str, Any]


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


# Pixels per bar of `chip_bars`: the chip's label and the figure at the bar's end on one line.
BAR_HEIGHT = 26
# Room past the longest bar (a share of the axis) for the figure written at its end ("$12.3 · 61 %").
_LABEL_ROOM = 0.45


def bar_domain(values: Iterable[float | None], room: float = _LABEL_ROOM) -> tuple[float, float]:
    """The x scale of `chip_bars` over `values` (every bar end, error-bar end and band end a page compares): from 0 (or
    the largest loss) to the largest, with `room` (a share of the span) past each end for the figure written there."""
    present = [float(value) for value in values if value is not None and value == value]
    low, high = min([0.0, *present]), max([0.0, *present])
    span = (high - low) or 1.0
    return (low - room * span if low < 0 else 0.0, high + room * span)


def chip_bars(
    table: pd.DataFrame, value: str, title: str, text: str, order: Sequence[str], domain: tuple[float, float],
    tooltip: Sequence[object] = (), low: str | None = None, high: str | None = None,
    band: tuple[str, str] | None = None, group: str | None = None,
) -> alt.LayerChart:  # fmt: skip
    """Horizontal bars, one per chip (`table`'s `label`, in `order`), `value` along x on the scale `domain` (one scale
    for every bar a reader compares), each bar's figure (`table`'s preformatted `text`) written past its end: a
    loss's to the left of the bar, the rest to the right. Error bars from `low` to `high`; a projected chip's band,
    dashed, from `band`. With `group` (a speed tier), a block of bars per group, one chip's bar in each.

    Horizontal because the answer must read at 390 px: vertical bars in facets needed 110 px a bar, so a phone and
    even 1,400 px cut the chips past the third, and rotated the facet titles; a bar's name and figure here are text
    on one line, the chart as wide as the page."""
    chips = chip_colour(table["hardware"])
    chips.legend = None  # each bar names its chip
    scale = alt.Scale(domain=list(domain), nice=False, zero=True)
    y = alt.Y("label:N", title=None, sort=list(order), axis=alt.Axis(labelLimit=0, labelFontSize=12))
    encoding: dict[str, Any] = {"y": y}
    if group is not None:
        groups = list(dict.fromkeys(table[group]))
        encoding = {"y": alt.Y(f"{group}:N", title=None, sort=groups, axis=alt.Axis(labelLimit=0, labelFontSize=12)),
                    "yOffset": alt.YOffset("label:N", sort=list(order))}  # fmt: skip
    base = alt.Chart().encode(**encoding)
    axis = alt.Axis(tickCount=5)  # a label every few bars' width, readable at 390 px
    bars = base.mark_bar().encode(x=alt.X(f"{value}:Q", title=title, scale=scale, axis=axis), color=chips,
                                  tooltip=list(tooltip))  # fmt: skip
    layers: list[alt.Chart] = [bars, base.mark_rule(color=INK).encode(x=alt.datum(0))]
    if low is not None and high is not None and table[low].notna().any():
        errors = base.mark_rule(color=INK, strokeWidth=1.5)
        layers.append(errors.encode(x=alt.X(f"{low}:Q", scale=scale), x2=f"{high}:Q"))
    if band is not None and table[band[0]].notna().any():
        layers.append(base.mark_rule(color=INK, strokeDash=[4, 3], strokeWidth=2).encode(
            x=alt.X(f"{band[0]}:Q", scale=scale), x2=f"{band[1]}:Q"))  # fmt: skip
    # The figure past the bar's outer end (past its error bar where it has one), outside the bar: a loss's on the left.
    ends = [name for name in (value, high, band[1] if band else None) if name is not None]
    at = f"max({', '.join(f'isValid(datum[{name!r}]) ? datum[{name!r}] : 0' for name in ends)})"
    written = {"text": alt.Text(f"{text}:N"), "color": alt.value(INK)}
    for sign, align, dx in ((">=", "left", 4), ("<", "right", -4)):
        layers.append(
            base.transform_filter(f"datum[{value!r}] {sign} 0")
            .transform_calculate(text_at=at if sign == ">=" else f"datum[{value!r}]")
            .mark_text(align=align, dx=dx, fontSize=12)
            .encode(x=alt.X("text_at:Q", scale=scale), **written)
        )
    # A height per bar (a step), not a whole height: Streamlit's stretched charts collapsed a band axis given a fixed
    # height, every bar drawn on one line.
    return alt.layer(*layers, data=table).properties(height=alt.Step(BAR_HEIGHT))


def colour_scale(values: Iterable[object] | None = None) -> dict[str, list[str]]:
    """A colour scale: each chip's fixed colour (`CHIP_COLOURS`) over the chips in `values`, so a legend lists only
    the chips shown; with no values, the palette in order (series, configurations)."""
    if values is None:
        return {"range": list(PALETTE)}
    present = sorted({str(value) for value in values})
    return {"domain": present, "range": [CHIP_COLOURS.get(chip, UNKNOWN_CHIP) for chip in present]}


def colour(field: str, title: str | None = None) -> alt.Color:
    """Colour by `field` in the palette's order (Altair)."""
    return alt.Color(field, title=title or field, scale=alt.Scale(**colour_scale()))


def chip_colour(chips: Iterable[object], field: str = "hardware:N", title: str = "hardware") -> alt.Color:
    """Colour by chip with each chip's fixed colour (`CHIP_COLOURS`); the legend lists only the chips shown."""
    return alt.Color(field, title=title, scale=alt.Scale(**colour_scale(chips)))


def is_many(series_count: int) -> bool:
    """Past the palette's eight colours a legend entry per series repeats colours and, under a chart, takes the
    height its plot needs (the dashboard's history on Trends: 44 entries, no plot): such charts colour by hardware
    and shape by engine (`scatter`'s `colour_by`, `shape_by`) and put the configuration in the tooltip."""
    return series_count > len(PALETTE)


def legend_of(many: bool) -> dict[str, object]:
    """The legend under a chart: configuration labels are long, so one whole label a row when few; the short
    hardware and engine entries three a row when many (`is_many`): six a row ran past a phone's 390 px."""
    return {"orient": "bottom", "columns": 3} if many else {"orient": "bottom", "labelLimit": 0, "columns": 1}


def many_caption(series_count: int) -> str:
    return (f"{series_count} configurations: colour shows the hardware and shape the engine; hover a point for its "
            "configuration, or narrow the filters to see one legend entry each.")  # fmt: skip


# Vega-Lite's field types, as Altair infers them from a pandas column.
_TYPES = {"i": "quantitative", "u": "quantitative", "f": "quantitative", "M": "temporal"}


def field(frame: pd.DataFrame, name: str, **properties: object) -> Spec:
    """A Vega-Lite field definition of `frame`'s column `name`, its type read off the column (numbers
    quantitative, times temporal, the rest nominal), with `properties` (title, format, scale, legend...)."""
    return {"field": name, "type": _TYPES.get(frame[name].dtype.kind, "nominal"), **properties}


def tip(name: str, title: str | None = None, number_format: str | None = None) -> Spec:
    """A tooltip entry of `scatter`: the column `name`, under `title`, numbers in `number_format` (d3)."""
    entry: Spec = {"field": name}
    if title is not None:
        entry["title"] = title
    if number_format is not None:
        entry["format"] = number_format
    return entry


def scatter(
    frame: pd.DataFrame, x: str, y: str, series: str, tooltip: Sequence[Spec], x_title: str, y_title: str,
    error_low: str | None = None, error_high: str | None = None, connect: bool = False,
    colour_by: str | None = None, shape_by: str | None = None, y_scale: Spec | None = None, href: str | None = None,
) -> Spec:  # fmt: skip
    """Points per series (shape and colour both vary, so print and colour-blind readers can tell them apart), as a
    Vega-Lite spec whose data is the dataset `points` (`frame`); `draw` shows it, after any layers added to it.

    With many series, a legend entry each is unreadable (and the palette repeats after eight): `colour_by`
    and `shape_by` name coarser fields (e.g. hardware and engine) instead; lines and error bars still
    follow each series. `connect` draws each series' line; where the frame has a boolean `frontier` column, only
    through its frontier points (the other points stay, unconnected). `y_scale` replaces the default y scale;
    `href` names the column of each point's link.

    Written as Vega-Lite itself, not built through Altair: Altair's object model and its conversion took ~0.15 s of
    each Pareto explorer run on the public corpus, a filter change's whole budget (docs/BENCHMARKS.md, "Hub render").
    """
    colour_field, shape_field = colour_by or series, shape_by or series
    by_chip = colour_field == "hardware"
    series_colour = field(frame, colour_field, title=colour_field,
                          scale=colour_scale(frame[colour_field] if by_chip else None))  # fmt: skip
    shape = field(frame, shape_field, title=shape_field)
    if shape_field != colour_field:
        # A shape legend of its own (the engine, beside the chip's colours) draws its symbols in the theme-neutral
        # grey: Vega's default black vanished on the dark theme. Sharing the colour's field, the one legend keeps
        # the colours.
        # Above the chart: beside the colours' legend under it, the two ran past a phone's 390 px.
        shape["legend"] = {"symbolFillColor": INK, "symbolStrokeColor": INK, "orient": "top"}
    # Projected points (a model's, not a measurement) are hollow and their lines dashed, on every chart.
    projected = "origin" in frame.columns and bool((frame["origin"] == "projected").any())
    is_projected = "datum.origin === 'projected'"
    x_field = field(frame, x, title=x_title, scale={"zero": False, "padding": 12})
    # Padding keeps the points at the edges whole (the scale would otherwise end at their centres).
    y_field = field(frame, y, title=y_title, scale=y_scale or {"padding": 12})
    point_encoding: Spec = {"x": x_field, "y": y_field, "color": series_colour, "shape": shape,
                            "tooltip": [{**field(frame, entry["field"]), **entry} for entry in tooltip]}  # fmt: skip
    if projected:
        point_encoding["fill"] = {"condition": {"test": is_projected, "value": "transparent"}, **series_colour}
    if href is not None:
        point_encoding["href"] = field(frame, href)
    points: Spec = {
        "mark": {"type": "point", "filled": not projected, "size": 70},
        "encoding": point_encoding,
        # Drag to pan, wheel to zoom (Altair's `interactive()`).
        "params": [{"name": "zoom", "select": {"type": "interval", "encodings": ["x", "y"]}, "bind": "scales"}],
    }
    layers: list[Spec] = [points]
    if connect:
        line: Spec = {
            "mark": {"type": "line", "opacity": 0.7, "interpolate": CURVE},
            "encoding": {"x": field(frame, x), "y": field(frame, y), "color": series_colour, "order": field(frame, x),
                         "detail": field(frame, series)},
        }  # fmt: skip
        if "frontier" in frame.columns:
            line["transform"] = [{"filter": "datum.frontier"}]
        if projected:
            line["encoding"]["strokeDash"] = {"condition": {"test": is_projected, "value": [6, 4]}, "value": [1, 0]}
        layers.insert(0, line)
    if error_low and error_high and (frame[error_low].notna() & frame[error_high].notna()).any():
        # Only points with an interval (several repeats) get a bar: the others would be empty marks to lay out,
        # and with no interval at all there is no layer (the browser evaluates every layer for every point).
        layers.insert(0, {
            "mark": {"type": "errorbar"},
            "transform": [{"filter": f"isValid(datum['{error_low}']) && isValid(datum['{error_high}'])"}],
            "encoding": {"x": field(frame, x), "y": field(frame, error_low, title=y_title),
                         "y2": {"field": error_high}, "color": series_colour, "detail": field(frame, series)},
        })  # fmt: skip
    return {"data": {"name": "points"}, "datasets": {"points": frame}, "layer": layers}


def draw(chart: Spec, height: int, many: bool) -> None:
    """Show a spec made by `scatter` (and any layers added to it), `height` px high, its legend under it
    (`legend_of`)."""
    st.vega_lite_chart({**chart, "height": height, "config": {"legend": legend_of(many)}}, width="stretch")


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
