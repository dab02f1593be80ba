"""InferSweep hub, Coverage: every chip of the registry against every model, precision and workload with a result,
each cell measured / imported / projected / missing with its date (analysis/coverage.py).

The page a reader opens to learn what is *not* there: a chip without a single result says so in a sentence, instead
of other chips being shown in its place.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from analysis.coverage import EVIDENCE, MISSING, chips_to_cover, chips_without_results, coverage
from hubkit import controls, data, page

st.title("Coverage")
st.caption(
    "Which chip has results for which model, precision and workload, and what kind: **measured** here, "
    "**imported** (another lab's measurement, e.g. InferenceX's), **projected** (a model's estimate from another "
    "chip's measurements), or **missing**. Each cell shows the strongest kind there is, how many results and the "
    'date of the latest ("date unknown" where the source states none). Simulated results and dry runs are not '
    "counted: they say nothing about a chip."
)
frame = page.results_or_stop()
registry = data.hardware_registry()
chips = chips_to_cover(registry, data.local_hosts(), set(frame["hardware"]))
chips = controls.multiselect("Chips", chips, "chips", default=chips)  # every chip, whatever other pages filter
cells = coverage(frame.itertuples(index=False), chips)
if not cells:
    st.info("No measured, imported or projected result yet (only simulated ones, or none): nothing to cover.")
    st.stop()

CATALOGUE = Path(__file__).resolve().parents[2] / "recipes" / "catalogue"
absent = chips_without_results(cells)
if absent:

    def named(chip: str) -> str:
        name = registry[chip].name if chip in registry else chip
        recipes = len(list((CATALOGUE / chip).glob("*.yaml")))
        found = (
            f"{recipes} catalogue recipe(s) in `recipes/catalogue/{chip}/`" if recipes else "no catalogue recipe yet"
        )
        return f"**{name}** (`{chip}`: {found})"

    st.warning(
        f"No result yet for {len(absent)} chip(s): nothing measured, imported or projected for any model. Every "
        "page leaves them out, and a link asking for one shows an empty page, not other chips.\n\n"
        + "\n".join(f"- {named(chip)}" for chip in absent)
    )


def cell_text(status: str, results: int, latest: object) -> str:
    if status == MISSING:
        return MISSING
    when = f"{latest:%Y-%m-%d}" if latest is not None else "date unknown"  # type: ignore[str-format]
    return f"{status} · {results} · {when}"


cell_rows = pd.DataFrame(
    [
        {"model": cell.model, "precision": cell.precision, "workload": cell.workload, "hardware": cell.hardware,
         "status": cell.status, "results": cell.results, "latest": cell.latest,
         "cell": cell_text(cell.status, cell.results, cell.latest)}
        for cell in cells
    ]
)  # fmt: skip
grid = (
    cell_rows.pivot(index=["model", "precision", "workload"], columns="hardware", values="cell")
    .reindex(columns=chips)
    .reset_index()
)
counts = cell_rows["status"].value_counts()
st.caption(
    " · ".join(f"{status}: {int(counts.get(status, 0))} cells" for status in (*EVIDENCE, MISSING))
    + f" (of {len(cells)}: {grid.shape[0]} model · precision · workload rows × {len(chips)} chips)."
)
page.table(grid)
# The CSV holds the figures apart (status, count, ISO date), not the cells' text.
controls.csv_download(cell_rows.drop(columns="cell"), "coverage")
