"""The hub's Run detail page (site/views/run_detail.py) with AppTest on the hand-checkable fixture.

Fixture point keys are `r{recipe id}-c{concurrency}-x{repeat}`, recipe ids in seeding order: 1 B200, 2 H200,
3 MI355X (imported), 4/5 the agentic arms, 6 simulated, 7 dry run.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from db import reads, recording
from db.models import ArtifactRow
from db.session import make_engine, open_session
from runners.loadgen.records import RequestRecord, records_frame
from tests.site.conftest import assert_says_how_to_get_results, open_page
from tests.site.hub_fixture import DAY0, FIXED, _Seeder, _snapshot


def _detail(link: dict[str, str | list[str]] | None = None) -> AppTest:
    # The page's URL path ('run') is not its file name: it opens from the Overview (whose controls share
    # no parameter with this page).
    return open_page("run_detail", link, from_overview=True)


def _text(app: AppTest) -> str:
    """Everything the page shows as text (markdown, captions, alerts, code, headings)."""
    parts = [element.value for kind in ("markdown", "caption", "info", "warning", "error", "success", "code",
                                        "subheader", "header") for element in app.get(kind)]  # fmt: skip
    return "\n".join(str(part) for part in parts)


def test_empty_database_says_how_to_get_a_run(hub_database: str) -> None:
    assert_says_how_to_get_results("run_detail", "Run detail", hub_database, from_overview=True)


def test_b200_point_shows_its_recipe_verdict_and_history(seeded_hub: str) -> None:
    app = _detail({"sweep": "nightly-3", "point": "r1-c16-x1"})
    assert not app.exception
    assert [box.value for box in app.selectbox] == ["nightly-3", "r1-c16-x1"]
    assert "b200 · vllm · deepseek-r1 fp8 · tp8·ep8 · 8k/1k · concurrency 16 · repeat 1" in app.subheader[0].value
    # Repeat 1 of the latest B200 sweep measured 1500 tok/s/GPU at 50 tok/s/user (TPOT 20 ms).
    headline = app.dataframe[0].value
    assert headline["output tok/s/GPU"][0] == 1500.0
    assert headline["interactivity p50 (tok/s/user)"][0] == 50.0 and headline["TPOT p50 (ms)"][0] == 20.0
    recipe_yaml = app.code[0].value
    assert "deepseek-r1" in recipe_yaml and "hardware: b200" in recipe_yaml and "tp: 8" in recipe_yaml
    assert "Valid" in app.success[0].value
    text = _text(app)
    assert "No engine command line or environment was stored" in text
    assert "No per-request records were stored" in text and "No accuracy gate result" in text
    provenance = app.dataframe[1].value.set_index("field")["value"]
    assert provenance["host"] == "node-1" and provenance["sweep"] == "nightly-3" and provenance["origin"] == "measured"
    # The job's lifecycle (queued, succeeded) with this point's own 'recorded' between them.
    lifecycle = app.dataframe[-1].value
    assert list(lifecycle["state"]) == ["queued", "recorded", "succeeded"]
    assert list(lifecycle["subject"]) == ["job", "point", "job"]


def test_invalid_point_lists_its_reasons(seeded_hub: str) -> None:
    app = _detail({"sweep": "nightly-3", "point": "r1-c64-x2"})
    assert not app.exception
    assert "error rate 20.0% above 10%" in app.error[0].value


@pytest.mark.parametrize(
    ("sweep", "point"),
    [("bad-driver", "r2-c4-x0"), ("vendor-launch", "r1-c4-x0"), ("local-sim", "r7-c1-x0")],
    ids=["retracted", "embargoed", "dry-run"],
)
def test_hidden_points_cannot_be_opened(seeded_hub: str, sweep: str, point: str) -> None:
    app = _detail({"sweep": sweep, "point": point})
    assert not app.exception
    assert "There is no public result" in app.warning[0].value
    assert sweep not in app.selectbox[0].options or app.selectbox[1].value != point
    assert app.selectbox[0].value != sweep or app.selectbox[1].value != point
    # Nothing of the hidden point is shown: its figures (9999 and 9000 tok/s/GPU) never appear.
    headline = app.dataframe[0].value
    assert headline["output tok/s/GPU"][0] not in (9999.0, 9000.0)
    assert "vendor-launch" not in app.selectbox[0].options and "bad-driver" not in app.selectbox[0].options


def test_hidden_point_is_refused_by_the_query_itself(seeded_hub: str) -> None:
    with open_session(make_engine(seeded_hub)) as session:
        assert reads.public_point_detail(session, "bad-driver", "r2-c4-x0") is None
        assert reads.public_point_detail(session, "vendor-launch", "r1-c4-x0") is None
        assert reads.public_point_detail(session, "local-sim", "r7-c1-x0") is None
        assert reads.public_point_detail(session, "local-sim", "r6-c1-x0") is not None  # simulated: labelled


def test_imported_and_simulated_points_are_labelled(seeded_hub: str) -> None:
    app = _detail({"sweep": "inferencex-import", "point": "r3-c16-x0"})
    assert not app.exception
    assert "Imported result" in app.info[0].value and "inferencex: fixture rows" in app.info[0].value
    assert app.dataframe[0].value["output tok/s/GPU"][0] == 1400.0

    app = _detail({"sweep": "local-sim", "point": "r6-c1-x0"})
    assert not app.exception
    assert "simulated engine, not a measurement" in app.warning[0].value


def test_a_point_no_signed_bundle_holds_reads_unsigned_and_an_imported_one_cannot_be_verified(seeded_hub: str) -> None:
    """The verification state (orchestrator/bundles.py): tests/integration/orchestrator/test_bundles.py takes a Point
    from signed to verified."""
    assert "Unsigned: no signed result bundle holds this Point" in _text(
        _detail({"sweep": "local-sim", "point": "r6-c1-x0"})
    )
    imported = _text(_detail({"sweep": "inferencex-import", "point": "r3-c16-x0"}))
    assert "Imported (cannot be verified)" in imported and "Unsigned" not in imported


def test_changing_the_sweep_picks_one_of_its_points(seeded_hub: str) -> None:
    app = _detail({"sweep": "nightly-1", "point": "r2-c16-x0"})
    assert app.dataframe[0].value["output tok/s/GPU"][0] == 1000.0  # H200 at 30 tok/s/user, week 1
    app.selectbox[0].set_value("agentic-1").run()
    assert not app.exception and not app.warning
    assert app.selectbox[1].value in app.selectbox[1].options
    assert app.query_params["sweep"] == "agentic-1" and app.query_params["point"] == app.selectbox[1].value


def test_records_logs_and_stored_command_are_shown(seeded_hub: str, tmp_path: Path) -> None:
    # Two measured requests and one warmup: TTFT 100 and 300 ms, TPOT (0.5 s / 4) = 125 ms and 250 ms, E2EL 1 s, 2 s.
    # Written as the load generator writes them (records_frame), so the hub reads what a Point stores.
    records = records_frame([
        RequestRecord(index=0, warmup=True, prompt_tokens_sent=8, max_tokens=1, scheduled=0.0, sent=0.0, end=9.0,
                      chunk_times=[5.0], chunk_tokens=[1], completion_tokens=1),
        RequestRecord(index=1, warmup=False, prompt_tokens_sent=8, max_tokens=5, scheduled=10.0, sent=10.0, end=11.0,
                      chunk_times=[10.1, 10.6], chunk_tokens=[1, 4], completion_tokens=5),
        RequestRecord(index=2, warmup=False, prompt_tokens_sent=8, max_tokens=5, scheduled=20.0, sent=20.0, end=22.0,
                      chunk_times=[20.3, 21.3], chunk_tokens=[1, 4], completion_tokens=5),
    ])  # fmt: skip
    records_file = tmp_path / "records.parquet"
    records.to_parquet(records_file, index=False)
    log_file = tmp_path / "engine.log"
    log_file.write_text("INFO starting\nINFO Application startup complete.\n")
    command_file = tmp_path / "target-engine-command.txt"
    command_file.write_text("python3 -m vllm.entrypoints.openai.api_server --tensor-parallel-size 8\n")
    with open_session(make_engine(seeded_hub)) as session:
        sweep = reads.sweep_by_name(session, "nightly-3")
        job_id = reads.jobs_of_sweep(session, sweep.id)[0].id  # B200 repeat 0, which measured r1-c16-x0
        for kind, path, point_key in (("records", records_file, "r1-c16-x0"), ("engine-log", log_file, None),
                                      ("target-engine-command", command_file, None)):  # fmt: skip
            artifact = ArtifactRow(
                sweep_id=sweep.id, job_id=job_id, point_key=point_key, kind=kind, key=f"{kind}/x", local_path=str(path),
                sha256=hashlib.sha256(path.read_bytes()).hexdigest(), size_bytes=path.stat().st_size, status="stored",
                uri=path.as_uri(),
            )  # fmt: skip
            recording.add_artifact(session, artifact)
    app = _detail({"sweep": "nightly-3", "point": "r1-c16-x0"})
    assert not app.exception
    per_request = next(frame.value for frame in app.dataframe if "ttft_ms" in frame.value.columns)
    assert list(per_request["index"]) == [1, 2]
    assert per_request["ttft_ms"].round(6).tolist() == [100.0, 300.0]
    assert per_request["tpot_ms"].round(6).tolist() == [125.0, 250.0]
    assert per_request["e2el_ms"].round(6).tolist() == [1000.0, 2000.0]
    assert len(app.get("vega_lite_chart")) >= 4  # TTFT, TPOT, E2EL histograms and the lifecycle
    text = _text(app)
    assert "--tensor-parallel-size 8" in text and "target-engine-command" in text
    assert "Application startup complete." in text and "No engine log" not in text
    # The artifacts are offered through the hub, never by a path of the machine that stored them (issue 42).
    assert str(tmp_path) not in text and "file://" not in text, text
    assert "the artifact store, key `target-engine-command/x`" in text
    labels = [button.proto.label for button in app.get("download_button")]
    assert any(label.startswith("Download target-engine-command (") for label in labels), labels
    assert any(label.startswith("Download engine-log (") for label in labels), labels


def test_a_records_file_that_is_not_its_artifacts_bytes_is_not_shown(seeded_hub: str, tmp_path: Path) -> None:
    records_file = tmp_path / "records.parquet"
    pd.DataFrame({"index": [1], "ttft_ms": [1.0]}).to_parquet(records_file, index=False)
    recorded = hashlib.sha256(records_file.read_bytes()).hexdigest()
    pd.DataFrame({"index": [9], "ttft_ms": [9.0]}).to_parquet(records_file, index=False)  # overwritten since
    with open_session(make_engine(seeded_hub)) as session:
        sweep = reads.sweep_by_name(session, "nightly-3")
        job_id = reads.jobs_of_sweep(session, sweep.id)[0].id
        recording.add_artifact(session, ArtifactRow(
            sweep_id=sweep.id, job_id=job_id, point_key="r1-c16-x0", kind="records", key=f"records/{recorded}.parquet",
            local_path=str(records_file), sha256=recorded, size_bytes=1, status="stored", uri=records_file.as_uri(),
        ))  # fmt: skip
    app = _detail({"sweep": "nightly-3", "point": "r1-c16-x0"})
    assert not app.exception
    assert not any("ttft_ms" in frame.value.columns and 9 in list(frame.value["index"]) for frame in app.dataframe)
    assert "not readable from this machine" in _text(app)


def test_one_hardware_only(hub_database: str) -> None:
    seeder = _Seeder(hub_database)
    recipe = seeder.recipe(_snapshot("h200-only", "h200", "vllm", "llama-3-70b", "fp8", {"tp": 4}, FIXED))
    sweep = seeder.sweep("solo")
    seeder.points(sweep, recipe, DAY0 + timedelta(days=1), [(4, 60.0, 400.0)], accelerators=4)
    seeder.engine.dispose()
    app = _detail()
    assert not app.exception and not app.warning
    assert app.selectbox[0].options == ["solo"] and app.selectbox[1].value == "r1-c4-x0"
    assert "llama-3-70b" in app.code[0].value and "h200" in app.subheader[0].value
    assert app.dataframe[0].value["accelerators"][0] == 4


def test_stored_provenance_shows_the_engine_command_and_host(seeded_hub: str) -> None:
    from sqlalchemy import update

    from db.models import JobRow

    with open_session(make_engine(seeded_hub)) as session:
        sweep = reads.sweep_by_name(session, "nightly-3")
        job_id = reads.jobs_of_sweep(session, sweep.id)[0].id  # B200 repeat 0
        engine_id = recording.get_or_create_engine(session, "vllm", "0.30.0", "vllm/vllm-openai:v0.30.0", None)
        session.exec(update(JobRow).where(JobRow.id == job_id).values(engine_id=engine_id))
        recording.add_provenance(
            session, job_id, "recipes/b200-vllm-8k1k.yaml", git_commit="0123abcd", git_dirty=True,
            engine_argv=["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "{model_dir}",
                         "--tensor-parallel-size", "8", "--port", "{port}"],
            env_names=["VLLM_USE_V1", "HF_HUB_OFFLINE"],
        )  # fmt: skip
        recording.set_provenance_host(session, job_id, "b200-node-7")
        recording.set_provenance_preflight(
            session, job_id, {"free_disk_gb": 812.5, "accelerators_idle": True, "leftover_engines": 0, "notes": []}
        )
    app = _detail({"sweep": "nightly-3", "point": "r1-c16-x0"})
    assert not app.exception
    commands = [code.value for code in app.code]
    assert (
        "python3 -m vllm.entrypoints.openai.api_server --model {model_dir} --tensor-parallel-size 8 --port {port}"
        in commands
    )
    text = _text(app)
    assert "`HF_HUB_OFFLINE`, `VLLM_USE_V1`" in text and "No engine command line" not in text
    assert "vllm/vllm-openai:v0.30.0" in text
    provenance = app.dataframe[1].value.set_index("field")["value"]
    assert provenance["host"] == "b200-node-7" and provenance["project commit"] == "0123abcd (uncommitted changes)"
    assert provenance["pre-flight: free disk (GB)"] == "812.5" and provenance["pre-flight: accelerators idle"] == "True"
    assert provenance["recipe file"] == "recipes/b200-vllm-8k1k.yaml"
