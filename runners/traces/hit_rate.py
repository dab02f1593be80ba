"""Theoretical prefix-cache hit rate of a trace (docs/ARCHITECTURE.md §6): unbounded, re-blocked for an engine, and LRU.

Walk. Requests are visited in `Trace.timeline()` order: recorded send time, Weka subagents placed at their
spawn offsets (so their requests interleave with the parent's), Mooncake lines by timestamp; file order
breaks ties. Each request is looked up, then its blocks are added, before the next one: requests never
overlap, in-flight blocks are not pinned.

Cache scope. One cache per scope: the whole trace when `hash_id_scope` is global, one per root session
(with its subagents) when it is session. A subagent shares its root's cache (`subagent_cache="shared"`, the
content-addressed prefix cache of vLLM/SGLang, and docs/ARCHITECTURE.md's "shared with subagents": sibling subagents
re-use each other's tools+system prefix); `"isolated"` gives every subagent a fresh cache of its own, as the
`simulate_cache` sketch of TRACE_FORMAT.md does.

Unbounded (`theoretical_hit_rate`). A request's run r = the longest leading run of its hash ids already
seen in its scope; its hit = min(r·b, input) tokens at the trace's block size b; the rate is Σ hit / Σ input.

Re-blocking (`HitRate.rebase(B)`) for an engine caching B-token blocks (128 for vLLM on CPU). Tokens
[0, r·b) of the request lie in trace blocks that were hits; token r·b onwards does not (block r missed, or
it is the filler tail the trace never shares). Engine block i holds tokens [i·B, (i+1)·B). It is reusable
iff every trace block overlapping it was a hit (chained ids: a hit trace block means an earlier prompt had
the same content up to that block's end, and that prompt's engine block i was full since it reached that
far). The trace blocks overlapping engine block i are j = ⌊i·B / b⌋ .. ⌊((i+1)·B − 1) / b⌋, and all are hits
iff the last one is, i.e. iff ⌊((i+1)·B − 1) / b⌋ < r, i.e. iff (i+1)·B ≤ r·b. So the hit engine blocks are
exactly the first ⌊r·b / B⌋, whether B is a multiple of b, a divisor, or neither (a trace block straddling
the end of engine block i must be a hit as a whole, which is what the last-token condition says).
The engine also never uses the prompt's last token from cache (it must compute it to get logits):
- `recompute="block"` (vLLM v1, the default): the lookup is limited to the first input − 1 tokens *before*
  rounding to blocks (`max_cache_hit_length = num_tokens - 1`), so hit = B·⌊min(r·b, input − 1) / B⌋; a
  prompt that is an exact multiple of B and fully cached recomputes its whole last block.
- `recompute="token"`: hit = min(B·⌊min(r·b, input) / B⌋, input − 1), for engines that can recompute a
  single token (page size 1 radix caches).
Either way the re-blocked hit never exceeds the trace-level one: it loses every prompt's hit tail that does
not fill an engine block, plus the last-token cap.

Bounded LRU (`lru_hit_rate`, `capacity_curve`). One physical cache for all scopes, of `hbm_blocks` blocks,
optionally backed by a second tier of `dram_blocks` blocks. At the trace's block size (`block_size=None`)
the keys are the hash ids (partial last blocks included, matching the unbounded definition); at an engine
block size B every *full* engine block of the prompt is a key: engine block i, whose last token falls in
trace block j = ⌊((i+1)·B − 1) / b⌋, is keyed by (hash id j, offset in block j) when j is within the hash
ids (the chained id fixes all the content before it), and by a unique key otherwise (filler: it takes room
but never hits). `output_blocks=True` also inserts the request's generated tokens' blocks (unique keys).
A request's hit is its leading run of keys present in HBM or DRAM; the HBM part is the leading run present
in HBM, the rest is the DRAM part (loaded back). Then all its keys are touched in reverse order, so the
prompt's first blocks become the most recently used (vLLM frees a request's blocks tail first, so the tail
is evicted first). `dram_policy="victim"`: HBM evictions move to DRAM and a DRAM hit moves the block back
to HBM (exclusive tiers); `"inclusive"`: every block is written through to DRAM as well. With unbounded
capacity the LRU reproduces `theoretical_hit_rate` (and `.rebase(B)` at an engine block size).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from runners.traces.models import TimedRequest, Trace

SubagentCache = Literal["shared", "isolated"]
Recompute = Literal["block", "token"]
DramPolicy = Literal["victim", "inclusive"]


@dataclass(frozen=True, eq=False)
class HitRate:
    """Per-request hits of one walk, at granularity `block_size` (arrays in walk order)."""

    block_size: int  # tokens per block the hits are counted in
    trace_block_size: int
    engine_accounting: bool  # True after rebase: block rounding and the last-token cap applied
    keys: tuple[str, ...]  # request keys, in walk order
    input_tokens: np.ndarray  # per request
    runs: np.ndarray  # leading run of trace blocks already seen, per request
    hit_tokens: np.ndarray  # per request, at this granularity
    blocks: np.ndarray | None = None  # trace blocks (hash ids) per request; None where not counted

    @property
    def request_mean_rate(self) -> float | None:
        """AgentX's `cache_hit_rate` (`agentx analyze-trace`, agentx-harness 1.0.12): the mean over requests of each
        request's share of its blocks before its first unseen one (infinite cache, trace order). Not token-weighted:
        a short request counts as much as a long one, so it differs from `rate` (0.3843 against 0.3736 on
        traces/mooncake/conversation_trace.jsonl, 0.4232 against 0.6512 on synthetic_trace.jsonl). Requests without
        blocks are left out; None where the walk did not count blocks or counted none."""
        if self.blocks is None:
            return None
        counted = self.blocks > 0
        return float(np.mean(self.runs[counted] / self.blocks[counted])) if counted.any() else None

    def block_rate(self, positions: Iterable[int] | None = None) -> float | None:
        """The AgentX harness's "Theoretical Prefix Cache Hit" (`agentx profile`, agentx-harness 1.0.12:
        aiperf/dataset/loader/weka_metric_prepass.py and aiperf/metrics/theoretical_prefix_cache.py): Σ each request's
        blocks before its first unseen one / Σ its blocks (hash ids), over the requests at `positions` (the harness:
        the measured requests that succeeded; every request when None). Block-weighted at the trace's block size, not
        token-weighted as `rate`, so a prompt's tail beyond its last full block never counts. None where the walk did
        not count blocks or the requests have none."""
        if self.blocks is None:
            return None
        chosen = np.arange(len(self.keys)) if positions is None else np.fromiter(positions, dtype=np.int64)
        total = int(self.blocks[chosen].sum())
        return int(self.runs[chosen].sum()) / total if total else None

    @property
    def requests(self) -> int:
        return len(self.keys)

    @property
    def total_input_tokens(self) -> int:
        return int(self.input_tokens.sum())

    @property
    def total_hit_tokens(self) -> int:
        return int(self.hit_tokens.sum())

    @property
    def rate(self) -> float:
        """Token-weighted hit rate Σ hit / Σ input (0 for an empty trace)."""
        total = self.total_input_tokens
        return self.total_hit_tokens / total if total else 0.0

    def rebase(self, block_size: int, *, recompute: Recompute = "block") -> HitRate:
        """The same walk counted by an engine caching `block_size`-token blocks (see the module doc)."""
        if block_size < 1:
            raise ValueError(f"block_size: got {block_size}; expected >= 1")
        covered = self.runs * self.trace_block_size
        if recompute == "block":
            hits = np.minimum(covered, self.input_tokens - 1) // block_size * block_size
        elif recompute == "token":
            hits = np.minimum(np.minimum(covered, self.input_tokens) // block_size * block_size, self.input_tokens - 1)
        else:
            raise ValueError(f"recompute: got {recompute!r}; expected 'block' or 'token'")
        return HitRate(
            block_size,
            self.trace_block_size,
            True,
            self.keys,
            self.input_tokens,
            self.runs,
            np.maximum(hits, 0),
            self.blocks,
        )


def replayed_hit_rate(trace: Trace, engine_block_size: int, length_scale: float = 1.0) -> HitRate:
    """The one theoretical hit rate of a replay: the trace's reuse as an engine of `engine_block_size`-token blocks
    can reach it on the prompts the replayer synthesises at `length_scale`.

    The synthesiser makes each trace block `round(block x scale)` tokens and each prompt `ceil(in x scale)` tokens
    (runners/traces/planner.py `scaled_lengths`), so a request whose first k blocks were seen has k x that many
    tokens cached at most, counted in the engine's whole blocks (`rebase`). Rebasing the unscaled trace to
    `engine_block / scale` instead overstates it whenever `block x scale` is not a whole number. The replay Point,
    `infersweep replay` and the planner's ceiling all use this."""
    walk = theoretical_hit_rate(trace)
    if length_scale == 1.0:
        return walk.rebase(engine_block_size)
    block = max(1, round(walk.trace_block_size * length_scale))
    inputs = np.maximum(1, np.ceil(walk.input_tokens * length_scale)).astype(np.int64)
    scaled = HitRate(block, block, False, walk.keys, inputs, walk.runs, np.minimum(walk.runs * block, inputs),
                     walk.blocks)  # fmt: skip
    return scaled.rebase(engine_block_size)


def _cache_scope(trace: Trace, item: TimedRequest, subagent_cache: SubagentCache) -> Hashable:
    if subagent_cache == "isolated" and item.session.is_subagent:
        return ("subagent", item.root, item.session.path)
    if subagent_cache not in ("shared", "isolated"):
        raise ValueError(f"subagent_cache: got {subagent_cache!r}; expected 'shared' or 'isolated'")
    return 0 if trace.hash_id_scope == "global" else item.root


def theoretical_hit_rate(trace: Trace, *, subagent_cache: SubagentCache = "shared") -> HitRate:
    """Unbounded prefix-cache hit rate at the trace's block size (see the module doc)."""
    seen_by_scope: dict[Hashable, set[int]] = {}
    keys: list[str] = []
    inputs: list[int] = []
    runs: list[int] = []
    blocks: list[int] = []
    for item in trace.timeline():
        seen = seen_by_scope.setdefault(_cache_scope(trace, item, subagent_cache), set())
        hash_ids = item.request.hash_ids
        run = 0
        for hash_id in hash_ids:
            if hash_id not in seen:
                break
            run += 1
        seen.update(hash_ids)
        keys.append(item.request.key)
        inputs.append(item.request.input_tokens)
        runs.append(run)
        blocks.append(len(hash_ids))
    input_tokens = np.asarray(inputs, dtype=np.int64)
    run_array = np.asarray(runs, dtype=np.int64)
    hits = np.minimum(run_array * trace.block_size, input_tokens)
    return HitRate(trace.block_size, trace.block_size, False, tuple(keys), input_tokens, run_array, hits,
                   np.asarray(blocks, dtype=np.int64))  # fmt: skip


@dataclass(frozen=True)
class TieredHitRate:
    """Hit rate with a bounded LRU: `hbm_blocks` (None = unbounded) backed by `dram_blocks`."""

    block_size: int
    hbm_blocks: int | None
    dram_blocks: int
    dram_policy: DramPolicy
    requests: int
    input_tokens: int
    hbm_hit_tokens: int
    dram_hit_tokens: int

    @property
    def hbm_rate(self) -> float:
        return self.hbm_hit_tokens / self.input_tokens if self.input_tokens else 0.0

    @property
    def dram_rate(self) -> float:
        return self.dram_hit_tokens / self.input_tokens if self.input_tokens else 0.0

    @property
    def rate(self) -> float:
        """Both tiers together."""
        hits = self.hbm_hit_tokens + self.dram_hit_tokens
        return hits / self.input_tokens if self.input_tokens else 0.0


@dataclass(frozen=True)
class _Access:
    keys: list[Hashable]  # every block the request leaves in the cache, prompt first
    hittable: int  # how many leading keys a lookup may hit
    input_tokens: int
    counted: bool = True  # False: it fills the cache but is not measured (a replay's history priming)


def engine_block_keys(
    hash_ids: Sequence[int],
    input_tokens: int,
    output_tokens: int,
    trace_block: int,
    engine_block: int,
    scope: Hashable | None,
    unique: Iterator[int],
) -> list[Hashable]:
    """The cache keys of a request's full engine blocks (see the module doc), prompt first, then those its
    `output_tokens` fill: engine block i is keyed by the trace block j holding its last token (hash id j and
    the offset in it, within `scope` unless None) when j is within the hash ids, else by a fresh `unique` key
    (filler and generated tokens take room but never hit)."""
    full = input_tokens // engine_block
    keys: list[Hashable] = []
    for i in range(full):
        end = (i + 1) * engine_block - 1
        j = end // trace_block
        if j < len(hash_ids):
            key: Hashable = hash_ids[j] * trace_block + (end - j * trace_block)
            keys.append(key if scope is None else (scope, key))
        else:
            keys.append(next(unique))
    keys += [next(unique) for _ in range((input_tokens + output_tokens) // engine_block - full)]
    return keys


def _plan(
    trace: Trace,
    block_size: int | None,
    recompute: Recompute,
    output_blocks: bool,
    subagent_cache: SubagentCache,
) -> list[_Access]:
    """The key sequence of every request, in walk order (independent of capacities: built once per curve)."""
    b = trace.block_size
    scopes = {_cache_scope(trace, item, subagent_cache) for item in trace.timeline()}
    single_scope = len(scopes) == 1
    unique = itertools.count(-1, -1)  # filler / output blocks: negative keys, never equal to anything
    plan: list[_Access] = []
    for item in trace.timeline():
        request = item.request
        scope = _cache_scope(trace, item, subagent_cache)
        length = request.input_tokens
        if block_size is None:
            ids: list[Hashable] = list(request.hash_ids)
            keys: list[Hashable] = ids if single_scope else [(scope, k) for k in ids]
            plan.append(_Access(keys, len(keys), length))
            continue
        big = block_size
        full = length // big
        output = request.output_tokens if output_blocks else 0
        keys = engine_block_keys(request.hash_ids, length, output, b, big, None if single_scope else scope, unique)
        hittable = (length - 1) // big if recompute == "block" else full
        plan.append(_Access(keys, min(hittable, full), length))
    return plan


def _simulate(
    plan: list[_Access],
    trace_block_size: int,
    block_size: int | None,
    recompute: Recompute,
    hbm_blocks: int | None,
    dram_blocks: int,
    dram_policy: DramPolicy,
) -> tuple[int, int, int]:
    """(input tokens, HBM hit tokens, DRAM hit tokens) of one LRU run over the plan."""
    hbm: OrderedDict[Hashable, None] = OrderedDict()
    dram: OrderedDict[Hashable, None] = OrderedDict()
    inclusive = dram_policy == "inclusive" and dram_blocks > 0
    victim = dram_policy == "victim" and dram_blocks > 0
    total_input = total_hbm = total_dram = 0

    def tokens(run: int, length: int) -> int:
        if block_size is None:
            return min(run * trace_block_size, length)
        hit = run * block_size
        return min(hit, length - 1) if recompute == "token" else hit

    for access in plan:
        keys = access.keys
        run = hbm_run = 0
        only_hbm = True
        for key in keys[: access.hittable]:
            if key in hbm:
                if only_hbm:
                    hbm_run += 1
            elif key in dram:
                only_hbm = False
            else:
                break
            run += 1
        length = access.input_tokens
        if access.counted:
            hit_all, hit_hbm = tokens(run, length), tokens(hbm_run, length)
            total_input += length
            total_hbm += hit_hbm
            total_dram += hit_all - hit_hbm
        for key in reversed(keys):
            if key in hbm:
                hbm.move_to_end(key)
            else:
                hbm[key] = None
                if victim:
                    dram.pop(key, None)
            if inclusive:
                dram[key] = None
                dram.move_to_end(key)
                if len(dram) > dram_blocks:
                    dram.popitem(last=False)
            if hbm_blocks is not None and len(hbm) > hbm_blocks:
                evicted, _ = hbm.popitem(last=False)
                if victim:
                    dram[evicted] = None
                    if len(dram) > dram_blocks:
                        dram.popitem(last=False)
    return total_input, total_hbm, total_dram


def _check(block_size: int | None, recompute: str, dram_policy: str, dram_blocks: int) -> None:
    if block_size is not None and block_size < 1:
        raise ValueError(f"block_size: got {block_size}; expected >= 1 or None (the trace's)")
    if recompute not in ("block", "token"):
        raise ValueError(f"recompute: got {recompute!r}; expected 'block' or 'token'")
    if dram_policy not in ("victim", "inclusive"):
        raise ValueError(f"dram_policy: got {dram_policy!r}; expected 'victim' or 'inclusive'")
    if dram_blocks < 0:
        raise ValueError(f"dram_blocks: got {dram_blocks}; expected >= 0")


def capacity_curve(
    trace: Trace,
    capacities: Iterable[int | None],
    *,
    dram_blocks: int = 0,
    block_size: int | None = None,
    dram_policy: DramPolicy = "victim",
    recompute: Recompute = "block",
    output_blocks: bool = False,
    subagent_cache: SubagentCache = "shared",
) -> list[TieredHitRate]:
    """Hit rate for each HBM capacity (in blocks of `block_size`, the trace's when None), same DRAM tier.

    The curve tells what a given HBM size can realise of the theoretical rate; `block_size` set to the
    engine's adds engine accounting (full blocks only, last-token cap per `recompute`).
    """
    _check(block_size, recompute, dram_policy, dram_blocks)
    plan = _plan(trace, block_size, recompute, output_blocks, subagent_cache)
    results: list[TieredHitRate] = []
    for capacity in capacities:
        if capacity is not None and capacity < 0:
            raise ValueError(f"capacity: got {capacity}; expected >= 0 blocks or None (unbounded)")
        total, hbm, dram = _simulate(plan, trace.block_size, block_size, recompute, capacity, dram_blocks, dram_policy)
        results.append(
            TieredHitRate(
                block_size or trace.block_size, capacity, dram_blocks, dram_policy, len(plan), total, hbm, dram
            )
        )
    return results


def lru_hit_rate(
    trace: Trace,
    hbm_blocks: int | None,
    *,
    dram_blocks: int = 0,
    block_size: int | None = None,
    dram_policy: DramPolicy = "victim",
    recompute: Recompute = "block",
    output_blocks: bool = False,
    subagent_cache: SubagentCache = "shared",
) -> TieredHitRate:
    """Hit rate with an LRU cache of `hbm_blocks` blocks (None = unbounded) and an optional DRAM tier."""
    return capacity_curve(
        trace,
        [hbm_blocks],
        dram_blocks=dram_blocks,
        block_size=block_size,
        dram_policy=dram_policy,
        recompute=recompute,
        output_blocks=output_blocks,
        subagent_cache=subagent_cache,
    )[0]
