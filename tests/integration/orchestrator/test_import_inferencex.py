"""InferenceX rows and vLLM results imported next to native results, read on the same frontier."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from sqlmodel import select

from analysis.compare import compare_at_interactivity
from db import reads
from db.models import PointResultRow, SweepRow
from db.session import make_engine, migrate, open_session
from orchestrator.importers.inferencex import read_rows
from recipes.errors import RecipeError
from recipes.hardware import load_hardware_registry
from tests.conftest import ROOT, run_cli

# b200 at three concurrencies: TPOT 10/20/40 ms -> 100/50/25 tok/s/user.
ROWS = [
    {"hw": "b200", "conc": conc, "model": "deepseek-ai/DeepSeek-R1-0528", "framework": "sglang", "precision": "fp8",
     "isl": 1024, "osl": 1024, "tp": 8, "ep": 8, "dp_attention": False, "disagg": False,
     "tput_per_gpu": tput * 2, "output_tput_per_gpu": tput, "median_ttft": 0.2, "p99_ttft": 0.5,
     "median_tpot": tpot, "median_e2el": 10.0, "p99_intvty": 1000 / (tpot * 1000 * 1.5), "extra_field": "ignored"}
    for conc, tpot, tput in [(4, 0.010, 500.0), (16, 0.020, 1500.0), (64, 0.040, 3000.0)]
]  # fmt: skip


def test_imported_rows_share_the_frontier_with_native_results(write_recipe, tmp_path: Path) -> None:
    rows_file = tmp_path / "inferencex.json"
    rows_file.write_text(json.dumps(ROWS))
    recipe = write_recipe()
    assert run_cli("import", "inferencex", str(rows_file), "--sweep", "mixed").returncode == 0
    vllm = run_cli("import", "vllm-bench", str(ROOT / "tests/data/vllm_bench_result.json"), "--recipe", str(recipe),
                   "--isl", "64", "--osl", "16", "--sweep", "mixed")  # fmt: skip
    assert vllm.returncode == 0, vllm.stderr
    native = run_cli("run", str(recipe), "--sweep", "mixed")
    assert native.returncode == 0, native.stderr

    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        views = reads.list_results(session, sweep="mixed")
    assert {view.origin for view in views} == {"imported", "simulated"}
    assert sum(view.source is not None and "InferenceX" in view.source for view in views) == 3

    table = {row.recipe: row for row in compare_at_interactivity(views, 50.0, load_hardware_registry())}
    inferencex = table["inferencex-deepseek-r1-fp8-b200-sglang-tp8-ep8"]
    assert inferencex.throughput is not None and inferencex.throughput.mean == pytest.approx(1500.0)
    # b200 owning TCO $1.73/GPU-h over 1500 tok/s/GPU: 1.73 / (1500 * 3600 / 1e6) = $0.3204 per M tokens.
    assert inferencex.usd_per_million_output == pytest.approx(1.73 / 5.4)
    assert "sim-test" in table  # native and imported vLLM points of the simulated recipe are compared too
    out_of_range = compare_at_interactivity(views, 500.0, load_hardware_registry())
    assert all(row.throughput is None for row in out_of_range if row.recipe.startswith("inferencex"))

    shown = run_cli("compare", "--at-interactivity", "50", "--sweep", "mixed")
    assert shown.returncode == 0 and "0.320" in shown.stdout and "inferencex-deepseek-r1-fp8-b200" in shown.stdout
    # Simulated points are left out unless asked for: sim-test appears only through its imported vLLM row.
    assert "simulated │ imported" in shown.stdout and "simulated │ simulated" not in shown.stdout


def test_bad_rows_name_the_row_and_field(tmp_path: Path) -> None:
    bad = [dict(ROWS[0], hw="tpu-v9"), dict(ROWS[1], median_tpot="fast")]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(RecipeError) as caught:
        read_rows(path)
    message = str(caught.value)
    assert "field '[1].median_tpot': got 'fast'" in message and "field '[0].hw': got 'tpu-v9'" in message


SAMPLE = ROOT / "tests" / "data" / "inferencex"


def sample_views() -> dict[str, list]:
    """The shared sample imported once per test session (idempotent), by sweep."""
    result = run_cli("import", "inferencex", *map(str, sorted(SAMPLE.glob("run_*/agg_bmk.json"))))
    assert result.returncode == 0, result.stdout + result.stderr
    with open_session(make_engine()) as session:
        views = [view for view in reads.list_results(session) if view.sweep.startswith("inferencex-run-")]
    by_sweep: dict[str, list] = {}
    for view in views:
        by_sweep.setdefault(view.sweep, []).append(view)
    return by_sweep


def raw_rows(run: str) -> list[dict]:
    return json.loads((SAMPLE / f"run_{run}" / "agg_bmk.json").read_text())


def test_every_real_row_is_imported_into_its_runs_sweep_with_hardware_aliases_mapped() -> None:
    by_sweep = sample_views()
    for folder in SAMPLE.glob("run_*"):
        rows = json.loads((folder / "agg_bmk.json").read_text())
        assert len(by_sweep.get(f"inferencex-{folder.name.replace('_', '-')}", [])) == len(rows), folder.name
    hardware = {view.hardware for views in by_sweep.values() for view in views}
    assert hardware == {"b200", "h100", "h200", "gb200-nvl72", "mi355x"}  # b200-trt, mi355x-amd_0, gb200 mapped
    # The same MI355X configurations measured in a later run: a second sweep of the same recipes, a trend.
    earlier = {view.recipe for view in by_sweep["inferencex-run-20248091324"]}
    later = {view.recipe for view in by_sweep["inferencex-run-20384527243"]}
    assert earlier == later and len(earlier) >= 1


def test_disaggregated_rows_keep_their_topology_and_per_gpu_figures_in_our_definition() -> None:
    by_sweep = sample_views()
    for run in ("20806551498", "20786863188"):
        rows = [row for row in raw_rows(run) if row["disagg"]]
        assert rows
        with open_session(make_engine()) as session:
            stored = {(v.recipe, v.concurrency): v for v in reads.list_results(session, sweep=f"inferencex-run-{run}")}
        for row in rows:
            prefill, decode = row["num_prefill_gpu"], row["num_decode_gpu"]
            (view,) = [
                v for (recipe, conc), v in stored.items()
                if conc == row["conc"] and f"-{prefill}gpu-" in recipe and recipe.endswith(
                    (f"-{decode}gpu", f"-{decode}gpu-{row['spec_decoding']}"))
                and f"p{row['prefill_num_workers']}x-tp{row['prefill_tp']}-ep{row['prefill_ep']}-" in recipe
                and f"d{row['decode_num_workers']}x-tp{row['decode_tp']}-ep{row['decode_ep']}-" in recipe
            ]  # fmt: skip
            assert view.accelerators == prefill + decode
            assert view.total_token_throughput_per_gpu == pytest.approx(row["tput_per_gpu"])
            assert view.output_throughput_per_gpu == pytest.approx(
                row["output_tput_per_gpu"] * decode / (prefill + decode)
            )
            with open_session(make_engine()) as session:
                stored_row = session.exec(
                    select(PointResultRow).join(SweepRow, SweepRow.id == PointResultRow.sweep_id)
                    .where(SweepRow.name == f"inferencex-run-{run}", PointResultRow.point_key == view.point_key)
                ).one()  # fmt: skip
            peer = stored_row.metrics["peer_figures"]
            assert peer["inferencex_output_tput_per_decode_gpu"] == pytest.approx(row["output_tput_per_gpu"])
            assert peer["inferencex_input_tput_per_prefill_gpu"] == pytest.approx(row["input_tput_per_gpu"])
            # Their identity: total over all GPUs = output per decode GPU x D + input per prefill GPU x P.
            total = row["tput_per_gpu"] * (prefill + decode)
            assert total == pytest.approx(row["output_tput_per_gpu"] * decode + row["input_tput_per_gpu"] * prefill)
    assert by_sweep


def test_deepseek_r1_of_every_label_style_is_one_model() -> None:
    sample_views()
    labels = {row["model"] for folder in SAMPLE.glob("run_*") for row in json.loads((folder / "agg_bmk.json").read_text())
              if row.get("infmax_model_prefix") == "dsr1"}  # fmt: skip
    assert {"deepseek-ai/DeepSeek-R1-0528", "amd/DeepSeek-R1-0528-MXFP4-Preview", "/models/DeepSeek-R1"} <= labels
    with open_session(make_engine()) as session:
        recipes = {view.recipe for view in reads.list_results(session) if view.sweep.startswith("inferencex-run-")}
    assert all(not name.startswith("inferencex-deepseek-r1-0528") for name in recipes)
    assert {name.split("-fp")[0] for name in recipes} == {"inferencex-deepseek-r1", "inferencex-gpt-oss-120b"}


def test_importing_a_file_twice_changes_nothing_and_says_so() -> None:
    sample_views()
    again = run_cli("import", "inferencex", str(SAMPLE / "run_20316427102" / "agg_bmk.json"))
    assert again.returncode == 0
    assert "11 row(s) read, 0 imported, 11 already present, 0 refused" in again.stdout


def test_a_bad_row_is_refused_alone_and_the_rest_imported(tmp_path: Path) -> None:
    rows = raw_rows("20316427102")
    rows[3] = dict(rows[3], hw="tpu-v9")
    rows[5] = dict(rows[5], median_tpot="fast")
    # As four rows of the dashboard's capture of 2026-05 (InferenceX-app cac6246) lack it. The refusal quoted the
    # whole row (pydantic's input for a missing field), lines of 1,141-1,147 characters burying the reason.
    rows[7] = {name: value for name, value in rows[7].items() if name != "output_tput_per_gpu"}
    path = tmp_path / "run_1" / "agg_bmk.json"
    path.parent.mkdir()
    path.write_text(json.dumps(rows))
    result = run_cli("import", "inferencex", str(path))
    assert result.returncode == 0, result.stderr
    assert "11 row(s) read, 8 imported, 0 already present, 3 refused" in result.stdout
    assert "row 3 refused: field 'hw': got 'tpu-v9'; expected a hardware key or alias" in result.stderr
    assert "row 5 refused: field 'median_tpot': got 'fast'" in result.stderr
    (missing,) = [line for line in result.stderr.splitlines() if "row 7 refused" in line]
    assert missing.endswith("row 7 refused: field 'output_tput_per_gpu': missing (required): Output tokens/s per "
                            "GPU (per decode GPU when disagg).")  # fmt: skip


def test_impossible_figures_are_stored_invalid_naming_the_rule_and_repair_finds_older_ones(tmp_path: Path) -> None:
    rows = raw_rows("20316427102")
    rows[0] = dict(rows[0], tput_per_gpu=0)
    rows[1] = dict(rows[1], output_tput_per_gpu=1e-07)
    rows[2] = dict(rows[2], p99_ttft=0)
    path = tmp_path / "run_1" / "agg_bmk.json"
    path.parent.mkdir()
    path.write_text(json.dumps(rows))
    environment = {"INFERSWEEP_DATABASE_URL": f"sqlite:///{tmp_path / 'results.db'}"}
    assert run_cli("import", "inferencex", str(path), env=environment).returncode == 0
    engine = make_engine(environment["INFERSWEEP_DATABASE_URL"])
    with open_session(engine) as session:
        stored = {int(re.search(r"row (\d+):", row.source or "")[1]): row  # type: ignore[index]
                  for row in session.exec(select(PointResultRow)).all()}  # fmt: skip
        assert len(stored) == len(rows)
        expected = {
            0: "total_token_throughput_per_gpu 0 below 0.01 tokens/s per accelerator",
            1: "output_throughput_per_gpu 1e-07 below 0.01 tokens/s per accelerator",
            2: "ttft_ms.p99 0 ms beside ttft_ms.p50",
        }
        for index, row in stored.items():
            if index in expected:
                assert not row.valid and "(figures-possible)" in row.validity_reasons[0], row.validity_reasons
                assert expected[index] in row.validity_reasons[0]
            else:
                assert row.valid and "figures-possible" in row.metrics["validity"]["checked"]
        # A row stored before the rule existed: valid, the rule not applied. Repair finds it by the same rule.
        legacy = stored[0]
        legacy.valid, legacy.validity_reasons = True, []
        legacy.metrics = dict(legacy.metrics, validity={"valid": True, "reasons": [], "checked": ["figures-in-range"],
                                                        "not_checked": []})  # fmt: skip
        session.add(legacy)
        session.commit()
    engine.dispose()
    listed = run_cli("repair", "--dry-run", env=environment)
    assert listed.returncode == 0, listed.stderr
    assert "impossible figures (figures-possible): total_token_throughput_per_gpu 0" in listed.stdout
    assert "1 result(s) would be retracted and cleaned" in listed.stdout
    assert run_cli("repair", env=environment).returncode == 0
    assert (
        "every stored figure is finite, in range and possible" in run_cli("repair", "--dry-run", env=environment).stdout
    )


def test_a_file_named_twice_is_read_once_and_a_file_of_refused_rows_opens_no_sweep(tmp_path: Path) -> None:
    rows = raw_rows("20316427102")[:3]
    path = tmp_path / "run_3" / "agg_bmk.json"
    path.parent.mkdir()
    path.write_text(json.dumps(rows))
    environment = {"INFERSWEEP_DATABASE_URL": f"sqlite:///{tmp_path / 'results.db'}"}
    twice = run_cli("import", "inferencex", str(path), str(tmp_path / "run_3" / ".." / "run_3" / "agg_bmk.json"),
                    env=environment)  # fmt: skip
    assert "InferenceX import: 3 row(s) read, 3 imported" in twice.stdout, twice.stdout + twice.stderr
    refused = tmp_path / "run_4" / "agg_bmk.json"
    refused.parent.mkdir()
    refused.write_text(json.dumps([dict(row, tput_per_gpu=-1.0) for row in rows]))
    result = run_cli("import", "inferencex", str(refused), env=environment)
    assert "3 row(s) read, 0 imported, 0 already present, 3 refused" in result.stdout, result.stdout + result.stderr
    with open_session(make_engine(environment["INFERSWEEP_DATABASE_URL"])) as session:
        assert [sweep.name for sweep in session.exec(select(SweepRow)).all()] == ["inferencex-run-3"]


def test_retract_and_export(tmp_path: Path) -> None:
    rows_file = tmp_path / "rows.json"
    rows_file.write_text(json.dumps(ROWS))
    assert run_cli("import", "inferencex", str(rows_file), "--sweep", "to-retract").returncode == 0
    csv_path = tmp_path / "out.csv"
    exported = run_cli("export", str(csv_path), "--sweep", "to-retract")
    assert exported.returncode == 0 and "3 point(s) written" in exported.stdout
    assert len(csv_path.read_text().splitlines()) == 4
    retracted = run_cli("retract", "--sweep", "to-retract", "--reason", "wrong image")
    assert retracted.returncode == 0 and "3 point(s)" in retracted.stdout
    assert run_cli("retract", "--sweep", "to-retract", "--reason", "again").returncode == 1
    parquet_path = tmp_path / "out.parquet"
    assert "0 point(s) written" in run_cli("export", str(parquet_path), "--sweep", "to-retract").stdout
    assert run_cli("export", str(tmp_path / "out.xlsx")).returncode == 2


def test_embargo_hides_from_public_readers_until_the_date(tmp_path: Path) -> None:
    from orchestrator.publish import write_snapshot

    rows_file = tmp_path / "rows.json"
    rows_file.write_text(json.dumps(ROWS))
    assert run_cli("import", "inferencex", str(rows_file), "--sweep", "launch").returncode == 0
    assert run_cli("embargo", "--sweep", "launch", "--until", "not-a-date").returncode == 2
    assert run_cli("embargo", "--sweep", "launch", "--until", "2999-01-01").returncode == 0
    engine = make_engine()
    with open_session(engine) as session:
        assert reads.list_results(session, sweep="launch", public=True) == []
        assert len(reads.list_results(session, sweep="launch")) == 3  # maintainers still see them
    snapshot = tmp_path / "public.db"
    write_snapshot(engine, snapshot)
    with open_session(make_engine(f"sqlite:///{snapshot}")) as session:
        assert reads.list_results(session, sweep="launch") == []
    assert run_cli("embargo", "--sweep", "launch", "--until", "2000-01-01").returncode == 0  # lifted: date passed
    with open_session(engine) as session:
        assert len(reads.list_results(session, sweep="launch", public=True)) == 3


def test_a_snapshot_holds_no_path_of_the_publishing_machine(tmp_path: Path) -> None:
    from orchestrator.publish import write_snapshot

    folder = tmp_path / "imports-of-maintainer-alice" / "run_24081234567"
    folder.mkdir(parents=True)
    rows_file = folder / "results_bmk.json"
    rows_file.write_text(json.dumps(ROWS))
    assert run_cli("import", "inferencex", str(rows_file), "--sweep", "pathless").returncode == 0
    engine = make_engine()
    with open_session(engine) as session:  # the maintainer's own database keeps where the file was
        assert all(str(rows_file) in row.source for row in reads.list_results(session, sweep="pathless"))
    snapshot = tmp_path / "public.db"
    write_snapshot(engine, snapshot)
    assert not any(b"imports-of-maintainer-alice" in part.read_bytes() for part in tmp_path.glob("public.db*"))
    with open_session(make_engine(f"sqlite:///{snapshot}")) as session:
        sources = [row.source for row in reads.list_results(session, sweep="pathless")]
    assert len(sources) == 3 and all("InferenceX run 24081234567" in source and source.endswith(": results_bmk.json")
                                     for source in sources), sources  # fmt: skip


def _rows_scaled(factor: float) -> list[dict]:
    return [dict(row, tput_per_gpu=row["tput_per_gpu"] * factor, output_tput_per_gpu=row["output_tput_per_gpu"] * factor)
            for row in ROWS]  # fmt: skip


def test_nightly_regressions_are_flagged_and_noise_is_not(tmp_path: Path) -> None:
    # Four nightly sweeps of one configuration (throughput at 50 tok/s/user ≈ 1500 ± 1 %), then a fifth. Each is
    # dated (rows carry no date; a sweep name is no order: without dates their order would be unknown).
    for night, factor in enumerate([1.0, 1.01, 0.99, 1.005]):
        path = tmp_path / f"night{night}.json"
        path.write_text(json.dumps(_rows_scaled(factor)))
        assert run_cli("import", "inferencex", str(path), "--sweep", f"nightly-{night}",
                       "--run-date", f"2026-01-0{night + 1}").returncode == 0  # fmt: skip
    steady = tmp_path / "steady.json"
    steady.write_text(json.dumps(_rows_scaled(0.995)))
    assert (
        run_cli("import", "inferencex", str(steady), "--sweep", "nightly-4", "--run-date", "2026-01-05").returncode == 0
    )
    quiet = run_cli("regressions", "--at-interactivity", "50")
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert "nightly-4=1,492.5" in quiet.stdout
    # The module's database holds other tests' configurations too: how many were compared depends on the order.
    assert re.search(r"None of the \d+ configuration\(s\) compared regressed at 50 tok/s/user\.", quiet.stdout)
    unreachable = run_cli("regressions", "--at-interactivity", "5000")  # no sweep reaches it: nothing compared
    assert unreachable.returncode == 0 and "No configuration could be compared at 5000 tok/s/user" in unreachable.stdout

    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps(_rows_scaled(0.8)))
    assert (
        run_cli("import", "inferencex", str(slow), "--sweep", "nightly-5", "--run-date", "2026-01-06").returncode == 0
    )
    flagged = run_cli("regressions", "--at-interactivity", "50")
    assert flagged.returncode == 1
    assert "nightly-5=1,200.0" in flagged.stdout and "regression" in flagged.stdout
    assert "1 configuration(s) regressed" in flagged.stderr


METRIC_FIELDS = ("tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu", "median_ttft", "p99_ttft",
                 "median_tpot", "median_e2el", "p99_intvty", "median_intvty", "mean_tpot")  # fmt: skip


def as_api_row(row: dict, date: str, run: int) -> dict:
    """A real agg_bmk row in the dashboard API's shape (field names of SemiAnalysisAI/InferenceX-app's captured
    response, packages/app/cypress/fixtures/api/benchmarks.json; that file is GPL-3.0, so only its shape is used):
    `hardware`, `spec_method`, nested `metrics`, `date`, `run_url`, both sides stated for an aggregated server."""
    api = {key: value for key, value in row.items() if key not in METRIC_FIELDS and key not in ("hw", "spec_decoding")}
    api.update(hardware=row["hw"], model=row["infmax_model_prefix"], spec_method=row.get("spec_decoding") or "none",
               metrics={key: row[key] for key in METRIC_FIELDS if key in row}, date=date,
               run_url=f"https://github.com/SemiAnalysisAI/InferenceX/actions/runs/{run}/attempts/1")  # fmt: skip
    if not row["disagg"]:
        for side in ("prefill", "decode"):
            api.update({f"{side}_tp": row["tp"], f"{side}_ep": row["ep"], f"{side}_dp_attention": row["dp_attention"],
                        f"{side}_num_workers": 0, f"num_{side}_gpu": row["tp"]})  # fmt: skip
        for key in ("tp", "ep", "dp_attention"):
            api.pop(key)
    return api


def test_the_dashboard_api_shape_imports_with_its_dates_and_runs(tmp_path: Path) -> None:
    single, disaggregated = raw_rows("20316427102"), raw_rows("20806551498")
    api = [as_api_row(row, "2025-12-19", 1001) for row in single] + [
        as_api_row(row, "2025-12-24", 1002) for row in disaggregated
    ]
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps(api))
    result = run_cli("import", "inferencex", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(api)} row(s) read, {len(api)} imported" in result.stdout
    sample_views()  # the same rows from their agg_bmk.json files
    with open_session(make_engine()) as session:
        first = reads.list_results(session, sweep="inferencex-run-1001")
        second = reads.list_results(session, sweep="inferencex-run-1002")
        agg = {(v.recipe, v.concurrency): v for v in reads.list_results(session, sweep="inferencex-run-20806551498")}
    assert len(first) == len(single) and len(second) == len(disaggregated)
    assert {view.finished_at.date().isoformat() for view in first} == {"2025-12-19"}  # the run's date, not today's
    # The same rows as agg_bmk.json and as the API: the same configurations and figures.
    for view in second:
        twin = agg[(view.recipe, view.concurrency)]
        assert view.output_throughput_per_gpu == pytest.approx(twin.output_throughput_per_gpu)
        assert view.accelerators == twin.accelerators
    assert {view.recipe for view in first} == {view.recipe for view in sample_views()["inferencex-run-20316427102"]}


def test_one_dashboard_file_of_more_runs_than_database_connections_imports_whole(tmp_path: Path) -> None:
    """Found importing the dashboard API's captured response (InferenceX-app's cypress fixture: 435 rows of 73
    runs in one file): the fix above closed Recorders after each *file*, so one file's 73 sweeps stayed open
    together and the 16th waited 30 s for a pooled connection and failed. Each run's sweep is closed before the
    next opens."""
    single = raw_rows("20316427102")
    api = [as_api_row(row, "2026-05-22", 2000 + run) for run in range(20) for row in single[:2]]
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps(api))
    database = {"INFERSWEEP_DATABASE_URL": f"sqlite:///{tmp_path / 'api.db'}"}
    result = run_cli("import", "inferencex", str(path), env=database, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "40 row(s) read, 40 imported, 0 already present" in result.stdout
    with open_session(make_engine(database["INFERSWEEP_DATABASE_URL"])) as session:
        sweeps = session.exec(select(SweepRow)).all()
    assert len(sweeps) == 20 and {sweep.status for sweep in sweeps} == {"finished"}


SNAPSHOT = ROOT / "tests" / "data" / "inferencex-snapshot" / "tpu-shaped.json"
SNAPSHOT_FLAGS = ("--hardware", "tpu-v7", "--model", "Qwen/Qwen3.5-397B-A17B-FP8", "--precision", "fp8",
                  "--isl", "8192", "--osl", "1024", "--framework", "vllm-tpu", "--run-date", "2026-02-20")  # fmt: skip


def test_a_dashboard_snapshot_takes_what_its_rows_leave_out_from_the_flags() -> None:
    first = run_cli("import", "inferencex-snapshot", str(SNAPSHOT), *SNAPSHOT_FLAGS)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "3 row(s) read, 3 imported, 0 already present, 0 refused" in first.stdout
    # Qwen3.5-397B-A17B is in recipes/models.yaml (since 2026-12-02): its FP8 hub id is an alias, not a new label.
    assert "kept as its label" not in first.stdout
    again = run_cli("import", "inferencex-snapshot", str(SNAPSHOT), *SNAPSHOT_FLAGS)
    assert "0 imported, 3 already present" in again.stdout

    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        views = {view.concurrency: view for view in reads.list_results(session) if view.hardware == "tpu-v7"}
    assert set(views) == {4, 32, 128}
    assert {view.model for view in views.values()} == {"qwen3.5-397b-a17b"}
    for concurrency, total, output in ((4, 1100.0, 120.0), (128, 6400.0, 710.0)):
        view = views[concurrency]
        # Per chip, as the rows state it: 4 chips (two TensorCores each), whatever the TP of the engine.
        assert view.accelerators == 4 and view.total_token_throughput_per_gpu == total
        assert view.output_throughput_per_gpu == output
        assert view.finished_at.date().isoformat() == "2026-02-20" and view.origin == "imported"
    # TP8 and DP8-of-TP1 are two configurations, never one curve.
    assert views[4].fingerprint == views[32].fingerprint != views[128].fingerprint
    assert "dp8" in views[128].recipe and "4chip" in views[128].recipe


def test_a_model_the_registry_does_not_know_is_kept_as_its_label_and_said_so(tmp_path: Path) -> None:
    flags = list(SNAPSHOT_FLAGS)
    flags[flags.index("--model") + 1] = "acme/Unknown-42B-FP8"
    database = {"INFERSWEEP_DATABASE_URL": f"sqlite:///{tmp_path / 'unknown-model.db'}"}  # not the session's results
    result = run_cli("import", "inferencex-snapshot", str(SNAPSHOT), *flags, env=database)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "kept as its label: 'acme/Unknown-42B-FP8'" in result.stdout


def test_a_snapshot_needs_every_flag_its_rows_leave_out() -> None:
    missing = run_cli("import", "inferencex-snapshot", str(SNAPSHOT), *SNAPSHOT_FLAGS[:-2])  # no --run-date
    assert missing.returncode == 2 and "--run-date" in missing.stderr


def test_a_corpus_of_more_runs_than_database_connections_imports_whole(tmp_path: Path) -> None:
    """Found importing the 35 public run files of gminneci/mantile at once: one Recorder (one pooled connection) per
    run stayed open to the end, and the 16th run waited 30 s for a connection and failed (pool of 5 + 10)."""
    files = []
    for run in range(20):
        path = tmp_path / f"run_{1000 + run}" / "agg_bmk.json"
        path.parent.mkdir()
        path.write_text(json.dumps(ROWS))
        files.append(str(path))
    database = {"INFERSWEEP_DATABASE_URL": f"sqlite:///{tmp_path / 'corpus.db'}"}
    result = run_cli("import", "inferencex", *files, env=database, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "60 row(s) read, 60 imported, 0 already present" in result.stdout


def test_rows_without_a_date_are_date_unknown_ordered_by_run_id_never_by_the_import(tmp_path: Path) -> None:
    """`agg_bmk.json` rows carry no date. Imported newest run first, the older run must not become 'latest'
    because it was imported last; a run dated by --run-date is newer than any undated one."""
    rows = raw_rows("20316427102")
    for run, factor in (("9000000002", 2.0), ("9000000001", 1.0), ("9000000003", 3.0)):  # newest imported first
        path = tmp_path / f"run_{run}" / "agg_bmk.json"
        path.parent.mkdir()
        path.write_text(json.dumps([dict(row, tput_per_gpu=row["tput_per_gpu"] * factor) for row in rows]))
    undated = run_cli("import", "inferencex", str(tmp_path / "run_9000000002" / "agg_bmk.json"),
                      str(tmp_path / "run_9000000001" / "agg_bmk.json"))  # fmt: skip
    assert undated.returncode == 0, undated.stderr
    assert "22 row(s) state no date: stored as 'date unknown', ordered by run id" in undated.stdout
    engine = make_engine()
    migrate(engine)
    with open_session(engine) as session:
        views = [v for v in reads.list_results(session) if v.sweep.startswith("inferencex-run-900000000")]
    assert views and not any(view.date_known for view in views)
    from orchestrator.cli.results import latest_sweeps

    assert {view.sweep for view in latest_sweeps(views)} == {"inferencex-run-9000000002"}
    # A result's stored file says the same: no finish, the import's time named as that.
    from db import recording
    from db.artifacts import local_copy

    with open_session(engine) as session:
        sweep, _ = recording.get_or_create_sweep(session, views[0].sweep)
        [artifact] = [
            a for a in recording.artifacts_of_point(session, sweep.id, views[0].point_key) if a.kind == "result"
        ]
        # One file holds the results of the import's batch, by point key (every Point's artifact row names it).
        stored = json.loads(local_copy(artifact).read_text())[views[0].point_key]  # type: ignore[union-attr]
    assert stored["point_key"] == views[0].point_key and stored["origin"] == "imported"
    assert stored["finished_at"] is None and stored["started_at"] is None and stored["imported_at"]
    dated = run_cli("import", "inferencex", str(tmp_path / "run_9000000003" / "agg_bmk.json"), "--run-date",
                    "2020-01-01")  # fmt: skip
    assert dated.returncode == 0 and "state no date" not in dated.stdout
    with open_session(engine) as session:
        views = [v for v in reads.list_results(session) if v.sweep.startswith("inferencex-run-900000000")]
    assert {view.sweep for view in latest_sweeps(views)} == {"inferencex-run-9000000003"}
    assert {view.finished_at.year for view in views if view.date_known} == {2020}


def test_speculative_decoding_rows_are_a_curve_of_their_own(tmp_path: Path) -> None:
    """Found backtesting on the dashboard API's captured response: InferenceX publishes one chip, image and
    parallelism with and without MTP (e.g. MI325X SGLang TP8 1k/1k: 3 MTP and 2 plain rows), and the projection
    fitted them as one curve, a median across two different step mechanisms. They are two curves."""
    from analysis.curves import image_curves_of

    single = [row for row in raw_rows("20316427102") if not row["disagg"]][:3]
    plain = [as_api_row(row, "2026-05-22", 3001) for row in single]
    mtp = [as_api_row({**row, "spec_decoding": "mtp", "median_intvty": row.get("median_intvty", 0) * 1.6},
                      "2026-05-22", 3002) for row in single]  # fmt: skip
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps(plain + mtp))
    database = {"INFERSWEEP_DATABASE_URL": f"sqlite:///{tmp_path / 'spec.db'}"}
    assert run_cli("import", "inferencex", str(path), env=database).returncode == 0
    with open_session(make_engine(database["INFERSWEEP_DATABASE_URL"])) as session:
        views = reads.list_results(session)
    assert {view.speculative_decoding for view in views} == {None, "mtp"}  # 'none' reads as off
    curves = image_curves_of(views)
    assert {key.speculative for key in curves} == {None, "mtp"}
    for key, chips in curves.items():
        points = [point for versions in chips.values() for curve in versions for point in curve.points]
        assert len(points) == len(single), key.label()  # three points each, never medians across the two
    assert any(key.label().endswith("· mtp · " + key.workload) for key in curves)


@pytest.mark.parametrize("image_first", [True, False])
def test_one_runs_rows_with_and_without_their_image_are_one_measurement(tmp_path: Path, image_first: bool) -> None:
    # The dashboard serves a run's rows twice: naming the image in its latest results, not in its history
    # (InferenceX-app's two captures of 2026-05 share 233 rows, figures identical). The image is part of a
    # configuration's fingerprint, so importing both stored each measurement twice.
    run = "99990001" if image_first else "99990002"
    rows = raw_rows("20316427102")
    without_image = [{name: value for name, value in row.items() if name != "image"} for row in rows]
    files = []
    for folder, content in (("named", rows), ("history", without_image)):
        path = tmp_path / folder / f"run_{run}" / "agg_bmk.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(content))
        files.append(path)
    first, second = files if image_first else files[::-1]
    assert run_cli("import", "inferencex", str(first)).returncode == 0
    again = run_cli("import", "inferencex", str(second))
    assert again.returncode == 0, again.stderr
    with open_session(make_engine()) as session:
        views = reads.list_results(session, sweep=f"inferencex-run-{run}")
        every = reads.list_results(session, sweep=f"inferencex-run-{run}", include_retracted=True)
    assert len(views) == len(rows)
    # Whichever came first, what readers see names the image; the row without it is kept, retracted.
    assert {view.engine_image for view in views} == {rows[0]["image"]}
    if image_first:
        assert f"{len(rows)} row(s) read, 0 imported, {len(rows)} already present" in again.stdout
        assert len(every) == len(rows)
    else:
        assert f"{len(rows)} row(s) read, {len(rows)} imported, 0 already present" in again.stdout
        assert f"{len(rows)} row(s) name the image of a measurement stored without one" in again.stdout
        assert len(every) == 2 * len(rows)


def test_an_import_stopped_in_its_batch_stores_no_row_and_retracts_no_twin_then_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch's rows and the retraction of their twins are one transaction: stopped at its commit (Ctrl-C), none of
    it is stored, not even by the sweep's closing commit after it; run again, every row is stored once."""
    from db import recording
    from orchestrator.importers import store

    run = "99990003"
    rows = raw_rows("20316427102")
    history = tmp_path / "history" / f"run_{run}" / "agg_bmk.json"
    named = tmp_path / "named" / f"run_{run}" / "agg_bmk.json"
    for path, content in ((history, [{k: v for k, v in row.items() if k != "image"} for row in rows]), (named, rows)):
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(content))
    assert run_cli("import", "inferencex", str(history)).returncode == 0
    record_imported = recording.record_imported

    def killed_at_its_commit(session, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        def interrupted() -> None:
            del session.commit  # the sweep's own closing commit goes through
            raise KeyboardInterrupt

        session.commit = interrupted
        record_imported(session, *args, **kwargs)

    engine = make_engine()
    with monkeypatch.context() as patched:
        patched.setattr(recording, "record_imported", killed_at_its_commit)
        with pytest.raises(KeyboardInterrupt):
            store.import_inferencex(engine, [named], sweep=None, run_date=None)
    with open_session(engine) as session:
        views = reads.list_results(session, sweep=f"inferencex-run-{run}")
    assert len(views) == len(rows) and {view.engine_image for view in views} == {None}  # the twins, not retracted
    again = run_cli("import", "inferencex", str(named))
    assert again.returncode == 0, again.stderr
    assert f"{len(rows)} row(s) read, {len(rows)} imported, 0 already present" in again.stdout
    with open_session(engine) as session:
        views = reads.list_results(session, sweep=f"inferencex-run-{run}")
        every = reads.list_results(session, sweep=f"inferencex-run-{run}", include_retracted=True)
    assert len(views) == len(rows) and {view.engine_image for view in views} == {rows[0]["image"]}
    assert len(every) == 2 * len(rows)


def test_either_file_layout_names_the_same_runs_in_the_same_order(tmp_path: Path) -> None:
    """InferenceX artifacts come as run_<id>/agg_bmk.json and as run_<id>.json. The second layout got a content hash
    for its run id, and 'latest' then sorted by the hash. Two real MI355X runs of the same configurations (runs
    20248091324 and 20384527243, the later one measured again) saved both ways: same run ids, same order, same
    latest; saved under names that state no run, their order is unknown and neither is picked."""
    from analysis.recency import latest_sweeps_of, order_unknown, sweep_keys
    from orchestrator.importers import store

    runs = ("20248091324", "20384527243")
    sources = {run: (ROOT / "tests/data/inferencex" / f"run_{run}" / "agg_bmk.json").read_bytes() for run in runs}
    layouts = {
        "folder": [tmp_path / "folder" / f"run_{run}" / "agg_bmk.json" for run in runs],
        "file": [tmp_path / "file" / f"run_{run}.json" for run in runs],
        "unnamed": [tmp_path / "unnamed" / f"results-{index}.json" for index in range(len(runs))],
    }
    seen = {}
    for layout, paths in layouts.items():
        for path, run in zip(paths, runs, strict=True):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(sources[run])
        engine = make_engine(f"sqlite:///{tmp_path / layout}.db")
        migrate(engine)
        store.import_inferencex(engine, paths, None, None)
        with open_session(engine) as session:
            views = reads.list_results(session)
        keys = sweep_keys(views)
        measured_twice = {fingerprint for fingerprint, _ in keys if sum(key[0] == fingerprint for key in keys) == 2}
        seen[layout] = (sorted({view.sweep for view in views}), latest_sweeps_of(keys), order_unknown(keys),
                        measured_twice)  # fmt: skip
        engine.dispose()
    sweeps, latest, unknown, twice = seen["folder"]
    assert sweeps == [f"inferencex-run-{run}" for run in runs]
    assert seen["file"] == seen["folder"]
    # The later run is the latest of every configuration both runs measured; nothing is of unknown order.
    assert twice and all(latest[fingerprint] == ("inferencex-run-20384527243",) for fingerprint in twice)
    assert unknown == set()
    unnamed_sweeps, unnamed_latest, unnamed_unknown, unnamed_twice = seen["unnamed"]
    assert all(name.startswith("inferencex-run-sha-") for name in unnamed_sweeps)
    assert unnamed_twice == twice and unnamed_unknown == twice  # measured by both runs: both read, none picked
    assert all(len(unnamed_latest[fingerprint]) == 2 for fingerprint in twice)

    # A --run-id names the run of a file that does not.
    engine = make_engine(f"sqlite:///{tmp_path / 'named'}.db")
    migrate(engine)
    store.import_inferencex(engine, layouts["unnamed"][:1], None, None, run_id="20248091324")
    with open_session(engine) as session:
        assert {view.sweep for view in reads.list_results(session)} == {"inferencex-run-20248091324"}
    engine.dispose()
