"""The validity checks (recipes/validity.py): one registry every origin applies, one rounding of the minimum, and
each origin's list of checks applied and not checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.importers.inferencex import read_row_file, to_point_metrics
from orchestrator.importers.peer_formats import PEER_FORMATS
from recipes.schema import ValidityThresholds
from recipes.validity import (
    CHECKS,
    ORIGIN_CHECKS,
    Evidence,
    StatedFigures,
    checks_markdown,
    impossible_figures,
    judge,
    minimum_requests,
)
from runners.loadgen.metrics import compute_point_metrics
from tests.unit.runners.loadgen.test_metrics import make_record

ROOT = Path(__file__).resolve().parents[3]
# 1.5 requests per unit of concurrency at concurrency 3: 4.5 requests, where a floor (int()) and a ceiling differ.
FRACTIONAL = ValidityThresholds(min_requests_floor=1, min_requests_per_concurrency=1.5)


def overlapping_records(count: int) -> list:
    """Three requests in flight at once from the start, then the rest one after another as each ends."""
    records = []
    for index in range(count):
        sent = 0.01 * index if index < 3 else 1.0 + 0.1 * (index - 3)
        end = sent + 1.0 + 0.1 * index
        chunks = [sent + 0.1 + 0.05 * k for k in range(4)]
        records.append(make_record(index, sent, end, chunks=chunks))
    return records


def vllm_bench_file(tmp_path: Path, completed: int, failed: int, concurrency: int) -> Path:
    """A `vllm bench serve` result of these counts (its latency figures are the shipped sample's)."""
    document = json.loads((ROOT / "tests" / "data" / "vllm_bench_result.json").read_text())
    document.update(completed=completed, failed=failed, max_concurrency=concurrency, num_prompts=completed + failed)
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(("count", "valid"), [(4, False), (5, True)])
def test_the_same_requests_get_the_same_verdict_measured_and_imported(tmp_path: Path, count: int, valid: bool) -> None:
    """4 requests at concurrency 3 need ⌈4.5⌉ = 5: our measurement and vLLM's file of them both say so (the
    importer's int() floor once made the file valid at 4)."""
    ours = compute_point_metrics(overlapping_records(count), concurrency=3, accelerators=1, thresholds=FRACTIONAL)
    [level] = PEER_FORMATS["vllm-bench"].read(vllm_bench_file(tmp_path, count, 0, 3), 1, FRACTIONAL).levels
    theirs = level.metrics.validity
    assert ours.validity.valid is theirs.valid is valid, (ours.validity.reasons, theirs.reasons)
    assert ours.validity.reasons == theirs.reasons == ([] if valid else ["only 4 measured requests; at least 5 needed"])
    assert set(theirs.checked) <= set(ours.validity.checked)  # the file says less, never something else


def test_one_rounding_of_the_minimum() -> None:
    assert minimum_requests(3, FRACTIONAL) == 5
    assert minimum_requests(0, ValidityThresholds()) == 10  # an open loop: the floor
    assert minimum_requests(64, ValidityThresholds()) == 128


def test_a_measured_point_applies_every_request_check() -> None:
    metrics = compute_point_metrics(overlapping_records(12), concurrency=3, accelerators=1,
                                    thresholds=ValidityThresholds(min_requests_floor=1))  # fmt: skip
    assert metrics.validity.valid, metrics.validity.reasons
    assert metrics.validity.checked == ["min-requests", "error-rate", "token-agreement", "usage-consistent", "window",
                                        "output-length", "finished", "figures-in-range"]  # fmt: skip
    # The accuracy gate is judged by the runner when a recipe has one; the replay's checks are not a fixed load's;
    # the figures' possibility where results are stored.
    assert metrics.validity.not_checked == ["window-lifetimes", "schedule-lag", "client-saturated", "accuracy",
                                            "figures-possible"]  # fmt: skip
    stored = metrics.with_figures_judged()
    assert stored.validity.valid and "figures-possible" in stored.validity.checked
    assert stored.with_figures_judged() == stored  # judged once


def test_a_replayed_point_adds_its_window_and_schedule_checks() -> None:
    evidence = Evidence(measured_requests=200, failed_requests=0, load=64, window_s=600.0, e2el_p50_ms=4000.0,
                        reached_target=True, schedule_lag_p99_ms=20.0, max_schedule_lag_p99_ms=1000.0)  # fmt: skip
    verdict = judge("replayed", evidence, ValidityThresholds())
    assert verdict.valid and {"window-lifetimes", "schedule-lag"} <= set(verdict.checked)
    late = judge("replayed", Evidence(**{**evidence.__dict__, "schedule_lag_p99_ms": 1500.0}), ValidityThresholds())
    assert late.reasons == ("schedule lag p99 1500 ms above 1000 ms (client or server fell behind)",)
    assert "client-saturated" in verdict.not_checked  # no CPU share stated: not checked, never passed silently


def test_a_late_replay_says_whether_the_client_or_the_engine_set_the_pace() -> None:
    evidence = Evidence(measured_requests=200, failed_requests=0, load=64, window_s=600.0, e2el_p50_ms=4000.0,
                        reached_target=True, schedule_lag_p99_ms=1500.0, max_schedule_lag_p99_ms=1000.0,
                        client_cpu_share=0.5)  # fmt: skip

    def reasons(**change: float | None) -> tuple[str, ...]:
        return judge("replayed", Evidence(**{**evidence.__dict__, **change}), ValidityThresholds()).reasons

    assert reasons(dispatch_lag_p99_ms=1400.0, client_cpu_share=None) == (
        "schedule lag p99 1500 ms above 1000 ms (client saturated: it began writing late, dispatch lag p99 1400 ms)",
    )
    assert reasons(dispatch_lag_p99_ms=1400.0) == (
        "schedule lag p99 1500 ms above 1000 ms (the client began writing late, dispatch lag p99 1400 ms, using only "
        "50% of a core: starved of CPU by what shares its cores)",
    )
    assert reasons(dispatch_lag_p99_ms=30.0) == (
        "schedule lag p99 1500 ms above 1000 ms (the engine took the requests slowly: dispatch lag p99 only 30 ms)",
    )
    # A client that kept time but had no CPU left is not trusted either.
    assert reasons(schedule_lag_p99_ms=20.0, client_cpu_share=0.97) == (
        "client saturated: its process used 97% of a core over the window (at most 95%); split its lanes among more "
        "processes (workload.processes) or give it a machine of its own",
    )
    assert judge("replayed", Evidence(**{**evidence.__dict__, "schedule_lag_p99_ms": 20.0}), ValidityThresholds()).valid


def test_a_peer_file_checks_what_its_aggregates_say(tmp_path: Path) -> None:
    [level] = PEER_FORMATS["vllm-bench"].read(vllm_bench_file(tmp_path, 40, 0, 4), 1, ValidityThresholds()).levels
    validity = level.metrics.validity
    assert validity.checked == ["min-requests", "error-rate", "figures-in-range"]
    # vLLM's file counts no tokens of its own and says nothing of its window or streams.
    assert "token-agreement" in validity.not_checked and "window" in validity.not_checked


def test_an_inferencex_row_and_a_projection_check_only_their_figures() -> None:
    for origin in ("inferencex-row", "projected"):
        verdict = judge(origin, Evidence(), ValidityThresholds())  # type: ignore[arg-type]
        assert verdict.valid and verdict.checked == ("figures-in-range",)
        assert set(verdict.not_checked) == set(CHECKS) - {"figures-in-range"}
    rows = read_row_file(ROOT / "tests" / "data" / "inferencex" / "run_20248091324" / "agg_bmk.json").rows
    assert rows and all(to_point_metrics(row.row).validity.checked == ["figures-in-range"] for row in rows)
    assert all(to_point_metrics(row.row).with_figures_judged().validity.checked
               == ["figures-in-range", "figures-possible"] for row in rows)  # fmt: skip


def _stated(completed: int = 0, failed: int = 0, output: float = 500.0, ttft: tuple[float | None, ...] = (80.0, None,
            400.0, None)) -> StatedFigures:  # fmt: skip
    parts = ("p50", "p90", "p99", "p999")
    return StatedFigures(completed, failed, (("output_throughput_per_gpu", output),),
                         (("ttft_ms", tuple(zip(parts, ttft, strict=True))),))  # fmt: skip


def test_impossible_figures_are_named_by_field() -> None:
    assert impossible_figures(_stated()) == []
    assert impossible_figures(_stated(output=0.0)) == [
        "output_throughput_per_gpu 0 below 0.01 tokens/s per accelerator, slower than any chip"
    ]
    assert impossible_figures(_stated(output=1e-07))[0].startswith("output_throughput_per_gpu 1e-07 below 0.01")
    # Every request failed: zero is what was measured (the error-rate rule judges it).
    assert impossible_figures(_stated(completed=0, failed=40, output=0.0)) == []
    assert impossible_figures(_stated(ttft=(80.0, None, 0.0, None))) == [
        "ttft_ms.p99 0 ms beside ttft_ms.p50 80 ms: a zero percentile where the others are positive",
        "ttft_ms.p50 80 ms above ttft_ms.p99 0 ms: percentiles out of order",
    ]
    assert impossible_figures(_stated(ttft=(500.0, 90.0, 400.0, None))) == [
        "ttft_ms.p50 500 ms above ttft_ms.p90 90 ms: percentiles out of order",
    ]
    assert impossible_figures(_stated(ttft=(0.0, None, 0.0, None))) == []  # nothing positive to contradict
    verdict = judge("inferencex-row", Evidence(stated=_stated(output=0.0)), ValidityThresholds())
    assert not verdict.valid and verdict.reasons[0].startswith("impossible figures (figures-possible): ")


def test_every_origin_names_only_registered_checks_and_the_docs_list_them() -> None:
    for origin, ids in ORIGIN_CHECKS.items():
        assert set(ids) <= set(CHECKS), origin
    table = checks_markdown()
    assert all(f"| `{check_id}` |" in table for check_id in CHECKS)
    methodology = (ROOT / "docs" / "METHODOLOGY.md").read_text()
    assert table in methodology, "run: python -m recipes.rules --write docs/METHODOLOGY.md"
