"""Upper bounds on the numbers a typo can blow up: far above any real deployment, far below what would
exhaust a machine before the first request is sent. One place, so the recipe schema, `infersweep bench`
and `infersweep replay` refuse the same values with the same bound named.

Where they come from: the largest concurrency InferenceX sweeps is 1,024 per deployment, and agentic loads
reach thousands of live sessions; a Point's requests are held in memory as records (about 1 KB each), so a
million is about a gigabyte; the longest contexts served today are 1-10 M tokens.
"""

from __future__ import annotations

MAX_CONCURRENCY = 65_536
MAX_PROMPTS_PER_CONCURRENCY = 10_000
MAX_REQUESTS_PER_POINT = 1_000_000
MAX_INPUT_TOKENS = 16_777_216
MAX_OUTPUT_TOKENS = 1_048_576
MAX_SECONDS = 7 * 24 * 3600.0  # any duration, deadline or cap: a week
MAX_TIME_SCALE = 1_000.0
MAX_REPLAY_PROCESSES = 256  # client processes of one replay: a host with more cores runs more engines, not one client
# Any one text of another tool's result (a model id, an image reference, a framework name): a 100 MB `image` was
# stored whole, and copied into every snapshot.
MAX_TEXT_CHARS = 4_096
