"""Deterministic prompt synthesis from hash ids (docs/ARCHITECTURE.md §6).

Every (scope key, hash id) maps to one block of `block_size` token ids; a request's prompt is its blocks
in order, truncated to `input_tokens` when they cover more (Mooncake's last block is partial), then filler
tokens up to exactly `input_tokens`. The filler is private to the request (seeded by its `key`), so it never
produces a cache hit the trace does not record: that matches the formats, whose hash ids cover only the
blocks that can be reused (Weka drops the partial tail block, which changes every turn).

Scope keys: what may share and what may not
--------------------------------------------
The replayer gives each *replayed copy* of a trace a salt (every recycled or parallel copy its own, and every Point
of a job its own set: `copy_salt`). A copy is one pass over the whole trace: all its sessions, and for a corpus
replayed as one trace, all its files.
`scope_key(trace, salt, root)` is the namespace a request's hash ids are resolved in:

- `hash_id_scope == "session"`: `s|<trace content hash>|<root session index>|<salt>`. Ids only mean
  something within one conversation, so each root session (with its subagents, which share its id space)
  gets its own namespace in each copy. Two sessions never share a block, even with equal ids.
- `hash_id_scope == "global"`: `g|<namespace>|<salt>`, with namespace = the trace's content hash unless the
  caller passes one (a corpus whose files share one global id space passes the corpus name). Within one copy
  every session resolves an id to the same block, so everything the trace shares across sessions stays
  shared: Mooncake's block 0 is one block for all 12k requests of a copy.

So with the global scope, blocks are keyed by hash id *within one copy's salt namespace*, and two copies
share nothing. Why not leave globally shared ids unsalted, so copies also share e.g. Mooncake's block 0 or
the Claude Code tools+system prefix, as real users of one product do? Because the trace cannot tell a
universal prefix from any other id that several of its sessions share (in Mooncake, later turns of one
conversation are separate lines with global ids): unsalting every global id would let a recycled copy hit on
the whole history of every conversation its previous pass replayed, which is precisely the sharing that
does not exist in reality and that the salt exists to prevent. A copy pays one miss for each truly universal
prefix (a single block for Mooncake, ~20k tokens once per copy for a Claude Code session), then shares it
within the copy like the original traffic did.

Only a prompt's first block carries the salt
--------------------------------------------
Engines' prefix caches are chained: a block is found only under the whole prefix before it (vLLM's block hash
takes its parent's, SGLang's radix tree is a path from the root, and so is our simulated engine's). So a prompt
whose first block differs from another's shares nothing with it, however many of the following blocks are
equal. The salt therefore goes into a prompt's first block alone (drawn in the scope key, salt included); every
later block is drawn in the part of the scope every copy has in common (`shared_scope`: the key without its
salt). Two copies then hit nothing of each other's, exactly as with every block salted, while the replayer
draws and encodes each block once for all the copies of a session instead of once per copy (the copies of a
256-session replay of 32 sessions made most of the replay's prompt CPU, docs/BENCHMARKS.md). AIPerf's AgentX
cache bust does the same: a marker at the first turn's token 0. A cache that matched blocks out of their
prefix (none of the engines here does) would find later blocks shared between copies.

The generator: each block's seed is the 64-bit BLAKE2b of (scope key, hash id) (the filler's, of
(scope key, request key)); token k of a block is `lo + splitmix64(seed + (k + 1)·γ) mod (hi − lo)`, the
counter-based SplitMix64 mix (γ = 0x9E3779B97F4A7C15), computed with numpy uint64 arithmetic for all of a
request's missing blocks at once. It is deterministic on every platform and ~30× faster than building a
numpy Philox/PCG generator per block; the modulo bias is below (hi − lo) / 2^64.

A prompt is sent as its blocks' JSON
------------------------------------
Each cached block keeps its ids' JSON encoding beside them (`Block.json`), made once when the block is drawn. A
prompt (`TokenPrompt`) is the blocks it was made of, and its JSON array is a join of their encodings: for a
95,000-token AgentX prompt that is ~0.05 ms, where `tolist()` + `json.dumps` of the ids took 13.5 ms per request
(docs/BENCHMARKS.md, "Replay at AgentX scale"). The id list is only built when something asks for it (a chat
replay decoding the prompt to text).
"""

from __future__ import annotations

import functools
import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from runners.traces.models import Trace, TraceRequest

VocabularyRange = tuple[int, int]  # token ids drawn from [lo, hi)

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def scope_key(trace: Trace, salt: str | int, root: int = 0, *, namespace: str | None = None) -> str:
    """The namespace a request of root session `root` resolves its hash ids in, for the copy `salt`."""
    if trace.hash_id_scope == "global":
        return f"g|{namespace or trace.content_hash}|{salt}"
    return f"s|{trace.content_hash}|{root}|{salt}"


def shared_scope(scope: str) -> str:
    """The part of a scope key (`scope_key`) that every copy has in common: the key without its salt, the last
    field. A prompt's blocks after its first are drawn in it (see "Only a prompt's first block carries the salt")."""
    return scope.rpartition("|")[0]


def copy_salt(seed: int, concurrency: int, copy: int) -> str:
    """The salt of replayed copy `copy` in a Point of `concurrency` live sessions and seed `seed` (the repeat's).

    A job's Points replay one after another on one engine, with the same seed for the same repeat: the concurrency in
    the salt keeps a later Point from hitting the blocks an earlier one left in the engine's cache (AIPerf's AgentX
    cache-bust keys its marker on a fresh benchmark id per run for the same reason)."""
    return f"{point_salt(seed, concurrency)}-{copy}"


def point_salt(seed: int, concurrency: int) -> str:
    """What every copy's salt in one Point starts with (stored with the Point: ReplayStats.prompt_salt)."""
    return f"{seed}-c{concurrency}"


def _seed(*parts: object) -> int:
    text = "\x1f".join(str(part) for part in parts)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def _draw(seeds: Sequence[int], count: int, lo: int, hi: int) -> np.ndarray:
    """len(seeds) x count token ids (int32): row r is the SplitMix64 stream of seeds[r]."""
    counters = np.arange(1, count + 1, dtype=np.uint64) * _GAMMA
    z = np.asarray(seeds, dtype=np.uint64)[:, None] + counters[None, :]
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    z ^= z >> _S31
    return (z % np.uint64(hi - lo)).astype(np.int32) + np.int32(lo)


# Ids below this are encoded by looking up their padded text (`_padded_ids`); the table costs (digits + 1) bytes
# an id: 7 MiB at the bound. Larger vocabularies are encoded id by id.
_PADDED_TABLE_IDS = 1 << 20


@functools.cache
def _padded_ids(count: int) -> np.ndarray:
    """Row i: the text of id i right-aligned in the width of `count - 1`, then a comma (uint8, one row an id)."""
    width = len(str(count - 1))
    text = "".join(f"{value:>{width}}," for value in range(count)).encode()
    return np.frombuffer(text, dtype=np.uint8).reshape(count, width + 1)


def _json_rows(rows: np.ndarray) -> list[bytes]:
    """Each row of ids (a 2-D array) as the elements of a JSON array, `1,2,3` (no brackets).

    The ids are looked up in a table of their padded text (`_padded_ids`: JSON allows the spaces, ` 832,11491`),
    all rows at once: ~11x faster than formatting them one by one (1.4 against 15.6 ms for 96,000 ids). New blocks
    are made on the replay's synthesis thread while the event loop waits for the GIL."""
    if rows.size and int(rows.min()) >= 0 and int(rows.max()) < _PADDED_TABLE_IDS:
        bound = 1 << max(8, int(rows.max()).bit_length())  # one table per power of two, not one per vocabulary
        text = _padded_ids(bound)[rows].reshape(len(rows), -1)
        return [row.tobytes()[:-1] for row in text]
    return [",".join(map(str, row)).encode() for row in rows.tolist()]


def _json_elements(ids: np.ndarray | Sequence[int]) -> bytes:
    """The ids as the elements of a JSON array, `1,2,3` (no brackets)."""
    return _json_rows(np.asarray(ids, dtype=np.int64).reshape(1, -1))[0]


class Block(NamedTuple):
    """One block of token ids and their JSON encoding (`_json_elements`), made once and joined per prompt."""

    ids: np.ndarray
    json: bytes


@dataclass(frozen=True, eq=False)
class TokenPrompt:
    """A prompt's token ids, kept as the blocks they were made of (see the module's docstring)."""

    pieces: tuple[Block, ...]

    def __eq__(self, other: object) -> bool:  # the same ids, however they are split in pieces
        return isinstance(other, TokenPrompt) and self.json_array() == other.json_array()

    __hash__ = None  # type: ignore[assignment]  # equal by content, which a hash of the arrays would not follow

    @classmethod
    def of(cls, ids: Sequence[int] | np.ndarray) -> TokenPrompt:
        """A prompt made elsewhere (the fixed-length workload's), as one piece."""
        return cls((Block(np.asarray(ids, dtype=np.int64), _json_elements(ids)),) if len(ids) else ())

    def __len__(self) -> int:
        return self._length

    @functools.cached_property
    def _length(self) -> int:  # asked for per request (record, body, cache), of ~1,000 pieces
        return sum(len(piece.ids) for piece in self.pieces)

    def ids(self) -> list[int]:
        return np.concatenate([piece.ids for piece in self.pieces]).tolist() if self.pieces else []

    def json_array(self) -> bytes:
        """The ids as a JSON array, joined from the pieces' encodings."""
        return b"[" + b",".join(piece.json for piece in self.pieces if piece.json) + b"]"


# Prompts whose blocks a BlockCache keeps for the next turn of their session (more than any replay's live sessions).
_REMEMBERED_PROMPTS = 4096


class BlockCache:
    """LRU of generated blocks, bounded in tokens. A cached token costs its int32 and its JSON digits (~10 bytes
    together with 6-digit ids): the default 2^25 tokens is ~350 MiB, and as much again at most for the blocks
    of the last prompts it remembers beyond the LRU."""

    def __init__(self, max_tokens: int = 1 << 25) -> None:
        self.max_tokens = max_tokens
        self.tokens = 0
        self.generated = 0  # blocks generated so far (a block generated twice was evicted in between)
        self._blocks: OrderedDict[tuple[str, int, int, int, int], Block] = OrderedDict()
        # The last prompt's blocks per (scope, first hash id): an agent's next turn is usually its last prompt plus
        # new blocks, so its prefix is taken whole, not looked up block by block (~1,500 lookups for a 95k-token
        # turn). Its blocks stay referenced here even when the LRU evicts them (equal blocks are equal anyway), so
        # these prompts are bounded in tokens too: at most `max_tokens` more, counting shared blocks once a prompt.
        self._last: OrderedDict[tuple[str, int, int, int, int], tuple[tuple[int, ...], list[Block]]] = OrderedDict()
        self._last_tokens = 0

    def __len__(self) -> int:
        return len(self._blocks)

    def blocks(self, scope: str, hash_ids: Sequence[int], block_size: int, lo: int, hi: int) -> list[Block]:
        """The blocks of `hash_ids` in order, generating the missing ones in vectorized draws."""
        wanted = tuple(hash_ids)
        if not wanted:
            return []
        memo = (scope, wanted[0], block_size, lo, hi)
        last = self._last.get(memo)
        if last is not None and len(last[0]) <= len(wanted) and wanted[: len(last[0])] == last[0]:
            reused = last[1]
        else:
            reused = []
        # The first block in the copy's own scope, the rest in the scope every copy shares (the module's docstring).
        first = [] if reused else self._lookup(scope, wanted[:1], block_size, lo, hi)
        start = len(reused) or 1
        result = reused + first + self._lookup(shared_scope(scope), wanted[start:], block_size, lo, hi)
        if last is not None:
            self._last_tokens -= len(last[0]) * block_size
        self._last[memo] = (wanted, result)
        self._last.move_to_end(memo)
        self._last_tokens += len(wanted) * block_size
        while self._last and (len(self._last) > _REMEMBERED_PROMPTS or self._last_tokens > self.max_tokens):
            (_, size, _, _, _), (forgotten, _) = self._last.popitem(last=False)
            self._last_tokens -= len(forgotten) * size
        return list(result)  # the caller's to change (synthesize_prompt truncates the last block), not the memo's

    def _lookup(self, scope: str, hash_ids: Sequence[int], block_size: int, lo: int, hi: int) -> list[Block]:
        found: list[Block | None] = []
        missing: dict[int, list[int]] = {}  # hash id -> positions wanting it
        for position, hash_id in enumerate(hash_ids):
            key = (scope, hash_id, block_size, lo, hi)
            block = self._blocks.get(key)
            if block is None:
                missing.setdefault(hash_id, []).append(position)
            else:
                self._blocks.move_to_end(key)
            found.append(block)
        if missing:
            ids = list(missing)
            drawn = _draw([_seed(scope, hash_id) for hash_id in ids], block_size, lo, hi)
            for hash_id, row, text in zip(ids, drawn, _json_rows(drawn), strict=True):
                block = Block(row, text)
                self._blocks[(scope, hash_id, block_size, lo, hi)] = block
                for position in missing[hash_id]:
                    found[position] = block
            self.tokens += len(ids) * block_size
            self.generated += len(ids)
            while self.tokens > self.max_tokens and len(self._blocks) > len(ids):
                _, evicted = self._blocks.popitem(last=False)
                self.tokens -= len(evicted.ids)
        return [block for block in found if block is not None]


_DEFAULT_CACHE = BlockCache()


def synthesize_prompt(
    request: TraceRequest,
    block_size: int,
    scope_key: str,
    vocabulary_range: VocabularyRange,
    *,
    cache: BlockCache | None = None,
) -> TokenPrompt:
    """The request's prompt: exactly `request.input_tokens` token ids in [lo, hi), deterministic.

    Blocks come from `cache` (a module-wide cache by default); the filler depends on (scope key, request key).
    """
    lo, hi = vocabulary_range
    if not 0 <= lo < hi <= 2**31:
        raise ValueError(f"vocabulary_range: got {vocabulary_range!r}; expected 0 <= lo < hi <= 2**31")
    if block_size < 1:
        raise ValueError(f"block_size: got {block_size}; expected >= 1")
    length = request.input_tokens
    needed = min(len(request.hash_ids), -(-length // block_size))
    blocks = _DEFAULT_CACHE if cache is None else cache
    parts = blocks.blocks(scope_key, request.hash_ids[:needed], block_size, lo, hi)
    covered = needed * block_size
    if covered > length:  # truncate the partial last block
        kept = parts[-1].ids[: length - (needed - 1) * block_size]
        parts[-1] = Block(kept, _json_elements(kept))
    elif covered < length:
        filler = _draw([_seed(scope_key, "filler", request.key)], length - covered, lo, hi)[0]
        parts.append(Block(filler, _json_elements(filler)))
    return TokenPrompt(tuple(parts))


def synthesize(
    request: TraceRequest,
    block_size: int,
    scope_key: str,
    vocabulary_range: VocabularyRange,
    *,
    cache: BlockCache | None = None,
) -> list[int]:
    """`synthesize_prompt`'s ids as a list."""
    return synthesize_prompt(request, block_size, scope_key, vocabulary_range, cache=cache).ids()
