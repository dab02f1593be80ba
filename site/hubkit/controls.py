"""Sidebar controls whose state lives in the URL, so any view can be shared as a link.

Each control reads its starting value from `st.query_params` and writes its current value back (`_link`). A
value the results do not have (an old link, a typo, a model shown under another label) never breaks a page and is
never dropped silently: the page says which value it could not show, and a multiselect keeps it in the link.
Widget state is seeded once per session under a stable key, so a changed default never resets what the viewer
chose.

A value at its fixed default is not added to the URL: a link without the parameter means the default
(for a filter, every option, including options that appear later), and every query-string write costs the
browser a round of re-rendering (about 0.3 s for a default Pareto view's eleven writes at 50,000 points:
docs/BENCHMARKS.md, "Hub render"). A parameter the URL already holds is kept and follows the widget.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import urlencode

import numpy as np
import pandas as pd
import streamlit as st

from analysis import public_results
from analysis.public_results import NOT_MEASUREMENTS, default_origins, local_host_rows
from analysis.recency import as_utc
from hubkit import data


def _link(param: str, value: str | list[str], default: str | list[str] | None) -> None:
    """Write `value` to the query parameter `param` unless it is already there, or is the default and absent."""
    if param in st.query_params:
        current: str | list[str] = st.query_params.get_all(param) if isinstance(value, list) else st.query_params[param]
        if current != value:
            st.query_params[param] = value
    elif value != default:
        st.query_params[param] = value


def _seed(key: str, value: object) -> None:
    if key not in st.session_state:
        st.session_state[key] = value
    else:
        # Streamlit drops a widget's state when a page without that widget runs; re-assigning it marks it kept,
        # so a filter chosen on one page is still chosen on the next.
        st.session_state[key] = st.session_state[key]


def multiselect(label: str, options: Sequence[str], param: str, default: Sequence[str] | None = None,
                help: str | None = None, sidebar: bool = True) -> list[str]:  # fmt: skip
    """A multiselect bound to the repeated query parameter `param` (all options when no default)."""
    options = list(options)
    asked = st.query_params.get_all(param)
    linked = [value for value in asked if value in options]
    key = f"param-{param}"
    # What the link asked for that the results do not have, as the page first opened (not what the viewer's own
    # choices on other filters later leave out).
    if key not in st.session_state:
        st.session_state[f"unknown-{param}"] = [value for value in asked if value not in options]
    unknown = [value for value in st.session_state.get(f"unknown-{param}", []) if value not in options]
    # A link that asks only for values the results do not have (/?hardware=tpu-v7 before TPU v7 is measured) selects
    # nothing: the page's empty state, never every other option as if they were what was asked for.
    _seed(key, linked if asked else list(default if default is not None else options))
    st.session_state[key] = [value for value in st.session_state[key] if value in options]
    container = st.sidebar if sidebar else st
    if unknown and linked:
        _not_in_results(container, label, unknown, options, "kept in the link; showing the rest")
    elif unknown:
        # In the page itself, where the chart would be: nothing else is shown.
        _not_in_results(st, label, unknown, options, "kept in the link; nothing else is shown")
    chosen = container.multiselect(label, options, key=key, help=help)
    # Values the results do not have stay in the link, so a link shared before a result was retracted (or before
    # one is measured) keeps asking for it.
    _link(param, chosen + unknown if unknown else chosen, list(default if default is not None else options))
    assume(label, ", ".join(chosen) if chosen != options else f"all ({len(options)})")
    return chosen


LINKED_SHOWN = 80  # characters of a link's value a page repeats back


def as_text(value: object) -> str:
    """A value from a link (anyone can write one), made safe to show inside Markdown: cut to LINKED_SHOWN characters
    and put in a code span, whose content Markdown never reads as a link, an image or emphasis. Backslash escapes
    were not enough: GitHub-flavoured Markdown still turned the escaped 'https\\:\\/\\/evil.example' into a live
    link. The fence is one backtick longer than any run of backticks in the value, so the value cannot close it."""
    text = " ".join(str(value).split())  # one line: a newline would end the warning's sentence
    text = text if len(text) <= LINKED_SHOWN else text[:LINKED_SHOWN] + "…"
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _not_in_results(container: Any, label: str, values: Sequence[str], options: Sequence[str], outcome: str) -> None:
    known = ", ".join(list(options)[:8]) + (", ..." if len(options) > 8 else "")
    container.warning(
        f"The link asks for {label} {', '.join(as_text(value) for value in values)}, which these results do not have "
        f"({outcome}). They have: {known or 'nothing yet'}."
    )


def _one_of(widget: Callable[..., object], label: str, options: list[str], param: str, default: str | None,
            first: str | None = None, **widget_options: object) -> str:  # fmt: skip
    """One of `options` (not empty), chosen with `widget` (st.selectbox, st.radio...) bound to `param`.

    Without a link value it shows `default` (left out of links), else `first` (written), else the first option."""
    fallback = default if default in options else first if first in options else options[0]
    linked = st.query_params.get(param)
    key = f"param-{param}"
    stand_in = f"stand-in-{param}"  # what the page shows instead of a value the link asks for and the data lack
    if key not in st.session_state and linked is not None and linked not in options:
        _not_in_results(st.sidebar, label, [linked], options, f"kept in the link; showing {fallback!r} instead")
        st.session_state[stand_in] = fallback
    _seed(key, linked if linked in options else fallback)
    if st.session_state[key] not in options:
        st.session_state[key] = fallback
    chosen = str(widget(label, options, key=key, **widget_options))
    assume(label, chosen)
    if linked is not None and linked not in options and chosen == st.session_state.get(stand_in):
        return chosen  # the link keeps asking for its value until the viewer picks another
    _link(param, chosen, default if default in options else None)
    return chosen


def selectbox(label: str, options: Sequence[str], param: str, default: str | None = None,
              help: str | None = None, sidebar: bool = True, first: str | None = None) -> str | None:  # fmt: skip
    """A selectbox bound to the query parameter `param` (always written unless `default` is given: the first
    option, or `first`, may depend on the data, and a link must keep opening what it showed)."""
    if not options:
        return None
    widget = (st.sidebar if sidebar else st).selectbox
    return _one_of(widget, label, list(options), param, default, first, help=help)


def radio(label: str, options: Sequence[str], param: str, default: str, sidebar: bool = False) -> str:
    """Horizontal radio buttons bound to the query parameter `param` (e.g. a page's chart or table view)."""
    return _one_of((st.sidebar if sidebar else st).radio, label, list(options), param, default, horizontal=True)


# A number control's ceiling where its page names none: past any figure a reader means, and small enough that every
# conversion a page makes of it (int(), a product with bytes per GPU) stays finite and quick.
NUMBER_CEILING = 1e9


def number(label: str, param: str, default: float, min_value: float = 0.0, step: float = 1.0,
           help: str | None = None, sidebar: bool = True, max_value: float = NUMBER_CEILING) -> float:  # fmt: skip
    """A number input bound to the query parameter `param`, clamped to [min_value, max_value] before the page
    converts it (a link's 1e308 accelerators overflowed int()); a bad value in a link falls back to default."""
    key = f"param-{param}"
    try:
        linked = float(st.query_params.get(param, default))
        if not math.isfinite(linked):  # 'inf' and 'nan' parse as floats, and pages computed on with them
            raise ValueError(linked)
    except ValueError:
        if key not in st.session_state:
            st.sidebar.warning(f"The link's {label} {as_text(st.query_params.get(param))} is not a finite number: "
                               f"showing {default:g}.")  # fmt: skip
        linked = default
    if not min_value <= linked <= max_value and key not in st.session_state:
        st.sidebar.warning(f"The link's {label} {linked:g} is outside {min_value:g} to {max_value:g}: showing the "
                           "nearest end.")  # fmt: skip
    _seed(key, min(max(linked, min_value), max_value))
    container = st.sidebar if sidebar else st
    ceiling = type(min_value)(max_value)  # Streamlit refuses bounds and step of mixed int and float types
    chosen = container.number_input(label, min_value=min_value, max_value=ceiling, step=step, key=key, help=help)
    _link(param, f"{chosen:g}", f"{max(default, min_value):g}")
    assume(label, f"{chosen:g}")
    return float(chosen)


# What a link may say for a switch (a hand-written link says `true`; the hub writes 1 and 0).
TOGGLE_WORDS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False,
                "off": False}  # fmt: skip


def toggle(label: str, param: str, default: bool = False, help: str | None = None, sidebar: bool = True) -> bool:
    key = f"param-{param}"
    linked = st.query_params.get(param)
    state = None if linked is None else TOGGLE_WORDS.get(linked.strip().lower())
    if key not in st.session_state and linked is not None and state is None:
        st.sidebar.warning(f"The link's {label} {as_text(linked)} is neither on nor off (1/0, true/false): showing "
                           f"{'on' if default else 'off'}.")  # fmt: skip
    _seed(key, default if state is None else state)
    container = st.sidebar if sidebar else st
    chosen = container.toggle(label, key=key, help=help)
    _link(param, "1" if chosen else "0", "1" if default else "0")
    assume(label, "on" if chosen else "off")
    return bool(chosen)


def origins(frame: pd.DataFrame) -> pd.DataFrame:
    """Keep the origins the viewer shows: measured and imported by default; others only on request, labelled. Then
    the local host's results (`local_hosts`)."""
    available = sorted(frame["origin"].unique())
    default = default_origins(available)
    chosen = multiselect(
        "Origins", available, "origin", default,
        help="Only measured and imported results are shown by default. "
        + "; ".join(f"{name}: {why}" for name, why in NOT_MEASUREMENTS.items()),
    )  # fmt: skip
    shown = [origin for origin in chosen if origin in NOT_MEASUREMENTS]
    if shown:
        st.sidebar.warning(f"Showing {', '.join(shown)} results: these are not measurements and are labelled so.")
    return local_hosts(rows_kept(frame, frame["origin"].isin(chosen).to_numpy()))


def local_hosts(frame: pd.DataFrame) -> pd.DataFrame:
    """Beside accelerators' results, a local host's (the laptop demo's tiny model on its CPU, hardware of vendor
    'local') are shown only on request: they topped the public Overview as the cheapest "chip". Where they are all
    there is (`make demo`), they are shown."""
    local = local_host_rows(frame, data.local_hosts())
    if not local.any():  # nothing to hide, or nothing but a local host to show
        return frame
    if toggle("Local-host results", "local", help="Results of a local CPU host (the demo's tiny model): not an "
              "accelerator, and its cost is an illustrative figure."):  # fmt: skip
        st.sidebar.warning("Showing local-host results: a CPU host running a tiny model, not an accelerator.")
        return frame
    st.sidebar.caption(f"{int(local.sum())} local-host result(s) hidden (a CPU host, not an accelerator): "
                       "'Local-host results' shows them.")  # fmt: skip
    return frame[~local]


FILTERS = (
    ("model", "Model"),
    ("workload", "Workload"),
    ("precision", "Precision"),
    ("hardware", "Hardware"),
    ("engine", "Engine"),
)


def filters(frame: pd.DataFrame, columns: Sequence[str] = tuple(name for name, _ in FILTERS)) -> pd.DataFrame:
    """Sidebar multiselects over `columns` (all selected by default), each bound to a query parameter."""
    labels = dict(FILTERS)
    # Each filter's options are what the ones before it kept; the wide frame itself is cut once, at the end (cutting
    # it at each filter was most of the sidebar's time on the public corpus).
    kept = np.ones(len(frame), dtype=bool)
    for column in columns:
        values = frame[column]
        options = sorted(str(value) for value in values[kept].dropna().unique())
        chosen = multiselect(labels.get(column, column.title()), options, column)
        kept &= values.astype(str).isin(chosen).to_numpy()
    return rows_kept(frame, kept)


def rows_kept(frame: pd.DataFrame, kept: pd.Series | np.ndarray) -> pd.DataFrame:
    """`frame`'s rows where `kept` is true; `frame` itself when that is all of them (a copy of the results' every
    column costs a page run milliseconds)."""
    return frame if bool(np.all(kept)) else frame[kept]


def only_valid(frame: pd.DataFrame) -> pd.DataFrame:
    if toggle(
        "Only valid points", "valid", default=True, help="Invalid points failed a validity rule (docs/METRICS.md)."
    ):
        return rows_kept(frame, frame["valid"].to_numpy(dtype=bool))
    return frame


def latest_only(frame: pd.DataFrame) -> pd.DataFrame:
    """By default each configuration is shown by its latest sweep; history is one toggle away (and on Trends)."""
    if toggle("Latest sweep of each configuration", "latest", default=True,
              help="Off: every sweep that measured a configuration, e.g. to see nightly runs together."):  # fmt: skip
        return rows_kept(frame, frame["latest"].to_numpy(dtype=bool))
    return frame


def as_of(frame: pd.DataFrame) -> pd.DataFrame:
    """The results as they stood at the end of a chosen day (UTC), bound to `asof` as the API's `?asof=` is
    (`public_results.as_of`: dated rows finished by then, each configuration's latest sweep among them, and only
    those runs behind a figure's spread); empty means now. Offered only where some result states its date."""
    dated = frame["date_known"].to_numpy(dtype=bool)
    if not dated.any():
        return frame
    finished = frame.loc[dated, "finished_at"]  # the ends only: converting every row costs a page run at 100k rows
    first, last = (as_utc(pd.Timestamp(when).to_pydatetime()).astimezone(UTC).date()
                   for when in (finished.min(), finished.max()))  # fmt: skip
    key, linked = "param-asof", st.query_params.get("asof")
    if key not in st.session_state and linked:
        try:
            asked: date | None = date.fromisoformat(linked)
        except ValueError:
            asked = None
            st.sidebar.warning(f"The link's as-of date {as_text(linked)} is not a date (YYYY-MM-DD): showing now.")
        if asked is not None and asked < first:
            st.sidebar.warning(f"The link's as-of date {asked} is before the first dated result ({first}): showing "
                               "now.")  # fmt: skip
            asked = None
        _seed(key, asked)
    else:
        _seed(key, None)
    today = datetime.now(UTC).date()
    chosen = st.sidebar.date_input("As of (UTC)", key=key, min_value=first, max_value=max(last, today),
                                   help="The results as they stood at the end of this day by their measurement "
                                   "dates: each configuration's latest sweep finished by then (the API's ?asof= "
                                   "reads what was published by then). Empty: now.")  # fmt: skip
    if not isinstance(chosen, date):
        st.query_params.pop("asof", None)
        return frame
    _link("asof", chosen.isoformat(), None)
    assume("As of (UTC)", chosen.isoformat())
    shown = public_results.as_of(frame, chosen)
    undated = int((~dated).sum())
    note = f"; {undated} result(s) whose source states no date left out" if undated else ""
    st.sidebar.caption(f"As of {chosen}: {len(shown)} result(s) finished by then{note}.")
    return shown


# What a page's figures assume (every control's value in this page run, and the $/GPU-hr of a TCO tier), so a table
# taken away as CSV says under which assumptions its numbers hold. Emptied at the start of every page run (app.py).
ASSUMPTIONS = "csv-assumptions"
RATE = "csv-rate"


def new_page_run() -> None:
    st.session_state[ASSUMPTIONS] = {}
    st.session_state[RATE] = None
    data.new_page_run()


def assume(label: str, value: str) -> None:
    """Note a control's value for the CSV downloads of this page run."""
    st.session_state.setdefault(ASSUMPTIONS, {})[label] = value


def assume_rate(tier: str | None, custom_usd: float | None = None) -> None:
    """Note the TCO tier (or custom $/GPU-hr) the page's costs use: the CSV then states each chip's figure, its
    source and its month."""
    st.session_state[RATE] = (tier, custom_usd)


def preamble(table: pd.DataFrame, name: str, assumptions: dict[str, str], rate: tuple[str | None, float | None] | None,
             link: str) -> list[str]:  # fmt: skip
    """The lines a CSV starts with (each '# ...'; `pandas.read_csv(path, comment="#")` skips them): what the table is,
    the view's link, every control's value and, where the page reads costs, the $/GPU-hr of each chip in it."""
    lines = [f"InferSweep hub: {name}, taken {datetime.now(UTC):%Y-%m-%d %H:%M} UTC", f"view: {link or '(defaults)'}"]
    lines += [f"{label}: {value}" for label, value in assumptions.items()]
    tier, custom = rate if rate is not None else (None, None)
    if custom is not None:
        lines.append(f"$/GPU-hr: {custom:g} for every chip (custom)")
    if tier is not None:
        registry = data.hardware_registry()
        for chip in sorted(set(table["hardware"].astype(str))) if "hardware" in table else []:
            figure = registry[chip].tco_usd_per_gpu_hour.get(tier) if chip in registry else None
            if figure is not None and figure.value is not None:
                lines.append(f"$/GPU-hr {chip} at {tier}: {figure.value:g} ({figure.source}, {figure.as_of})")
            else:
                lines.append(f"$/GPU-hr {chip} at {tier}: none in recipes/hardware.yaml")
    return ["# " + " ".join(line.split()) for line in lines]


def csv_bytes(table: pd.DataFrame | Callable[[], pd.DataFrame], head: Sequence[str] = ()) -> bytes:
    """The table as CSV: numbers as numbers (a missing figure is an empty cell), after the `head` lines."""
    built = table() if callable(table) else table
    return "".join(f"{line}\n" for line in head).encode() + built.to_csv(index=False).encode()


def csv_download(table: pd.DataFrame | Callable[[], pd.DataFrame], name: str, label: str = "Download CSV") -> None:
    """Every table can be taken away as CSV, built only when someone clicks (a large table's CSV takes seconds),
    starting with the assumptions its numbers hold under (`preamble`).

    `table` is the table itself or a function that builds it (e.g. every row of a table the page shows only
    the first rows of)."""
    # A shallow copy is a snapshot under pandas' copy-on-write: the page may go on changing its own table.
    taken = table if callable(table) else table.copy(deep=False)
    assumptions = dict(st.session_state.get(ASSUMPTIONS, {}))
    rate = st.session_state.get(RATE)
    link = "?" + urlencode([(key, value) for key in st.query_params for value in st.query_params.get_all(key)])

    def build() -> bytes:
        built = taken() if callable(taken) else taken
        return csv_bytes(built, preamble(built, name, assumptions, rate, link if link != "?" else ""))

    # "ignore": taking a file away changes nothing on the page, so the page is not run again (seconds on a busy hub).
    st.download_button(label, build, file_name=f"{name}.csv", mime="text/csv", key=f"csv-{name}", on_click="ignore")


# The browser knows the view's full address (the server does not: it may sit behind a proxy under another name),
# so the button reads it in the page and writes it to the clipboard; where the clipboard is refused (a page not
# served over HTTPS or localhost), the link is shown selected to copy by hand.
COPY_LINK_HTML = """
<div style="font-family: sans-serif; font-size: 14px;">
<button id="copy-link" style="padding: 4px 10px; border-radius: 6px; border: 1px solid #bbb; background: white;
  cursor: pointer;">Copy link to this view</button>
<span id="copy-result" style="margin-left: 6px; color: #555;"></span>
<input id="copy-fallback" style="display: none; width: 95%; margin-top: 4px;" readonly>
</div>
<script>
const button = document.getElementById("copy-link");
const result = document.getElementById("copy-result");
const fallback = document.getElementById("copy-fallback");
button.addEventListener("click", async () => {
  const link = window.parent.location.href;
  try {
    await navigator.clipboard.writeText(link);
    result.textContent = "copied";
  } catch (error) {
    fallback.style.display = "block";
    fallback.value = link;
    fallback.select();
    result.textContent = "copy it from the box";
  }
});
</script>
"""


def copy_link_button() -> None:
    """A sidebar button that copies the address of the view shown: every control is in it (see the module)."""
    with st.sidebar:
        st.iframe(COPY_LINK_HTML, height=70)  # our own constant HTML, never a value from a link or the data
