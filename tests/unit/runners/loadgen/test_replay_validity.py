"""A replay window too small to publish is invalid, with the reason (issue 20, item 6: open-loop replay Points were
valid from 10 requests, whatever the sessions, and from any window). The rules are recipes/validity.py's checks
as the replayed origin applies them."""

from __future__ import annotations

from recipes.schema import ValidityThresholds
from recipes.validity import MIN_WINDOW_REQUEST_LIFETIMES, Evidence, judge

RULES = ValidityThresholds()


def replay_reasons(measured: int, sessions: int, duration_s: float, e2el_p50_ms: float) -> list[str]:
    """The verdict's reasons for a replay window with nothing else wrong."""
    evidence = Evidence(
        measured_requests=measured, failed_requests=0, load=sessions, load_label=f"{sessions} live sessions",
        window_s=duration_s, e2el_p50_ms=e2el_p50_ms, reached_target=True,
    )  # fmt: skip
    return list(judge("replayed", evidence, RULES).reasons)


def test_enough_requests_for_the_sessions_and_a_window_of_many_lifetimes_is_valid() -> None:
    assert replay_reasons(measured=200, sessions=64, duration_s=600.0, e2el_p50_ms=4000.0) == []


def test_fewer_requests_than_twice_the_sessions_is_invalid() -> None:
    reasons = replay_reasons(measured=100, sessions=64, duration_s=600.0, e2el_p50_ms=4000.0)
    assert reasons == ["only 100 measured requests for 64 live sessions; at least 128 needed"]
    # Below the floor too: one reason, with the sessions' minimum (not the floor's as well).
    assert replay_reasons(measured=5, sessions=64, duration_s=600.0, e2el_p50_ms=4000.0) == [
        "only 5 measured requests for 64 live sessions; at least 128 needed"
    ]


def test_a_window_shorter_than_ten_request_lifetimes_is_invalid() -> None:
    # 30 s against a median request of 4 s: 7.5 lifetimes, fewer than 10.
    reasons = replay_reasons(measured=200, sessions=8, duration_s=30.0, e2el_p50_ms=4000.0)
    assert MIN_WINDOW_REQUEST_LIFETIMES == 10
    assert reasons == [
        "window 30.0 s shorter than 10 median request lifetimes (10 x 4.00 s): too short for a steady state"
    ]
    assert replay_reasons(measured=200, sessions=8, duration_s=40.0, e2el_p50_ms=4000.0) == []
