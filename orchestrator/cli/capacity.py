"""`infersweep capacity`: live agents each configuration serves at each SLO tier, with the Points it rests on."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from orchestrator.cli.output import console, fail
from orchestrator.cli.results import check_sweep_exists, check_tco_tier, shown_origins
from recipes.errors import ConfigurationError

if TYPE_CHECKING:
    from analysis.capacity import LoadLevel
    from recipes.slo import SloTier


def capacity(
    sweep: Annotated[str, typer.Option(help="The sweep over concurrency to read (a replay's or a fixed-length one).")],
    tier: Annotated[list[str] | None, typer.Option(help="Only this SLO tier (repeat for several).")] = None,
    tiers: Annotated[
        Path | None, typer.Option(help="Another SLO tier file, in the schema of recipes/slo_tiers.yaml.")
    ] = None,
    tco_tier: Annotated[
        str, typer.Option(help="TCO tier for agents per $/hr: owning_hyperscaler, rental_3yr or neocloud.")
    ] = "owning_hyperscaler",
    include_simulated: Annotated[
        bool, typer.Option(help="Also read simulated results (never measurements; labelled).")
    ] = False,
) -> None:
    """The most live agents each configuration serves while its Points keep an SLO tier's TTFT p90 and median
    tok/s/user, read from the measured concurrencies only (interpolated between two of them, labelled; never
    extrapolated), per accelerator, per all-in MW and per TCO dollar-hour. Tiers: recipes/slo_tiers.yaml."""
    from analysis.capacity import Capacity, capacities
    from db import reads
    from db.session import open_database, open_session
    from recipes.hardware import load_hardware_registry
    from recipes.slo import load_slo_tiers

    check_tco_tier(tco_tier, "--tco-tier")
    available = load_slo_tiers(tiers)
    unknown = [name for name in tier or [] if name not in available]
    if unknown:
        fail(ConfigurationError(f"--tier: got {', '.join(map(repr, unknown))}; the tiers are {', '.join(available)}"))
    chosen = [available[name] for name in tier] if tier else list(available.values())
    engine = open_database(writes=False)
    with open_session(engine) as session:
        check_sweep_exists(session, sweep)
        rows = reads.list_results(session, sweep=sweep)
    shown = shown_origins(include_simulated)
    kept = [row for row in rows if row.origin in shown]
    if not kept:
        origins = sorted({row.origin for row in rows})
        hint = " (add --include-simulated)" if "simulated" in origins else ""
        fail(ConfigurationError(f"--sweep: {sweep!r} has no measured results (its origins: {origins}){hint}"))
    read = capacities(kept, chosen, load_hardware_registry(), tco_tier)
    # A recipe changed between runs of one sweep (another concurrency list, say) is another configuration under the
    # same name: its fingerprint tells them apart.
    fingerprints: dict[str, set[str]] = {}
    for item in read:
        fingerprints.setdefault(item.recipe, set()).add(item.fingerprint)

    def name(item: Capacity) -> str:
        return item.recipe if len(fingerprints[item.recipe]) == 1 else f"{item.recipe} ({item.fingerprint[:8]})"

    table = Table(title=f"Live agents served at each SLO tier, sweep {sweep} ({tco_tier} TCO)")
    for column in ("recipe", "hw", "tier", "TTFT p90 ≤", "tok/s/user ≥", "agents", "read", "per accelerator",
                   "per all-in MW", "per $/hr"):  # fmt: skip
        table.add_column(column, justify="right" if column not in ("recipe", "hw", "tier", "read") else "left")
    for item in read:
        spec = next(candidate for candidate in chosen if candidate.name == item.tier)
        table.add_row(
            name(item), item.hardware, item.tier, f"{spec.ttft_p90_ms:,.0f} ms", f"{spec.interactivity_p50:g}",
            f"{'≥ ' if item.basis == 'at least' else ''}{item.agents}", item.basis, f"{item.per_accelerator:.2f}",
            "-" if item.per_all_in_mw is None else f"{item.per_all_in_mw:,.0f}",
            "-" if item.per_usd_hour is None else f"{item.per_usd_hour:.2f}",
        )  # fmt: skip
    console.print(table)
    for item in read:
        console.print(f"  {name(item)} at {item.tier}: {item.explanation}")
    inputs = Table(
        title="The Points it rests on (median of valid repeats per concurrency; per tier: whether the "
        "level serves at it, and the share of its requests that met it on their own)"
    )
    for column in ("recipe", "concurrency", "repeats", "TTFT p90 ms", "tok/s/user p50", *[t.name for t in chosen]):
        inputs.add_column(column, justify="left" if column == "recipe" else "right")
    seen = set()
    for item in read:
        if (item.fingerprint, item.sweep) in seen:
            continue
        seen.add((item.fingerprint, item.sweep))
        for level in item.levels:
            inputs.add_row(
                name(item), str(level.concurrency), str(level.repeats),
                "-" if level.ttft_p90_ms is None else f"{level.ttft_p90_ms:,.1f}",
                "-" if level.interactivity_p50 is None else f"{level.interactivity_p50:,.1f}",
                *[_served(level, spec) for spec in chosen],
            )  # fmt: skip
    console.print(inputs)
    if any(row.origin == "simulated" for row in kept):
        console.print("[yellow]Simulated results are included: a simulated engine's figures, not measurements.[/]")


def _served(level: LoadLevel, tier: SloTier) -> str:
    """'yes · 97 % of requests' / 'no · 40 % of requests': the level's verdict at the tier and its goodput share."""
    verdict = "yes" if level.serves(tier) else "no"
    share = level.goodput(tier)
    return verdict if share is None else f"{verdict} · {share:.0%} of requests"
