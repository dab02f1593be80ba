"""Import InferenceX aggregated rows (`agg_bmk.json` lists, or CSV) as points with origin `imported`.

What a row means (InferenceX's `utils/process_result.py`, and the rows in tests/data/inferencex/): latencies
in seconds; `*_intvty` = 1000 / the same percentile of TPOT in ms, so `p99_intvty` is the slow tail;
`tput_per_gpu` is total tokens/s over every GPU of the deployment. Disaggregated rows count their GPUs in
`num_prefill_gpu` (P) and `num_decode_gpu` (D), never workers x TP (a prefill worker of TP 1 and EP 8 uses 8
GPUs), and their `output_tput_per_gpu` is per *decode* GPU, `input_tput_per_gpu` per *prefill* GPU.

What we store, in our definitions (docs/METRICS.md: every per-GPU figure is over all the deployment's GPUs):
- total per GPU = `tput_per_gpu`;
- output per GPU = `output_tput_per_gpu` x D / (P + D) for a disaggregated row, `output_tput_per_gpu` otherwise;
- InferenceX's own per-decode-GPU output and per-prefill-GPU input, as published, in `PointMetrics.peer_figures`.
A single-node row's GPUs are its TP (InferenceX divides by TP x PP x PCP, and these rows run PP = PCP = 1; with
DP-attention the one server's attention is data-parallel across the same TP GPUs), which is our TP x PP x DP
for a server with DP inside it.

Identity: the hardware label maps through the registry's aliases (`b200-trt`, `mi355x-amd_0`, `gb200`), the
model through `infmax_model_prefix` or the model registry's aliases (DeepSeek-R1 and R1-0528 are one model
for InferenceX, and for us). The configuration (hardware, model, precision, framework, image, speculative
decoding and the whole topology) is the recipe fingerprint, so a disaggregated split is never mixed with
another. A row that cannot be read or mapped is refused alone, with its reason; the rest of the file is
imported.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from recipes.errors import MISSING, RecipeError, problem_of
from recipes.hardware import hardware_key_for, load_hardware_registry
from recipes.limits import MAX_CONCURRENCY, MAX_INPUT_TOKENS, MAX_OUTPUT_TOKENS, MAX_TEXT_CHARS
from recipes.model_registry import load_model_registry, model_key_for
from recipes.schema import ValidityThresholds
from recipes.validity import MAX_TOKENS_PER_S_PER_ACCELERATOR as PER_GPU_CEILING
from recipes.validity import Evidence, judge
from recipes.yamlio import read_document
from runners.loadgen.records import MeasuredWindow, PointMetrics, Stats, Validity

_RUN_NAME = re.compile(r"^run_(\d+)$")  # `run_<id>/agg_bmk.json` or `run_<id>.json`: a GitHub Actions run id
_RUN_URL = re.compile(r"/actions/runs/(\d+)")


def _flatten_api_shape(data: Any) -> Any:
    """The dashboard API's row (`hardware`, `spec_method`, nested `metrics`, `date`, `run_url`; repository
    SemiAnalysisAI/InferenceX-app) as an `agg_bmk.json` row. An aggregated API row states its parallelism on both
    sides (prefill_tp = decode_tp, num_prefill_gpu = num_decode_gpu = the GPUs of its one server)."""
    if not isinstance(data, dict) or "hw" in data or "hardware" not in data:
        return data
    flat = {key: value for key, value in data.items() if key not in ("metrics", "hardware", "spec_method")}
    flat.update(data.get("metrics") or {})
    flat["hw"], flat["spec_decoding"] = data["hardware"], data.get("spec_method")
    if not data.get("disagg"):
        flat.setdefault("tp", data.get("decode_tp") or 1)
        flat.setdefault("ep", data.get("decode_ep") or 1)
        flat.setdefault("dp_attention", data.get("decode_dp_attention") or False)  # "false" parses as False
        for key in list(flat):  # the one server is both sides: keep it once, as tp/ep
            if key.startswith(("prefill_", "decode_", "num_prefill", "num_decode")):
                flat.pop(key)
    return flat


class InferenceXRow(BaseModel):
    # External format: read what we use. NaN and infinity are refused with their field (pydantic's floats take them,
    # and a stored NaN made every later read of the results fail).
    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False, str_max_length=MAX_TEXT_CHARS)

    @model_validator(mode="before")
    @classmethod
    def _api_shape(cls, data: Any) -> Any:
        return _flatten_api_shape(data)

    hw: str = Field(description="InferenceX hardware (runner) label, e.g. 'b200', 'b200-trt', 'mi355x-amd_0'.")
    conc: int = Field(gt=0, le=MAX_CONCURRENCY, description="Max concurrency.")
    model: str = Field(description="Model id or path as the run named it.")
    infmax_model_prefix: str | None = Field(None, description="InferenceX's model family key: 'dsr1', 'gptoss'.")
    framework: str = Field(description="Serving stack, e.g. 'vllm', 'sglang', 'trt', 'dynamo-trt'.")
    precision: str = Field(description="e.g. 'fp8', 'fp4'.")
    isl: int = Field(gt=0, le=MAX_INPUT_TOKENS, description="Input length.")
    osl: int = Field(gt=0, le=MAX_OUTPUT_TOKENS, description="Output length.")
    tp: int = Field(1, ge=1, description="Tensor parallel size (single-node rows).")
    ep: int = Field(1, ge=1, description="Expert parallel size (single-node rows).")
    dp: int = Field(1, ge=1, description="Data-parallel engine replicas (the TPU snapshot states it).")
    chips: int | None = Field(
        None, ge=1, description="Chips of the deployment when they are not TP's GPUs (TPU v7: two TensorCores each)."
    )
    dp_attention: bool = Field(False, description="Data-parallel attention (single-node rows).")
    disagg: bool = Field(False, description="Disaggregated prefill/decode.")
    is_multinode: bool = Field(False, description="The deployment spans several nodes.")
    prefill_tp: int | None = Field(None, ge=1, description="TP of each prefill worker.")
    prefill_ep: int | None = Field(None, ge=1, description="EP of each prefill worker.")
    prefill_dp_attention: bool | None = Field(None, description="DP-attention in the prefill workers.")
    prefill_num_workers: int | None = Field(None, ge=0, description="Prefill workers.")
    decode_tp: int | None = Field(None, ge=1, description="TP of each decode worker.")
    decode_ep: int | None = Field(None, ge=1, description="EP of each decode worker.")
    decode_dp_attention: bool | None = Field(None, description="DP-attention in the decode workers.")
    decode_num_workers: int | None = Field(None, ge=0, description="Decode workers.")
    num_prefill_gpu: int | None = Field(None, ge=0, description="GPUs of all prefill workers (P).")
    num_decode_gpu: int | None = Field(None, ge=0, description="GPUs of all decode workers (D).")
    spec_decoding: str | None = Field(None, description="Speculative decoding method, if any ('mtp', 'none').")
    image: str | None = Field(None, description="Container image.")
    tput_per_gpu: float = Field(ge=0, le=PER_GPU_CEILING, description="Total tokens/s per GPU, over all GPUs.")
    output_tput_per_gpu: float = Field(
        ge=0, le=PER_GPU_CEILING, description="Output tokens/s per GPU (per decode GPU when disagg)."
    )
    input_tput_per_gpu: float | None = Field(
        None, ge=0, le=PER_GPU_CEILING, description="Input tokens/s per GPU (per prefill GPU)."
    )
    median_ttft: float = Field(ge=0, description="Median TTFT, seconds.")
    p99_ttft: float | None = Field(None, ge=0, description="p99 TTFT, seconds.")
    median_tpot: float = Field(gt=0, description="Median TPOT, seconds.")
    median_e2el: float | None = Field(None, ge=0, description="Median E2EL, seconds.")
    p99_intvty: float | None = Field(None, gt=0, description="1000 / p99 TPOT (ms): the slow tail.")
    date: datetime | None = Field(None, description="When the run measured (dashboard API rows only).")
    run_url: str | None = Field(None, description="The GitHub Actions run (dashboard API rows only).")

    @property
    def run_id(self) -> str | None:
        found = _RUN_URL.search(self.run_url or "")
        return found.group(1) if found else None

    @property
    def prefill_gpus(self) -> int:
        return self.num_prefill_gpu or 0

    @property
    def decode_gpus(self) -> int:
        return self.num_decode_gpu or 0

    @property
    def gpus(self) -> int:
        """Accelerators of the deployment: P + D when disaggregated, the stated chips when given, else TP."""
        if self.disagg:
            return self.prefill_gpus + self.decode_gpus
        return self.chips if self.chips is not None else self.tp

    def topology(self) -> dict[str, Any]:
        if not self.disagg:
            single = {"tp": self.tp, "ep": self.ep, "dp_attention": self.dp_attention, "gpus": self.gpus}
            # Stated only where a row says so, so the rows without them keep their configuration (fingerprint).
            extra = {"dp": self.dp} if self.dp > 1 else {}
            return {**single, **extra, **({"chips": self.chips} if self.chips is not None else {})}

        def side(name: str) -> dict[str, Any]:
            return {
                "workers": getattr(self, f"{name}_num_workers"), "tp": getattr(self, f"{name}_tp"),
                "ep": getattr(self, f"{name}_ep"), "dp_attention": getattr(self, f"{name}_dp_attention"),
                "gpus": getattr(self, f"num_{name}_gpu"),
            }  # fmt: skip

        return {"prefill": side("prefill"), "decode": side("decode"), "multinode": self.is_multinode}

    def topology_label(self) -> str:
        if not self.disagg:
            label = f"tp{self.tp}" + (f"-ep{self.ep}" if self.ep > 1 else "") + ("-dpa" if self.dp_attention else "")
            return label + (f"-dp{self.dp}" if self.dp > 1 else "") + (f"-{self.chips}chip" if self.chips else "")
        parts = []
        for name, short in (("prefill", "p"), ("decode", "d")):
            topology = self.topology()[name]
            parts.append(f"{short}{topology['workers']}x-tp{topology['tp']}-ep{topology['ep']}-{topology['gpus']}gpu")
        return "-".join(parts)


@dataclass(frozen=True)
class ImportedRow:
    """One row with what it means here: its registry keys and its configuration."""

    row: InferenceXRow
    index: int
    hardware: str
    model: str  # registry key, or the row's own label when the registry does not know it
    model_known: bool
    source_run: str  # the row's own run (its run_url), else its file's

    def configuration(self) -> dict[str, Any]:
        row = self.row
        return {
            "source": "inferencex", "hardware": self.hardware, "model": self.model, "precision": row.precision,
            "framework": row.framework, "image": row.image, "spec_decoding": row.spec_decoding,
            "disaggregated": row.disagg, "topology": row.topology(),
        }  # fmt: skip

    @functools.cached_property  # read for its recipe, its sweep's registration and its Point's key
    def fingerprint(self) -> str:
        text = json.dumps(self.configuration(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def recipe_name(self) -> str:
        row = self.row
        spec = f"-{row.spec_decoding}" if row.spec_decoding not in (None, "", "none") else ""
        model = self.model.rstrip("/").rsplit("/", 1)[-1]
        name = f"inferencex-{model}-{row.precision}-{self.hardware}-{row.framework}-{row.topology_label()}{spec}"
        return name.lower()


@dataclass
class RowFile:
    """What one file holds: the rows that can be imported, and those refused with their reasons."""

    path: Path
    source_run: str
    rows: list[ImportedRow] = field(default_factory=list)
    refused: list[tuple[int, str, Any, str]] = field(default_factory=list)  # index, field, value, expected
    unknown_models: Counter[str] = field(default_factory=Counter)

    @property
    def read(self) -> int:
        return len(self.rows) + len({index for index, *_ in self.refused})


class SnapshotContext(BaseModel):
    """What a snapshot-shaped file leaves out, given on the command line (each is required)."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_max_length=MAX_TEXT_CHARS)

    hardware: str = Field(description="Hardware label (a registry key or alias), e.g. 'tpu-v7'.")
    model: str = Field(description="Model id, e.g. 'Qwen/Qwen3.5-397B-A17B-FP8'.")
    precision: str = Field(description="Weight precision, e.g. 'fp8'.")
    isl: int = Field(gt=0, le=MAX_INPUT_TOKENS, description="Input length of the workload.")
    osl: int = Field(gt=0, le=MAX_OUTPUT_TOKENS, description="Output length of the workload.")
    framework: str = Field(description="Serving stack, e.g. 'vllm-tpu'.")
    date: datetime = Field(description="When the snapshot's run measured.")

    def complete(self, item: Any) -> Any:
        """A snapshot entry as an `agg_bmk.json` row: its metrics at the top level, the context's fields added."""
        if not isinstance(item, dict):
            return item
        row = {key: value for key, value in item.items() if key != "metrics"}
        metrics = item.get("metrics")
        row.update(metrics if isinstance(metrics, dict) else {})
        return {"hw": self.hardware, "model": self.model, "precision": self.precision, "isl": self.isl,
                "osl": self.osl, "framework": self.framework, "date": self.date.isoformat(), **row}  # fmt: skip


# Where InferenceX's result files come from: its benchmark workflows' runs (the repository was InferenceMAX before;
# GitHub redirects the old address).
ACTIONS_RUN = "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/{run}"


def run_link(row: InferenceXRow, run: str) -> str | None:
    """The address of the run a row comes from: its own `run_url`, else the GitHub Actions run its folder names."""
    if row.run_url:
        return row.run_url
    return ACTIONS_RUN.format(run=run) if run.isdigit() else None


def source_run(path: Path, run_id: str | None = None) -> str:
    """The InferenceX run a file comes from: `run_id` when the importer names it, else the GitHub Actions run id of
    either layout the benchmark's artifacts come in, `run_<id>/agg_bmk.json` or `run_<id>.json` (run ids grow with
    time, so they order runs), else the file's content hash: the same file is the same run wherever it lies, and its
    order among runs is unknown (`analysis.recency`)."""
    if run_id is not None:
        return run_id
    for name in (path.resolve().parent.name, path.stem):
        named = _RUN_NAME.match(name)
        if named:
            return named.group(1)
    return "sha-" + hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def _raw_rows(path: Path) -> list[Any]:
    try:
        if path.suffix == ".csv":
            with open(path, newline="") as handle:
                raw: Any = [{k: v for k, v in row.items() if v not in ("", None)} for row in csv.DictReader(handle)]
        else:
            raw = read_document(path, "InferenceX rows")
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise RecipeError(str(path), [("<file>", MISSING, f"expected InferenceX rows as JSON or CSV ({error})")],
                          what="InferenceX rows") from error  # fmt: skip
    if not isinstance(raw, list):
        raise RecipeError(
            str(path), [("<root>", type(raw).__name__, "expected a list of rows")], what="InferenceX rows"
        )
    return raw


def read_row_file(path: Path, snapshot: SnapshotContext | None = None, run_id: str | None = None) -> RowFile:
    """Every row of the file, each imported or refused on its own (a file that is not a row list is an error).

    With `snapshot`, the file is the dashboard's hand-made snapshot shape (`conc`, `tp`, `ep`, `chips`, `metrics`;
    InferenceX-app's TPU v7 file): what its rows do not say comes from `snapshot` (the import's flags)."""
    raw = _raw_rows(path)
    if snapshot is not None:
        raw = [snapshot.complete(item) for item in raw]
    machines, models = load_hardware_registry(), load_model_registry()
    known_hardware = sorted({*machines, *(alias for m in machines.values() for alias in m.aliases)})
    result = RowFile(path=path, source_run=source_run(path, run_id))
    # A file names a few chips and models across its hundreds of rows: each label looked up once.
    hardware_of = functools.cache(functools.partial(hardware_key_for, registry=machines))
    model_of = functools.cache(functools.partial(model_key_for, registry=models))
    for index, item in enumerate(raw):
        try:
            row = InferenceXRow.model_validate(item)
        except ValidationError as error:
            for e in error.errors(include_url=False):
                result.refused.append((index, *problem_of(e, ".".join(map(str, e["loc"])) or "<row>", InferenceXRow)))
            continue
        hardware = hardware_of(row.hw)
        if hardware is None:
            expected = f"expected a hardware key or alias of recipes/hardware.yaml ({', '.join(known_hardware)})"
            result.refused.append((index, "hw", row.hw, expected))
            continue
        if row.disagg and not (row.num_prefill_gpu and row.num_decode_gpu):
            expected = "expected GPU counts: a disaggregated row needs num_prefill_gpu and num_decode_gpu"
            result.refused.append((index, "num_prefill_gpu", row.num_prefill_gpu, expected))
            continue
        model = model_of(row.infmax_model_prefix, row.model)
        if model is None:
            result.unknown_models[row.model] += 1
        run = row.run_id or result.source_run
        result.rows.append(ImportedRow(row, index, hardware, model or row.model, model is not None, run))
    return result


def read_rows(path: Path) -> list[InferenceXRow]:
    """The file's rows, refusing the file when any row is refused (for callers that need all of it)."""
    read = read_row_file(path)
    if read.refused:
        problems = [(f"[{index}].{name}", value, expected) for index, name, value, expected in read.refused]
        raise RecipeError(str(path), problems, what="InferenceX rows")
    return [item.row for item in read.rows]


# InferenceX rows carry no sample counts, means or spreads.
_stats = Stats.reported
# A row states figures, not requests: only the figure check applies (the rest are listed not checked). The same
# verdict for every row, so judged once.
_ROW_VERDICT = judge("inferencex-row", Evidence(), ValidityThresholds())


def output_per_gpu(row: InferenceXRow) -> float:
    """Output tokens/s per GPU over all the deployment's GPUs (ours), from InferenceX's per-decode-GPU figure."""
    if row.disagg:
        return row.output_tput_per_gpu * row.decode_gpus / (row.prefill_gpus + row.decode_gpus)
    return row.output_tput_per_gpu


def to_point_metrics(row: InferenceXRow) -> PointMetrics:
    tpot_p50 = row.median_tpot * 1000
    tpot_p99 = 1000 / row.p99_intvty if row.p99_intvty else None
    gpus = row.gpus
    output, total = output_per_gpu(row), row.tput_per_gpu
    peer: dict[str, float] = {"inferencex_tput_per_gpu": row.tput_per_gpu}
    if row.disagg:
        peer["inferencex_output_tput_per_decode_gpu"] = row.output_tput_per_gpu
        if row.input_tput_per_gpu is not None:
            peer["inferencex_input_tput_per_prefill_gpu"] = row.input_tput_per_gpu
    else:
        peer["inferencex_output_tput_per_gpu"] = row.output_tput_per_gpu
        if row.input_tput_per_gpu is not None:
            peer["inferencex_input_tput_per_gpu"] = row.input_tput_per_gpu
    return PointMetrics(
        completed=0, failed=0, duration_s=0.0, total_input_tokens=0, total_output_tokens=0,
        request_throughput=0.0, output_throughput=output * gpus, total_token_throughput=total * gpus,
        accelerators=gpus, output_throughput_per_gpu=output, total_token_throughput_per_gpu=total,
        ttft_ms=_stats(row.median_ttft * 1000, row.p99_ttft * 1000 if row.p99_ttft is not None else None),
        tpot_ms=_stats(tpot_p50, tpot_p99), itl_ms=_stats(None),
        e2el_ms=_stats(row.median_e2el * 1000 if row.median_e2el is not None else None),
        client_queue_ms=_stats(None),
        interactivity=_stats(1000 / tpot_p50, row.p99_intvty),
        token_disagreement=0.0,
        window=MeasuredWindow(start=0.0, end=0.0, ramp_down_s=0.0, reached_target=True),
        validity=Validity.of(_ROW_VERDICT),
        peer_figures=peer,
    )  # fmt: skip
