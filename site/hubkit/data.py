"""Cached, read-only access to the results: one DataFrame of public results, the registries.

The hub never migrates or writes: an empty or brand-new database simply has no results (the CLI's
`infersweep site` brings a writable database to the current schema before it starts the hub).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import pandas as pd
import streamlit as st
from sqlalchemy import Engine, inspect

from analysis import envelope, public_results
from analysis.backtest import backtest, fitted_overheads, group_of, groups, medians
from analysis.economics import ConfigurationRead, ReadMemo
from analysis.public_results import results_frame
from db import reads
from db.session import default_database_url, make_engine, open_session
from recipes.hardware import Hardware, load_hardware_registry
from recipes.model_registry import RegistryModelSpec, load_model_registry
from recipes.prices import ModelPrice, load_price_table
from recipes.slo import SloTier, load_slo_tiers

# The results are cached until they change (`reads.results_version`: a Point recorded, retracted or put
# under or out of an embargo), checked on every page run; this is only a backstop for changes it cannot see.
CACHE_SECONDS = 3600


def database_url() -> str:
    return default_database_url()


@st.cache_resource
def engine(url: str) -> Engine:
    return make_engine(url)


def has_schema(url: str) -> bool:
    """False for a database nobody has written to yet (no tables)."""
    return inspect(engine(url)).has_table("point_result")


def results(url: str) -> pd.DataFrame:
    """Every public result (no dry runs, nothing retracted or under embargo), one row per Point repeat.

    Derived columns: `workload` (e.g. '1k/128' or 'agentic'), `configuration` (a readable label of
    what was measured), `latest` (the row belongs to the latest sweep of its configuration) and
    `input_throughput_per_gpu`. Read once per change of the results, not per viewer: a new Point shows on
    the next page run.
    """
    if not has_schema(url):
        return pd.DataFrame()
    # Kept once per state of the results and shared by every page run, not unpickled as a copy for each (a sixth of
    # the Pareto explorer's run on the public corpus): each run gets its own frame over the same columns, and with
    # pandas' copy-on-write nothing a page does to its frame reaches the one kept.
    return _results(url, version(url)).copy(deep=False)


def rows_of(url: str, frame: pd.DataFrame) -> list[Any]:
    """The rows of `frame`, a selection of `results(url)`'s rows (the controls only ever drop rows), as the tuples the
    analysis reads: taken from the ones made once per state of the results, not made again on every page run (a
    tenth of the Overview's run on the public corpus)."""
    every = _result_rows(url, version(url))
    positions = every.index.get_indexer(frame.index)
    if list(frame.columns) != every.columns or (positions < 0).any():  # not a plain selection: made here
        return list(frame.itertuples(index=False))
    return [every.rows[position] for position in positions]


def every_run_of(url: str, shown: pd.DataFrame) -> dict[str, list[Any]]:
    """`public_results.every_run_of` of `results(url)` and `shown`, from the rows kept per state of the results (and
    per as-of day): the same lists on every page run, so a chip's read made from them is remembered (`chip_reads`)."""
    day = shown.attrs.get(public_results.AS_OF)
    grouped = _result_rows(url, version(url)).by_configuration if day is None else _runs_by(url, version(url), day)
    return public_results.runs_of(grouped, shown)


@st.cache_resource(max_entries=4, show_spinner=False)
def _runs_by(url: str, version: tuple[int, ...], day: date) -> dict[str, list[Any]]:
    """Every configuration's runs finished by the end of `day`, made once per state of the results and day."""
    return public_results.runs_finished_by(_result_rows(url, version).by_configuration, day)


@dataclass(frozen=True)
class _Rows:
    columns: list[str]
    index: pd.Index  # `results`' row labels, in the order of `rows`
    rows: list[Any]
    by_configuration: dict[str, list[Any]]


@st.cache_resource(max_entries=2, show_spinner=False)
def _result_rows(url: str, version: tuple[int, ...]) -> _Rows:
    frame = results(url)
    rows = list(frame.itertuples(index=False))
    return _Rows(list(frame.columns), frame.index, rows, envelope.by_configuration(rows))


def replay_breakdowns(url: str, keys: tuple[tuple[str, str], ...]) -> dict[tuple[str, str], dict[str, Any]]:
    """The by-turn and by-context figures of the replay Points named by (sweep, point key)."""
    return _replay_breakdowns(url, version(url), keys)


@st.cache_data(ttl=CACHE_SECONDS, max_entries=16, show_spinner=False)
def _replay_breakdowns(
    url: str, version: tuple[int, ...], keys: tuple[tuple[str, str], ...]
) -> dict[tuple[str, str], dict[str, Any]]:
    with open_session(engine(url)) as session:
        return reads.replay_breakdowns(session, keys)


# The results' version as this page run read it: asked once a run (a page asks four times, one query each), so a run
# reads one state of the results throughout; forgotten when the next run starts (`new_page_run`).
_RUN_VERSION = "results-version-this-run"


def new_page_run() -> None:
    st.session_state.pop(_RUN_VERSION, None)


def version(url: str) -> tuple[int, ...]:
    """Changes whenever the public results may have (`reads.results_version`): a cache key for what pages
    work out from them. Read once per page run."""
    known = st.session_state.get(_RUN_VERSION)
    if known is not None and known[0] == url:
        return known[1]
    with open_session(engine(url)) as session:
        current = reads.results_version(session)
    st.session_state[_RUN_VERSION] = (url, current)
    return current


@st.cache_resource(ttl=CACHE_SECONDS, max_entries=4, show_spinner=False)
def _results(url: str, version: tuple[int, ...]) -> pd.DataFrame:
    """`results` at one `version` of the database (the argument only keys the cache)."""
    with open_session(engine(url)) as session:
        return results_frame(reads.result_columns(session, public=True))


# Chip reads kept per state of the results: a scorecard has about 100 chips at three tiers; past this many reads (a
# reader trying many filters), the older half is dropped.
READS_KEPT = 20_000


class _Reads(dict[Hashable, ConfigurationRead]):
    """A bounded `ReadMemo`. Viewers share it from their own threads: each step is one dict operation, atomic under
    the interpreter's lock, and a read made twice at once is simply stored twice."""

    def __setitem__(self, key: Hashable, value: ConfigurationRead) -> None:
        if len(self) >= READS_KEPT:
            for old in list(self)[: READS_KEPT // 2]:
                self.pop(old, None)
        super().__setitem__(key, value)


def chip_reads(url: str) -> ReadMemo:
    """The chip envelope reads made from the results as they are now (`economics.read_chips`' memo), for every
    viewer: a filter that leaves a chip's rows as they were gets its read back (the Overview's filter change)."""
    return _chip_reads(url, version(url))


@st.cache_resource(max_entries=2, show_spinner=False)
def _chip_reads(url: str, version: tuple[int, ...]) -> ReadMemo:
    return _Reads()


@st.cache_resource
def hardware_registry() -> dict[str, Hardware]:
    return load_hardware_registry()


@st.cache_resource
def local_hosts() -> frozenset[str]:
    """The registry's local CPU hosts (vendor 'local': the laptop demo's): not accelerators, shown apart."""
    return frozenset(key for key, spec in hardware_registry().items() if spec.vendor == "local")


@st.cache_resource
def slo_tiers() -> dict[str, SloTier]:
    return load_slo_tiers()


@st.cache_resource
def model_registry() -> dict[str, RegistryModelSpec]:
    return load_model_registry()


@st.cache_resource
def price_registry() -> dict[str, ModelPrice]:
    return load_price_table()


@dataclass(frozen=True)
class ProjectionReport:
    """The backtest over the hub's measured and imported results, and the overhead each chip fits (frames empty
    when no two chips share a curve / no curve has four points). Medians come from the unrounded errors, so they
    read as `infersweep project backtest` prints them."""

    backtest: pd.DataFrame
    overheads: pd.DataFrame
    median_abs_error: float | None = None
    same_vendor: float | None = None
    cross_vendor: float | None = None
    unchanged: float | None = None
    # The medians by group (single-server and disaggregated deployments apart), as `python -m
    # benchmarks.projection_backtest` prints them (docs/BENCHMARKS.md).
    by_group: pd.DataFrame = field(default_factory=pd.DataFrame)


def projection_report(url: str) -> ProjectionReport:
    return _projection_report(url, version(url))


@st.cache_data(ttl=CACHE_SECONDS, max_entries=2, show_spinner=False)
def _projection_report(url: str, version: tuple[int, ...]) -> ProjectionReport:
    frame = results(url)
    if frame.empty:
        return ProjectionReport(pd.DataFrame(), pd.DataFrame())
    rows, models = list(frame.itertuples(index=False)), load_model_registry()
    result = backtest(rows, hardware_registry(), models)
    table = pd.DataFrame(
        [
            {
                "curve": row.curve.label(), "source": row.source, "target": row.target, "tok/s/user": row.level,
                "projected": round(row.projected, 1), "measured": round(row.measured, 1),
                "error %": round(row.error_pct, 1),
                "unchanged %": None if row.unchanged_error_pct is None else round(row.unchanged_error_pct, 1),
                "same vendor": row.same_vendor, "images differ": row.images_differ,
                "per-arch builds": row.one_release, "image unknown": row.images_unknown,
                "disaggregated": row.disaggregated, "sparse": row.sparse,
            }
            for row in result.rows
        ]
    )  # fmt: skip
    overheads = pd.DataFrame(
        [
            {"family": fitted.family, "hardware": fitted.hardware, "overhead ms/step": round(fitted.median_ms, 1),
             "lowest": round(fitted.low_ms, 1), "highest": round(fitted.high_ms, 1), "curves": fitted.fits}
            for fitted in fitted_overheads(rows, models)
        ]
    )  # fmt: skip
    by_group = {name: medians(members) for name, members in groups(result.rows, hardware_registry()).items()}
    summary = pd.DataFrame(
        [
            {"pairs": name, "rows": group.rows, "median abs. error %": _rounded(group.projection),
             "unchanged curve %": _rounded(group.unchanged[0]), "without sparse readings %": _rounded(group.dense[0]),
             "rows not sparse": group.dense[1]}
            for name, group in by_group.items()
        ]
    )  # fmt: skip
    return ProjectionReport(
        table,
        overheads,
        result.median_abs_error(),
        result.median_abs_error(True),
        result.median_abs_error(False),
        result.median_abs_error(of="unchanged"),
        summary,
    )


def projection_group(snapshot: dict[str, Any], disaggregated: bool) -> tuple[str, pd.Series | None] | None:
    """For a projected point (its recipe snapshot, and `ResultView.disaggregated`): the backtest group of
    projections like it (`group_of`) and that group's row of `ProjectionReport.by_group` on this hub's results
    (None where the backtest holds none); None when the snapshot names chips the registry does not know."""
    projection = snapshot.get("projection") or {}
    return backtest_group(str(projection.get("from")), str(projection.get("to")), disaggregated)


def backtest_group(source: str, target: str, disaggregated: bool) -> tuple[str, pd.Series | None] | None:
    """The backtest group of projections from `source` to `target` and its row of `ProjectionReport.by_group` on this
    hub's results (None where the backtest holds none); None when the registry does not know a chip."""
    registry = hardware_registry()
    if source not in registry or target not in registry:
        return None
    name = group_of(registry[source], registry[target], disaggregated)
    by_group = projection_report(database_url()).by_group
    matching = by_group[by_group["pairs"] == name] if not by_group.empty else by_group
    return name, (None if matching.empty else matching.iloc[0])


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
