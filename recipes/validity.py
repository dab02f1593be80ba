"""A result's validity state, and which of the validity rules could be applied to it.

A point is **valid** when every rule held, **invalid** when one failed, and **not checked** when the rules that
judge a measurement could not be applied: an imported aggregate row (an InferenceX `agg_bmk.json` row, a
dashboard snapshot) states figures but no request counts and no measured window, so the request rules (enough
requests, error rate, token agreement, usage, window, output lengths) have nothing to read; a projection is
computed, not measured. Such a row is never called "valid": only the figure-range rule held for it.

The rules are named here once (ids and one line each, as docs/METRICS.md's "Validity verdict" states them); the
thresholds live in each recipe's `validity:` block and the measurement's verdict in `runners/loadgen/metrics.py`.
Only the standard library is imported, so every floor may read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

VALID, INVALID, NOT_CHECKED = "valid", "invalid", "not checked"
ValidityState = Literal["valid", "invalid", "not checked"]
STATES: tuple[str, ...] = (VALID, NOT_CHECKED, INVALID)


@dataclass(frozen=True)
class Rule:
    """One validity rule: its id, what it asks, and what it needs to be applied."""

    id: str
    text: str
    needs: Literal["requests", "figures"]  # request records and a measured window, or only the stated figures


RULES: tuple[Rule, ...] = (
    Rule("min-requests", "at least max(10, 2 × concurrency) measured requests", "requests"),
    Rule("error-rate", "error rate ≤ 10 %", "requests"),
    Rule("token-agreement", "server and client output-token counts differ by ≤ 10 %", "requests"),
    Rule("usage-consistent", "the server's token usage is what the stream shows", "requests"),
    Rule("window", "in-flight requests reached the target concurrency, and the window is not empty", "requests"),
    Rule("output-length", "every successful request returned the output length it asked for", "requests"),
    Rule("figures-in-range", "every stated figure is a finite, non-negative number", "figures"),
)


# What a stored figure may be (the "figures-in-range" rule): every number finite, rates and latencies not negative,
# and a throughput per accelerator no chip comes near (the fastest public rows: ~30,000 output tok/s per GPU, for
# gpt-oss-120b on GB200 NVL72), so a mistyped or corrupted figure (1e30 tok/s/GPU) is refused, not published.
MAX_TOKENS_PER_S_PER_ACCELERATOR = 1e6
MAX_LATENCY_MS = 86_400_000.0  # a day: no request of a benchmark takes longer


def requests_known(completed: int, failed: int) -> bool:
    """True when the result counts its requests, so the request rules could be applied to it."""
    return completed + failed > 0


def state_of(valid: bool, completed: int, failed: int) -> ValidityState:
    """'invalid' when a rule failed; 'not checked' when no request was counted (the request rules could not be
    applied); else 'valid'."""
    if not valid:
        return "invalid"
    return "valid" if requests_known(completed, failed) else "not checked"


def rules_applied(completed: int, failed: int) -> tuple[Rule, ...]:
    """The rules a result with these counts was judged by."""
    known = requests_known(completed, failed)
    return tuple(rule for rule in RULES if known or rule.needs == "figures")


def rules_not_applied(completed: int, failed: int) -> tuple[Rule, ...]:
    """The rules that had nothing to read for a result with these counts."""
    applied = set(rules_applied(completed, failed))
    return tuple(rule for rule in RULES if rule not in applied)


__all__ = [
    "INVALID",
    "MAX_LATENCY_MS",
    "MAX_TOKENS_PER_S_PER_ACCELERATOR",
    "NOT_CHECKED",
    "RULES",
    "STATES",
    "VALID",
    "Rule",
    "ValidityState",
    "requests_known",
    "rules_applied",
    "rules_not_applied",
    "state_of",
]
