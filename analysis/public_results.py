"""The public results as one table, and the view a reader meets before touching a control: one home for the hub's
pages and the read-only API (`orchestrator/public_api.py`), so a figure of the API is the figure of the page.

`results_frame` is every public result (no dry runs, nothing retracted or under embargo), one row per Point repeat,
with the columns readers filter and group on; `default_view` keeps what a page shows by default: measured and
imported results (simulated and projected ones only on request, labelled), a local CPU host's results only where
nothing else is there, and each configuration's latest sweep.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from datetime import date
from types import NoneType, SimpleNamespace
from typing import Any, TypeVar, get_args, get_type_hints
from urllib.parse import urlencode

import pandas as pd

from analysis.envelope import by_configuration
from analysis.recency import end_of_day, finished_by, latest_sweeps_of, order_unknown, sweep_recency
from db import reads
from db.local_paths import without_local_paths
from db.reads import SHOWN_BY_DEFAULT, workload_label
from recipes.validity import state_of

NOT_MEASUREMENTS = {
    "simulated": "simulated engine, not a measurement",
    "projected": "projected from another chip's measurements by a model (hollow markers, dashed lines), "
    "not a measurement: see Methodology, Projections, for how wrong such projections have been",
}

T = TypeVar("T")

# The ResultView fields that hold numbers (or None).
NUMBERS = tuple(
    name
    for name, hint in get_type_hints(reads.ResultView).items()
    if set(get_args(hint) or (hint,)) - {NoneType} <= {int, float}
)
# The fields `configuration_label` reads.
LABELLED = ("hardware", "engine", "model", "precision", "parallelism", "kv_offload", "speculative_decoding")


def configuration_label(row: object) -> str:
    """'b200 · vllm · deepseek-r1 fp8 · tp8·ep8 · offload dram 1024 GiB · mtp': what was measured, in one line (the
    speculative decoding method last, where there is one: the same deployment without it is another series)."""
    parts = [row.hardware, row.engine, f"{row.model} {row.precision}".strip(), row.parallelism]  # type: ignore[attr-defined]
    if row.kv_offload != "none":  # type: ignore[attr-defined]
        parts.append(f"offload {row.kv_offload}")  # type: ignore[attr-defined]
    speculative = row.speculative_decoding  # type: ignore[attr-defined]
    if isinstance(speculative, str) and speculative:
        parts.append(speculative)
    return " · ".join(part for part in parts if part)


def results_frame(columns: dict[str, list[Any]]) -> pd.DataFrame:
    """Every public result, one row per Point repeat, from `db.reads.result_columns(session, public=True)` (no dry
    runs, nothing retracted or under embargo).

    Derived columns: `workload` (e.g. '1k/128', 'agentic', '1k/1k · mtp': `db.reads.workload_label`), `configuration`
    (a readable label of what was measured), `latest` (the row belongs to the latest sweep of its configuration),
    `order_unknown`, `input_throughput_per_gpu` and `validity` ('valid', 'invalid', 'not checked')."""
    workloads = zip(
        columns["workload_kind"], columns["isl"], columns["osl"], columns["speculative_decoding"], strict=True
    )
    columns["workload"] = _labels(workload_label, workloads)
    # Where an imported row was read from is a path of the importing machine: every page, CSV and view shows the file's
    # name only (as a published snapshot holds it), never the machine's folders.
    columns["source"] = _labels(without_local_paths, ((source,) for source in columns["source"]))
    columns["configuration"] = _labels(
        lambda *key: configuration_label(SimpleNamespace(**dict(zip(LABELLED, key, strict=True)))),
        zip(*(columns[name] for name in LABELLED), strict=True),
    )
    frame = pd.DataFrame(columns)
    if frame.empty:
        return frame
    # A figure no row has (e.g. power where no host sampled it) would be a column of None, which pandas keeps
    # as objects: every group-by over it then falls back to Python, seconds at 50,000 rows. Numbers as floats.
    for name in NUMBERS:
        if frame[name].dtype == object:
            frame[name] = frame[name].astype(float)
    _mark_latest(frame)
    frame["input_throughput_per_gpu"] = frame["total_token_throughput_per_gpu"] - frame["output_throughput_per_gpu"]
    # Valid, invalid, or not checked (no request counted: an imported aggregate row, a projection), by the one rule
    # of recipes/validity.py: a row whose request rules had nothing to read is never called valid.
    # (Its four answers worked out once each: `state_of` itself, not a vectorised copy of it.)
    counted = ((frame["completed"] + frame["failed"]).to_numpy() > 0).tolist()
    valid = frame["valid"].to_numpy(dtype=bool).tolist()
    frame["validity"] = _labels(lambda ok, known: state_of(ok, int(known), 0), zip(valid, counted, strict=True))
    return frame


def _mark_latest(frame: pd.DataFrame) -> None:
    """Set `latest` and `order_unknown` on `frame` (in place): the latest sweep that measured each configuration
    (recipe fingerprint) among the frame's rows, what "now" means on most pages, by the one rule of
    analysis/recency.py (undated imports by run id, never by their import)."""
    ends = frame.groupby(["fingerprint", "sweep"]).agg(end=("finished_at", "max"), dated=("date_known", "all"))
    keys = {pair: sweep_recency(pair[1], end, bool(dated)) for pair, end, dated in ends.itertuples(name=None)}
    # Where a configuration has runs of unknown order, every one of them counts as latest (none is picked by name).
    latest = pd.MultiIndex.from_tuples(
        [(fingerprint, sweep) for fingerprint, sweeps in latest_sweeps_of(keys).items() for sweep in sweeps]
    )
    frame["latest"] = pd.MultiIndex.from_arrays([frame["fingerprint"], frame["sweep"]]).isin(latest)
    unordered = order_unknown(keys)
    frame["order_unknown"] = frame["fingerprint"].isin(unordered) if unordered else False


AS_OF = "as_of"  # the key of `DataFrame.attrs` that holds an as-of view's day


def as_of(frame: pd.DataFrame, day: date) -> pd.DataFrame:
    """The results as they stood at the end of `day` (UTC): the rows whose source states a finish by then, each
    configuration's latest sweep among those (`latest` worked out again). A row whose source states no date is left
    out: nothing says it existed then. The day travels with the frame (`attrs[AS_OF]`), so `every_run_of` counts
    only the runs finished by then behind a figure."""
    end = end_of_day(day)
    finished = pd.to_datetime(frame["finished_at"], utc=True)
    kept = frame[frame["date_known"].to_numpy(dtype=bool) & (finished < end).to_numpy()].copy()
    if not kept.empty:
        _mark_latest(kept)
    kept.attrs[AS_OF] = day
    return kept


def _labels(label: Callable[..., T], keys: Iterable[tuple[Any, ...]]) -> list[T]:
    """`label(*key)` for each key, worked out once per distinct key (a configuration has many rows)."""
    known: dict[tuple[Any, ...], T] = {}
    return [known[key] if key in known else known.setdefault(key, label(*key)) for key in keys]


def default_origins(available: Iterable[str]) -> list[str]:
    """The origins shown before the viewer picks: measured and imported, else (where there are none) every one."""
    available = sorted(set(available))
    return [origin for origin in available if origin in SHOWN_BY_DEFAULT] or available


def local_host_rows(frame: pd.DataFrame, local_hosts: Collection[str]) -> pd.Series:
    """The rows hidden by default: a local CPU host's measurements (the laptop demo's tiny model, hardware of vendor
    'local') beside accelerators' results; none where a local host's results are all there is (`make demo`).
    Simulated results (always on a local host) follow the origin choice alone."""
    on_local_host = frame["hardware"].isin(list(local_hosts))
    local = on_local_host & frame["origin"].isin(SHOWN_BY_DEFAULT)
    if not local.any() or on_local_host.all():
        return pd.Series(False, index=frame.index)
    return local


def default_view(frame: pd.DataFrame, local_hosts: Collection[str]) -> pd.DataFrame:
    """What every page shows before the viewer touches a control (origins, local hosts, latest sweep)."""
    if frame.empty:
        return frame
    frame = frame[frame["origin"].isin(default_origins(frame["origin"]))]
    frame = frame[~local_host_rows(frame, local_hosts)]
    return frame[frame["latest"]]


def every_run_of(results: pd.DataFrame | dict[str, list[Any]], shown: pd.DataFrame) -> dict[str, list[Any]]:
    """Every run's rows of the configurations `shown` holds, whichever sweeps it keeps (`results` before any filter,
    or its rows `envelope.by_configuration`, which a caller reading often keeps), by configuration: the runs and
    their spread behind each chip's figure (the Overview, TCO and the API's envelopes); in an as-of view (`as_of`)
    only those finished by the end of its day."""
    grouped = by_configuration(results.itertuples(index=False)) if isinstance(results, pd.DataFrame) else results
    day = shown.attrs.get(AS_OF)
    return runs_of(grouped if day is None else runs_finished_by(grouped, day), shown)


def runs_of(grouped: dict[str, list[Any]], shown: pd.DataFrame) -> dict[str, list[Any]]:
    """`grouped`'s lists (rows by configuration) of the configurations `shown` holds: the lists themselves, not
    copies, so a chip's read is remembered by which lists it was made from (`economics.read_chips`)."""
    fingerprints = (str(fingerprint) for fingerprint in shown["fingerprint"].unique())
    return {fingerprint: grouped[fingerprint] for fingerprint in fingerprints if fingerprint in grouped}


def runs_finished_by(grouped: dict[str, list[Any]], day: date) -> dict[str, list[Any]]:
    """`grouped` (rows by configuration) as it stood at the end of `day`: `recency.finished_by` of each list."""
    return {fingerprint: finished_by(rows, day) for fingerprint, rows in grouped.items()}


def run_path(sweep: str, point_key: str) -> str:
    """The hub's Run detail page of one point (site/views/run_detail.py reads `sweep` and `point`)."""
    return "/run?" + urlencode({"sweep": sweep, "point": point_key})
