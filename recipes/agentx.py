"""AgentX's replay constants, as InferenceX runs it (benchmarks/benchmark_lib.sh, build_replay_cmd, at 843c6254).

The one home of these numbers: the recipe schema's replay defaults, the live replayer's idle caps
(runners/loadgen/idle_caps.py), the scheduler simulation (runners/traces/scheduler_sim.py), the analytic session
timeline (runners/traces/workflow.py) and the hub all read them here. A replay whose settings depart from them is
labelled "not comparable with AgentX" (recipes.schema.agentx_differences).
"""

from __future__ import annotations

AGENTX_WINDOW_S = 3600.0  # the measured window
AGENTX_SYSTEM_IDLE_CAP_S = 10.0  # nothing in flight anywhere this long (recorded s): every pending timer advances
AGENTX_TREE_IDLE_CAP_S = 300.0  # one trajectory tree idle this long (recorded s): that tree's timers advance
AGENTX_WARMUP_REQUESTS_PER_LANE = 10  # one-token warm-up turns per lane before the window
# A request that joins subagents goes at the later of their end and its own recorded gap after the request before it
# (agentx-harness 1.0.12, aiperf/timing/branch_orchestrator.py: "a blocked join releases at the later of this deadline
# and its last child completion"); AIPerf 0.13.0 sent it as soon as they ended.
AGENTX_JOIN = "after-recorded-gap"
# When the window opens, each warm-started lane's next turn keeps its own think time less the smallest of them, so the
# earliest request of the phase goes at once (agentx-harness 1.0.12, aiperf/timing/strategies/agentic_replay.py: "one
# phase-wide minimum" subtracted from every stream's offset; `--burst-phase-starts` sends every lane's first at once).
AGENTX_PHASE_START = "less-phase-minimum"
# Its prompts' text: per hash id a slice of its tokenised Shakespeare corpus as long as the block, the prompt decoded
# (agentx-harness 1.0.12, aiperf/dataset/generator/prompt.py): natural text, whose tokenising costs the server what
# natural text costs (runners/loadgen/chat_text.py).
AGENTX_CHAT_TEXT = "corpus"
