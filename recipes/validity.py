"""A result's validity: the rules a Point must pass to be published, as named checks that every origin applies.

A point is **valid** when every rule applied to it held, **invalid** when one failed, and **not checked** when the
rules that judge a measurement could not be applied: an imported aggregate row (an InferenceX `agg_bmk.json` row, a
dashboard snapshot) states figures but no request counts and no measured window, so the request rules have nothing
to read; a projection is computed, not measured. Such a row is never called "valid".

Each check has an id (quoted with every verdict and in docs/METHODOLOGY.md, generated from this registry), a
severity, its rule in one line, and the evidence fields it reads. Each origin — a Point we measured, a replayed
Point, a peer tool's file, an InferenceX row, a projection — fills the `Evidence` it has and declares the checks it
applies (`ORIGIN_CHECKS`); a check it does not apply, or whose evidence it lacks, is listed as not checked, never
passed silently. The minimum-request rule has one rounding (`minimum_requests`), so a peer's file and our own
measurement of the same requests get the same verdict. The thresholds live in each recipe's `validity:` block.
Only the standard library is imported at run time, so every floor may read it.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # the schema imports this module's ceilings: the thresholds' type only, not at run time
    from recipes.schema import ValidityThresholds

VALID, INVALID, NOT_CHECKED = "valid", "invalid", "not checked"
ValidityState = Literal["valid", "invalid", "not checked"]
STATES: tuple[str, ...] = (VALID, NOT_CHECKED, INVALID)

# What a stored figure may be (the "figures-in-range" rule): every number finite, rates and latencies not negative,
# and a throughput per accelerator no chip comes near (the fastest public rows: ~30,000 output tok/s per GPU, for
# gpt-oss-120b on GB200 NVL72), so a mistyped or corrupted figure (1e30 tok/s/GPU) is refused, not published.
MAX_TOKENS_PER_S_PER_ACCELERATOR = 1e6
MAX_LATENCY_MS = 86_400_000.0  # a day: no request of a benchmark takes longer
# The slowest a chip that finished a request can be: a token every 100 s per accelerator (a 72-GPU deployment serving
# one user at 1 tok/s gives 0.014). Below it a stated throughput is a typo or a zeroed field, not a measurement.
MIN_TOKENS_PER_S_PER_ACCELERATOR = 0.01
# A first token and a request's end come after it was sent: a zero TTFT or E2EL percentile beside positive ones is
# a field left empty. (TPOT and ITL may be zero: chunks read in one socket read share a timestamp.)
NEVER_ZERO_LATENCIES = frozenset({"ttft_ms", "e2el_ms"})

Severity = Literal["invalid"]  # every check so far makes a Point unpublishable; a warning level would go here
Origin = Literal["measured", "replayed", "peer-file", "inferencex-row", "projected"]


@dataclass(frozen=True)
class Evidence:
    """What an origin knows of one Point. None: not known to this origin (the checks needing it are not checked)."""

    measured_requests: int | None = None  # requests in the measured set (warm-up excluded), failed ones included
    failed_requests: int | None = None
    load: int | None = None  # what the minimum scales with: the concurrency, the live sessions; 0 for an open loop
    load_label: str = ""  # how the load is said in a reason ("64 live sessions"); empty for a concurrency
    token_disagreement: float | None = None  # |server − client| / server output tokens
    token_counts: tuple[int, int] | None = None  # (server, client) output tokens, quoted in the reason
    usage_problems: tuple[str, ...] | None = None  # what the streams say against the server's usage counts
    reached_target: bool | None = None  # in-flight requests reached the target concurrency (a closed loop)
    window_s: float | None = None  # the measured window's length
    short_outputs: int | None = None  # requests that returned fewer output tokens than asked (ignore_eos)
    e2el_p50_ms: float | None = None  # the median request lifetime (a replay's window must hold many)
    schedule_lag_p99_ms: float | None = None  # how late the client sent, p99 (a replay)
    max_schedule_lag_p99_ms: float | None = None  # the recipe's bound on it
    dispatch_lag_p99_ms: float | None = None  # how late the client began writing requests, p99 (a replay)
    client_cpu_share: float | None = None  # the client process's CPU time over the window's wall time
    finished: bool | None = None  # every request ran to its end (False: the run was interrupted)
    accuracy_failure: str | None = None  # the accuracy gate's reason; "" when the gate passed, None when not run
    stated: StatedFigures | None = None  # the figures a Point states (applied where results are stored)


@dataclass(frozen=True)
class StatedFigures:
    """The figures of a Point that the "figures-possible" rule reads, as every origin states them."""

    completed: int  # requests that succeeded; 0 with `failed` 0: an aggregate row that counts no requests
    failed: int
    throughputs: tuple[tuple[str, float], ...]  # (field, tokens/s per accelerator)
    # (field, ((percentile, ms), ...)), the percentiles from p50 up
    latencies: tuple[tuple[str, tuple[tuple[str, float | None], ...]], ...]


def impossible_figures(stated: StatedFigures) -> list[str]:
    """What no measurement can give though every number is finite and in range: a throughput below any chip's
    floor where requests finished (or none were counted: a row stating figures), a zero TTFT or E2EL percentile
    beside positive ones, percentiles out of order (p50 > p90 > p99)."""
    problems: list[str] = []
    if stated.completed > 0 or stated.failed == 0:  # every request failed: zero is the measurement (error-rate)
        floor = MIN_TOKENS_PER_S_PER_ACCELERATOR
        problems += [f"{name} {value:g} below {floor:g} tokens/s per accelerator, slower than any chip"
                     for name, value in stated.throughputs if value < floor]  # fmt: skip
    for name, percentiles in stated.latencies:
        known = [(part, value) for part, value in percentiles if value is not None]
        positive = next(((part, value) for part, value in known if value > 0), None)
        if name in NEVER_ZERO_LATENCIES and positive is not None:
            problems += [f"{name}.{part} 0 ms beside {name}.{positive[0]} {positive[1]:g} ms: a zero percentile "
                         "where the others are positive" for part, value in known if value == 0]  # fmt: skip
        problems += [f"{name}.{low} {low_ms:g} ms above {name}.{high} {high_ms:g} ms: percentiles out of order"
                     for (low, low_ms), (high, high_ms) in itertools.pairwise(known)
                     if low_ms > high_ms]  # fmt: skip
    return problems


@dataclass(frozen=True)
class Check:
    """One validity rule: its id, its rule in one line (as docs/METHODOLOGY.md shows it), what it reads."""

    id: str
    severity: Severity
    text: str
    kind: Literal["requests", "figures"]  # judges request records and a window, or only the stated figures
    reads: tuple[str, ...]  # Evidence fields; a check whose fields are not all known is not checked
    judge: Callable[[Evidence, ValidityThresholds], list[str]]  # the reasons it fails, none when it holds


CHECKS: dict[str, Check] = {}
_EVIDENCE = frozenset(field.name for field in dataclasses.fields(Evidence))


def _check(
    check_id: str, text: str, *reads: str, kind: Literal["requests", "figures"] = "requests"
) -> Callable[[Callable[..., list[str]]], Callable[..., list[str]]]:
    unknown = sorted(set(reads) - _EVIDENCE)
    if unknown:  # a typo in the registry, caught at import
        raise ValueError(f"check {check_id!r} reads unknown evidence {unknown}")

    def register(judge: Callable[..., list[str]]) -> Callable[..., list[str]]:
        CHECKS[check_id] = Check(check_id, "invalid", text, kind, reads, judge)
        return judge

    return register


def minimum_requests(load: int, thresholds: ValidityThresholds) -> int:
    """The one rounding of the minimum: max(floor, ⌈per-concurrency × load⌉)."""
    return max(thresholds.min_requests_floor, math.ceil(thresholds.min_requests_per_concurrency * load))


@_check("min-requests", "at least max(10, 2 × concurrency) measured requests", "measured_requests", "load")
def _min_requests(evidence: Evidence, thresholds: ValidityThresholds) -> list[str]:
    measured, load = evidence.measured_requests or 0, evidence.load or 0
    needed = minimum_requests(load, thresholds)
    if measured >= needed:
        return []
    what = f" for {evidence.load_label}" if evidence.load_label else ""
    return [f"only {measured} measured requests{what}; at least {needed} needed"]


@_check("error-rate", "error rate ≤ 10 %", "measured_requests", "failed_requests")
def _error_rate(evidence: Evidence, thresholds: ValidityThresholds) -> list[str]:
    measured, failed = evidence.measured_requests or 0, evidence.failed_requests or 0
    rate = failed / measured if measured else 1.0  # nothing measured: nothing succeeded
    if rate <= thresholds.max_error_rate:
        return []
    return [f"error rate {rate:.1%} above {thresholds.max_error_rate:.0%} ({failed} failed)"]


@_check("token-agreement", "server and client output-token counts differ by ≤ 10 %", "token_disagreement")
def _token_agreement(evidence: Evidence, thresholds: ValidityThresholds) -> list[str]:
    disagreement = evidence.token_disagreement or 0.0
    if disagreement <= thresholds.max_token_disagreement:
        return []
    counts = f", server {evidence.token_counts[0]}, client {evidence.token_counts[1]}" if evidence.token_counts else ""
    return [
        f"server and client output-token counts differ by {disagreement:.1%} "
        f"(above {thresholds.max_token_disagreement:.0%}{counts})"
    ]


@_check("usage-consistent", "the server's token usage is what the stream shows", "usage_problems")
def _usage_consistent(evidence: Evidence, thresholds: ValidityThresholds) -> list[str]:
    return list(evidence.usage_problems or ())


@_check("window", "in-flight requests reached the target concurrency, and the window is not empty",
        "reached_target", "load", "window_s")  # fmt: skip
def _window(evidence: Evidence, thresholds: ValidityThresholds) -> list[str]:
    reasons = (
        [] if evidence.reached_target else [f"in-flight requests never reached the target concurrency {evidence.load}"]
    )
    return reasons + ([] if (evidence.window_s or 0.0) > 0 else ["empty measured window"])


@_check("output-length", "every successful request returned the output length it asked for", "short_outputs")
def _output_length(evidence: Evidence, thresholds: ValidityThresholds) -> list[str]:
    short = evidence.short_outputs or 0
    return [f"{short} requests returned fewer output tokens than requested (ignore_eos not honoured?)"] if short else []


MIN_WINDOW_REQUEST_LIFETIMES = 10  # a replay window shorter than this many median requests holds the warm-up's


@_check("window-lifetimes", f"a replay window lasts at least {MIN_WINDOW_REQUEST_LIFETIMES} median request "
        "lifetimes (a steady state, not the warm-up's transient)", "window_s", "e2el_p50_ms")  # fmt: skip
def _window_lifetimes(evidence: Evidence, thresholds: ValidityThresholds) -> list[str]:
    window_s, e2el_ms = evidence.window_s or 0.0, evidence.e2el_p50_ms or 0.0
    if window_s * 1000 >= MIN_WINDOW_REQUEST_LIFETIMES * e2el_ms:
        return []
    return [
        f"window {window_s:.1f} s shorter than {MIN_WINDOW_REQUEST_LIFETIMES} median request lifetimes "
        f"({MIN_WINDOW_REQUEST_LIFETIMES} x {e2el_ms / 1000:.2f} s): too short for a steady state"
    ]


@_check("schedule-lag", "a replay's schedule lag p99 within the recipe's bound (the client kept up)",
        "schedule_lag_p99_ms", "max_schedule_lag_p99_ms")  # fmt: skip
def _schedule_lag(evidence: Evidence, thresholds: ValidityThresholds) -> list[str]:
    lag, bound = evidence.schedule_lag_p99_ms or 0.0, evidence.max_schedule_lag_p99_ms or 0.0
    if lag <= bound:
        return []
    dispatch = evidence.dispatch_lag_p99_ms
    if dispatch is None:
        who = "client or server fell behind"
    elif dispatch >= lag / 2 and (evidence.client_cpu_share or 1.0) < CLIENT_CPU_CEILING:
        # Late to begin writing with CPU to spare: the process was not given a core (vLLM on CPU beside it did so).
        who = (f"the client began writing late, dispatch lag p99 {dispatch:.0f} ms, using only "
               f"{evidence.client_cpu_share:.0%} of a core: starved of CPU by what shares its cores")  # fmt: skip
    elif dispatch >= lag / 2:  # most of the lag before the client began writing: the client's own
        who = f"client saturated: it began writing late, dispatch lag p99 {dispatch:.0f} ms"
    else:  # most of it writing the bodies: the engine read them slowly
        who = f"the engine took the requests slowly: dispatch lag p99 only {dispatch:.0f} ms"
    return [f"schedule lag p99 {lag:.0f} ms above {bound:.0f} ms ({who})"]


CLIENT_CPU_CEILING = 0.95  # a client process busier than this over a window had no idle core time left to keep time


@_check("client-saturated", f"the replay client's busiest process used under {CLIENT_CPU_CEILING:.0%} of a core over "
        "the window (else it, not the engine, may have set the pace)", "client_cpu_share")  # fmt: skip
def _client_saturated(evidence: Evidence, thresholds: ValidityThresholds) -> list[str]:
    share = evidence.client_cpu_share or 0.0
    if share < CLIENT_CPU_CEILING:
        return []
    return [
        f"client saturated: its process used {share:.0%} of a core over the window (at most "
        f"{CLIENT_CPU_CEILING:.0%}); split its lanes among more processes (workload.processes) or give it a machine "
        "of its own"
    ]


@_check("finished", "the run was not interrupted before every request finished", "finished")
def _finished(evidence: Evidence, thresholds: ValidityThresholds) -> list[str]:
    return [] if evidence.finished else ["interrupted before every request finished"]


@_check("accuracy", "the engine's answers pass the recipe's accuracy gate, where it has one", "accuracy_failure")
def _accuracy(evidence: Evidence, thresholds: ValidityThresholds) -> list[str]:
    return [evidence.accuracy_failure] if evidence.accuracy_failure else []


# Applied where results are stored, to every origin: a row with a figure out of range is refused, never stored
# (PointMetrics.out_of_range, db/finite.py), so whatever is judged here has passed it.
@_check("figures-in-range", "every stated figure is a finite, non-negative number", kind="figures")
def _figures_in_range(evidence: Evidence, thresholds: ValidityThresholds) -> list[str]:
    return []


FIGURES_POSSIBLE = "figures-possible"


# Applied where results are stored, to every origin (PointMetrics.with_figures_judged, called by the recorder): a
# Point failing it is stored invalid with the rule's id in its reason, not refused — a measured Point is a result.
@_check(FIGURES_POSSIBLE, f"throughput per accelerator at least {MIN_TOKENS_PER_S_PER_ACCELERATOR:g} tokens/s where "
        "requests finished; no zero TTFT or E2EL percentile beside positive ones; percentiles in order",
        "stated", kind="figures")  # fmt: skip
def _figures_possible(evidence: Evidence, thresholds: ValidityThresholds) -> list[str]:
    problems = impossible_figures(evidence.stated) if evidence.stated is not None else []
    return [f"impossible figures ({FIGURES_POSSIBLE}): " + "; ".join(problems)] if problems else []


_MEASURED = ("min-requests", "error-rate", "token-agreement", "usage-consistent", "window", "output-length",
             "figures-in-range", FIGURES_POSSIBLE, "finished", "accuracy")  # fmt: skip
ORIGIN_CHECKS: dict[Origin, tuple[str, ...]] = {
    "measured": _MEASURED,
    "replayed": (*_MEASURED, "window-lifetimes", "schedule-lag", "client-saturated"),
    # A peer's file holds aggregates: request counts and, where the tool says so, its own token count and whether
    # the run finished.
    "peer-file": ("min-requests", "error-rate", "token-agreement", "figures-in-range", FIGURES_POSSIBLE, "finished"),
    # An InferenceX row states figures, not requests; a projection is a model's output, not a measurement.
    "inferencex-row": ("figures-in-range", FIGURES_POSSIBLE),
    "projected": ("figures-in-range", FIGURES_POSSIBLE),
}
RULES: tuple[Check, ...] = tuple(CHECKS.values())


@dataclass(frozen=True)
class Verdict:
    reasons: tuple[str, ...]
    checked: tuple[str, ...]  # ids applied, failed or not
    not_checked: tuple[str, ...]  # ids this origin does not apply or had no evidence for

    @property
    def valid(self) -> bool:
        return not self.reasons


def judge(origin: Origin, evidence: Evidence, thresholds: ValidityThresholds) -> Verdict:
    """Every registered check, in registry order: applied where the origin applies it and its evidence is known."""
    reasons: list[str] = []
    checked: list[str] = []
    not_checked: list[str] = []
    for check in CHECKS.values():
        known = all(getattr(evidence, name) is not None for name in check.reads)
        if check.id not in ORIGIN_CHECKS[origin] or not known:
            not_checked.append(check.id)
            continue
        checked.append(check.id)
        reasons += check.judge(evidence, thresholds)
    return Verdict(tuple(reasons), tuple(checked), tuple(not_checked))


def checks_markdown() -> str:
    """The registry as a table, for docs/METHODOLOGY.md: id, rule, evidence, and the origins applying it."""
    lines = ["| check | rule | reads | applied to |", "|---|---|---|---|"]
    for check in CHECKS.values():
        origins = ", ".join(origin for origin, ids in ORIGIN_CHECKS.items() if check.id in ids) or "–"
        reads = ", ".join(f"`{name}`" for name in check.reads) or "the stored figures"
        lines.append(f"| `{check.id}` | {check.text} | {reads} | {origins} |")
    return "\n".join(lines) + "\n"


def requests_known(completed: int, failed: int) -> bool:
    """True when the result counts its requests, so the request rules could be applied to it."""
    return completed + failed > 0


def state_of(valid: bool, completed: int, failed: int) -> ValidityState:
    """'invalid' when a rule failed; 'not checked' when no request was counted (the request rules could not be
    applied); else 'valid'."""
    if not valid:
        return "invalid"
    return "valid" if requests_known(completed, failed) else "not checked"


def rules_applied(completed: int, failed: int) -> tuple[Check, ...]:
    """The rules a stored result with these counts was judged by (without request counts: the figure rules)."""
    known = requests_known(completed, failed)
    return tuple(rule for rule in RULES if known or rule.kind == "figures")


def rules_not_applied(completed: int, failed: int) -> tuple[Check, ...]:
    """The rules that had nothing to read for a stored result with these counts."""
    applied = set(rules_applied(completed, failed))
    return tuple(rule for rule in RULES if rule not in applied)
