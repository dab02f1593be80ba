"""Faults of the machine the command runs on, worded for its operator: the results database (locked, corrupt,
unreachable, out of connections) and a full disk. They surface anywhere (opening the database, a write deep in a
sweep, Streamlit's reader), so the CLI's entry point words them once (`environment_fault`)."""

from __future__ import annotations

from sqlalchemy.exc import SQLAlchemyError

from db.faults import disk_full
from db.session import default_database_url, shown_database_url
from recipes.errors import ConfigurationError, InferSweepError, InfrastructureError

# (what the driver says, what it means and what to do, whether a retry can help)
DATABASE_FAULTS = (
    ("database is locked", "another process holds its write lock (a sweep, a migration, an open `sqlite3` shell); "
     "try again once it is done", True),
    ("file is not a database", "the file is not a SQLite database, or is corrupt: restore it from a backup or point "
     "INFERSWEEP_DATABASE_URL at another database", False),
    ("database disk image is malformed", "the file is corrupt: restore it from a backup, or recover what can be "
     "read with `sqlite3 FILE .recover`", False),
    ("remaining connection slots", "the server has no connection left for this user: close idle clients or raise "
     "max_connections, then try again", True),
    ("too many connections", "the server, or this role, has no connection left: close idle clients or raise the "
     "limit (max_connections, the role's CONNECTION LIMIT), then try again", True),
    ("too many clients", "the server has no connection left: close idle clients or raise max_connections, then try "
     "again", True),
    ("connection refused", "nothing answers at its address: is the server running?", True),
    ("could not connect", "the server cannot be reached", True),
    ("unable to open database file", "its folder does not exist or cannot be written", False),
    ("readonly database", "the file or its folder is read-only for this user", False),
)  # fmt: skip


def environment_fault(error: BaseException) -> InferSweepError | None:
    """`error` as one worded error when it is a database or disk fault; None for anything else."""
    if isinstance(error, OSError) and disk_full(error):
        where = f" writing {error.filename}" if error.filename else ""
        return InfrastructureError(f"the disk is full{where}: free space and run the command again (finished "
                                   "results are kept; a sweep resumes where it stopped)")  # fmt: skip
    if not isinstance(error, SQLAlchemyError):
        return None
    said = str(getattr(error, "orig", None) or error).strip().splitlines()[0] if str(error).strip() else repr(error)
    if disk_full(error):  # SQLite's wording and PostgreSQL's (SQLSTATE 53100) alike
        return InfrastructureError(f"the results database {shown_database_url()}: {said}: the disk holding it is full: "
                                   "free space and run the command again (finished results are kept)")  # fmt: skip
    for needle, meaning, retryable in DATABASE_FAULTS:
        if needle in said.lower():
            kind = InfrastructureError if retryable else ConfigurationError
            if needle == "unable to open database file":
                meaning = _why_unopenable() or meaning
            return kind(f"the results database {shown_database_url()}: {said}: {meaning}")
    return InfrastructureError(f"the results database {shown_database_url()} failed: {said}")


def _why_unopenable() -> str | None:
    """Which of SQLite's reasons for "unable to open database file" holds for the configured file (None: not one)."""
    from orchestrator.cli.site import sqlite_path

    try:
        path = sqlite_path(default_database_url())
    except ConfigurationError:
        return None
    if path is None:
        return None
    if path.is_dir():
        return f"{path} is a folder, not a database file: name a file in INFERSWEEP_DATABASE_URL"
    if not path.parent.is_dir():
        return f"its folder {path.parent} does not exist"
    return "the file or its folder cannot be written by this user"


def damaged_database(finding: str) -> ConfigurationError:
    """A SQLite file whose pages SQLite's own check refuses (`db.session.sqlite_damage`), worded as a malformed one."""
    meaning = next(meaning for needle, meaning, _ in DATABASE_FAULTS if needle == "database disk image is malformed")
    return ConfigurationError(f"the results database {shown_database_url()}: {finding}: {meaning}")
