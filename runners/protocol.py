"""The remote agent's line protocol: each JobEvent leaves the agent as one line `EVENT_PREFIX + JSON`.

The runners that start the agent on another machine (ssh, tpu-vm, slurm) read its output with
`decode_event`; lines without the prefix are anything else the process printed (engine chatter,
shell banners) and are only logged.
"""

from __future__ import annotations

from runners.job import JobEvent

EVENT_PREFIX = "@@infersweep-event "


def encode_event(event: JobEvent) -> str:
    return EVENT_PREFIX + event.model_dump_json() + "\n"


def decode_event(line: str) -> JobEvent | None:
    """The event on this line, or None for a line that is not an event (engine chatter, shell banners)."""
    text = line.rstrip("\r\n")
    if not text.startswith(EVENT_PREFIX):
        return None
    return JobEvent.model_validate_json(text[len(EVENT_PREFIX) :])
