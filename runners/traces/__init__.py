"""Agentic trace replay inputs (docs/ARCHITECTURE.md §6): trace formats, prompt synthesis, theoretical hit rates.

- `models`: strict file models (Weka, Mooncake) and the normalized `Trace` / `Session` / `TraceRequest`.
- `formats`: the format registry and `load_trace(path, kind=None)`.
- `synthesis`: deterministic token-id prompts from hash ids (salted per replayed copy).
- `hit_rate`: theoretical prefix-cache hit rate, re-blocked for an engine, and with bounded LRU tiers.
"""
