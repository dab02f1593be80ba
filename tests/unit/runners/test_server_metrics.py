"""Prometheus parsing and counter deltas, on text in vLLM's own format."""

from __future__ import annotations

import pytest

from runners.server_metrics import counter_deltas, parse_prometheus

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
