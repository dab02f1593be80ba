"""Sum a suite run's test timings per worker (INFERSWEEP_TEST_TIMINGS, tests/conftest.py): the busiest worker is
the suite's critical path.

Run: .venv/bin/python -m tests.timings FILE [--top 15]
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--top", type=int, default=15, help="the slowest tests of the busiest worker")
    args = parser.parse_args()
    per_worker: dict[str, float] = defaultdict(float)
    per_test: dict[tuple[str, str], float] = defaultdict(float)
    for line in args.file.read_text().splitlines():
        worker, seconds, _phase, test = line.split("\t", 3)
        per_worker[worker] += float(seconds)
        per_test[(worker, test)] += float(seconds)
    for worker, total in sorted(per_worker.items(), key=lambda item: -item[1]):
        count = sum(1 for key in per_test if key[0] == worker)
        print(f"{worker}: {total:7.1f} s in {count} tests")
    busiest = max(per_worker, key=per_worker.__getitem__)
    print(f"\nslowest of {busiest}:")
    slowest = sorted(((s, t) for (w, t), s in per_test.items() if w == busiest), reverse=True)[: args.top]
    for seconds, test in slowest:
        print(f"{seconds:7.1f} s  {test}")


if __name__ == "__main__":
    main()
