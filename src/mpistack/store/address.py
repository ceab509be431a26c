"""Where a results store is: the name a user gives (a path, a SQLite URL, a PostgreSQL URL) as a database URL.

Plain Python only: the listing verbs read this before they know whether they need SQLAlchemy at all."""

from __future__ import annotations

import re
from pathlib import Path

DEFAULT_DB = "mpistack.db"
# a password given as a query parameter (`?password=...`, which libpq and the drivers accept)
QUERY_PASSWORD = re.compile(r"([?&](?:password|passwd|pwd|sslpassword)=)[^&#\s'\"]*", re.IGNORECASE)


def without_query_password(text: str) -> str:
    """`text` with the value of every password query parameter of a URL in it masked (***)."""
    return QUERY_PASSWORD.sub(r"\1***", text)


def resolve_url(db: str | None) -> str:
    """'mpistack.db' -> 'sqlite:///mpistack.db'; 'postgresql://...' -> the psycopg 3 driver."""
    db = db or DEFAULT_DB
    if "://" not in db:
        return f"sqlite:///{Path(db)}"
    if db.startswith("postgresql://") or db.startswith("postgres://"):
        return "postgresql+psycopg://" + db.split("://", 1)[1]
    return db


def sqlite_file_url(url) -> bool:
    """Whether a parsed URL (sqlalchemy's URL) names a SQLite file, not SQLite's in-memory database."""
    return url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:")


def sqlite_file(db: str | None) -> Path | None:
    """The file of a SQLite store named by a path or a plain `sqlite:///` URL; None for any other store (a
    server, an in-memory database, a URL with options)."""
    url = resolve_url(db)
    if not url.startswith("sqlite:///") or "?" in url:
        return None
    path = url[len("sqlite:///"):]
    return None if path in ("", ":memory:") else Path(path)


def store_identity(db: str | None) -> str:
    """The store a name means, as a campaign's work directory and journal are keyed: its URL without the
    password; a SQLite file by its absolute path (the same as campaign.journal.store_identity of the engine
    opened from that name)."""
    from sqlalchemy import make_url  # only where a campaign runs: the listing verbs never ask

    url = make_url(resolve_url(db))
    if sqlite_file_url(url):
        return f"sqlite:///{Path(url.database).resolve()}"
    return without_query_password(url.render_as_string(hide_password=True))
