"""What a database fault means, decided once for the driver (orchestrator/recorder.py) and the CLI's wording
(orchestrator/cli/faults.py)."""

from __future__ import annotations

import errno


def disk_full(error: BaseException) -> bool:
    """The disk under the database (or under a file being written) is full: SQLite's 'database or disk is full',
    PostgreSQL's SQLSTATE 53100 ('could not extend file ... No space left on device'), or ENOSPC itself. No
    reconnection helps; waiting an outage out only delays the error."""
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return True
    cause = getattr(error, "orig", None)
    said = str(cause if cause is not None else error).lower()
    return "disk is full" in said or "no space left on device" in said or getattr(cause, "sqlstate", None) == "53100"
