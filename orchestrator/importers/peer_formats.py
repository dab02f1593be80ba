"""The peer tools whose native result files `infersweep import <name>` reads, by name."""

from __future__ import annotations

from orchestrator.importers.agentx import AGENTX
from orchestrator.importers.aiperf import AIPERF
from orchestrator.importers.guidellm import GUIDELLM
from orchestrator.importers.llmd_report import LLMD_REPORT
from orchestrator.importers.peers import PeerFormat
from orchestrator.importers.vllm_bench import VLLM_BENCH

PEER_FORMATS: dict[str, PeerFormat] = {
    reader.name: reader for reader in (VLLM_BENCH, AIPERF, GUIDELLM, LLMD_REPORT, AGENTX)
}
