"""Coverage cells: the strongest evidence per chip and row, its count and latest date; a chip with nothing is named."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

from analysis.coverage import MISSING, chips_without_results, coverage

NOV_1, NOV_9 = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 9, tzinfo=UTC)


def result(hardware: str, origin: str, at: datetime = NOV_1, dated: bool = True, workload: str = "1k/1k") -> object:
    return SimpleNamespace(hardware=hardware, model="deepseek-r1", precision="fp4", workload=workload, origin=origin,
                           finished_at=at, date_known=dated)  # fmt: skip


def test_each_cell_holds_the_strongest_evidence_with_its_count_and_latest_date() -> None:
    rows = [
        result("b200", "imported", NOV_1), result("b200", "measured", NOV_1), result("b200", "measured", NOV_9),
        result("mi355x", "imported", NOV_9, dated=False), result("gb300-nvl72", "projected"),
        result("h200", "simulated"),  # says nothing about a chip
        result("b200", "measured", workload="8k/1k"),
    ]  # fmt: skip
    cells = {(cell.workload, cell.hardware): cell for cell in coverage(rows, ["b200", "mi355x", "gb300-nvl72",
                                                                              "h200", "tpu-v7"])}  # fmt: skip
    b200 = cells[("1k/1k", "b200")]
    assert (b200.status, b200.results, b200.latest) == ("measured", 2, NOV_9)  # the imported row is weaker
    mi355x = cells[("1k/1k", "mi355x")]
    assert (mi355x.status, mi355x.results, mi355x.latest) == ("imported", 1, None)  # its source states no date
    assert cells[("1k/1k", "gb300-nvl72")].status == "projected"
    assert cells[("1k/1k", "h200")].status == MISSING and cells[("8k/1k", "mi355x")].status == MISSING
    assert len(cells) == 2 * 5  # two rows (workloads) × five chips


def test_a_chip_without_any_result_is_named() -> None:
    cells = coverage([result("b200", "measured"), result("h200", "simulated")], ["b200", "h200", "tpu-v7"])
    assert chips_without_results(cells) == ["h200", "tpu-v7"]
    assert coverage([result("h200", "simulated")], ["h200"]) == []  # no row with evidence: nothing to cover
