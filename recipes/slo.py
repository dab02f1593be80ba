"""SLO tiers: the latency and speed a Point must keep to count as serving its agents at a tier.

`recipes/slo_tiers.yaml` holds one entry per tier: the largest TTFT p90 (ms) and the smallest median output speed
per user (tok/s/user) of a Point that serves at the tier, and the `source` of the thresholds. The capacity read
(`analysis.capacity`, `infersweep capacity`) counts the live agents a configuration serves at each
tier. Validated strictly like the other registries (recipes/keyed_file.py): a problem names the file and field.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from recipes.keyed_file import KeyedFile
from recipes.strict import StrictModel

DEFAULT_PATH = Path(__file__).with_name("slo_tiers.yaml")
_NAME_PATTERN = r"^[a-z][a-z0-9-]*$"


class SloTierSpec(StrictModel):
    """One tier as written in the file (the mapping key is its name)."""

    ttft_p90_ms: float = Field(
        ..., gt=0, allow_inf_nan=False, description="Largest TTFT p90 of a Point at the tier, ms."
    )
    interactivity_p50: float = Field(
        ..., gt=0, allow_inf_nan=False,
        description="Smallest median output speed per user of a Point at the tier, tok/s/user (1000 / TPOT p50).",
    )  # fmt: skip
    source: str = Field(..., min_length=1, description="Where the thresholds come from, and why these.")
    note: str | None = Field(None, min_length=1, description="Caveat.")


class SloTier(SloTierSpec):
    """One tier, with its name."""

    name: str = Field(..., pattern=_NAME_PATTERN, description="Tier name, e.g. 'interactive'.")


_FILE = KeyedFile(
    default_path=DEFAULT_PATH, what="SLO tiers", section="tiers", spec=SloTierSpec, entry=SloTier,
    key_field="name", key_pattern=_NAME_PATTERN, key_rule="lower-case names like 'interactive' (letters, digits, '-')",
)  # fmt: skip

# Load and validate them; the path defaults to `slo_tiers.yaml` next to this module.
load_slo_tiers = _FILE.load
