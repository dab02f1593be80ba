"""Loading the shipped Mooncake traces, against a target of 1 s each (a test asserted this before; timing lives
here now: tests only check what a load returns).

The peer in the same script is the floor no trace parser can beat: `json.loads` of every line of the same file
(no validation, no sessions). Three runs each, best of three reported, with the machine's load average.

Run: .venv/bin/python -m benchmarks.trace_load
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from runners.traces.formats import load_trace

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "traces" / "mooncake" / name for name in ("conversation_trace.jsonl", "synthetic_trace.jsonl")]
TARGET_S = 1.0


def best_of(runs: int, work) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.2f} (1 min)")
    for path in FILES:
        ours = best_of(3, lambda path=path: load_trace(path))
        floor = best_of(3, lambda path=path: [json.loads(line) for line in path.read_text().splitlines() if line])
        verdict = "met" if ours < TARGET_S else "NOT met"
        print(f"{path.name}: load_trace {ours:.3f} s (target < {TARGET_S:g} s: {verdict}); json.loads of every line "
              f"{floor:.3f} s; ratio {ours / floor:.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()
