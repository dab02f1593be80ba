"""Hand-made result rows as the projection's readers see them (a ResultView's fields), for the curve, projection
and backtest tests."""

from __future__ import annotations

from types import SimpleNamespace

from analysis.curves import (
    CurvePoint,
    DisaggSplit,
)


def result_row(
    hardware: str, concurrency: int, interactivity: float, output: float, parallelism: str = "tp8"
) -> SimpleNamespace:
    return SimpleNamespace(
        origin="imported", valid=True, workload_kind="fixed-length", interactivity_p50=interactivity,
        output_throughput_per_gpu=output, total_token_throughput_per_gpu=2 * output, parallelism=parallelism,
        model="gpt-oss-120b", precision="fp4", engine="vllm", workload="1k/1k", hardware=hardware,
        concurrency=concurrency, isl=1024, osl=1024, point_key=f"{hardware}-{concurrency}", accelerators=8,
        engine_image="vllm/vllm-openai:v0.11.2", sweep="run-1",
    )  # fmt: skip


def chip_rows(hardware: str, speed: float) -> list[SimpleNamespace]:
    return [
        result_row(hardware, c, speed / (1 + c / 32), speed * c / (1 + c / 32) / 8) for c in (4, 8, 16, 32, 64, 128)
    ]


def replace_row(row: SimpleNamespace, factor: float) -> SimpleNamespace:
    return SimpleNamespace(**{**vars(row), "interactivity_p50": row.interactivity_p50 * factor,
                              "output_throughput_per_gpu": row.output_throughput_per_gpu * factor})  # fmt: skip


def on_image(rows: list[SimpleNamespace], image: str, factor: float = 1.0) -> list[SimpleNamespace]:
    return [SimpleNamespace(**{**vars(replace_row(r, factor)), "engine_image": image,
                               "point_key": f"{r.point_key}-{image}"}) for r in rows]  # fmt: skip


def result_points(rows: list[SimpleNamespace], image: str) -> list[CurvePoint]:
    return [CurvePoint(r.parallelism, r.concurrency, r.interactivity_p50, r.output_throughput_per_gpu,
                       r.total_token_throughput_per_gpu) for r in rows if r.engine_image == image]  # fmt: skip


def view_of_split(hardware: str, concurrency: int, interactivity: float, output: float, split: DisaggSplit,
                  image: str = "img:1") -> SimpleNamespace:  # fmt: skip
    label = f"disagg·p1×tp{split.prefill_gpus}·ep{split.prefill_gpus} {split.prefill_gpus}gpu·" \
            f"d{split.decode_workers}×tp8·ep8 {split.decode_gpus}gpu"  # fmt: skip
    return SimpleNamespace(
        origin="imported", valid=True, workload_kind="fixed-length", interactivity_p50=interactivity,
        output_throughput_per_gpu=output, total_token_throughput_per_gpu=2 * output, parallelism=label,
        model="deepseek-r1", precision="fp8", engine="dynamo-trt", workload="1k/1k", isl=1024, osl=1024,
        hardware=hardware, concurrency=concurrency, accelerators=split.prefill_gpus + split.decode_gpus,
        point_key=f"{hardware}-{label}-{concurrency}", engine_image=image, speculative_decoding=None,
        prefill_gpus=split.prefill_gpus, decode_gpus=split.decode_gpus, decode_workers=split.decode_workers,
        decode_dp_attention=split.decode_dp_attention, finished_at=None, disaggregated=True, sweep="run-1",
    )  # fmt: skip


def replace_view(view: SimpleNamespace, **changes: float) -> SimpleNamespace:
    return SimpleNamespace(**{**vars(view), **changes})
