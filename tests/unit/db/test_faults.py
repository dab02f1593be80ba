"""A full disk is recognised once (db/faults.py), however it surfaces: the OS, SQLite's words, PostgreSQL's state."""

from __future__ import annotations

import errno
import sqlite3

from sqlalchemy.exc import OperationalError

from db.faults import disk_full


class PostgresDiskFull(Exception):
    sqlstate = "53100"  # psycopg's attribute; the message is the server's own


def wrapped(cause: BaseException) -> OperationalError:
    return OperationalError("INSERT INTO point_result ...", {}, cause)


def test_every_spelling_of_a_full_disk_is_one_fault() -> None:
    assert disk_full(OSError(errno.ENOSPC, "No space left on device", "/data/results.db"))
    assert disk_full(wrapped(sqlite3.OperationalError("database or disk is full")))
    assert disk_full(wrapped(PostgresDiskFull('could not extend file "base/16384/2619": wrote only 4096 of 8192')))


def test_other_faults_are_not_a_full_disk() -> None:
    assert not disk_full(wrapped(sqlite3.OperationalError("database is locked")))
    assert not disk_full(OSError(errno.EACCES, "Permission denied"))
    assert not disk_full(wrapped(PostgresDiskFull.__base__("connection refused")))
