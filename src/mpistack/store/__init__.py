"""The results store: campaigns, runs and results, in SQLite or PostgreSQL. SQL lives only here."""

from .database import DEFAULT_DB, StoreError, current_revision, open_database, resolve_url, upgrade
from .schema import SCHEMA_REVISION

__all__ = ["DEFAULT_DB", "SCHEMA_REVISION", "StoreError", "current_revision", "open_database", "resolve_url",
           "upgrade"]
