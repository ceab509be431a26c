"""Reading a results store with plain SQL, through the lightest driver that can.

A SQLite store at this mpistack's schema revision is read with Python's own sqlite3 module: importing
SQLAlchemy alone takes longer than a whole `mpistack results`, so the listing verbs leave it to PostgreSQL,
to writing and to migrating. The reading SQL (store/query.py) is written once, in the subset both databases
speak, with `:name` parameters, which sqlite3 and SQLAlchemy's `text()` both take.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

from .address import sqlite_file
from .revision import SCHEMA_REVISION

SQLITE_BUSY_TIMEOUT_S = 60.0


class SqliteStore:
    """A SQLite store file at the current schema revision, read without SQLAlchemy."""

    def __init__(self, path: Path):
        self.path = path

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"


class ReadSession:
    """One read transaction (a consistent snapshot): `rows` of a statement, or its DB-API `cursor` to iterate
    when the rows are too many to hold."""

    def __init__(self, execute):
        self._execute = execute

    def cursor(self, sql: str, params: dict[str, Any] | None = None):
        return self._execute(sql, params or {})

    def rows(self, sql: str, params: dict[str, Any] | None = None) -> list[tuple]:
        return self.cursor(sql, params).fetchall()


@contextmanager
def read_session(store) -> Iterator[ReadSession]:
    """A read transaction on `store`: a SqliteStore, or an SQLAlchemy Engine (any database it speaks to)."""
    if isinstance(store, SqliteStore):
        # mode=rw: never create a file (a read-only verb on a missing store says so instead)
        connection = sqlite3.connect(f"{store.path.absolute().as_uri()}?mode=rw", uri=True,
                                     timeout=SQLITE_BUSY_TIMEOUT_S, isolation_level=None)
        try:
            connection.execute("BEGIN")  # one snapshot for every statement of the session
            yield ReadSession(connection.execute)
        finally:
            connection.close()  # (nothing was written: closing ends the transaction)
        return
    from sqlalchemy import text

    with store.connect() as connection:
        # the driver's cursor: plain tuples, not a Row object each
        yield ReadSession(lambda sql, params: connection.execute(text(sql), params).cursor)


def open_reader(db: str | None):
    """The store named `db`, for reading: a SqliteStore when it is a SQLite file at this mpistack's schema
    revision, else `open_database`'s engine (which migrates an older store and explains an unusable one)."""
    path = sqlite_file(db)
    if path is not None and path.is_file():
        store = SqliteStore(path)
        try:
            with read_session(store) as session:
                if session.rows("SELECT version_num FROM alembic_version") == [(SCHEMA_REVISION,)]:
                    return store
        except sqlite3.Error:
            pass  # not a store of this revision, or not one at all: open_database says which
    from .database import open_database

    return open_database(db)


# How a column comes back from each driver: SQLite holds JSON as text, times as ISO text and booleans as 0/1;
# PostgreSQL's driver returns them decoded. tests/store/test_reading.py checks these against the schema.
JSON_COLUMNS = frozenset({"environment", "hosts", "transport", "spec"})
TIME_COLUMNS = frozenset({"started_at", "finished_at", "created_at", "since"})
BOOLEAN_COLUMNS = frozenset({"incomplete"})


def decoded(column: str, value):
    """`value` as the schema's type of `column` has it, whichever driver read it."""
    if value is None:
        return None
    if column in JSON_COLUMNS:
        return json.loads(value) if isinstance(value, str) else value
    if column in TIME_COLUMNS:
        return datetime.fromisoformat(value) if isinstance(value, str) else value
    if column in BOOLEAN_COLUMNS:
        return bool(value)
    return value
