"""Signed result bundles: what a published Point was computed from, in a form anyone can check offline.

A bundle is a folder: each Point's stored result (`points/<n>/result.json`: its identity, workload and figures) and
raw per-request records (`points/<n>/records.parquet`, the very artifact the figures were computed from), each
recipe as it was resolved (`recipes/<fingerprint>.json`), and `statement.dsse.json`: an in-toto Statement (v1)
naming every file by its sha256, with the manifest as its predicate (recipe fingerprints, trace versions, the load
generator's name, version and code hash, engine and hardware), in a DSSE envelope signed with ed25519.

`verify_bundle` checks, in order, and stops at the first failure with the exact reason: the signature's key is in
the trusted list (recipes/trusted_keys.yaml), the signature holds for it, every file has the digest the statement
names, every recipe hashes to its fingerprint; then it recomputes every record-derived figure of every Point with
the code that made it (`compute_point_metrics`) and lists each difference (field, stored, recomputed).

What a bundle says of each Point is recorded (`db.recording.record_verifications`, shown on the hub's run detail):
`signed` when `bundle make` signed it; `verified` (every figure recomputed, the same) or `hash-only` (no records in
the bundle: its result checked by hash only) when `verify --record` found the whole bundle to hold.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import shutil
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
)
from pydantic import ValidationError
from sqlalchemy import Engine

from db import reads, recording
from db.artifacts import local_copy, sha256_of
from db.session import open_session
from recipes.errors import ConfigurationError
from recipes.loader import fingerprint_of
from recipes.schema import Recipe, ValidityThresholds
from recipes.trusted_keys import TrustedKeys, key_id
from runners.loadgen.metrics import compute_point_metrics
from runners.loadgen.records import PointMetrics, RequestRecord, Stats

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://infersweep.dev/result-bundle/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
ENVELOPE = "statement.dsse.json"
CLIENT_CODE = Path(__file__).resolve().parents[1] / "runners" / "loadgen"
UNLISTED_SIGNER = "an unlisted key"  # a key not in the trusted keys: its bundles do not verify
# What a Point's records determine: recomputed and compared by `verify_bundle` (the verdict also rests on the
# recipe's thresholds and on evidence from outside the records, a replay's lag, so it is carried, not recomputed).
RECOMPUTED = ("completed", "failed", "duration_s", "total_input_tokens", "total_output_tokens", "request_throughput",
              "output_throughput", "total_token_throughput", "output_throughput_per_gpu",
              "total_token_throughput_per_gpu", "ttft_ms", "tpot_ms", "itl_ms", "e2el_ms", "interactivity")  # fmt: skip


def pae(payload_type: str, body: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what is signed, so the payload's type is signed with it."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(body), body)


def new_key(path: Path) -> str:
    """Write a new ed25519 private key to `path` (PEM, readable by its owner only); return its public key, base64."""
    key = Ed25519PrivateKey.generate()
    path.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    path.chmod(0o600)
    return base64.b64encode(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()


def _private_key(path: Path) -> Ed25519PrivateKey:
    try:
        key = load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as error:
        raise ConfigurationError(f"--key: {path} is not a readable PEM private key ({type(error).__name__})") from error
    if not isinstance(key, Ed25519PrivateKey):
        raise ConfigurationError(f"--key: {path} holds a {type(key).__name__}; expected an ed25519 private key")
    return key


def sign(statement: dict[str, Any], key: Ed25519PrivateKey) -> dict[str, Any]:
    """The statement in a DSSE envelope signed by `key`."""
    body = json.dumps(statement, sort_keys=True, separators=(",", ":")).encode()
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    signature = key.sign(pae(PAYLOAD_TYPE, body))
    return {"payloadType": PAYLOAD_TYPE, "payload": base64.b64encode(body).decode(),
            "signatures": [{"keyid": key_id(public), "sig": base64.b64encode(signature).decode()}]}  # fmt: skip


def client_facts() -> dict[str, str]:
    """The load generator that measured: its package's version and the sha256 of its code (every file, in order)."""
    digest = hashlib.sha256()
    for path in sorted(CLIENT_CODE.rglob("*.py")):
        digest.update(path.relative_to(CLIENT_CODE).as_posix().encode() + b"\0" + path.read_bytes())
    return {"name": "infersweep-loadgen", "version": metadata.version("infersweep"), "code_sha256": digest.hexdigest()}


def write_bundle(engine: Engine, sweep: str, key_path: Path, out: Path, trusted: TrustedKeys) -> int:
    """A signed bundle of the sweep's Points (not retracted) in the new folder `out`, each Point recorded as signed by
    the key's owner in `trusted`; returns the Points."""
    key = _private_key(key_path)
    if out.exists():
        raise ConfigurationError(f"--out: {out} exists; name a new folder for the bundle")
    with open_session(engine) as session:
        found = reads.sweep_by_name(session, sweep)
        if found is None or found.id is None:
            raise ConfigurationError(f"sweep: got {sweep!r}; no sweep of that name")
        rows = reads.points_of_sweep(session, found.id)
        artifacts = {point.records_path: reads.artifact_by_key(session, point.records_path)
                     for point, _ in rows if point.records_path}  # fmt: skip
    if not rows:
        raise ConfigurationError(f"sweep {sweep!r} holds no Point to bundle")
    out.mkdir(parents=True)
    files: dict[str, Path] = {}
    recipes: dict[str, dict[str, Any]] = {}
    points = []
    for index, (point, recipe) in enumerate(rows):
        folder = out / "points" / str(index)
        folder.mkdir(parents=True)
        result = {"sweep": sweep, "point_key": point.point_key, "repeat_index": point.repeat_index,
                  "recipe_fingerprint": recipe.fingerprint, "workload_kind": point.workload_kind,
                  "concurrency": point.concurrency, "origin": point.origin, "metrics": point.metrics}  # fmt: skip
        (folder / "result.json").write_text(json.dumps(result, sort_keys=True, indent=1))
        files[f"points/{index}/result.json"] = folder / "result.json"
        entry: dict[str, Any] = {"point_key": point.point_key, "result": f"points/{index}/result.json",
                                 "trace_version": (point.metrics.get("replay") or {}).get("trace_version")}  # fmt: skip
        stored = local_copy(artifacts[point.records_path]) if point.records_path else None  # type: ignore[arg-type]
        if stored is not None:
            shutil.copyfile(stored, folder / "records.parquet")
            files[f"points/{index}/records.parquet"] = folder / "records.parquet"
            entry["records"] = f"points/{index}/records.parquet"
        points.append(entry)
        # A recipe of results imported or projected is another tool's configuration (or a model's), not a recipe
        # this project resolves: its fingerprint is not recomputed.
        measured_here = point.origin not in ("imported", "projected")
        recipes[recipe.fingerprint] = {"name": recipe.name, "hardware": recipe.hardware_key,
                                       "engine": recipe.engine_kind, "snapshot": recipe.snapshot,
                                       "measured_here": measured_here}  # fmt: skip
    (out / "recipes").mkdir()
    for fingerprint, recipe_facts in recipes.items():
        path = out / "recipes" / f"{fingerprint}.json"
        path.write_text(json.dumps(recipe_facts["snapshot"], sort_keys=True, indent=1))
        files[f"recipes/{fingerprint}.json"] = path
    statement = {
        "_type": STATEMENT_TYPE, "predicateType": PREDICATE_TYPE,
        "subject": [{"name": name, "digest": {"sha256": sha256_of(path)}} for name, path in sorted(files.items())],
        "predicate": {"sweep": sweep, "client": client_facts(), "points": points,
                      "recipes": {fingerprint: {name: value for name, value in facts.items() if name != "snapshot"}
                                  for fingerprint, facts in recipes.items()}},
    }  # fmt: skip
    envelope = sign(statement, key)
    (out / ENVELOPE).write_text(json.dumps(envelope, indent=1))
    signer = envelope["signatures"][0]["keyid"]
    listed = trusted.by_id().get(signer)
    owner = listed.owner if listed else UNLISTED_SIGNER
    signed = {entry["point_key"]: "signed" for entry in points}
    with open_session(engine) as session:
        recording.record_verifications(session, sweep, signed, owner, signer, sha256_of(out / ENVELOPE))
    return len(points)


def record_verification(engine: Engine, folder: Path, found: Verification) -> int:
    """What a bundle that verified says of each of its Points that this database holds; returns how many."""
    if not found.verified or found.sweep is None or found.owner is None or found.key_id is None:
        raise ValueError("only a bundle that verified is recorded")
    with open_session(engine) as session:
        return recording.record_verifications(session, found.sweep, found.states, found.owner, found.key_id,
                                              sha256_of(folder / ENVELOPE))  # fmt: skip


@dataclass
class Verification:
    """What `verify_bundle` found: `refused` (the first check that failed, exactly) or every Point's differences."""

    owner: str | None = None
    key_id: str | None = None
    sweep: str | None = None
    points: int = 0
    recomputed: int = 0
    refused: str | None = None
    differences: list[str] = field(default_factory=list)
    states: dict[str, str] = field(default_factory=dict)  # point key -> verified | hash-only

    @property
    def verified(self) -> bool:
        return self.refused is None and not self.differences


def verify_bundle(folder: Path, trusted: TrustedKeys) -> Verification:
    """Check a bundle offline (module doc); never raises on what the bundle holds."""
    found = Verification()
    try:
        envelope = json.loads((folder / ENVELOPE).read_text())
        signatures, body = envelope["signatures"], base64.b64decode(envelope["payload"], validate=True)
        payload_type = envelope["payloadType"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        found.refused = f"{folder / ENVELOPE}: not a DSSE envelope ({type(error).__name__}: {error})"
        return found
    keys = trusted.by_id()
    listed = [entry for entry in signatures if isinstance(entry, dict) and entry.get("keyid") in keys]
    if not listed:
        ids = ", ".join(str(entry.get("keyid")) for entry in signatures if isinstance(entry, dict)) or "none"
        found.refused = f"signed by key {ids}, which is not in the trusted keys"
        return found
    key = keys[listed[0]["keyid"]]
    try:
        Ed25519PublicKey.from_public_bytes(key.raw).verify(base64.b64decode(listed[0]["sig"]), pae(payload_type, body))
    except (InvalidSignature, ValueError):
        found.refused = (f"the signature does not hold for {key.owner}'s key {key.id}: the statement was changed "
                         "after it was signed, or another key signed it")  # fmt: skip
        return found
    found.owner, found.key_id = key.owner, key.id
    try:
        return _checked(folder, json.loads(body), payload_type, found)
    except (KeyError, TypeError, ValueError, OSError, ValidationError) as error:  # signed, but not a bundle we wrote
        found.refused = f"the signed statement is not a result bundle ({type(error).__name__}: {error})"
        return found


def _checked(folder: Path, statement: dict[str, Any], payload_type: str, found: Verification) -> Verification:
    """The checks after the signature's (`verify_bundle`), on the statement it covers."""
    if payload_type != PAYLOAD_TYPE or statement.get("_type") != STATEMENT_TYPE:
        found.refused = f"a signed {payload_type} of type {statement.get('_type')!r}; expected an in-toto Statement v1"
        return found
    hashed = set()
    for subject in statement["subject"]:
        path = folder / subject["name"]
        inside = path.resolve().is_relative_to(folder.resolve())
        digest = sha256_of(path) if inside and path.is_file() else None
        if digest != subject["digest"]["sha256"]:
            found.refused = (f"{subject['name']}: sha256 {digest or 'missing file'}, the signed statement says "
                             f"{subject['digest']['sha256']}")  # fmt: skip
            return found
        hashed.add(subject["name"])
    # Every file read from here on is one the signature covers by its hash.
    predicate = statement["predicate"]
    read = [f"recipes/{fingerprint}.json" for fingerprint in predicate["recipes"]]
    read += [entry[part] for entry in predicate["points"] for part in ("result", "records") if part in entry]
    unhashed = sorted(set(read) - hashed)
    if unhashed:
        found.refused = f"{unhashed[0]}: read to verify, but the signed statement names no hash for it"
        return found
    for fingerprint, facts in predicate["recipes"].items():
        if not facts.get("measured_here", True):
            continue
        try:
            recipe = Recipe.model_validate(json.loads((folder / "recipes" / f"{fingerprint}.json").read_text()))
        except (OSError, ValueError, ValidationError) as error:
            found.refused = f"recipes/{fingerprint}.json: not a recipe ({type(error).__name__})"
            return found
        if fingerprint_of(recipe) != fingerprint:
            found.refused = (
                f"recipes/{fingerprint}.json: its fingerprint is {fingerprint_of(recipe)}, not {fingerprint}"
            )
            return found
    found.sweep = predicate["sweep"]
    for entry in predicate["points"]:
        found.points += 1
        found.states[entry["point_key"]] = "verified" if "records" in entry else "hash-only"
        if "records" in entry:
            found.differences += _recomputed(folder, entry)
            found.recomputed += 1
    return found


def _recomputed(folder: Path, entry: dict[str, Any]) -> list[str]:
    """Each record-derived figure of the Point that its records do not give again: 'point K: field stored X,
    recomputed Y'."""
    result = json.loads((folder / entry["result"]).read_text())
    stored = PointMetrics.model_validate(result["metrics"])
    records = [RequestRecord.from_stored(row) for row in pq.read_table(folder / entry["records"]).to_pylist()]
    again = compute_point_metrics(records, result["concurrency"], stored.accelerators, ValidityThresholds(),
                                  open_loop=result["workload_kind"] == "agentic-replay")  # fmt: skip
    differences = []
    for name in RECOMPUTED:
        for part, was, now in _leaves(name, getattr(stored, name), getattr(again, name)):
            if not _same(was, now):
                differences.append(f"point {entry['point_key']}: {part} stored {was!r}, recomputed {now!r}")
    return differences


def _leaves(name: str, stored: Any, recomputed: Any) -> list[tuple[str, Any, Any]]:
    """(field, stored, recomputed) of a figure, a distribution's figures one by one ('ttft_ms.p99')."""
    if isinstance(stored, Stats):
        return [(f"{name}.{part}", getattr(stored, part), getattr(recomputed, part)) for part in Stats.model_fields]
    return [(name, stored, recomputed)]


def _same(stored: Any, recomputed: Any) -> bool:
    if isinstance(stored, float) and isinstance(recomputed, float):
        return math.isclose(stored, recomputed, rel_tol=1e-9, abs_tol=1e-12)
    return bool(stored == recomputed)
