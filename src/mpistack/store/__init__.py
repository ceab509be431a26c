"""The results store: campaigns, runs and results, in SQLite or PostgreSQL."""

from .engine import DEFAULT_DB, StoreError, current_revision, open_engine, resolve_url, upgrade
from .schema import SCHEMA_REVISION, RunStatus

__all__ = ["DEFAULT_DB", "SCHEMA_REVISION", "RunStatus", "StoreError", "current_revision", "open_engine",
           "resolve_url", "upgrade"]
