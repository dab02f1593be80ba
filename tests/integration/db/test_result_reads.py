"""Reading results for the hub and the CLI (`list_results`, `result_columns`, `results_version`), on SQLite and
on the real PostgreSQL: every ResultView field from its column, recipe snapshot or stored metrics JSON, the
public filters, and a version that moves whenever the public results may have changed."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any, get_type_hints

from sqlalchemy import Engine
from sqlmodel import select

from db import reads, recording
from db.models import PointResultRow
from db.session import open_session

AT = datetime(2026, 11, 1, 2, 0, tzinfo=UTC)
FIXED_SNAPSHOT = {
    "schema_version": 1, "name": "b-fixed", "hardware": "b200",
    "engine": {"kind": "vllm", "version": "0.30.0",
               "environment": {"kind": "container", "image": "vllm/vllm-openai:v0.30.0"}},
    "model": {"name": "deepseek-r1"}, "precision": "fp8", "parallelism": {"tp": 8, "ep": 8},
    "methodology": {"prefix_caching": False, "kv_offload": {"backend": "dram", "dram_gib": 512}},
}  # fmt: skip
# An imported result keeps the source tool's flat configuration: the model as a hub id, tp at the top level.
IMPORTED_SNAPSHOT = {
    "model": "deepseek-ai/DeepSeek-R1-0528",
    "tp": 4,
    "precision": "fp4",
    "image": "lmsysorg/sglang:v0.5.5-rocm700-mi35x",
}
AGENTIC_METRICS = {
    "replay": {"prompt_tokens": 1000, "cached_tokens": 250, "realized_hit_rate": 0.25, "theoretical_hit_rate": 0.5,
               "agentx_theoretical_hit_rate": 0.45, "e2e_interactivity_p90": 20.0, "planner": {"hbm_hit_rate": 0.2, "dram_hit_rate": 0.1},
               "session_time_s": {"n": 3, "mean": 9.0, "p50": 8.5, "p90": 9.9, "p99": 10.0, "std": 0.5},
               "sessions_completed": 3, "trace_version": "ab" * 32, "prompt_salt": "0-c2"},
    "server": {"prompt_tokens": 1000.0, "prompt_tokens_local_cache_hit": 200.0, "prompt_tokens_external": 50.0,
               "prompt_tokens_local_compute": 750.0, "prefix_cache_queries": 1000.0, "prefix_cache_hits": 250.0},
    "host": {"telemetry": None},  # a host that could not sample power
    "slo_goodput": {"interactive": {"ttft_ms": 2000.0, "interactivity": 60.0, "share": 0.75}},
}  # fmt: skip


# A replay's trace and scales as its snapshot keeps them (length_scale at its default, so left out).
AGENTIC_WORKLOAD = {"kind": "agentic-replay", "trace": "/traces/claude.json", "concurrency": [2], "duration_s": 60,
                    "time_scale": 0.01, "max_output_tokens": 16}  # fmt: skip


def _point(recipe_id: int, key: str, concurrency: int, **fields: Any) -> PointResultRow:
    values: dict[str, Any] = {
        "sweep_id": 1, "job_id": "job-1", "recipe_id": recipe_id, "point_key": key, "repeat_index": 0,
        "workload_kind": "fixed-length", "isl": 8192, "osl": 1024, "concurrency": concurrency, "origin": "measured",
        "valid": True, "validity_reasons": [], "completed": 100, "failed": 0, "duration_s": 60.0,
        "request_throughput": 1.5, "output_throughput": 8000.0, "total_token_throughput": 72000.0,
        "accelerators": 8, "output_throughput_per_gpu": 1000.0, "total_token_throughput_per_gpu": 9000.0,
        "ttft_p50_ms": 210.0, "ttft_p99_ms": 410.0, "tpot_p50_ms": 20.0, "tpot_p90_ms": 22.0, "e2el_p50_ms": 20680.0,
        "interactivity_p50": 50.0, "interactivity_p90": 45.0, "metrics": {}, "started_at": AT - timedelta(minutes=1),
        "finished_at": AT,
    }  # fmt: skip
    return PointResultRow(**{**values, **fields})


def _seed(engine: Engine) -> dict[str, int]:
    with open_session(engine) as session:
        sweep, _ = recording.get_or_create_sweep(session, "s1")
        assert sweep.id == 1
        recipes = {
            "fixed": recording.upsert_recipe(session, "fp-fixed", "b-fixed", "b.yaml", "b200", "vllm", FIXED_SNAPSHOT),
            "imported": recording.upsert_recipe(session, "fp-imp", "a-imported", "a.csv", "mi355x", "sglang",
                                              IMPORTED_SNAPSHOT),
            "agentic": recording.upsert_recipe(session, "fp-agentic", "c-agentic", "c.yaml", "b200", "sglang",
                                             {"model": {"name": "deepseek-r1"}, "workload": AGENTIC_WORKLOAD}),
        }  # fmt: skip
        ids = {name: int(recipe.id) for name, recipe in recipes.items()}
        recording.create_job(session, "job-1", 1, ids["fixed"], 1, 8, "")
        power = {"host": {"telemetry": {"power_w_mean": 8000.0}}}  # 8 GPUs: 1000 W each
        rows = [
            _point(ids["fixed"], "fixed-c16", 16, metrics=power),
            _point(ids["fixed"], "fixed-c4", 4, valid=False, validity_reasons=["error rate 20.0% above 10%"]),
            _point(ids["imported"], "imported-c8", 8, origin="imported", source="inferencex: rows.csv",
                   date_known=False),
            _point(ids["agentic"], "agentic-c2", 2, workload_kind="agentic-replay", isl=None, osl=None,
                   metrics=AGENTIC_METRICS),
            _point(ids["fixed"], "dry-c1", 1, origin="dry-run"),
            _point(ids["fixed"], "retracted-c32", 32, retracted=True, retraction_reason="bad driver"),
            _point(ids["fixed"], "embargoed-c64", 64, embargo_until=datetime(2100, 1, 1, tzinfo=UTC)),
        ]  # fmt: skip
        for row in rows:
            assert recording.record_point(session, row)
    return ids


def test_every_field_of_a_result(database: Engine) -> None:
    _seed(database)
    with open_session(database) as session:
        views = {view.point_key: view for view in reads.list_results(session, sweep="s1")}
    assert vars(views["fixed-c16"]) == {
        "sweep": "s1", "recipe": "b-fixed", "fingerprint": "fp-fixed", "hardware": "b200", "engine": "vllm",
        "origin": "measured", "isl": 8192, "osl": 1024, "concurrency": 16, "repeat_index": 0, "valid": True,
        "validity_reasons": [], "completed": 100, "failed": 0, "output_throughput": 8000.0,
        "output_throughput_per_gpu": 1000.0, "total_token_throughput_per_gpu": 9000.0, "ttft_p50_ms": 210.0,
        "tpot_p50_ms": 20.0, "interactivity_p50": 50.0, "e2el_p50_ms": 20680.0, "finished_at": AT,
        "point_key": "fixed-c16", "interactivity_p90": 45.0, "total_token_throughput": 72000.0,
        "request_throughput": 1.5, "duration_s": 60.0, "source": None, "workload_kind": "fixed-length",
        "realized_hit_rate": None, "theoretical_hit_rate": None, "agentx_theoretical_hit_rate": None, "job_id": "job-1", "accelerators": 8,
        "ttft_p99_ms": 410.0, "tpot_p90_ms": 22.0, "model": "deepseek-r1", "precision": "fp8",
        "parallelism": "tp8·ep8", "kv_offload": "dram 512 GiB", "prefix_caching": False, "power_w_per_gpu": 1000.0,
        "server_prompt_tokens": None, "server_prompt_tokens_local_cache_hit": None,
        "server_prompt_tokens_external": None, "server_prompt_tokens_local_compute": None,
        "server_prefix_cache_queries": None, "server_prefix_cache_hits": None, "replay_prompt_tokens": None,
        "replay_cached_tokens": None, "e2e_interactivity_p90": None, "planner_hbm_hit_rate": None,
        "planner_dram_hit_rate": None, "replay_session_time_p50_s": None, "replay_sessions_completed": None,
        "replay_trace": None, "replay_time_scale": None, "replay_length_scale": None, "replay_max_output_tokens": None,
        "replay_agentx_differences": None, "replay_trace_version": None, "replay_prompt_salt": None, "ttft_p90_ms": None,
        "server_kv_offload_bytes_to_host": None, "server_kv_offload_bytes_to_device": None,
        "server_kv_offload_seconds_to_host": None, "server_kv_offload_seconds_to_device": None, "engine_image": "vllm/vllm-openai:v0.30.0",  # the recipe's container image
        "date_known": True, "speculative_decoding": None,  # off: the recipe sets none
        # A single server: no disaggregated split.
        "disaggregated": False, "prefill_gpus": None, "decode_gpus": None, "decode_workers": None, "decode_dp_attention": None,
        # A measurement, not a projection: no band edge, no source chip.
        "projection_edge": None, "projection_source": None,
        "slo_goodput": None,  # a Point measured before goodput per tier was stored
    }  # fmt: skip
    assert views["fixed-c16"].finished_at.tzinfo is not None
    assert views["imported-c8"].engine_image == "lmsysorg/sglang:v0.5.5-rocm700-mi35x"  # an imported row's own
    assert views["fixed-c4"].validity_reasons == ["error rate 20.0% above 10%"]
    # The imported row's hub model id reads as the registry's key, its flat tp as the parallelism.
    imported = views["imported-c8"]
    assert (imported.model, imported.parallelism, imported.precision) == ("deepseek-r1", "tp4", "fp4")
    assert (imported.kv_offload, imported.prefix_caching, imported.source) == ("none", None, "inferencex: rows.csv")
    assert imported.date_known is False  # its source stated no date
    agentic = views["agentic-c2"]
    assert (agentic.workload, agentic.isl, agentic.parallelism, agentic.precision) == ("agentic", None, "tp1", "")
    assert (agentic.realized_hit_rate, agentic.theoretical_hit_rate, agentic.e2e_interactivity_p90) == (0.25, 0.5, 20.0)
    assert agentic.agentx_theoretical_hit_rate == 0.45  # the AgentX harness's definition, read beside ours
    assert (agentic.replay_prompt_tokens, agentic.replay_cached_tokens) == (1000, 250)
    assert isinstance(agentic.replay_prompt_tokens, int)
    assert (agentic.server_prompt_tokens, agentic.server_prompt_tokens_local_cache_hit) == (1000.0, 200.0)
    assert (agentic.server_prompt_tokens_external, agentic.server_prompt_tokens_local_compute) == (50.0, 750.0)
    assert (agentic.server_prefix_cache_queries, agentic.server_prefix_cache_hits) == (1000.0, 250.0)
    assert (agentic.planner_hbm_hit_rate, agentic.planner_dram_hit_rate) == (0.2, 0.1)
    # The trees a replay completed (median time, count), its trace and scales (the schema's default where omitted).
    assert (agentic.replay_session_time_p50_s, agentic.replay_sessions_completed) == (8.5, 3)
    assert isinstance(agentic.replay_sessions_completed, int)
    assert (agentic.replay_trace, agentic.replay_time_scale, agentic.replay_length_scale) == ("/traces/claude.json",
                                                                                              0.01, 1.0)  # fmt: skip
    assert agentic.replay_max_output_tokens == 16
    assert (agentic.replay_trace_version, agentic.replay_prompt_salt) == ("ab" * 32, "0-c2")  # read as text
    # Goodput per SLO tier: the stored object, as its JSON text, by either database (analysis.capacity).
    assert agentic.slo_goodput is not None
    assert json.loads(agentic.slo_goodput) == {"interactive": {"ttft_ms": 2000.0, "interactivity": 60.0, "share": 0.75}}
    # How its settings depart from AgentX's (recipes.schema.agentx_differences), from the stored snapshot.
    assert agentic.replay_agentx_differences is not None and "time_scale 0.01 (AgentX: 1.0)" in (
        agentic.replay_agentx_differences
    )
    assert agentic.power_w_per_gpu is None  # its host sampled no power


def test_order_filters_and_columns(database: Engine) -> None:
    _seed(database)
    with open_session(database) as session:
        every = reads.list_results(session, sweep="s1")
        # Sweep, recipe name, ISL/OSL, concurrency: the imported 'a-' recipe first, the agentic 'c-' last.
        assert [view.point_key for view in every] == [
            "imported-c8", "dry-c1", "fixed-c4", "fixed-c16", "embargoed-c64", "agentic-c2",
        ]  # fmt: skip
        with_retracted = reads.list_results(session, include_retracted=True)
        assert "retracted-c32" in {view.point_key for view in with_retracted} and len(with_retracted) == 7
        public = [view.point_key for view in reads.list_results(session, public=True)]
        assert public == ["imported-c8", "fixed-c4", "fixed-c16", "agentic-c2"]  # no dry run, nothing embargoed
        assert reads.list_results(session, sweep="other") == []
        # The column-wise read is the same results, column by column, in ResultView's field order.
        columns = reads.result_columns(session, public=True)
        views = reads.list_results(session, public=True)
        assert list(columns) == list(vars(views[0]))
        assert columns == {name: [getattr(view, name) for view in views] for name in columns}
        empty = reads.result_columns(session, sweep="other")
        assert list(empty) == list(columns) and all(values == [] for values in empty.values())


def test_curve_rows_are_the_results_own_fields_and_a_read_can_name_its_sweeps(database: Engine) -> None:
    """`list_curve_rows` (the narrow read `compare` filters and picks sweeps from) gives each result's own values
    under `ResultView`'s names and types, in the same order; `list_results(sweeps=...)` the rows of those sweeps."""
    ids = _seed(database)
    with open_session(database) as session:
        recording.get_or_create_sweep(session, "s2")
        assert recording.record_point(session, _point(ids["fixed"], "later-c16", 16, sweep_id=2))
        session.commit()
        views, curves = reads.list_results(session), reads.list_curve_rows(session)
        assert [(row.sweep, row.point_key) for row in views] == [(row.sweep, row.point_key) for row in curves]
        assert len(curves) == 7  # the retracted Point left out, the dry run and embargoed ones kept, as list_results
        view_types, curve_types = get_type_hints(reads.ResultView), get_type_hints(reads.CurveRow)
        for view, curve in zip(views, curves, strict=True):
            for name in reads.CurveRow._fields:
                assert curve_types[name] == view_types[name], name
                assert getattr(curve, name) == getattr(view, name), (view.point_key, name)
            assert curve.workload == view.workload
        assert [row.point_key for row in reads.list_curve_rows(session, sweep="s2")] == ["later-c16"]
        assert [row.point_key for row in reads.list_results(session, sweeps={"s2"})] == ["later-c16"]
        assert (
            len(reads.list_results(session, sweeps={"s1", "s2"})) == 7 and reads.list_results(session, sweeps=()) == []
        )


def test_the_version_moves_with_every_change_to_the_public_results(database: Engine) -> None:
    ids = _seed(database)
    with open_session(database) as session:
        first = reads.results_version(session)
        assert reads.results_version(session) == first  # nothing changed: the same version
        assert recording.record_point(session, _point(ids["fixed"], "fixed-c128", 128))
        recorded = reads.results_version(session)
        assert recorded != first
        before = datetime.now(UTC)
        assert recording.retract(session, "engine misconfigured", "s1", "fixed-c128") == 1
        row = session.exec(select(PointResultRow).where(PointResultRow.point_key == "fixed-c128")).one()
        assert row.retraction_reason == "engine misconfigured" and row.retracted_at is not None
        assert before <= row.retracted_at.replace(tzinfo=row.retracted_at.tzinfo or UTC) <= datetime.now(UTC)
        retracted = reads.results_version(session)
        assert retracted not in {first, recorded}
        recording.embargo(session, "s1", datetime(2100, 1, 1, tzinfo=UTC))
        embargoed = reads.results_version(session)
        assert embargoed not in {first, recorded, retracted}
        # Embargoes that have run out show their points again (the seeded one too): the version moves with them.
        for row in session.exec(select(PointResultRow)).all():
            row.embargo_until = datetime(2000, 1, 1, tzinfo=UTC)
            session.add(row)
        session.commit()
        assert reads.results_version(session) == (*retracted[:3], 0)
        assert retracted[3] == 1  # before: the seeded point under a running embargo


def test_an_empty_database_has_a_version_and_no_results(database: Engine) -> None:
    with open_session(database) as session:
        assert reads.results_version(session) == (0, 0, 0, 0)
        assert reads.list_results(session, public=True) == []


def test_a_disaggregated_deployment_is_read_as_such_from_every_kind_of_snapshot(database: Engine) -> None:
    """`ResultView.disaggregated` is the fact (the configuration label only names it): our recipe's
    `parallelism.disaggregated`, an imported row's `disagg` with or without its topology, a projected
    disaggregated point's fit; a single server reads False."""
    ours = {**FIXED_SNAPSHOT, "parallelism": {"disaggregated": {"prefill": [{"tp": 4}], "decode": [{"tp": 4}]}}}
    topology = {"prefill": {"workers": 1, "tp": 4, "ep": 4, "gpus": 4},
                "decode": {"workers": 2, "tp": 8, "ep": 8, "gpus": 16, "dp_attention": True}}  # fmt: skip
    snapshots = {
        "ours": ours, "flag-only": {**IMPORTED_SNAPSHOT, "disagg": True},
        "topology": {**IMPORTED_SNAPSHOT, "disagg": True, "topology": topology},
        "projected": {"source": "projection", "model": "deepseek-r1", "parallelism_label": "disagg·x · projected",
                      "projection": {"fit": {"model_version": "disagg-decode-roofline-1", "decode_workers": 2}}},
        "single": FIXED_SNAPSHOT,
    }  # fmt: skip
    with open_session(database) as session:
        recording.get_or_create_sweep(session, "s1")
        for name, snapshot in snapshots.items():
            recipe = recording.upsert_recipe(session, f"fp-{name}", name, "", "b200", "sglang", snapshot)
            recording.create_job(session, f"job-{name}", 1, int(recipe.id), 1, 8, "")
            assert recording.record_point(session, _point(int(recipe.id), name, 8, job_id=f"job-{name}"))
        views = {view.point_key: view for view in reads.list_results(session)}
    assert {key: view.disaggregated for key, view in views.items()} == {
        "ours": True, "flag-only": True, "topology": True, "projected": True, "single": False,
    }  # fmt: skip
    split = views["topology"]
    assert (split.prefill_gpus, split.decode_gpus, split.decode_workers, split.decode_dp_attention) == (4, 16, 2, True)
    assert views["flag-only"].prefill_gpus is None  # no topology: no split to project from
