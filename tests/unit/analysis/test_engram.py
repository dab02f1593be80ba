"""The Engram what-if against a case worked by hand, and the registry figures it stands on."""

from __future__ import annotations

import pytest

from analysis.engram import EngramTable, OperatingPoint, what_if
from recipes.hardware import load_hardware_registry
from recipes.model_registry import load_model_registry

# DeepSeek-R1 (61 layers, MLA: 61 x (512 + 64) x 2 bytes of bf16 KV per token) on B200 (PCIe Gen5 x16 to the
# host, 63 GB/s, 10 µs per transfer; NVMe 14 GB/s, 2.7 M IOPS, 80 µs), the first Engram layer at index 1 (the
# paper's placement: the start of the second layer), 50 tok/s/user (a 20 ms step) with 64 sequences a step,
# 16 lookups per token of 2,560-byte rows, a 100 GB table.
TABLE = EngramTable(table_gb=100, lookups_per_token=16, bytes_per_embedding=2560, first_layer=1)
POINT = OperatingPoint(interactivity=50, batch=64)
# By hand:
BUDGET_US = 20_000 / 61  # one layer of a 20 ms step: 327.87 µs
DRAM_US = 10 + 64 * 16 * 2560 / 63e9 * 1e6  # 1,024 rows, 2.62 MB: 10 + 41.61 = 51.61 µs -> hidden
SSD_US = 80 + 1024 / 2.7e6 * 1e6  # 1,024 random reads at 2.7 M IOPS (379.3 µs) beat 1,024 x 4 KiB / 14 GB/s
SEQUENCES = 100e9 / (61 * 576 * 2 * 9216)  # 100 GB of KV at 647.6 MB per 9,216-token sequence: 154.4


def test_the_hand_worked_case() -> None:
    verdicts = {v.tier: v for v in what_if(TABLE, POINT, load_hardware_registry()["b200"],
                                           load_model_registry()["deepseek-r1"], 9216)}  # fmt: skip
    dram, ssd, hbm = verdicts["host-dram"], verdicts["local-ssd"], verdicts["hbm"]
    assert dram.budget_us == pytest.approx(BUDGET_US) == pytest.approx(327.87, abs=0.01)
    assert dram.fetch_us == pytest.approx(DRAM_US) == pytest.approx(51.61, abs=0.01)
    assert dram.hidden is True and dram.slack_us == pytest.approx(BUDGET_US - DRAM_US)
    assert ssd.fetch_us == pytest.approx(SSD_US) == pytest.approx(459.26, abs=0.01)
    assert ssd.hidden is False
    assert dram.hbm_freed_gb == ssd.hbm_freed_gb == 100 and hbm.hbm_freed_gb == 0
    assert dram.extra_sequences == pytest.approx(SEQUENCES) == pytest.approx(154.4, abs=0.1)
    assert hbm.hidden is True


def test_placing_the_layer_later_hides_the_ssd_fetch_too() -> None:
    later = TABLE.model_copy(update={"first_layer": 2})  # two layers: 655.7 µs > 459.3 µs
    verdicts = {v.tier: v for v in what_if(later, POINT, load_hardware_registry()["b200"],
                                           load_model_registry()["deepseek-r1"], 9216)}  # fmt: skip
    assert verdicts["local-ssd"].hidden is True


def test_an_unpublished_link_is_unknown_not_guessed() -> None:
    verdicts = {v.tier: v for v in what_if(TABLE, POINT, load_hardware_registry()["tpu-v7"],
                                           load_model_registry()["deepseek-r1"], 9216)}  # fmt: skip
    assert verdicts["host-dram"].hidden is None and verdicts["host-dram"].fetch_us is None


def test_a_layer_past_the_model_is_an_error() -> None:
    with pytest.raises(ValueError, match="first_layer: got 61; the model has 61 layers"):
        what_if(TABLE.model_copy(update={"first_layer": 61}), POINT, load_hardware_registry()["b200"],
                load_model_registry()["deepseek-r1"], 9216)  # fmt: skip


def test_every_link_figure_has_a_source_and_a_null_says_why() -> None:
    for key, hardware in load_hardware_registry().items():
        figures = []
        if hardware.host_link is not None:
            figures += [hardware.host_link.bandwidth_gbps, hardware.host_link.latency_us]
        if hardware.local_ssd is not None:
            ssd = hardware.local_ssd
            figures += [ssd.read_gbps, ssd.read_iops, ssd.latency_us]
        if key != "cpu-local":
            assert figures, key
        for figure in figures:
            assert figure.source.strip() and figure.as_of
            assert figure.value is not None or figure.note, key
