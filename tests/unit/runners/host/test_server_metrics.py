"""Prometheus parsing and counter deltas, on text in vLLM's own format."""

from __future__ import annotations

import pytest

from runners.engines.simulated_server import PrefixCache
from runners.host.server_metrics import cache_shape, counter_deltas, parse_prometheus

BEFORE = """# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="tiny-llama"} 1000.0
vllm:prefix_cache_hits_total{engine="0",model_name="tiny-llama"} 250.0
vllm:prompt_tokens_by_source_total{engine="0",model_name="tiny-llama",source="local_compute"} 750.0
vllm:prompt_tokens_by_source_total{engine="0",model_name="tiny-llama",source="local_cache_hit"} 250.0
vllm:kv_cache_usage_perc{engine="0",model_name="tiny-llama"} 0.25
vllm:prompt_tokens_total{engine="0",model_name="tiny-llama"} 1000.0 1795945377000
vllm:cache_config_info{block_size="128",cache_dtype="auto",enable_prefix_caching="True, with spaces"} 1.0
"""
AFTER = (
    BEFORE.replace('queries_total{engine="0",model_name="tiny-llama"} 1000.0', 'queries_total{engine="0",model_name="tiny-llama"} 3000.0')
    .replace('hits_total{engine="0",model_name="tiny-llama"} 250.0', 'hits_total{engine="0",model_name="tiny-llama"} 1850.0')
    .replace("} 1000.0 1795945377000", "} 3000.0 1795945399000")
)  # fmt: skip


def test_parse_labels_values_and_timestamps() -> None:
    samples = parse_prometheus(BEFORE)
    key = (("engine", "0"), ("model_name", "tiny-llama"))
    assert samples["vllm:prefix_cache_queries_total"][key] == 1000.0
    assert samples["vllm:prompt_tokens_total"][key] == 1000.0  # the trailing timestamp is not the value
    info = samples["vllm:cache_config_info"]
    assert dict(next(iter(info)))["enable_prefix_caching"] == "True, with spaces"


def test_deltas_and_hit_rate() -> None:
    deltas = counter_deltas(parse_prometheus(BEFORE), parse_prometheus(AFTER))
    assert deltas is not None
    assert deltas.prefix_cache_queries == 2000.0 and deltas.prefix_cache_hits == 1600.0
    assert deltas.prefix_hit_rate == pytest.approx(0.8)
    assert deltas.prompt_tokens == 2000.0
    assert deltas.prompt_tokens_local_compute == 0.0  # unchanged between the scrapes
    assert deltas.preemptions is None  # not exposed: unknown, never guessed as 0
    assert counter_deltas(None, parse_prometheus(AFTER)) is None


def test_cache_shape_from_vllm_cache_config_info() -> None:
    # vLLM renders every CacheConfig field as a string label; unset counts are the string "None".
    text = (
        'vllm:cache_config_info{block_size="128",cache_dtype="auto",enable_prefix_caching="True",engine="0",'
        'num_cpu_blocks="None",num_gpu_blocks="64",num_gpu_blocks_override="64"} 1.0\n'
    )
    shape = cache_shape(parse_prometheus(text))
    assert shape is not None and (shape.block_size, shape.gpu_blocks, shape.cpu_blocks) == (128, 64, 0)
    assert cache_shape(parse_prometheus(BEFORE)) == type(shape)(block_size=128, gpu_blocks=None, cpu_blocks=0)
    assert cache_shape(None) is None and cache_shape(parse_prometheus("vllm:prompt_tokens_total 1\n")) is None


def test_simulated_cache_splits_hits_between_hbm_and_dram() -> None:
    cache = PrefixCache(block_size=2, capacity_blocks=2, dram_blocks=4)
    first, second = [1, 2, 3, 4, 5], [9, 8, 7, 6, 5]
    assert cache.lookup_and_insert(first) == (0, 0)  # blocks (1 2) (3 4) cached in HBM
    assert cache.lookup_and_insert(second) == (0, 0)  # (9 8) (7 6) take HBM; (1 2) (3 4) move to DRAM
    # Both of `first`'s blocks are in DRAM now: a whole-prompt hit, loaded back (the last token is computed).
    assert cache.lookup_and_insert(first) == (0, 4)
    assert cache.lookup_and_insert(first) == (4, 0)  # promoted back into HBM by the previous lookup
    without_dram = PrefixCache(block_size=2, capacity_blocks=2)
    for prompt in (first, second):
        without_dram.lookup_and_insert(prompt)
    assert without_dram.lookup_and_insert(first) == (0, 0)  # evicted for good


# Dynamo's frontend, two workers: the router's predicted overlap is a histogram (sum and count per worker).
DYNAMO_BEFORE = """# TYPE dynamo_component_router_kv_hit_rate histogram
dynamo_component_router_kv_hit_rate_sum{dynamo_component="backend",worker_id="a"} 1.5
dynamo_component_router_kv_hit_rate_count{dynamo_component="backend",worker_id="a"} 3
dynamo_component_router_kv_hit_rate_sum{dynamo_component="backend",worker_id="b"} 0.5
dynamo_component_router_kv_hit_rate_count{dynamo_component="backend",worker_id="b"} 1
"""
DYNAMO_AFTER = DYNAMO_BEFORE.replace('"a"} 1.5', '"a"} 4.5').replace('"a"} 3', '"a"} 7').replace('"b"} 1\n', '"b"} 2\n')


def test_dynamo_router_overlap_is_kept_apart_from_realised_hits() -> None:
    deltas = counter_deltas(parse_prometheus(DYNAMO_BEFORE), parse_prometheus(DYNAMO_AFTER))
    assert deltas is not None
    assert (deltas.router_overlap_sum, deltas.router_overlap_count) == (3.0, 5.0)  # both workers, this window only
    assert deltas.router_predicted_hit_rate == pytest.approx(0.6)
    assert deltas.prefix_hit_rate is None  # no worker counters: nothing realised is claimed


SGLANG_BEFORE = """# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="m"} 10000.0
sglang:generation_tokens_total{model_name="m"} 500.0
sglang:cached_tokens_total{model_name="m",cache_source="device"} 4000.0
sglang:cached_tokens_total{model_name="m",cache_source="host"} 1000.0
sglang:cached_tokens_total{model_name="m",cache_source="storage"} 0.0
sglang:hicache_host_used_tokens{model_name="m"} 65536.0
"""
SGLANG_AFTER = """sglang:prompt_tokens_total{model_name="m"} 30000.0
sglang:generation_tokens_total{model_name="m"} 900.0
sglang:cached_tokens_total{model_name="m",cache_source="device"} 12000.0
sglang:cached_tokens_total{model_name="m",cache_source="host"} 7000.0
sglang:cached_tokens_total{model_name="m",cache_source="storage"} 500.0
"""


def test_sglang_counters_are_read_by_sglangs_own_series() -> None:
    """By hand: 20,000 prompt tokens over the Point, 8,000 hit HBM (device), 6,000 came back from HiCache's host (DRAM)
    tier and 500 from its storage tier: 14,500 hits in all. SGLang states no tokens computed or bytes moved (None)."""
    from runners.engines.registry import engine_adapter

    series = engine_adapter("sglang").counter_series
    deltas = counter_deltas(parse_prometheus(SGLANG_BEFORE), parse_prometheus(SGLANG_AFTER), series)
    assert deltas is not None and deltas.series == "sglang"
    assert (deltas.prompt_tokens, deltas.generation_tokens) == (20000.0, 400.0)
    assert (deltas.prompt_tokens_local_cache_hit, deltas.prompt_tokens_external) == (8000.0, 6000.0)
    assert deltas.prefix_cache_hits == 14500.0 and deltas.prefix_hit_rate == pytest.approx(0.725)
    assert deltas.prompt_tokens_local_compute is None and deltas.kv_offload_bytes_to_device is None
    # vLLM's table finds nothing in SGLang's text: every figure unknown, none guessed.
    vllm = counter_deltas(parse_prometheus(SGLANG_BEFORE), parse_prometheus(SGLANG_AFTER))
    assert vllm is not None and vllm.series == "vllm" and vllm.prompt_tokens is None


def test_every_adapter_names_a_series_table() -> None:
    from runners.engines.base import ENGINE_ADAPTERS
    from runners.engines.registry import BUILTIN_ADAPTERS
    from runners.host.server_metrics import COUNTER_SERIES

    assert BUILTIN_ADAPTERS and all(adapter.counter_series in COUNTER_SERIES for adapter in ENGINE_ADAPTERS.values())
