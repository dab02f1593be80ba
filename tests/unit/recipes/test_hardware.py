"""The hardware registry loads, covers the reference table, and gives every figure a source and date."""

from __future__ import annotations

from pathlib import Path

import pytest

from recipes.errors import RecipeError
from recipes.hardware import Figure, Hardware, load_hardware_registry, pool_resource_name

# Keys of the accelerator table in shared/reference/hardware.md.
REFERENCE_KEYS = {
    "h100", "h200", "b200", "b300", "gb200-nvl72", "gb300-nvl72", "vr200-nvl72",
    "tpu-v7", "mi300x", "mi325x", "mi355x",
}  # fmt: skip


def _figures(hardware: Hardware) -> list[tuple[str, Figure]]:
    found: list[tuple[str, Figure]] = []
    for name in type(hardware).model_fields:
        value = getattr(hardware, name)
        if isinstance(value, Figure):
            found.append((name, value))
        elif isinstance(value, dict):
            found.extend((f"{name}.{tier}", fig) for tier, fig in value.items() if isinstance(fig, Figure))
    return found


def test_every_reference_accelerator_is_present() -> None:
    registry = load_hardware_registry()
    missing = REFERENCE_KEYS - set(registry)
    assert not missing, missing
    for key, hardware in registry.items():
        assert hardware.key == key


def test_every_figure_has_source_and_date() -> None:
    for key, hardware in load_hardware_registry().items():
        figures = _figures(hardware)
        assert figures, key
        for name, figure in figures:
            assert figure.source.strip(), f"{key}.{name}"
            assert len(figure.as_of) == 7 and figure.as_of[4] == "-", f"{key}.{name}"
            if figure.value is None:
                assert figure.note, f"{key}.{name}: null value without a note"


def test_cpu_local_is_the_host() -> None:
    cpu = load_hardware_registry()["cpu-local"]
    assert cpu.accelerator_unit == "host"
    assert cpu.memory_gb.value is None and cpu.memory_gb.note
    # One illustrative figure, so the local demo's first page shows a cost; said so where it is written.
    assert set(cpu.tco_usd_per_gpu_hour) == {"owning_hyperscaler"}
    assert cpu.tco("owning_hyperscaler") == pytest.approx(0.10)
    assert "illustrative" in (cpu.tco_usd_per_gpu_hour["owning_hyperscaler"].note or "")
    assert cpu.tco("rental_3yr") is None
    assert pool_resource_name("cpu-local") == "pool:cpu-local"


def test_tco_tiers() -> None:
    registry = load_hardware_registry()
    assert registry["h100"].tco("rental_3yr") == pytest.approx(2.00)
    assert registry["tpu-v7"].tco("neocloud") is None
    with pytest.raises(ValueError):
        registry["h100"].tco("spot")


def test_unknown_key_names_file_and_field(tmp_path: Path) -> None:
    text = Path(__file__).parents[3].joinpath("recipes", "hardware.yaml").read_text(encoding="utf-8")
    bad = tmp_path / "hardware.yaml"
    bad.write_text(text.replace("    memory_type: HBM3e\n", "    memory_type: HBM3e\n    colour: green\n", 1))
    with pytest.raises(RecipeError) as caught:
        load_hardware_registry(bad)
    message = str(caught.value)
    assert str(bad) in message
    assert "accelerators.h200.colour" in message
    assert caught.value.retryable is False


def test_bad_value_names_field_path(tmp_path: Path) -> None:
    bad = tmp_path / "hw.yaml"
    bad.write_text(
        "schema_version: 1\n"
        "accelerators:\n"
        "  x1:\n"
        "    vendor: V\n    name: X\n    accelerator_unit: gpu\n"
        "    memory_gb: {value: lots, unit: GB, source: s, as_of: '2026-01'}\n"
        "    memory_type: HBM3\n"
        "    memory_bandwidth_tbps: {value: null, unit: TB/s, source: s, as_of: '2026-13'}\n"
        "    dense_fp8_pflops: null\n    dense_fp4_pflops: null\n"
        "    tdp_w: {value: 1, unit: W, source: s, as_of: '2026-01'}\n"
        "    all_in_kw: null\n    gpus_per_node: 8\n    scale_up_domain: 8\n"
        "    interconnect: none\n    provisioning: [local]\n    tco_usd_per_gpu_hour: {}\n"
    )
    with pytest.raises(RecipeError) as caught:
        load_hardware_registry(bad)
    fields = {field for field, _, _ in caught.value.problems}
    assert "accelerators.x1.memory_gb.value" in fields
    assert "accelerators.x1.memory_bandwidth_tbps.as_of" in fields
    assert all(expected.startswith("expected: ") for _, _, expected in caught.value.problems)
