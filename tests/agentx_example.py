"""AgentX's idle-cap example as a two-conversation corpus, one conversation per lane (issue: replay as AgentX does).

Lane A's first answer is one token, then A thinks 200 s. Lane B answers one token, thinks 1 s, answers
`b_answer_tokens` tokens (long enough to keep the system busy until 61 s at the engine's speed), then thinks
1,000 s. With AgentX's caps (10 s whole system, 300 s per tree) A's second request goes 71 s after A's first
answer ended. The replayer's integration test and the scheduler model's unit test both replay it.
"""

from __future__ import annotations

import json


def agentx_example_corpus(b_answer_tokens: int) -> str:
    a = [
        {"t": 0.0, "type": "s", "in": 8, "out": 1, "hash_ids": [1]},
        {"t": 200.0, "type": "s", "in": 12, "out": 1, "hash_ids": [1, 2], "think_time": 200.0},
    ]
    b = [{"t": 0.0, "type": "s", "in": 8, "out": 1, "hash_ids": [5]},
         {"t": 1.0, "type": "s", "in": 12, "out": b_answer_tokens, "hash_ids": [5, 6], "think_time": 1.0},
         {"t": 1061.0, "type": "s", "in": 16, "out": 1, "hash_ids": [5, 6, 7], "think_time": 1000.0}]  # fmt: skip
    lines = [json.dumps({"id": name, "block_size": 4, "requests": requests}) for name, requests in (("a", a), ("b", b))]
    return "\n".join(lines) + "\n"
