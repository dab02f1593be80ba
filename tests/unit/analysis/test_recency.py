"""Which sweep is newer: dated sweeps by date, undated ones by run id before them, never by their import."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

from analysis.recency import latest_sweep_of, latest_sweeps_of, natural, order_unknown, sweep_keys


def row(sweep: str, day: int, dated: bool = True, fingerprint: str = "f") -> SimpleNamespace:
    return SimpleNamespace(fingerprint=fingerprint, sweep=sweep, finished_at=datetime(2026, 1, day, tzinfo=UTC),
                           date_known=dated)  # fmt: skip


def test_run_ids_compare_as_numbers() -> None:
    assert natural("inferencex-run-9") < natural("inferencex-run-10")
    assert sorted(["nightly-10", "nightly-9", "nightly-1"], key=natural) == ["nightly-1", "nightly-9", "nightly-10"]


def test_undated_sweeps_follow_their_run_id_not_their_import_time() -> None:
    # run 10 was imported first (day 1), run 9 later (day 5): run 10 is still the newer.
    rows = [row("inferencex-run-10", 1, dated=False), row("inferencex-run-9", 5, dated=False)]
    assert latest_sweep_of(sweep_keys(rows)) == {"f": "inferencex-run-10"}


def test_a_dated_sweep_is_newer_than_every_undated_one_and_dated_ones_go_by_date() -> None:
    rows = [row("inferencex-run-99", 28, dated=False), row("nightly-b", 2), row("nightly-a", 3),
            row("other", 1, fingerprint="g", dated=False)]  # fmt: skip
    assert latest_sweep_of(sweep_keys(rows)) == {"f": "nightly-a", "g": "other"}


def test_a_sweep_with_one_undated_point_is_undated_and_without_a_run_id_its_order_is_unknown() -> None:
    rows = [row("mixed", 20), row("mixed", 21, dated=False), row("plain", 2)]
    keys = sweep_keys(rows)
    # 'mixed' states no date for every point and its name holds no run id: it may be older or newer than 'plain'.
    assert latest_sweeps_of(keys) == {"f": ("plain", "mixed")} and order_unknown(keys) == {"f"}
    assert latest_sweep_of(keys) == {}  # no single latest is picked
    rows = [row("inferencex-run-5", 20), row("inferencex-run-5", 21, dated=False), row("plain", 2)]
    assert latest_sweep_of(sweep_keys(rows)) == {"f": "plain"}  # a run id orders it: before every dated sweep


def test_runs_keyed_by_a_content_hash_are_never_ordered_by_it() -> None:
    """Files named neither run_<id>/agg_bmk.json nor run_<id>.json were keyed by a hash, and 'latest' sorted by the
    hash: three runs of one B200 configuration read 308.6 / 254.7 / 235.9 tok/s/GPU and the hub showed one by hash."""
    rows = [row("inferencex-run-sha-ffff00001111", 1, dated=False), row("inferencex-run-sha-0000aaaa2222", 2,
                                                                        dated=False),
            row("inferencex-run-20286929996", 3, dated=False)]  # fmt: skip
    keys = sweep_keys(rows)
    assert latest_sweeps_of(keys) == {"f": ("inferencex-run-20286929996", "inferencex-run-sha-0000aaaa2222",
                                            "inferencex-run-sha-ffff00001111")}  # fmt: skip
    assert order_unknown(keys) == {"f"}
    # A hash that happens to end in digits is still no run id.
    assert latest_sweeps_of(sweep_keys([row("inferencex-run-sha-abc123456789", 1, dated=False),
                                        row("inferencex-run-7", 1, dated=False)]))["f"][1:] == (
        "inferencex-run-sha-abc123456789",)  # fmt: skip
