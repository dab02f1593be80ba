"""The accuracy gate: a quick correctness check through the endpoint before the first Point.

A fast engine that answers garbage (a broken quantisation, a wrong chat template, corrupted weights) is
not a result. Before measuring, the runner asks a handful of questions with unambiguous short answers
(`methodology.accuracy_gate`: a built-in set, or a YAML question file) through the OpenAI-compatible
chat endpoint, one at a time, at temperature 0, and scores exact matches after normalisation. The
`AccuracyResult` is stored with every Point; when the gate ran and failed, every Point of the job is
marked invalid (it still runs: an invalid benchmark is a result, not an error). With dummy weights the
gate is skipped and the reason recorded. Definitions: docs/METHODOLOGY.md.

No request failure raises: a question whose request fails is answered wrong, with the error kept.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from recipes.schema import (
    ACCURACY_QUESTION_SETS,
    DUMMY_WEIGHTS_REASON,
    AccuracyGate,
    AccuracyQuestion,
    AccuracyQuestionFile,
    GeneratedModelSource,
    HubModelSource,
    PathModelSource,
    serves_dummy_weights,
)
from recipes.yamlio import load_validated
from runners.loadgen.client import Endpoint
from runners.loadgen.records import AccuracyAnswer, AccuracyResult

ERROR_TEXT_LIMIT = 300


def _q(prompt: str, *answers: str) -> AccuracyQuestion:
    return AccuracyQuestion(prompt=prompt, answers=list(answers))


# Built-in question sets: facts and arithmetic any served chat model gets right, each with one short answer.
BUILTIN_QUESTIONS: dict[str, tuple[AccuracyQuestion, ...]] = {
    "basic": (
        _q("What is 17 + 25? Answer with the number only.", "42"),
        _q("What is 9 times 8? Answer with the number only.", "72"),
        _q("What is 100 minus 37? Answer with the number only.", "63"),
        _q("What is 144 divided by 12? Answer with the number only.", "12"),
        _q("How many days are there in a week? Answer with the number only.", "7", "seven"),
        _q("What is the capital of France? Answer with the city name only.", "Paris"),
        _q("What is the capital of Japan? Answer with the city name only.", "Tokyo"),
        _q("What is the capital of Italy? Answer with the city name only.", "Rome"),
        _q("What is the capital of Germany? Answer with the city name only.", "Berlin"),
        _q("What is the chemical symbol for gold? Answer with the symbol only.", "Au"),
    ),
}


def load_questions(prompts: str) -> tuple[AccuracyQuestion, ...]:
    """The questions of a built-in set, or of a YAML question file (raises RecipeError when invalid)."""
    if prompts in ACCURACY_QUESTION_SETS:
        return BUILTIN_QUESTIONS[prompts]
    return tuple(load_validated(Path(prompts), AccuracyQuestionFile, "accuracy question file").questions)


def questions_version(questions: Sequence[AccuracyQuestion]) -> str:
    canonical = json.dumps([question.model_dump() for question in questions], sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
_EDGE = re.compile(r"^[\s\"'`*_.,:;!?()\[\]]+|[\s\"'`*_.,:;!?()\[\]]+$")


def normalise(text: str) -> str:
    """Compare answers as text a human would: reasoning (<think>...) dropped, the first non-empty line,
    lowercase, markdown emphasis, quotes, brackets and surrounding punctuation stripped, spaces collapsed."""
    text = _THINK.sub("", text)
    line = next((candidate for candidate in text.splitlines() if candidate.strip()), "")
    line = _EDGE.sub("", line.strip().lower())
    return " ".join(line.split())


def _error_text(error: BaseException) -> str:
    if isinstance(error, urllib.error.HTTPError):
        body = error.read().decode(errors="replace")[:ERROR_TEXT_LIMIT]
        return f"HTTP {error.code}: {body}"
    return f"{type(error).__name__}: {str(error)[:ERROR_TEXT_LIMIT]}"


def _reply_text(raw: bytes) -> str:
    """The generated text of a chat response: streamed (SSE `data:` lines) or one JSON document."""
    text = raw.decode(errors="replace")
    if text.lstrip().startswith("data:"):
        parts = []
        for line in text.splitlines():
            payload = line.strip()[5:].strip() if line.strip().startswith("data:") else ""
            if not payload or payload == "[DONE]":
                continue
            chunk = json.loads(payload)
            if not isinstance(chunk, dict):
                raise ValueError(f"stream chunk is not an object: {payload[:ERROR_TEXT_LIMIT]}")
            if "error" in chunk:
                raise ValueError(f"server error in stream: {str(chunk['error'])[:ERROR_TEXT_LIMIT]}")
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") if isinstance(choice, dict) else None
                content = delta.get("content") if isinstance(delta, dict) else None
                if isinstance(content, str):
                    parts.append(content)
        return "".join(parts)
    document = json.loads(text)
    choices = document.get("choices") if isinstance(document, dict) else None
    if not choices or not isinstance(choices[0], dict):
        raise ValueError(f"response has no choices: {text[:ERROR_TEXT_LIMIT]}")
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else ""


def ask(endpoint: Endpoint, prompt: str, max_tokens: int, timeout_s: float) -> str:
    """One chat question at temperature 0 (the engine stops at end of sequence); the reply's text."""
    body = {
        "model": endpoint.model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "stream": True,
    }
    headers = {"Content-Type": "application/json"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    url = endpoint.base_url.rstrip("/") + "/v1/chat/completions"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")  # noqa: S310 - the engine's URL
    with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
        return _reply_text(response.read())


def skipped(gate: AccuracyGate, reason: str) -> AccuracyResult:
    return AccuracyResult(ran=False, skipped_reason=reason, prompts=gate.prompts, min_accuracy=gate.min_accuracy)


def run_accuracy_gate(
    endpoint: Endpoint,
    gate: AccuracyGate,
    model_source: GeneratedModelSource | HubModelSource | PathModelSource,
    engine_args: Sequence[str] = (),
) -> AccuracyResult:
    """Ask the gate's questions through `endpoint`; skipped for dummy weights or when disabled.

    `engine_args` is the engine's command line (a `--load-format dummy` there means random weights)."""
    if serves_dummy_weights(model_source, list(engine_args)):
        return skipped(gate, DUMMY_WEIGHTS_REASON)
    if not gate.enabled:
        return skipped(gate, f"disabled by the recipe: {gate.reason or 'no reason given'}")
    questions = load_questions(gate.prompts)
    started = time.perf_counter()
    answers = []
    for question in questions:
        expected = {normalise(answer) for answer in question.answers}
        try:
            reply = ask(endpoint, question.prompt, gate.max_tokens, gate.request_timeout_s)
        except (OSError, ValueError, http.client.HTTPException) as error:  # URLError, timeouts: OSError
            answers.append(
                AccuracyAnswer(
                    prompt=question.prompt,
                    expected=question.answers,
                    answer=None,
                    normalised=None,
                    correct=False,
                    error=_error_text(error),
                )
            )
            continue
        normalised = normalise(reply)
        answers.append(
            AccuracyAnswer(
                prompt=question.prompt,
                expected=question.answers,
                answer=reply,
                normalised=normalised,
                correct=normalised in expected,
            )
        )
    correct = sum(answer.correct for answer in answers)
    accuracy = correct / len(answers)
    return AccuracyResult(
        ran=True,
        prompts=gate.prompts,
        prompts_version=questions_version(questions),
        correct=correct,
        total=len(answers),
        accuracy=accuracy,
        min_accuracy=gate.min_accuracy,
        passed=accuracy >= gate.min_accuracy,
        errors=sum(answer.error is not None for answer in answers),
        duration_s=time.perf_counter() - started,
        answers=answers,
    )
