"""Opening a results store: SQLite by default (a path or sqlite:// URL), PostgreSQL by URL.

SQLite runs in WAL mode with a busy timeout so that parallel writers wait instead of failing, and the
schema is brought to the current revision (Alembic) when a store is opened.
"""

from __future__ import annotations

import re
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Sequence, TypeVar
from urllib.parse import quote, unquote

from sqlalchemy import Connection, Engine, create_engine, event, inspect, make_url, text
from sqlalchemy.exc import ArgumentError, InterfaceError, OperationalError

from ..cache import UnsafePath, check_own
from .address import DEFAULT_DB, QUERY_PASSWORD, resolve_url, sqlite_file_url
from .errors import StoreError, StoreUnavailable
from .revision import SCHEMA_REVISION

T = TypeVar("T")
SQLITE_BUSY_TIMEOUT_MS = 60_000
MIGRATION_LOCK_KEY = 0x6D70_6973  # "mpis": the PostgreSQL advisory lock held while a store is migrated


#: seconds between the tries of an operation whose store went away: five tries over about 30 s
STORE_RETRY_DELAYS = (1.0, 2.0, 4.0, 8.0, 15.0)


def retrying(engine: Engine, operation: Callable[[], T], delays: Sequence[float] = STORE_RETRY_DELAYS,
             on_retry: Callable[[str, float], None] | None = None) -> T:
    """`operation()`, tried again after each of `delays` while the store is unreachable or busy (a
    PostgreSQL server restarting, a connection dropped, SQLite locked); then StoreUnavailable. `on_retry`
    hears why and how long the next wait is. The operation must be safe to repeat: each try is its own
    transaction, and one whose commit may have happened checks for that itself."""
    for delay in (*delays, None):
        try:
            return operation()
        except (OperationalError, InterfaceError) as error:
            reason = hide_password(driver_message(error) or type(error).__name__,
                                   engine.url.render_as_string(hide_password=False))
            if delay is None:
                raise StoreUnavailable(f"the results store {engine.url.render_as_string(hide_password=True)} did "
                                       f"not answer through {len(delays) + 1} tries over {sum(delays):.0f} s: "
                                       f"{reason}") from error
            if on_retry is not None:
                on_retry(reason, delay)
            time.sleep(delay)
    raise AssertionError("unreachable")


def driver_message(error: Exception) -> str:
    """The first line of the database driver's own message (not SQLAlchemy's dump of the statement); empty
    when it says nothing."""
    lines = str(getattr(error, "orig", None) or error).strip().splitlines()
    return lines[0] if lines else ""


def display_url(db: str | None) -> str:
    """The store as a person may read it: a URL's password replaced by ***."""
    db = db or DEFAULT_DB
    if "://" not in db:
        return db
    try:
        shown = make_url(db).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):  # malformed (a port that is not a number): masked as text
        shown = _URL_PASSWORD.sub(r"\1***@", db)
    return _QUERY_PASSWORD.sub(r"\1***", shown)


_URL_PASSWORD = re.compile(r"(://[^:/@\s]*:)[^@\s]*@")
_QUERY_PASSWORD = QUERY_PASSWORD
# a shorter password is masked only where it stands in a URL: as plain text it would mask every such letter
_MASKED_ANYWHERE = 4


def hide_password(text: str, db: str | None) -> str:
    """`text` (an error message, a driver's exception) with the store URL's password masked wherever it is
    quoted, raw or percent-encoded, and any other user:password@ in a URL."""
    passwords = set()
    if db and "://" in db:
        try:
            passwords.add(make_url(db).password or "")
        except (ArgumentError, ValueError):
            pass
        passwords.add(db.split("://", 1)[1].split("@", 1)[0].partition(":")[2] if "@" in db else "")
        passwords.update(match.group(0).split("=", 1)[1] for match in _QUERY_PASSWORD.finditer(db))
    for password in {password for password in passwords if len(password) >= _MASKED_ANYWHERE}:
        for form in {password, quote(password, safe=""), unquote(password)}:
            if form:
                text = text.replace(form, "***")
    return _QUERY_PASSWORD.sub(r"\1***", _URL_PASSWORD.sub(r"\1***@", text))


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    # Let SQLAlchemy, not the sqlite3 module, begin transactions, so that SAVEPOINTs work (the
    # recipe in SQLAlchemy's pysqlite documentation; see _sqlite_begin).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")  # first: switching to WAL may have to wait
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")  # WAL keeps committed data safe across a crash of mpistack
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _sqlite_begin(connection) -> None:
    # "IMMEDIATE" where a connection asks for it (write_connection): the write lock is taken at BEGIN, so that
    # a second process waits there (busy timeout) instead of failing when it upgrades a read lock
    connection.exec_driver_sql(f"BEGIN {connection.get_execution_options().get('sqlite_begin', '')}".strip())


def write_connection(engine: Engine) -> Connection:
    """A connection for transactions that write. On SQLite each takes the write lock at BEGIN (IMMEDIATE), so
    that it waits its turn (busy timeout) behind other writers: a transaction that read first and then writes
    is refused at once with "database is locked" when another process committed in between (SQLite cannot let
    it wait: its snapshot is stale). PostgreSQL needs nothing of the kind."""
    return engine.connect().execution_options(sqlite_begin="IMMEDIATE")


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A transaction that writes (see `write_connection`), committed at the end of the block."""
    with write_connection(engine) as connection, connection.begin():
        yield connection


def _alembic_config(connection: Connection):
    from alembic.config import Config  # imported on demand: migrating is rare, starting the CLI is not

    config = Config()
    config.set_main_option("script_location", "mpistack.store:migrations")
    config.attributes["connection"] = connection
    return config


def current_revision(engine: Engine) -> str | None:
    """The Alembic revision the store is at, None for an empty database."""
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return None
        return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


def upgrade(engine: Engine) -> None:
    """Bring the schema to the current revision (creates it in an empty database). Safe when several processes
    open a new store at once: one migrates while the others wait on a lock (SQLite's write lock, a PostgreSQL
    advisory lock), and they then find the schema current (both databases change schemas in transactions)."""
    from alembic import command

    with write_transaction(engine) as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
        command.upgrade(_alembic_config(connection), "head")


#: the fix for a SQLite store another user could change
OWN_STORE_FIX = ("keep the store in a directory of your own (--db DIR/mpistack.db), or share results through "
                 "PostgreSQL")


def _check_own_sqlite_file(path: Path) -> None:
    """A SQLite store this user writes must be theirs: another user who can write the file, or its directory
    (where SQLite finds a journal of the file's name and replays it on open), could forge results."""
    try:
        check_own(path, OWN_STORE_FIX)
        check_own(path.resolve().parent, OWN_STORE_FIX)
    except UnsafePath as error:
        raise StoreError(f"results store {error}") from None


def open_database(db: str | None = None, migrate: bool = True) -> Engine:
    url = resolve_url(db)
    expected = ("a SQLite path, sqlite:///PATH or postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE with a numeric "
                "PORT")
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as error:
        raise StoreError(f"cannot open results store {display_url(db)!r}: not a database URL ({error}); expected "
                         f"{expected}") from None
    if parsed.get_backend_name() == "sqlite" and not sqlite_file_url(parsed):
        # SQLite's in-memory database would take the results and lose them when the command ends
        raise StoreError(f"cannot open results store {display_url(db)!r}: it names no file (an in-memory database "
                         f"keeps nothing); expected {expected}")
    if sqlite_file_url(parsed):
        _check_own_sqlite_file(Path(parsed.database))
    try:
        if url.startswith("sqlite"):
            # named parameters: the writer hands rows as dicts straight to sqlite3's executemany
            engine = create_engine(url, paramstyle="named", connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
            event.listen(engine, "connect", _sqlite_pragmas)
            event.listen(engine, "begin", _sqlite_begin)
        else:
            engine = create_engine(url, pool_pre_ping=True)
        revision = current_revision(engine)
    except Exception as error:  # driver errors differ per backend: report them in one shape
        # the driver's own words (SQLAlchemy wraps them with its class name and a link to its error pages), on one line
        reason = " ".join(str(getattr(error, "orig", None) or error).split())
        raise StoreError(hide_password(f"cannot open results store {display_url(db)!r}: {reason}", db)) from error
    # (read the revision again: another process may have created the schema in between)
    if revision is None and inspect(engine).has_table("results") and current_revision(engine) is None:
        raise StoreError(f"{display_url(db)}: has a results table but no schema revision; not an mpistack store")
    if revision is not None and revision > SCHEMA_REVISION:
        raise StoreError(f"{display_url(db)}: schema revision {revision} is newer than this mpistack ({SCHEMA_REVISION}); "
                         "upgrade mpistack")
    if migrate and revision != SCHEMA_REVISION:
        upgrade(engine)
    return engine
