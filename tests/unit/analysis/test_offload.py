"""The DRAM offload map against a case computed by hand.

Corpus: 4 conversations of 20 turns, each turn re-sending the same 10-block prompt (16-token blocks, 160 tokens)
and producing one block (16 tokens), replayed by the capacity planner without warm start. The chip's cache holds
100 blocks in HBM and 200 more in DRAM. By hand:
- a lane keeps 11 blocks live (its prompt and its newest output block), so HBM alone holds every lane up to
  floor(100 / 11) = 9 lanes, and with DRAM up to floor(300 / 11) = 27;
- a hit covers the prompt but its last block (always recomputed) after each lane's first turn: 9/10 x 19/20 = 0.855;
- above 9 lanes HBM alone thrashes (LRU over a working set larger than itself): at 10 lanes 11 of 110 blocks'
  worth survive (0.095), from 11 none.
At 1,000 prompt tokens/s and 100 output tokens/s per accelerator, one request takes 160 x (1 - h) / 1000 +
16 / 100 s: 0.1832 s at h = 0.855, 0.3048 s at 0.095 and 0.32 s at 0. So offload saves nothing up to 9 lanes and
1 - 0.1832 / 0.3048 = 39.9 % at 10, 42.75 % from 11: it pays (>= 10 %) above concurrency 9 and not below.
"""

from __future__ import annotations

import pytest

from analysis.offload import ServingRates, offload_map, planned_hits
from runners.traces.models import Session, Trace, TraceRequest

BLOCK, PROMPT_BLOCKS, TURNS = 16, 10, 20


def _conversation(index: int) -> Session:
    turns = tuple(
        TraceRequest(key=f"{index}:{turn}", t=float(turn), input_tokens=PROMPT_BLOCKS * BLOCK, output_tokens=BLOCK,
                     hash_ids=tuple(range(PROMPT_BLOCKS)))
        for turn in range(TURNS)
    )  # fmt: skip
    return Session(path=str(index), id=f"conversation-{index}", start=0.0, requests=turns)


CORPUS = Trace(id="hand", kind="weka", block_size=BLOCK, hash_id_scope="session", content_hash="hand",
               sessions=tuple(_conversation(index) for index in range(4)))  # fmt: skip
RATES = ServingRates(interactivity=50, decode_per_gpu=100, prefill_per_gpu=1000, usd_per_gpu_hour=2.0)


def test_offload_pays_above_the_concurrency_computed_by_hand_and_not_below() -> None:
    concurrencies = [4, 8, 9, 10, 11, 16, 27]
    hits = planned_hits(CORPUS, concurrencies, BLOCK, hbm_blocks=100, dram_blocks=200, requests_per_lane=TURNS,
                        warmup=False)  # fmt: skip
    cells = {cell.concurrency: cell for cell in offload_map(hits, [RATES])}
    for concurrency in (4, 8, 9):
        assert cells[concurrency].hits.hbm_only == pytest.approx(0.855)
        assert cells[concurrency].saving == pytest.approx(0.0) and not cells[concurrency].pays
    assert cells[10].hits.hbm_only == pytest.approx(0.095)
    assert cells[10].saving == pytest.approx(1 - 0.1832 / 0.3048)
    for concurrency in (11, 16, 27):
        cell = cells[concurrency]
        assert (cell.hits.hbm_only, cell.hits.with_dram) == (0.0, pytest.approx(0.855))
        assert cell.saving == pytest.approx(0.4275) and cell.pays
        assert cell.throughput_gain == pytest.approx(0.32 / 0.1832 - 1)  # 74.7 % more requests per GPU-second
        assert cell.prefill_tokens_saved == pytest.approx(0.855 * 160)
        # $2/accelerator-hour: 0.32 s -> $11.11 per M output tokens, 0.1832 s -> $6.36.
        assert cell.usd_per_million_output(with_dram=False) == pytest.approx(2 / 3600 * 0.32 / 16 * 1e6)
        assert cell.usd_per_million_output(with_dram=True) == pytest.approx(2 / 3600 * 0.1832 / 16 * 1e6)
    assert min(c for c, cell in cells.items() if cell.pays) == 10


def test_the_threshold_is_the_bar() -> None:
    hits = planned_hits(CORPUS, [16], BLOCK, hbm_blocks=100, dram_blocks=200, requests_per_lane=TURNS, warmup=False)
    [cell] = offload_map(hits, [RATES], threshold=0.5)
    assert cell.saving == pytest.approx(0.4275) and not cell.pays


def test_the_dram_budget_follows_inferencex_rule_on_the_registry() -> None:
    from recipes.hardware import load_hardware_registry, offload_budget_gib

    registry = load_hardware_registry()
    # min(host DRAM, 3 TB) x 0.8 x GPUs / GPUs per node, in GiB.
    assert offload_budget_gib(registry["b200"], 8) == pytest.approx(2048 * 0.8 * 1e9 / 2**30)  # one DGX B200
    assert offload_budget_gib(registry["gb200-nvl72"], 8) == pytest.approx(960 * 0.8 * 2 * 1e9 / 2**30)  # two trays
    assert offload_budget_gib(registry["mi355x"], 8) is None  # the OEM's figure, not in the registry
