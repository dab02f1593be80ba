"""Where an agentic replay's prompt tokens came from: HBM prefix cache, DRAM/CPU offload, or recomputed.

The engine's own counters over a Point (`PointMetrics.server`, vLLM names) split every prompt token by
the source of its KV cache (`vllm:prompt_tokens_by_source_total{source=...}`):

- `local_cache_hit`: found in the accelerator's own prefix cache (HBM);
- `external_kv_transfer`: loaded back from outside it, i.e. the DRAM/CPU offload tier (or another KV store);
- `local_compute`: prefilled again (a miss).

Each share = that source's tokens / the sum of the three. The trace's theoretical hit rate (docs/ARCHITECTURE.md §6) is
the ceiling of the first two together: `headroom` is what a bigger or better cache could still win.

An engine run without an external KV connector may report no `external_kv_transfer` series at all; with
both other sources present that means no token came from outside, so it counts as 0. Pure Python.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class PromptTierShares:
    """Shares (0–1) of one Point's prompt tokens by the source of their KV cache."""

    hbm: float
    offload: float
    recomputed: float
    prompt_tokens: float

    @property
    def hit(self) -> float:
        """Served from either cache tier: the counter-based realised hit rate."""
        return self.hbm + self.offload

    def headroom(self, theoretical_hit_rate: float | None) -> float | None:
        """Ceiling minus what was realised (negative when warm starts beat the cold ceiling); None without one."""
        if theoretical_hit_rate is None or not math.isfinite(theoretical_hit_rate):
            return None
        return theoretical_hit_rate - self.hit


def _known(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def prompt_tier_shares(
    local_cache_hit: float | None, external: float | None, local_compute: float | None
) -> PromptTierShares | None:
    """The shares from the three counter deltas; None when the engine did not report the split.

    Raises ValueError on a negative count (a counter delta cannot be negative unless the engine restarted
    mid-Point, which would make the split meaningless).
    """
    if not (_known(local_cache_hit) and _known(local_compute)):
        return None
    hbm = float(local_cache_hit)  # type: ignore[arg-type]  # _known() checked it is a finite number
    recomputed = float(local_compute)  # type: ignore[arg-type]  # _known() checked it is a finite number
    offload = float(external) if _known(external) else 0.0  # type: ignore[arg-type]  # _known() checked it is a finite number
    for name, count in (("local_cache_hit", hbm), ("external", offload), ("local_compute", recomputed)):
        if count < 0:
            raise ValueError(f"{name}: got {count}; prompt-token counter deltas cannot be negative")
    total = hbm + offload + recomputed
    if total == 0:
        return None
    return PromptTierShares(
        hbm=hbm / total, offload=offload / total, recomputed=recomputed / total, prompt_tokens=total
    )
