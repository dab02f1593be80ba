"""Errors shared by every layer.

Every error says whether retrying can help (`retryable`) and quotes the bad value, so the
orchestrator can decide between "retry this job" and "record the failure and move on".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

MISSING = object()  # marks a problem about a field that is absent (no value to quote)
HIDDEN = object()  # marks a value that is never quoted (it may be a credential)


class InferSweepError(Exception):
    """Base of all project errors. `retryable` is False unless a subclass says otherwise."""

    retryable: bool = False

    def __init__(self, message: str, *, retryable: bool | None = None) -> None:
        super().__init__(message)
        if retryable is not None:
            self.retryable = retryable

    @property
    def kind(self) -> str:
        return type(self).__name__


class RecipeError(InferSweepError):
    """A recipe (or any input file) is invalid. Never retryable: the file must change."""

    def __init__(self, file: str, problems: list[tuple[str, Any, str]], what: str = "recipe") -> None:
        self.file = file
        self.problems = problems
        self.what = what
        lines = [f"{file}: invalid {what}"] + [f"  {problem(*item)}" for item in problems]
        super().__init__("\n".join(lines), retryable=False)

    def __reduce__(self) -> tuple[type[RecipeError], tuple[str, list[tuple[str, Any, str]], str]]:
        """Made again from what it was made of, where it crosses to another process (an import's worker)."""
        return type(self), (self.file, self.problems, self.what)


class InfrastructureError(InferSweepError):
    """A host, engine or network fault: the same job may succeed when retried."""

    retryable = True


class ConfigurationError(InferSweepError):
    """A setting that cannot work on this machine or engine (retrying will not help)."""

    retryable = False


def problem(field: str, value: Any, expected: str) -> str:
    """One bad field as every error and refusal prints it: the field, the value it got (no value for `MISSING`,
    never a `HIDDEN` one's) and what was expected."""
    if value is MISSING:
        got = ""
    elif value is HIDDEN:
        got = "got a value (not shown); "
    else:
        got = f"got {_quote(value)}; "
    return f"field '{field}': {got}{expected}"


def problem_of(item: Mapping[str, Any], field: str, model: type[BaseModel] | None = None) -> tuple[str, Any, str]:
    """One pydantic error item as (field, value, expected). A missing field has no value to quote (pydantic's input
    for it is the whole object that lacks it, which would bury the reason): it says so, and what the field holds
    where `model` describes it."""
    if item["type"] != "missing":
        return field, item.get("input", MISSING), item["msg"]
    known = model.model_fields.get(str(item["loc"][-1])) if model is not None and item["loc"] else None
    holds = f": {known.description}" if known is not None and known.description else ""
    return field, MISSING, f"missing (required){holds}"


def _quote(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."
