"""Server-side counters: scrape an engine's Prometheus `/metrics` before and after a Point, keep the deltas.

Realized prefix-cache hits come from the server's own counters over the measured Point (docs/ARCHITECTURE.md §6),
cross-checked with the per-request `cached_tokens` the client saw. Only counters are differenced; a
counter that is missing (another engine, an older version) stays None rather than being guessed.
"""

from __future__ import annotations

import math
import re
import urllib.error
import urllib.request
from collections import defaultdict

from pydantic import Field

from recipes.strict import StrictModel
from runners.loadgen.records import ServerCounters

Samples = dict[str, dict[tuple[tuple[str, str], ...], float]]
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')  # values may hold commas and escapes


def parse_prometheus(text: str) -> Samples:
    """Prometheus text exposition -> {metric name: {sorted label pairs: value}}. Comments are skipped.

    A line is `name{labels} value [timestamp]` or `name value [timestamp]`; label values may hold spaces.
    """
    samples: Samples = defaultdict(dict)
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "{" in line:
            name, _, remainder = line.partition("{")
            label_text, _, rest = remainder.rpartition("}")
        else:
            name, _, rest = line.partition(" ")
            label_text = ""
        fields = rest.split()
        if not fields:
            continue
        try:
            value = float(fields[0])
        except ValueError:
            continue  # not a sample line we understand
        labels = [(key, value_text.replace('\\"', '"')) for key, value_text in _LABEL.findall(label_text)]
        samples[name.strip()][tuple(sorted(labels))] = value
    return dict(samples)


def scrape_text(url: str, timeout_s: float = 5.0) -> str | None:
    """The server's /metrics text as served (kept as an artifact), or None when it cannot be read."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 - the engine's own URL
            return response.read().decode("utf-8", errors="replace")
    except (urllib.error.URLError, OSError, TimeoutError):
        return None


def scrape(url: str, timeout_s: float = 5.0) -> Samples | None:
    """The server's samples, or None when /metrics cannot be read (the Point is still measured)."""
    text = scrape_text(url, timeout_s)
    return parse_prometheus(text) if text is not None else None


def _total(samples: Samples, name: str, **labels: str) -> float | None:
    series = samples.get(name) or samples.get(name.removesuffix("_total"))
    if not series:
        return None
    wanted = set(labels.items())
    values = [value for key, value in series.items() if wanted <= set(key) and math.isfinite(value)]
    return sum(values) if values else None


# The Prometheus series (and label filter) behind each ServerCounters field, per engine: how a Point's counters are
# read from the engine's /metrics, and under which series the recorder stores each one. Each engine adapter names its
# table (`EngineAdapter.counter_series`); a field its engine has no series for is absent, and reads as None.
CounterSeries = dict[str, tuple[str, dict[str, str]]]
VLLM_COUNTER_SERIES: CounterSeries = {
    "prompt_tokens": ("vllm:prompt_tokens_total", {}),
    "generation_tokens": ("vllm:generation_tokens_total", {}),
    "prefix_cache_queries": ("vllm:prefix_cache_queries_total", {}),
    "prefix_cache_hits": ("vllm:prefix_cache_hits_total", {}),
    "prompt_tokens_local_compute": ("vllm:prompt_tokens_by_source_total", {"source": "local_compute"}),
    "prompt_tokens_local_cache_hit": ("vllm:prompt_tokens_by_source_total", {"source": "local_cache_hit"}),
    "prompt_tokens_external": ("vllm:prompt_tokens_by_source_total", {"source": "external_kv_transfer"}),
    "preemptions": ("vllm:num_preemptions_total", {}),
    # Tier traffic of vLLM's KV offloading (CPU offload connector): bytes and transfer time per direction.
    "kv_offload_bytes_to_host": ("vllm:kv_offload_total_bytes_total", {"transfer_type": "GPU_to_CPU"}),
    "kv_offload_bytes_to_device": ("vllm:kv_offload_total_bytes_total", {"transfer_type": "CPU_to_GPU"}),
    "kv_offload_seconds_to_host": ("vllm:kv_offload_total_time_total", {"transfer_type": "GPU_to_CPU"}),
    "kv_offload_seconds_to_device": ("vllm:kv_offload_total_time_total", {"transfer_type": "CPU_to_GPU"}),
    # Dynamo's frontend beside vLLM workers: its KV router's predicted overlap.
    "router_overlap_sum": ("dynamo_component_router_kv_hit_rate_sum", {}),
    "router_overlap_count": ("dynamo_component_router_kv_hit_rate_count", {}),
}
# SGLang (`--enable-metrics`; ../shared/reference/peer-tools.md): every prompt token is looked up in the radix cache,
# and `cached_tokens` says where each hit came from: the device (HBM), HiCache's host tier (DRAM) or its storage tier.
# It publishes no per-direction byte counters of HiCache traffic, nor tokens computed (left None, not derived).
SGLANG_COUNTER_SERIES: CounterSeries = {
    "prompt_tokens": ("sglang:prompt_tokens_total", {}),
    "generation_tokens": ("sglang:generation_tokens_total", {}),
    "prefix_cache_queries": ("sglang:prompt_tokens_total", {}),
    "prefix_cache_hits": ("sglang:cached_tokens_total", {}),
    "prompt_tokens_local_cache_hit": ("sglang:cached_tokens_total", {"cache_source": "device"}),
    "prompt_tokens_external": ("sglang:cached_tokens_total", {"cache_source": "host"}),
}
COUNTER_SERIES: dict[str, CounterSeries] = {"vllm": VLLM_COUNTER_SERIES, "sglang": SGLANG_COUNTER_SERIES}


def counter_deltas(before: Samples | None, after: Samples | None, series: str = "vllm") -> ServerCounters | None:
    """The deltas of the counters of table `series` (COUNTER_SERIES) between two scrapes of the engine's /metrics."""
    if before is None or after is None:
        return None

    def delta(name: str, **labels: str) -> float | None:
        start, end = _total(before, name, **labels), _total(after, name, **labels)
        return None if start is None or end is None else end - start

    read = {name: delta(metric, **labels) for name, (metric, labels) in COUNTER_SERIES[series].items()}
    return ServerCounters(series=series, **read)


class CacheShape(StrictModel):
    """The engine's KV cache as it reports it (`vllm:cache_config_info` labels), for capacity planning."""

    block_size: int = Field(gt=0, description="Tokens per block.")
    gpu_blocks: int | None = Field(description="Blocks of the accelerator-memory cache (None: not reported).")
    cpu_blocks: int = Field(0, ge=0, description="Blocks of a CPU/DRAM offload tier (0: none reported).")


def _count(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None


def cache_shape(samples: Samples | None) -> CacheShape | None:
    """The cache shape from `vllm:cache_config_info`, or None when the engine does not report it."""
    series = (samples or {}).get("vllm:cache_config_info")
    if not series:
        return None
    labels = dict(next(iter(series)))
    block_size = _count(labels.get("block_size"))
    if not block_size:
        return None
    return CacheShape(
        block_size=block_size, gpu_blocks=_count(labels.get("num_gpu_blocks")),
        cpu_blocks=_count(labels.get("num_cpu_blocks")) or 0,
    )  # fmt: skip
