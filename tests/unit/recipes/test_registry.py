"""The one plugin registry: a taken name is refused, naming both plugins; built-ins are all registered."""

from __future__ import annotations

import pytest

from recipes.registry import Registry
from recipes.rules import RULES
from runners.engines.registry import ENGINE_ADAPTERS
from runners.host.container_registry import container_runtime
from runners.job import RUNNERS, Runner, register_runner
from runners.registry import runner_class
from runners.traces.formats import TRACE_FORMATS


def test_a_second_plugin_under_a_taken_name_is_refused_naming_both() -> None:
    registry: Registry[type] = Registry("widget")

    class First: ...

    class Second: ...

    registry.register("w", First)
    registry.register("w", First)  # the same plugin again (a module imported twice) is no conflict
    with pytest.raises(ValueError, match="widget 'w' registered twice") as raised:
        registry.register("w", Second)
    assert "First" in str(raised.value) and "Second" in str(raised.value)
    assert registry["w"] is First


def test_a_runner_kind_cannot_replace_a_built_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("runners.job.RUNNERS", RUNNERS.copy())

    class Impostor(Runner):
        kind = "local"

    with pytest.raises(ValueError, match=r"runner kind 'local' registered twice.*LocalRunner.*Impostor"):
        register_runner(Impostor)
    assert runner_class("local").__name__ == "LocalRunner"


def test_every_built_in_is_registered() -> None:
    assert set(RUNNERS) >= {"local", "noop", "ssh", "slurm", "tpu-vm"}
    assert set(ENGINE_ADAPTERS) >= {"vllm", "sglang", "trtllm", "dynamo", "simulated", "vllm-tpu"}
    assert {container_runtime(name).name for name in ("docker", "podman", "pyxis")} == {"docker", "podman", "pyxis"}
    assert set(TRACE_FORMATS) >= {"weka", "mooncake"} and len(RULES) > 10
    assert all(isinstance(registry, Registry) for registry in (RUNNERS, ENGINE_ADAPTERS, TRACE_FORMATS, RULES))
