"""The remote agent: runs one job on the machine it is started on and streams its events as lines.

The `ssh`, `tpu-vm` and `slurm` runners start it on the engine's host (`python -m runners.agent`),
so the engine launch, the load generator and the cleanup are the `local` runner's, next to the
engine: network latency to the orchestrator never enters TTFT.

Protocol: the JobSpec arrives as one JSON line (on stdin with `--spec -`, or in a file); each event
leaves as one line `EVENT_PREFIX + JSON` (runners/protocol.py), on stdout or appended to `--events FILE`.
Lines without the prefix are anything else the process printed and are only logged by the reader.

The agent stops its engine and exits when it is told to (SIGTERM, SIGINT, SIGHUP: scancel, a closed
SSH session) and, with `--watch-stdin`, when its stdin reaches end of file: that is how a dropped SSH
connection is noticed on the remote side even when no signal arrives.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from runners.host.process import stop_engines_owned_by
from runners.job import ErrorInfo, JobEvent, JobSpec
from runners.local import LocalRunner
from runners.protocol import encode_event


def _stop(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


# How long the main thread gets to unwind (stopping its engine on the way) once the connection is gone.
UNWIND_GRACE_S = 10.0


def _stop_for_good() -> None:
    """The connection is gone: interrupt the main thread, which stops the engine as it unwinds. Should it not
    have exited after UNWIND_GRACE_S (blocked in a call that does not return to Python), stop this process's
    engines from here and exit: an engine must never outlive the connection that started it."""
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(UNWIND_GRACE_S)
    try:
        stop_engines_owned_by(os.getpid())
    finally:
        os._exit(143)  # whatever the stop met: an agent that cannot exit keeps its connection's engine alive


def _watch_for_eof(stream: TextIO, on_eof: Callable[[], None]) -> None:
    def watch() -> None:
        while stream.readline():
            pass  # nothing more is expected; only the end of the stream matters
        on_eof()

    threading.Thread(target=watch, name="stdin-eof-watch", daemon=True).start()


def run_agent(spec: JobSpec, emit: Callable[[JobEvent], None]) -> int:
    emit(JobEvent(kind="job_placed", job_id=spec.job_id, message=f"agent on {socket.gethostname()}"))
    try:
        for event in LocalRunner().run_job(spec):
            emit(event)
    except KeyboardInterrupt:
        # The engine has been stopped by the runner's context managers by now.
        info = ErrorInfo(kind="Interrupted", message="the remote agent was stopped", retryable=True)
        emit(JobEvent(kind="job_failed", job_id=spec.job_id, message=info.message, error=info))
        return 130
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runners.agent", description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True, help="JobSpec JSON file, or - for one line on stdin.")
    parser.add_argument("--events", default="-", help="File to append event lines to, or - for stdout.")
    parser.add_argument("--watch-stdin", action="store_true", help="Stop the job when stdin reaches end of file.")
    args = parser.parse_args(argv)

    text = sys.stdin.readline() if args.spec == "-" else Path(args.spec).read_text()
    spec = JobSpec.model_validate_json(text)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _stop)
    if args.watch_stdin:
        _watch_for_eof(sys.stdin, _stop_for_good)

    if args.events == "-":
        out: TextIO = sys.stdout
    else:
        out = open(args.events, "a", encoding="utf-8")  # noqa: SIM115 - closed below, after the last event
    lock = threading.Lock()

    def emit(event: JobEvent) -> None:
        with lock:
            out.write(encode_event(event))
            out.flush()

    try:
        return run_agent(spec, emit)
    except BrokenPipeError:
        return 141  # the reader went away; the engine was stopped on the way out
    finally:
        if out is not sys.stdout:
            out.close()


if __name__ == "__main__":
    sys.exit(main())
