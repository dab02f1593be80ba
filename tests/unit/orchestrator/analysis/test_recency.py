"""Which sweep is newer: dated sweeps by date, undated ones by run id before them, never by their import."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

from orchestrator.analysis.recency import latest_sweep_of, natural, sweep_keys


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


def test_a_sweep_with_one_undated_point_is_undated() -> None:
    rows = [row("mixed", 20), row("mixed", 21, dated=False), row("plain", 2)]
    assert latest_sweep_of(sweep_keys(rows)) == {"f": "plain"}
