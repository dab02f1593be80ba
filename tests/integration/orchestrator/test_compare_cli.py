"""`infersweep compare`: profit and margin columns next to throughput and cost, on the hub's fixture database."""

from __future__ import annotations

from pathlib import Path

import pytest

from recipes.hardware import load_hardware_registry
from recipes.prices import load_price_table
from tests.conftest import run_cli
from tests.site.hub_fixture import seed_hub


def _row(stdout: str, recipe: str) -> list[str]:
    """The cells of `recipe`'s row in the printed table."""
    line = next(line for line in stdout.splitlines() if f"│ {recipe} " in line)
    return [cell.strip() for cell in line.strip("│ ").split("│")]


def test_compare_prints_profit_and_margin(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'hub.db'}"
    seed_hub(url)
    env = {"INFERSWEEP_DATABASE_URL": url}
    shown = run_cli("compare", "--at-interactivity", "50", "--sweep", "nightly-3", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "60% utilised, 30% licence fee" in shown.stdout

    # B200 at 50 tok/s/user: 1500 output tok/s/GPU and 8 input tokens per output token (8k/1k), so 12,000 input
    # tok/s → 43.2 M/hr and 5.4 M output tokens/hr. At the table's DeepSeek-R1 prices (no cache hits measured):
    # revenue = 43.2 × input price + 5.4 × output price; profit = 0.6 × revenue − TCO − 0.3 × 0.6 × revenue.
    price = load_price_table()["deepseek-ai/DeepSeek-R1-0528"]
    tco = load_hardware_registry()["b200"].tco("owning_hyperscaler")
    revenue = 43.2 * price.input_usd_per_m + 5.4 * price.output_usd_per_m  # $32.40 with $0.50 / $2.00
    realised = 0.6 * revenue
    earned = realised - tco - 0.3 * realised  # 19.44 − 1.73 − 5.832 = $11.878
    b200 = _row(shown.stdout, "b200-vllm-8k1k")
    assert b200[:7] == ["b200-vllm-8k1k", "nightly-3", "b200", "vllm", "measured", "3", "1,500.0"]
    assert b200[8:12] == [f"{tco:.2f}", f"{tco / 5.4:.3f}", f"{earned:,.2f}", f"{earned / realised:.1%}"]

    # H200 at 50 (between (30, 900) and (60, 400)): 566.67 tok/s/GPU → 2.04 M output tokens/hr, 16.32 M input.
    h200_tco = load_hardware_registry()["h200"].tco("owning_hyperscaler")
    h200_realised = 0.6 * (16.32 * price.input_usd_per_m + 2.04 * price.output_usd_per_m)
    h200_earned = h200_realised - h200_tco - 0.3 * h200_realised
    assert _row(shown.stdout, "h200-vllm-8k1k")[10:12] == [f"{h200_earned:,.2f}", f"{h200_earned / h200_realised:.1%}"]

    # Other utilisation, fee and tier: all three reach the profit (rental TCO, 100 % utilised, no fee).
    rental = run_cli("compare", "--at-interactivity", "50", "--sweep", "nightly-3", "--tier", "rental_3yr",
                     "--utilisation", "1", "--licence-fee", "0", env=env)  # fmt: skip
    assert rental.returncode == 0, rental.stderr
    rent = load_hardware_registry()["b200"].tco("rental_3yr")
    assert _row(rental.stdout, "b200-vllm-8k1k")[10:12] == [
        f"{revenue - rent:,.2f}",
        f"{(revenue - rent) / revenue:.1%}",
    ]

    # Out of range: no numbers at all (never extrapolated), and a bad tier or utilisation is refused.
    far = run_cli("compare", "--at-interactivity", "500", "--sweep", "nightly-3", env=env)
    assert _row(far.stdout, "b200-vllm-8k1k")[6:12] == ["-", "-", f"{tco:.2f}", "-", "-", "-"]
    assert run_cli("compare", "--at-interactivity", "50", "--tier", "cheap", env=env).returncode == 2
    assert run_cli("compare", "--at-interactivity", "50", "--utilisation", "1.5", env=env).returncode == 2


def _rows(stdout: str, recipe: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip("│ ").split("│")] for line in stdout.splitlines() if f"│ {recipe} " in line
    ]


def test_compare_reads_each_sweep_on_its_own(tmp_path: Path) -> None:
    """The fixture's B200 recipe ran in three nightly sweeps: one repeat each in nightly-1 and -2 (1500 and 1510
    tok/s/GPU at 50 tok/s/user), three in nightly-3 (1480, 1500, 1520). Pooled, repeat 0 of the three nights was
    one curve; read per sweep, nightly-3's three repeats give its interval and the older nights stand alone."""
    url = f"sqlite:///{tmp_path / 'hub.db'}"
    seed_hub(url)
    env = {"INFERSWEEP_DATABASE_URL": url}
    latest = run_cli("compare", "--at-interactivity", "50", env=env)
    assert latest.returncode == 0, latest.stderr
    (b200,) = _rows(latest.stdout, "b200-vllm-8k1k")  # the latest sweep only, as on the hub
    assert b200[1] == "nightly-3" and b200[5:7] == ["3", "1,500.0"] and b200[7] != "-"
    every = run_cli("compare", "--at-interactivity", "50", "--all-sweeps", env=env)
    rows = {cells[1]: cells for cells in _rows(every.stdout, "b200-vllm-8k1k")}
    # The operator's CLI sees the embargoed sweep too (one point at 200 tok/s/user: not read at 50).
    assert set(rows) == {"nightly-1", "nightly-2", "nightly-3", "vendor-launch"} and rows["vendor-launch"][6] == "-"
    assert rows["nightly-1"][5:8] == ["1", "1,500.0", "-"]  # one repeat: a mean without an interval
    assert rows["nightly-2"][5:7] == ["1", "1,510.0"]


def test_compare_filters_by_model_and_workload(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'hub.db'}"
    seed_hub(url)
    env = {"INFERSWEEP_DATABASE_URL": url}
    fixed = run_cli("compare", "--at-interactivity", "30", "--model", "deepseek-r1", "--workload", "8k/1k", env=env)
    assert fixed.returncode == 0, fixed.stderr
    assert "h200-vllm-8k1k" in fixed.stdout and "agentic" not in fixed.stdout
    agentic = run_cli("compare", "--at-interactivity", "30", "--workload", "agentic", env=env)
    assert agentic.returncode == 0 and "b200-sglang-agentic-dram" in agentic.stdout and "8k1k" not in agentic.stdout
    wrong = run_cli("compare", "--at-interactivity", "30", "--workload", "1k/1k", env=env)
    assert wrong.returncode != 0 and "'1k/1k'" in wrong.stderr and "8k/1k" in wrong.stderr


def test_the_chosen_sweeps_full_rows_are_the_same_read_by_name_or_from_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`compare` reads the whole history narrow and the full rows of the sweeps it chose: named in the query, or, past
    `NAMED_SWEEPS` of them, every row with the others left out. Both give each configuration's latest sweep's rows,
    exactly the full read's, and the history is every kept result."""
    from analysis.recency import latest_sweeps_of, sweep_keys
    from db import reads
    from db.session import make_engine, open_session
    from orchestrator.cli import results

    url = f"sqlite:///{tmp_path / 'hub.db'}"
    seed_hub(url)
    engine = make_engine(url)

    def measured(rows: list) -> list:
        return [row for row in rows if row.origin in {"measured", "imported"}]

    with open_session(engine) as session:
        everything = measured(reads.list_results(session))
        by_name, history = results.chosen_results(session, None, measured, latest_only=True)
        monkeypatch.setattr(results, "NAMED_SWEEPS", 0)
        from_every_row, _ = results.chosen_results(session, None, measured, latest_only=True)
    latest = latest_sweeps_of(sweep_keys(everything))
    expected = [row for row in everything if row.sweep in latest[row.fingerprint]]
    assert {row.sweep for row in expected} >= {"nightly-3"} and len(expected) < len(everything)
    assert by_name == from_every_row == expected
    assert [(row.sweep, row.point_key) for row in history] == [(row.sweep, row.point_key) for row in everything]
