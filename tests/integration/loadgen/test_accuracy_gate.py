"""The accuracy gate through a real endpoint: the simulated engine fails it, a correct stub passes it,
dummy weights skip it, and the local runner marks every Point of a failed gate invalid."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from orchestrator.plan import expand_points
from recipes.loader import parse_recipe
from recipes.schema import (
    ACCURACY_QUESTION_SETS,
    DUMMY_WEIGHTS_REASON,
    AccuracyGate,
    GeneratedModelSource,
    PathModelSource,
)
from runners.engines.simulated_server import spawn
from runners.host.generated_model import ensure_generated_model
from runners.job import JobSpec
from runners.loadgen.accuracy import BUILTIN_QUESTIONS, normalise, run_accuracy_gate
from runners.loadgen.client import Endpoint
from runners.local import LocalRunner
from tests.conftest import SIMULATED_RECIPE, deep_update

pytestmark = [pytest.mark.timeout(120)]

REAL = PathModelSource(kind="path", path="/models/pretend-real")
GENERATED = GeneratedModelSource(kind="generated")


@pytest.fixture(scope="module")
def simulated() -> Iterator[str]:
    process, url = spawn("--ttft-ms", "1", "--itl-ms", "0.2", model="sim")
    yield url
    process.terminate()
    process.wait(timeout=10)


def served_requests(url: str) -> int:
    with urllib.request.urlopen(url + "/metrics", timeout=5) as response:
        for line in response.read().decode().splitlines():
            if line.startswith("vllm:request_success_total"):
                return int(float(line.split()[1]))
    raise AssertionError("no request counter")


def test_simulated_engine_with_real_weights_fails_the_gate(simulated: str) -> None:
    result = run_accuracy_gate(Endpoint(base_url=simulated, model="sim"), AccuracyGate(), REAL)
    assert result.ran and result.skipped_reason is None
    assert result.passed is False
    assert (result.correct, result.total, result.accuracy, result.errors) == (0, 10, 0.0, 0)
    assert result.invalid_reason == "accuracy gate failed: 0/10 correct (min 0.8)"
    assert [answer.prompt for answer in result.answers] == [q.prompt for q in BUILTIN_QUESTIONS["basic"]]
    first = result.answers[0]
    assert first.expected == ["42"] and first.answer and first.answer.split()[0].startswith("t")
    assert first.correct is False and first.error is None
    assert result.prompts == "basic" and result.prompts_version and len(result.prompts_version) == 16


def test_dummy_weights_skip_the_gate_with_the_reason(simulated: str) -> None:
    endpoint = Endpoint(base_url=simulated, model="sim")
    before = served_requests(simulated)
    generated = run_accuracy_gate(endpoint, AccuracyGate(), GENERATED)
    assert generated.skipped_reason == "dummy weights: answers are random, so accuracy cannot be judged"
    assert generated.skipped_reason == DUMMY_WEIGHTS_REASON
    assert (generated.ran, generated.passed, generated.accuracy, generated.answers) == (False, None, None, [])
    assert generated.invalid_reason is None
    dummy_flag = run_accuracy_gate(endpoint, AccuracyGate(), REAL, ["python", "-m", "x", "--load-format", "dummy"])
    assert dummy_flag.skipped_reason == DUMMY_WEIGHTS_REASON
    assert run_accuracy_gate(endpoint, AccuracyGate(), REAL, ["--load-format=dummy"]).ran is False
    disabled = run_accuracy_gate(endpoint, AccuracyGate(enabled=False, reason="base model"), REAL)
    assert disabled.skipped_reason == "disabled by the recipe: base model"
    assert served_requests(simulated) == before  # nothing was asked


# --- a stub server that answers like a real instruction model --------------------------------------

CORRECT = {
    "17 + 25": "42",
    "9 times 8": "**72**",
    "100 minus 37": "<think>100 - 37 is 63.</think>\n\n63",
    "144 divided by 12": "12.",
    "days": "Seven",
    "France": "Paris",
    "Japan": "Tokyo.",
    "Italy": "'Rome'",
    "Germany": "Berlin\n\nBerlin is the capital of Germany.",
    "gold": "Au",
}


class Stub:
    """An OpenAI-compatible chat server on loopback whose answers the test chooses."""

    def __init__(self, answer, streamed: bool = True, status: int = 200) -> None:
        self.answer, self.streamed, self.status = answer, streamed, status
        self.bodies: list[dict] = []

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.bodies.append(body)
        if self.status != 200:
            return web.json_response({"error": {"message": "stub is down"}}, status=self.status)
        text = self.answer(body["messages"][0]["content"])
        if not self.streamed:
            return web.json_response({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        pieces = [{"role": "assistant", "content": ""}] + [{"content": text[i : i + 3]} for i in range(0, len(text), 3)]
        for delta in pieces:
            chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
            await response.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        await response.write(b"data: [DONE]\n\n")
        return response


@pytest.fixture
def stub_server() -> Iterator:
    """Start a Stub on a free port in a background event loop; yields a function (stub) -> base URL."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    runners: list[web.AppRunner] = []

    def start(stub: Stub) -> str:
        async def serve() -> str:
            app = web.Application()
            app.router.add_post("/v1/chat/completions", stub.chat)
            runner = web.AppRunner(app)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            runners.append(runner)
            return f"http://127.0.0.1:{runner.addresses[0][1]}"

        return asyncio.run_coroutine_threadsafe(serve(), loop).result(timeout=10)

    yield start
    for runner in runners:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=10)


def answer_from(table: dict[str, str]):
    return lambda question: next(text for key, text in table.items() if key in question)


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "json"])
def test_correct_answers_pass_the_gate(stub_server, streamed: bool) -> None:
    stub = Stub(answer_from(CORRECT), streamed=streamed)
    url = stub_server(stub)
    result = run_accuracy_gate(Endpoint(base_url=url, model="m"), AccuracyGate(max_tokens=64), REAL)
    assert [answer.normalised for answer in result.answers if not answer.correct] == []
    assert (result.ran, result.passed, result.correct, result.total, result.accuracy) == (True, True, 10, 10, 1.0)
    assert result.invalid_reason is None
    body = stub.bodies[0]
    assert body["model"] == "m" and body["temperature"] == 0.0 and body["max_tokens"] == 64
    assert "ignore_eos" not in body  # the model must be free to stop after its short answer


def test_gate_passes_at_the_threshold_and_fails_below_it(stub_server) -> None:
    two_wrong = {**CORRECT, "France": "The capital of France is Paris.", "gold": "Ag"}
    url = stub_server(Stub(answer_from(two_wrong)))
    endpoint = Endpoint(base_url=url, model="m")
    passed = run_accuracy_gate(endpoint, AccuracyGate(min_accuracy=0.8), REAL)
    assert (passed.correct, passed.accuracy, passed.passed) == (8, 0.8, True)
    failed = run_accuracy_gate(endpoint, AccuracyGate(min_accuracy=0.9), REAL)
    assert failed.passed is False
    assert failed.invalid_reason == "accuracy gate failed: 8/10 correct (min 0.9)"
    wrong = [(answer.answer, answer.normalised) for answer in failed.answers if not answer.correct]
    assert wrong == [("The capital of France is Paris.", "the capital of france is paris"), ("Ag", "ag")]


def test_failed_requests_count_as_wrong_with_their_error(stub_server) -> None:
    url = stub_server(Stub(answer_from(CORRECT), status=500))
    result = run_accuracy_gate(Endpoint(base_url=url, model="m"), AccuracyGate(), REAL)
    assert (result.ran, result.passed, result.correct, result.errors) == (True, False, 0, 10)
    assert result.answers[0].error == 'HTTP 500: {"error": {"message": "stub is down"}}'
    assert result.invalid_reason == (
        'accuracy gate failed: 0/10 correct (min 0.8); 10 requests failed (first: HTTP 500: {"error": '
        '{"message": "stub is down"}})'
    )


def test_question_file(stub_server, tmp_path: Path) -> None:
    questions = tmp_path / "questions.yaml"
    questions.write_text(
        "questions:\n"
        "  - {prompt: 'What is 2 + 2? Answer with the number only.', answers: ['4', 'four']}\n"
        "  - {prompt: 'Name the largest planet. One word.', answers: [Jupiter]}\n"
    )
    url = stub_server(Stub(answer_from({"2 + 2": "Four.", "planet": "Saturn"})))
    result = run_accuracy_gate(Endpoint(base_url=url, model="m"), AccuracyGate(prompts=str(questions)), REAL)
    assert (result.correct, result.total, result.passed) == (1, 2, False)
    assert result.prompts == str(questions)
    assert result.invalid_reason == "accuracy gate failed: 1/2 correct (min 0.8)"


def test_builtin_sets_match_the_schema_and_their_answers_are_normal() -> None:
    assert set(BUILTIN_QUESTIONS) == set(ACCURACY_QUESTION_SETS)
    for questions in BUILTIN_QUESTIONS.values():
        for question in questions:
            assert all(normalise(answer) == answer.lower() for answer in question.answers)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("42", "42"),
        ("  **Paris**.\n", "paris"),
        ('"Rome"', "rome"),
        ("<think>\nlet me see\n</think>\n\nTokyo", "tokyo"),
        ("<think>never finished", ""),
        ("Berlin\nBerlin is the capital.", "berlin"),
        ("New   York", "new york"),
        ("", ""),
    ],
)
def test_normalisation(reply: str, expected: str) -> None:
    assert normalise(reply) == expected


# --- the local runner: gate once per job, before the first Point -----------------------------------


def test_local_runner_marks_every_point_of_a_failed_gate_invalid(tmp_path: Path) -> None:
    model_dir = ensure_generated_model("tiny-llama")  # real files, served as if they were real weights
    data = deep_update(SIMULATED_RECIPE, {"workload": {"concurrency": [1, 2], "sequences": [{"isl": 64, "osl": 8}]}})
    data["model"] = {"name": "tiny-llama", "source": {"kind": "path", "path": str(model_dir)}}
    loaded = parse_recipe(data, str(tmp_path / "recipe.yaml"))
    job_id = f"accuracy-{uuid.uuid4().hex[:10]}"
    job = JobSpec(
        job_id=job_id, sweep="accuracy-test", recipe=loaded.recipe, points=expand_points(loaded),
        log_dir=str(tmp_path / "logs" / job_id),
    )  # fmt: skip
    events = list(LocalRunner().run_job(job))
    assert [event.message for event in events if event.kind == "job_failed"] == []
    outcomes = [event.outcome for event in events if event.kind == "point_finished"]
    assert len(outcomes) == 2  # the Points still run and are recorded
    for outcome in outcomes:
        assert outcome is not None
        accuracy = outcome.metrics.accuracy
        assert accuracy is not None and accuracy.ran and accuracy.passed is False and accuracy.total == 10
        assert outcome.metrics.validity.valid is False
        assert outcome.metrics.validity.reasons[-1] == "accuracy gate failed: 0/10 correct (min 0.8)"
        assert outcome.metrics.completed > 0  # measured as usual
    # Same gate result in every Point: it ran once.
    assert outcomes[0].metrics.accuracy == outcomes[1].metrics.accuracy


def test_local_runner_records_a_skipped_gate_and_keeps_points_valid(tmp_path: Path) -> None:
    data = deep_update(SIMULATED_RECIPE, {"workload": {"concurrency": [1], "sequences": [{"isl": 64, "osl": 8}]}})
    loaded = parse_recipe(data, str(tmp_path / "recipe.yaml"))
    job_id = f"accuracy-{uuid.uuid4().hex[:10]}"
    job = JobSpec(
        job_id=job_id, sweep="accuracy-test", recipe=loaded.recipe, points=expand_points(loaded),
        log_dir=str(tmp_path / "logs" / job_id),
    )  # fmt: skip
    events = list(LocalRunner().run_job(job))
    outcome = next(event.outcome for event in events if event.kind == "point_finished")
    assert outcome is not None and outcome.metrics.accuracy is not None
    assert outcome.metrics.accuracy.skipped_reason == DUMMY_WEIGHTS_REASON
    assert outcome.metrics.validity.valid, outcome.metrics.validity.reasons
