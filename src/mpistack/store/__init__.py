"""The results store: campaigns, runs and results, in SQLite or PostgreSQL. SQL lives only here.

Names are imported on first use (PEP 562), so that `from mpistack.store import resolve_url` does not load
SQLAlchemy: the listing verbs read a SQLite store without it (store/reading.py)."""

from __future__ import annotations

from .address import DEFAULT_DB, resolve_url
from .errors import StoreError, StoreUnavailable
from .revision import SCHEMA_REVISION

_FROM_DATABASE = ("current_revision", "open_database", "upgrade")

__all__ = ["DEFAULT_DB", "SCHEMA_REVISION", "StoreError", "StoreUnavailable", "resolve_url", *_FROM_DATABASE]


def __getattr__(name: str):
    if name in _FROM_DATABASE:
        from . import database

        return getattr(database, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
