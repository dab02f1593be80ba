"""Fuzz every reader of outside input with mutations of real files (seeded: the same cases every run).

Real files (InferenceX rows, AIPerf / GuideLLM / vllm bench / llm-d results, Mooncake and Claude Code traces,
recipes) are mutated the ways the adversarial run of issue 46 found failures: a number made NaN, infinite,
negative or absurd; a value of the wrong type; a key removed; a value nested 100,000 deep; a 2 MB string; bytes
that are not UTF-8; a NUL; a truncation; a YAML alias bomb. Every case must end in success or in one of the
project's errors (which the CLI prints as a message, never a traceback), and what the importers store must
hold no figure that is not finite or in range (`infersweep repair` finds nothing to repair).
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from sqlmodel import select

from db.finite import NonFiniteValue, non_finite_fields
from db.models import PointResultRow
from db.session import make_engine, migrate, open_session
from orchestrator.importers.inferencex import read_row_file
from orchestrator.importers.peer_formats import PEER_FORMATS
from orchestrator.importers.store import LengthFlags, import_inferencex, import_peer_results
from orchestrator.repair import repair_stored_figures
from recipes.errors import InferSweepError
from recipes.loader import load_recipe
from runners.traces.formats import load_trace
from tests.conftest import ROOT, SIMULATED_RECIPE

SEED = 46
CASES_PER_FORMAT = 150  # spread over the format's files: 7 formats, 1,050 mutations in all
STORED_PER_FORMAT = 40  # of the readable mutations, those also stored (storing is the slow part; reading is all)
PEERS = ROOT / "tests" / "data" / "peers"
INFERENCEX = sorted((ROOT / "tests" / "data" / "inferencex").glob("run_*/agg_bmk.json"))
PEER_FILES = {
    "aiperf": [PEERS / "aiperf" / "aiperf-c4.json", PEERS / "aiperf" / "aiperf-c8.json"],
    "guidellm": [PEERS / "guidellm" / "concurrent.json"],
    "vllm-bench": [ROOT / "tests" / "data" / "vllm_bench_result.json"],
    "llm-d": sorted((PEERS / "llm-d").glob("*.yaml")),
    "agentx": [PEERS / "agentx" / "profile" / "profile_export_aiperf.json"],
}
TRACES = [
    ROOT / "traces" / "claude-code-weka" / "sample_trace.json",
    ROOT / "traces" / "mooncake" / "synthetic_trace.jsonl",
]
RECIPES = [ROOT / "recipes" / "local" / "tiny-llama-cpu.yaml", ROOT / "recipes" / "local" / "agentic-tiny-llama-cpu.yaml",
           *sorted((ROOT / "recipes" / "catalogue").glob("*/*.yaml"))[:3]]  # fmt: skip
BAD_NUMBERS = [math.nan, math.inf, -math.inf, -1e12, 1e30, 1e308, -1, 0, 10**30]
BAD_VALUES: list[Any] = [None, "x", [], {}, True, "1e400", "NaN"]
ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + level)}: &{chr(98 + level)} [{', '.join(['*' + chr(97 + level)] * 9)}]\n" for level in range(9)
)


def leaves(document: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    if isinstance(document, dict):
        return [found for key, item in document.items() for found in leaves(item, (*path, key))]
    if isinstance(document, list):
        return [found for index, item in enumerate(document) for found in leaves(item, (*path, index))]
    return [(path, document)]


def replaced(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    copy = list(document) if isinstance(document, list) else dict(document)
    copy[path[0]] = replaced(document[path[0]], path[1:], value)
    return copy


def removed(document: Any, path: tuple[Any, ...]) -> Any:
    if len(path) == 1:
        copy = list(document) if isinstance(document, list) else dict(document)
        del copy[path[0]]
        return copy
    return replaced(document, path[:1], removed(document[path[0]], path[1:]))


# The test's own YAML reading and writing (making the cases) in libyaml where there is one: fast.
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
YAML_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
# Every file gets each of these once (a deep nesting costs PyYAML's scanner about a second), the rest at random.
ONCE = ["deep", "bomb"]
# "huge": an integer past Python's 4,300-digit conversion limit; "key": a mapping key that is a mapping (YAML only;
# JSON keys are text, so a JSON file gets another "huge"). Both were tracebacks in the fault tour of round 4.
AT_RANDOM = ["number", "number", "number", "type", "type", "delete", "long", "bytes", "truncate", "nul", "huge",
             "key"]  # fmt: skip
HUGE_DIGITS = "9" * 4_400


def mutate(raw: bytes, document: Any, suffix: str, kind: str, rng: random.Random) -> tuple[str, bytes]:
    """One mutation of a file (its bytes, and its parsed document for structural ones): (what was done, bytes)."""
    is_yaml = suffix in {".yaml", ".yml"}
    if suffix == ".jsonl":  # a trace: mutate one of its first lines, keep the rest
        lines = raw.split(b"\n")
        index = rng.randrange(min(len(lines), 50))
        what, line = mutate(lines[index], json.loads(lines[index]), ".json", kind, rng)
        return f"line {index + 1}: {what}", b"\n".join([*lines[:index], line, *lines[index + 1 :]])
    if kind == "bomb":
        return kind, ALIAS_BOMB.encode() if is_yaml else b"[" * 100_000 + b"]" * 100_000
    at = rng.randrange(len(raw))
    if kind == "bytes":
        return f"{kind} at {at}", raw[:at] + b"\xff\xfe" + raw[at + 1 :]
    if kind == "truncate":
        return f"{kind} at {at}", raw[:at]
    if kind == "nul":
        return f"{kind} at {at}", raw[:at] + b"\x00" + raw[at:]
    found = [(path, value) for path, value in leaves(document) if path]
    if kind == "key" and not is_yaml:
        kind = "huge"
    if kind in {"number", "huge"}:
        numeric = [item for item in found if isinstance(item[1], int | float) and not isinstance(item[1], bool)]
        found = numeric or found
    if not found:
        return "unchanged", raw
    path, _value = rng.choice(found)
    marker = "DEEP-NESTING-HERE"
    changed = {
        "delete": lambda: removed(document, path),
        "number": lambda: replaced(document, path, rng.choice(BAD_NUMBERS)),
        "type": lambda: replaced(document, path, rng.choice(BAD_VALUES)),
        # Past the 1 MiB bound of a recipe; a JSON result file may hold it.
        "long": lambda: replaced(document, path, "a" * (1_100_000 if is_yaml else 2_000_000)),
        "deep": lambda: replaced(document, path, marker),
        "huge": lambda: replaced(document, path, marker),
        "key": lambda: replaced(document, path, marker),
    }[kind]()
    text = yaml.dump(changed, Dumper=YAML_DUMPER, sort_keys=False) if is_yaml else json.dumps(changed)
    stand_in = {"deep": "[" * 20_000 + "]" * 20_000, "huge": HUGE_DIGITS, "key": "{{}: 1}"}.get(kind, "")
    text = text.replace(marker if is_yaml else json.dumps(marker), stand_in)
    return f"{kind} {'.'.join(str(part) for part in path)}", text.encode()


def cases(files: list[Path], tmp_path: Path, label: str) -> list[tuple[str, Path]]:
    """CASES_PER_FORMAT mutated copies of the format's files, spread over them, named as the originals (run ids
    and suffixes kept)."""
    rng = random.Random(f"{SEED}-{label}")
    made = []
    per_file = math.ceil(CASES_PER_FORMAT / len(files))
    for file in files:
        raw = file.read_bytes()
        document = None if file.suffix == ".jsonl" else (
            yaml.load(raw, Loader=YAML_LOADER) if file.suffix == ".yaml" else json.loads(raw)
        )  # fmt: skip
        kinds = ONCE + [rng.choice(AT_RANDOM) for _ in range(per_file - len(ONCE))]
        for number, kind in enumerate(kinds):
            what, mutated = mutate(raw, document, file.suffix, kind, rng)
            folder = tmp_path / label / f"{number:03d}-{file.stem}" / file.parent.name
            folder.mkdir(parents=True)
            target = folder / file.name
            target.write_bytes(mutated)
            made.append((f"{file.relative_to(ROOT)} [{what}]", target))
    return made


def outcome_of(read: Callable[[], object], case: str, failures: list[str]) -> bool:
    """Run one case's reading; True when it read, False when it was refused with one of the project's errors."""
    started = time.monotonic()
    try:
        read()
    except NonFiniteValue as error:  # the store's last line of defence: reached only when a writer missed it
        failures.append(f"{case}: reached the store's guard: {error}")
        return False
    except InferSweepError:
        return False
    except Exception as error:  # what the fuzz looks for: anything else is a traceback for the user
        failures.append(f"{case}: {type(error).__name__}: {str(error)[:200]}")
        return False
    finally:
        if time.monotonic() - started > 20:
            failures.append(f"{case}: took {time.monotonic() - started:.0f} s")
    return True


def test_mutated_real_files_end_in_success_or_an_error_and_never_store_a_bad_figure(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'results.db'}")
    migrate(engine)
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(SIMULATED_RECIPE, sort_keys=False))
    loaded = load_recipe(recipe)
    failures: list[str] = []
    total = read = 0

    # InferenceX rows: each mutated file read on its own (a file that is not a row list is refused alone), then
    # every readable one stored in one import (a bad row is refused alone, and nothing unphysical may land).
    readable = []
    for case, path in cases(INFERENCEX, tmp_path, "inferencex"):
        total += 1
        if outcome_of(lambda path=path: read_row_file(path), case, failures):
            read += 1
            readable.append(path)
    outcome_of(
        lambda: import_inferencex(engine, readable[:STORED_PER_FORMAT], None, None),
        "storing the readable InferenceX files", failures,
    )  # fmt: skip
    # Peer result files: the same, per format (lengths given where a file does not state them).
    for format_name, files in PEER_FILES.items():
        reader, readable = PEER_FORMATS[format_name], []
        for case, path in cases(files, tmp_path, format_name):
            total += 1
            if outcome_of(
                lambda path=path, reader=reader: reader.read(path, 1, loaded.recipe.validity), case, failures
            ):
                read += 1
                readable.append(path)

        def store(name: str = format_name, files: list[Path] = readable) -> object:
            return import_peer_results(
                engine, name, files[:STORED_PER_FORMAT], loaded, LengthFlags(isl=64, osl=16), "fuzz"
            )

        outcome_of(store, f"storing the readable {format_name} files", failures)
    for case, path in cases(TRACES, tmp_path, "traces"):
        total += 1
        read += outcome_of(lambda path=path: load_trace(path), case, failures)
    for case, path in cases(RECIPES, tmp_path, "recipes"):
        total += 1
        read += outcome_of(lambda path=path: load_recipe(path), case, failures)

    assert total >= 1000 and PEER_FORMATS.keys() >= PEER_FILES.keys()
    assert failures == [], f"{len(failures)} of {total} cases ended badly:\n" + "\n".join(failures[:20])
    assert 0 < read < total  # the mutations both pass and refuse: the fuzz is not all one outcome
    with open_session(engine) as session:
        stored = session.exec(select(PointResultRow)).all()
        assert stored, "no mutated file was stored at all: the store's side was not exercised"
        assert all(non_finite_fields(row.metrics) == [] for row in stored)
        assert repair_stored_figures(session, apply=False) == []
