"""Import InferenceX aggregated rows (JSON list or CSV) as points with origin `imported`.

InferenceX's row (see shared/reference/peer-tools.md): latencies in seconds, throughputs per GPU, and
`*_intvty` = 1000 / the same percentile of TPOT in ms, so `p99_intvty` is the slow tail. Each row's
configuration (model, framework, precision, hardware, parallelism) becomes a recipe snapshot keyed by
its own fingerprint, so imported rows line up with native results of the same hardware.
"""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from recipes.errors import MISSING, RecipeError
from runners.loadgen.records import MeasuredWindow, PointMetrics, Stats, Validity

# InferenceX hardware names -> keys of recipes/hardware.yaml.
HARDWARE_KEYS = {
    "h100": "h100", "h200": "h200", "b200": "b200", "b300": "b300", "gb200": "gb200-nvl72",
    "gb300": "gb300-nvl72", "mi300x": "mi300x", "mi325x": "mi325x", "mi355x": "mi355x",
}  # fmt: skip


class InferenceXRow(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)  # external format: read what we use

    hw: str = Field(description="InferenceX hardware name, e.g. 'b200'.")
    conc: int = Field(gt=0, description="Max concurrency.")
    model: str = Field(description="Model id.")
    framework: str = Field(description="Serving stack, e.g. 'vllm', 'sglang', 'trt'.")
    precision: str = Field(description="e.g. 'fp8', 'fp4'.")
    isl: int = Field(gt=0, description="Input length.")
    osl: int = Field(gt=0, description="Output length.")
    tp: int = Field(1, ge=1, description="Tensor parallel size.")
    ep: int = Field(1, ge=1, description="Expert parallel size.")
    dp_attention: bool = Field(False, description="Data-parallel attention.")
    disagg: bool = Field(False, description="Disaggregated prefill/decode.")
    spec_decoding: str | None = Field(None, description="Speculative decoding method, if any.")
    image: str | None = Field(None, description="Container image.")
    tput_per_gpu: float = Field(ge=0, description="Total tokens/s per GPU.")
    output_tput_per_gpu: float = Field(ge=0, description="Output tokens/s per GPU.")
    median_ttft: float = Field(ge=0, description="Median TTFT, seconds.")
    p99_ttft: float | None = Field(None, ge=0, description="p99 TTFT, seconds.")
    median_tpot: float = Field(gt=0, description="Median TPOT, seconds.")
    median_e2el: float | None = Field(None, ge=0, description="Median E2EL, seconds.")
    p99_intvty: float | None = Field(None, gt=0, description="1000 / p99 TPOT (ms): the slow tail.")

    @property
    def hardware_key(self) -> str | None:
        return HARDWARE_KEYS.get(self.hw.lower())

    def configuration(self) -> dict[str, object]:
        return self.model_dump(include={"hw", "model", "framework", "precision", "tp", "ep", "dp_attention",
                                        "disagg", "spec_decoding", "image"})  # fmt: skip

    @property
    def fingerprint(self) -> str:
        text = json.dumps({"source": "inferencex", **self.configuration()}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def recipe_name(self) -> str:
        return f"inferencex-{self.model.split('/')[-1]}-{self.precision}-{self.hw}-{self.framework}-tp{self.tp}".lower()


def read_rows(path: Path) -> list[InferenceXRow]:
    try:
        if path.suffix == ".csv":
            with open(path, newline="") as handle:
                raw = [{k: v for k, v in row.items() if v not in ("", None)} for row in csv.DictReader(handle)]
        else:
            raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError, csv.Error) as error:
        raise RecipeError(str(path), [("<file>", MISSING, f"expected InferenceX rows as JSON or CSV ({error})")],
                          what="InferenceX rows") from error  # fmt: skip
    if not isinstance(raw, list):
        raise RecipeError(
            str(path), [("<root>", type(raw).__name__, "expected a list of rows")], what="InferenceX rows"
        )
    rows, problems = [], []
    for index, item in enumerate(raw):
        try:
            rows.append(InferenceXRow.model_validate(item))
        except ValidationError as error:
            for e in error.errors(include_url=False):
                field = f"[{index}]." + ".".join(map(str, e["loc"]))
                problems.append((field, e.get("input", MISSING), e["msg"]))
    for index, row in enumerate(rows):
        if row.hardware_key is None:
            problems.append((f"[{index}].hw", row.hw, f"expected one of {sorted(HARDWARE_KEYS)}"))
    if problems:
        raise RecipeError(str(path), problems, what="InferenceX rows")
    return rows


def _stats(p50: float | None, p99: float | None = None) -> Stats:
    # InferenceX rows carry no sample counts, means or spreads: n is 0 (unknown) and those are None.
    return Stats(n=0, mean=None, p50=p50, p90=None, p99=p99, std=None)


def to_point_metrics(row: InferenceXRow) -> PointMetrics:
    tpot_p50 = row.median_tpot * 1000
    tpot_p99 = 1000 / row.p99_intvty if row.p99_intvty else None
    total = row.tput_per_gpu
    return PointMetrics(
        completed=0, failed=0, duration_s=0.0, total_input_tokens=0, total_output_tokens=0,
        request_throughput=0.0, output_throughput=row.output_tput_per_gpu, total_token_throughput=total,
        accelerators=1, output_throughput_per_gpu=row.output_tput_per_gpu, total_token_throughput_per_gpu=total,
        ttft_ms=_stats(row.median_ttft * 1000, row.p99_ttft * 1000 if row.p99_ttft is not None else None),
        tpot_ms=_stats(tpot_p50, tpot_p99), itl_ms=_stats(None),
        e2el_ms=_stats(row.median_e2el * 1000 if row.median_e2el is not None else None),
        client_queue_ms=_stats(None),
        interactivity=_stats(1000 / tpot_p50, row.p99_intvty),
        token_disagreement=0.0,
        window=MeasuredWindow(start=0.0, end=0.0, ramp_down_s=0.0, reached_target=True),
        validity=Validity(valid=True, reasons=[]),
    )  # fmt: skip
