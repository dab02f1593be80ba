"""The uplift of a change: how each chip's frontier moved between two states of the public results.

A change to the results (a new run, a recipe tuned, a run retracted) moves chips' frontiers. For each chip, model,
precision and workload (`economics.chip_key`, speculative decoding a workload of its own) this module compares the
envelope of its valid points before (`base`) and after (`head`):

- **frontier area**: the area the frontier dominates in the (interactivity p50 tok/s/user, output tok/s/GPU) plane,
  from the origin: with the frontier's points sorted by interactivity x1 < x2 < ... and their throughputs
  y1 > y2 > ..., area = x1·y1 + (x2 − x1)·y2 + ... (the union of the rectangles under each point: what some
  measured configuration serves at least as fast and at least as much). Nothing between points is assumed, so the
  figure follows from the rows by hand. This is the "area under the frontier" InferenceX-app's uplift requests
  (its PRs 209 and 364) ask for, in its hypervolume form;
- **at each tier** (`economics.INTERACTIVITY_TIERS`): output tok/s/GPU read on each envelope as every page reads
  a chip (`envelope.read_envelope`: monotone cubic inside the range, the slowest point below it, nothing above).

A chip in only one of the two states is reported as new or gone. Pure Python; rows are result views.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from analysis.economics import INTERACTIVITY_TIERS, chip_key
from analysis.envelope import chip_groups, envelope, output_of, read_envelope

__all__ = ["ChipUplift", "frontier_area", "uplift"]


def frontier_area(rows: Sequence[Any]) -> float:
    """The area the (interactivity, output tok/s/GPU) frontier of `rows` dominates from the origin (module doc)."""
    area, previous = 0.0, 0.0
    for row in envelope(rows):
        speed = float(row.interactivity_p50)
        area += (speed - previous) * output_of(row)
        previous = speed
    return area


@dataclass(frozen=True)
class ChipUplift:
    """One chip's frontier before and after; an area of None: the chip has no valid point in that state."""

    key: tuple[str, str, str, str]  # economics.chip_key: (model, precision, workload, hardware)
    base_area: float | None
    head_area: float | None
    base_at: dict[float, float | None]  # tier -> output tok/s/GPU read on the envelope (None: beyond its range)
    head_at: dict[float, float | None]

    @property
    def change(self) -> float | None:
        """Relative change of the frontier area (0.12: 12 % more); None for a chip new or gone."""
        if self.base_area is None or self.head_area is None or self.base_area == 0:
            return None
        return self.head_area / self.base_area - 1.0

    @property
    def status(self) -> str:
        if self.base_area is None:
            return "new"
        if self.head_area is None:
            return "gone"
        return "same" if self.base_area == self.head_area else "moved"


def uplift(base: Iterable[Any], head: Iterable[Any], tiers: Sequence[float] = INTERACTIVITY_TIERS) -> list[ChipUplift]:
    """Each chip's frontier in `base` and in `head` (the valid rows of each state), in the order of their keys."""
    before, after = chip_groups(base, chip_key), chip_groups(head, chip_key)

    def reads(rows: list[Any] | None) -> dict[float, float | None]:
        frontier = envelope(rows) if rows else []
        values = {tier: read_envelope(frontier, tier, output_of) for tier in tiers}
        return {tier: value.value if value is not None else None for tier, value in values.items()}

    return [
        ChipUplift(
            cast(tuple[str, str, str, str], key),
            frontier_area(before[key]) if key in before else None,
            frontier_area(after[key]) if key in after else None,
            reads(before.get(key)),
            reads(after.get(key)),
        )
        for key in sorted({*before, *after}, key=str)
    ]
