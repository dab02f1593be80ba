"""The peer tools' native files, read as load levels in our definitions.

Every file under tests/data/peers/ was written by the tool itself, on this machine, against the simulated engine
(TTFT 30 ms, ITL 4 ms): how each was made is in tests/data/peers/README.md. The figures asserted are the tools'
own, read from the same file, so a reader that maps a field wrongly fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from orchestrator.importers.peer_formats import PEER_FORMATS
from recipes.errors import RecipeError
from recipes.schema import ValidityThresholds

PEERS = Path(__file__).parents[4] / "tests" / "data" / "peers"
THRESHOLDS = ValidityThresholds()


def read(format_name: str, path: Path, accelerators: int = 1):
    return PEER_FORMATS[format_name].read(path, accelerators, THRESHOLDS)


def test_aiperf_export_in_our_definitions() -> None:
    path = PEERS / "aiperf" / "aiperf-c4.json"
    raw = json.loads(path.read_text())
    peer = read("aiperf", path, accelerators=2)
    assert peer.tool == "AIPerf 0.13.0" and peer.model == "tiny-llama" and not peer.refused
    [level] = peer.levels
    metrics = level.metrics
    assert (level.concurrency, level.isl, level.osl) == (4, 256, 64)  # the phase and the synthetic dataset
    assert metrics.completed == raw["request_count"]["avg"] and metrics.failed == 0
    # Output tokens are the server's usage; throughput is that total over AIPerf's duration, per accelerator.
    assert metrics.total_output_tokens == raw["total_usage_completion_tokens"]["avg"]
    duration = raw["benchmark_duration"]["avg"]
    assert metrics.output_throughput_per_gpu == pytest.approx(
        raw["total_usage_completion_tokens"]["avg"] / duration / 2
    )
    # AIPerf's inter-token latency is per request (latency - TTFT) / (OSL - 1): our TPOT.
    assert metrics.tpot_ms.p50 == pytest.approx(raw["inter_token_latency"]["p50"])
    assert metrics.itl_ms.p50 == pytest.approx(raw["inter_chunk_latency"]["p50"])
    assert metrics.interactivity.p90 == pytest.approx(1000 / raw["inter_token_latency"]["p90"])
    assert metrics.ttft_ms.p99 == pytest.approx(raw["time_to_first_token"]["p99"])
    assert metrics.validity.valid and level.measured_at is not None
    assert metrics.peer_figures == {"aiperf_output_token_throughput": raw["output_token_throughput"]["avg"]}


def test_aiperf_failed_requests_come_from_the_error_count() -> None:
    path = PEERS / "aiperf" / "aiperf-c4-errors.json"
    raw = json.loads(path.read_text())
    [level] = read("aiperf", path).levels
    # AIPerf's completed_request_count counts failures too; request_count only the successful.
    assert raw["completed_request_count"]["avg"] == raw["request_count"]["avg"] + raw["error_request_count"]["avg"]
    assert (level.metrics.completed, level.metrics.failed) == (56, 8)
    assert level.metrics.validity.reasons == ["error rate 12.5% above 10% (8 failed)"]


def test_aiperf_own_token_count_against_the_server_is_our_disagreement_rule() -> None:
    """Run without --use-server-token-count: AIPerf counted the streamed text with its tokenizer (185 tokens a
    request) where the server said 64, so its TPOT is 3x too short. We keep the server's count and say so."""
    [level] = read("aiperf", PEERS / "aiperf" / "aiperf-c4-client-count.json").levels
    assert level.metrics.total_output_tokens == 64 * 64
    assert level.metrics.token_disagreement > 1.0
    assert not level.metrics.validity.valid
    # One wording for every origin (recipes/validity.py's token-agreement check).
    assert level.metrics.validity.reasons[0].startswith("server and client output-token counts differ by")


def test_aiperf_artifact_directory_is_read_through_its_export(tmp_path: Path) -> None:
    (tmp_path / "profile_export_aiperf.json").write_text((PEERS / "aiperf" / "aiperf-c8.json").read_text())
    [level] = read("aiperf", tmp_path).levels
    assert level.concurrency == 8


def test_aiperf_request_rate_phase_is_refused_alone(tmp_path: Path) -> None:
    raw = json.loads((PEERS / "aiperf" / "aiperf-c4.json").read_text())
    for phase in raw["input_config"]["phases"]:
        phase.update(type="request_rate", rate=5.0)
        phase.pop("concurrency")
    path = tmp_path / "rate.json"
    path.write_text(json.dumps(raw))
    peer = read("aiperf", path)
    assert not peer.levels
    [refusal] = peer.refused
    assert refusal.field == "input_config.phases[profiling].request_rate" and refusal.value == 5.0


def test_guidellm_report_levels_and_refusals() -> None:
    path = PEERS / "guidellm" / "concurrent.json"
    raw = json.loads(path.read_text())
    peer = read("guidellm", path)
    assert peer.tool == "GuideLLM 0.8.1" and peer.model == "tiny-llama"
    assert [(level.concurrency, level.isl, level.osl) for level in peer.levels] == [
        (1, 256, 64),
        (4, 256, 64),
        (8, 256, 64),
    ]
    for level, benchmark in zip(peer.levels, raw["benchmarks"], strict=True):
        own = benchmark["metrics"]
        assert level.metrics.completed == own["request_totals"]["successful"]
        # Rates are totals over the duration, which is what GuideLLM's own mean rate is.
        assert level.metrics.request_throughput == pytest.approx(
            own["requests_per_second"]["successful"]["mean"], rel=1e-3
        )
        assert level.metrics.output_throughput == pytest.approx(
            own["output_tokens_per_second"]["successful"]["mean"], rel=1e-3
        )
        # GuideLLM's inter-token latency is our TPOT; its own TPOT (first token included) is kept apart.
        assert level.metrics.tpot_ms.p50 == pytest.approx(own["inter_token_latency_ms"]["successful"]["median"])
        assert level.metrics.e2el_ms.p50 == pytest.approx(1000 * own["request_latency"]["successful"]["median"])
        assert level.metrics.peer_figures == {
            "guidellm_time_per_output_token_ms_mean": own["time_per_output_token_ms"]["successful"]["mean"]
        }
    sweep = read("guidellm", PEERS / "guidellm" / "sweep.json")
    assert [level.concurrency for level in sweep.levels] == [1]  # synchronous
    assert [(refusal.index, refusal.value) for refusal in sweep.refused] == [
        (1, "throughput"),
        (2, "constant at 20.71 req/s"),
        (3, "constant at 37.99 req/s"),
    ]
    assert sweep.levels[0].metrics.failed == 5 and not sweep.levels[0].metrics.validity.valid


def test_llmd_report_of_guidellm_matches_guidellm_itself() -> None:
    """llm-d's converter turned the GuideLLM file above into one report per level: read either way, the figures
    are the same, though the report names GuideLLM's TPOT-with-first-token `time_per_output_token`."""
    direct = read("guidellm", PEERS / "guidellm" / "concurrent.json").levels
    for streams, level in zip((1, 4, 8), direct, strict=True):
        [converted] = read("llm-d", PEERS / "llm-d" / f"guidellm-c{streams}.yaml").levels
        assert converted.concurrency == streams and (converted.isl, converted.osl) == (256, 64)
        for name in ("tpot_ms", "ttft_ms", "e2el_ms"):
            assert getattr(converted.metrics, name).p50 == pytest.approx(getattr(level.metrics, name).p50, rel=1e-6)
        assert converted.metrics.output_throughput == pytest.approx(level.metrics.output_throughput, rel=1e-3)


def test_llmd_report_of_vllm_bench_reads_its_tpot_and_needs_lengths() -> None:
    path = PEERS / "llm-d" / "vllm-bench.yaml"
    raw = yaml.safe_load(path.read_text())
    [level] = read("llm-d", path).levels
    tpot = raw["results"]["request_performance"]["aggregate"]["latency"]["time_per_output_token"]
    assert level.metrics.tpot_ms.p50 == pytest.approx(tpot["p50"])  # ms/token already
    # The converter writes vLLM's measured mean prompt length (53.975) where the nominal length goes: not ours.
    assert (level.isl, level.osl) == (None, None)


def test_llmd_report_without_concurrency_is_refused() -> None:
    """llm-d's converter of AIPerf 0.13 exports looks for the concurrency under `input_config.loadgen`, where
    older exports kept it, so this real report states none."""
    peer = read("llm-d", PEERS / "llm-d" / "aiperf-c4.yaml")
    assert not peer.levels
    assert [(r.field, r.value) for r in peer.refused] == [("scenario.load.standardized.concurrency", "<missing>")]


def test_llmd_report_with_other_accelerators_than_the_recipe_is_refused(tmp_path: Path) -> None:
    raw = yaml.safe_load((PEERS / "llm-d" / "guidellm-c4.yaml").read_text())
    raw["scenario"]["stack"] = [{"standardized": {"kind": "inference_engine", "replicas": 2,
                                                  "accelerator": {"count": 4}}}]  # fmt: skip
    path = tmp_path / "br.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(RecipeError) as caught:
        read("llm-d", path, accelerators=2)
    assert "accelerator.count': got 8" in str(caught.value) and "recipe's 2 accelerators" in str(caught.value)
    assert read("llm-d", path, accelerators=8).levels


@pytest.mark.parametrize("format_name", sorted(PEER_FORMATS))
def test_a_file_of_another_kind_names_the_file_and_field(format_name: str, tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"completed": "many"}))
    with pytest.raises(RecipeError) as caught:
        read(format_name, path)
    assert str(path) in str(caught.value) and "field '" in str(caught.value)


def test_a_missing_field_is_named_missing_not_quoted_as_the_object_that_lacks_it(tmp_path: Path) -> None:
    # pydantic gives the whole object as the input of a missing field: quoting it buried the field in its siblings.
    raw = json.loads((PEERS / "aiperf" / "aiperf-c4.json").read_text())
    del raw["request_count"]
    path = tmp_path / "aiperf.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(RecipeError) as caught:
        read("aiperf", path)
    message = str(caught.value)
    assert "field 'request_count': missing (required)" in message, message
    assert "got {" not in message and "time_to_first_token" not in message


@pytest.mark.parametrize(
    ("where", "value", "field"),
    [
        (("phases", 0, "duration"), 1e12, "input_config.phases[profiling].duration"),
        (("datasets", 0, "trace_idle_gap_cap_seconds"), -1, "input_config.datasets.0.trace_idle_gap_cap_seconds"),
        (("phases", 0, "timing_mode"), "fixed_schedule", "input_config.phases[profiling].timing_mode"),
    ],
)
def test_an_agentx_run_no_replay_point_can_hold_is_refused_naming_the_harness_field(
    tmp_path: Path, where: tuple[str | int, ...], value: object, field: str
) -> None:
    """The AgentX harness's replay settings become a replay Point's: a value none can have, or a run that is no trace
    replay, refuses the run naming the field of the harness's file (never a traceback)."""
    run = tmp_path / "run"
    (run / "traces").mkdir(parents=True)
    source = PEERS / "agentx" / "profile"
    (run / "traces" / "trace.json").write_bytes((source / "traces" / "sample_trace_agentx.json").read_bytes())
    export = json.loads((source / "profile_export_aiperf.json").read_text())
    holder = export["input_config"]
    for key in where[:-1]:
        holder = holder[key]
    holder[where[-1]] = value
    (run / "profile_export_aiperf.json").write_text(json.dumps(export))
    try:
        peer = read("agentx", run)
    except RecipeError as error:  # beyond what the harness itself allows: the whole file, naming the field
        assert f"field '{field}': got {value!r}" in str(error), error
        return
    assert peer.levels == [] and [refusal.field for refusal in peer.refused] == [field], peer.refused
