"""`infersweep recipe validate` as a user runs it: the whole catalogue validates, and a recipe whose engine
would refuse the trace's longest prompt is a message naming the field, not a traceback. Moved from the unit tier:
it starts the CLI as a process (tests/unit/orchestrator/test_servable.py holds the rule's unit tests)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli
from tests.unit.orchestrator.test_servable import BEFORE, b300_agentic


def test_the_catalogue_validates_and_a_refusal_is_a_message_not_a_traceback(tmp_path: Path) -> None:
    assert run_cli("recipe", "validate", "recipes/").returncode == 0
    refused = run_cli("recipe", "validate", str(b300_agentic(tmp_path, BEFORE)))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr + refused.stdout
    assert "engine.max_num_batched_tokens" in refused.stderr and "88,834" in refused.stderr
