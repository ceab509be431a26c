"""The campaign's journal: a finished case's record, kept on local disk until the store has committed it.

A case's runs are written to a JSON file in the campaign's work directory (`journal/`) before the store's
transaction, and the file is removed after the commit. When the store goes away (a PostgreSQL server
stopped, a network gone) the file outlives the campaign; the next start of the campaign, or `--resume`,
stores what the journal holds before anything else runs. A case already in the store (its commit happened
but the file was not yet removed) is not stored twice: its file is dropped.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Callable

from sqlalchemy import Engine

from ..cache import write_file_atomically
from ..parsers.model import ParsedRun, RowTable
from ..spec.provenance import Provenance, parse_time
from ..spec.status import RunStatus
from ..store.address import sqlite_file_url, without_query_password
from ..store.campaigns import case_recorded
from ..store.database import retrying, write_transaction
from ..store.writer import write_runs

JOURNAL_VERSION = 2  # 2: rows column by column


@dataclass
class Entry:
    """What `write_runs` is given for one case, and where it goes."""

    store: str  # the store the case belongs to (URL, password masked; SQLite: its absolute path)
    campaign_id: int
    case: str  # the case's key: a case is stored once per campaign
    runs: list[ParsedRun]
    source: str
    tags: dict[str, str]
    provenance: Provenance
    status: RunStatus | None
    message: str | None

    def to_json(self) -> str:
        return json.dumps({
            "version": JOURNAL_VERSION, "store": self.store, "campaign_id": self.campaign_id, "case": self.case,
            "runs": [_run_data(run) for run in self.runs], "source": self.source, "tags": self.tags,
            "provenance": dataclasses.asdict(self.provenance),
            "status": self.status.value if self.status else None, "message": self.message,
        }, default=_encode)

    @classmethod
    def from_json(cls, text: str, where: str) -> "Entry":
        try:
            data = json.loads(text)
            if data.get("version") != JOURNAL_VERSION:
                raise ValueError(f"version {data.get('version')!r}, expected {JOURNAL_VERSION}")
            return cls(store=data["store"], campaign_id=int(data["campaign_id"]), case=data["case"],
                       runs=[_run(run) for run in data["runs"]], source=data["source"], tags=data["tags"],
                       provenance=_provenance(data["provenance"]),
                       status=RunStatus(data["status"]) if data["status"] else None, message=data["message"])
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{where}: not a journal entry of this mpistack: {error}") from None


def _encode(value):
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _provenance(data: dict) -> Provenance:
    provenance = Provenance(**data)
    provenance.started_at = parse_time(provenance.started_at)
    provenance.finished_at = parse_time(provenance.finished_at)
    return provenance


def _run_data(run: ParsedRun) -> dict:
    """A run's fields as JSON values: its rows one object each, its provenance a table."""
    data = {item.name: getattr(run, item.name) for item in dataclasses.fields(run)}
    data["rows"] = run.rows.to_data()
    data["provenance"] = dataclasses.asdict(run.provenance)
    return data


def _run(data: dict) -> ParsedRun:
    rows = RowTable.from_data(data.pop("rows"))
    return ParsedRun(**{**data, "rows": rows, "provenance": _provenance(data["provenance"])})


class Journal:
    """One file per finished case not yet committed, in `directory`."""

    def __init__(self, directory: Path):
        self.directory = directory

    def keep(self, label: str, entry: Entry) -> Path:
        """Write the entry durably (a temporary file, synced, renamed into place) and return its path."""
        return write_file_atomically(self.directory / f"{label}.json", entry.to_json(), durable=True)

    def pending(self) -> list[Path]:
        """The entries left by a run whose store went away, oldest first."""
        if not self.directory.is_dir():
            return []
        return sorted(self.directory.glob("*.json"), key=lambda path: (path.stat().st_mtime_ns, path.name))

    def read(self, path: Path) -> Entry:
        return Entry.from_json(path.read_text(encoding="utf-8"), str(path))


def store_identity(database: Engine) -> str:
    """The store a journal entry belongs to: its URL without the password; a SQLite file by absolute path."""
    url = database.url
    if sqlite_file_url(url):
        return f"sqlite:///{Path(url.database).resolve()}"
    return without_query_password(url.render_as_string(hide_password=True))


def commit(database: Engine, entry: Entry, journal: Journal | None = None,
           on_retry: Callable[[str, float], None] | None = None) -> bool:
    """Store the entry in one transaction, kept in the journal until the commit is done; tried again while
    the store is away (`retrying`), then StoreUnavailable with the entry left in the journal. Returns False
    when the case was already stored (its commit happened, the answer was lost)."""
    name = f"{entry.campaign_id}-{hashlib.sha1(entry.case.encode()).hexdigest()[:16]}"
    path = journal.keep(name, entry) if journal is not None else None
    written = retrying(database, lambda: _write_once(database, entry), on_retry=on_retry)
    if path is not None:
        path.unlink(missing_ok=True)
    return written


def _write_once(database: Engine, entry: Entry) -> bool:
    with write_transaction(database) as connection:
        if case_recorded(connection, entry.campaign_id, entry.case):
            return False
        write_runs(connection, entry.runs, source=entry.source, tags=entry.tags, campaign_id=entry.campaign_id,
                   provenance=entry.provenance, status=entry.status, message=entry.message)
    return True


@dataclass
class Replayed:
    stored: int = 0  # cases written from the journal
    already: int = 0  # cases the store had (their entries dropped)
    left: list[str] = dataclasses.field(default_factory=list)  # entries left in place, and why


def replay(database: Engine, journal: Journal, on_retry: Callable[[str, float], None] | None = None) -> Replayed:
    """Store what an earlier run left in the journal, each entry once; entries of another store stay."""
    replayed, here = Replayed(), store_identity(database)
    for path in journal.pending():
        try:
            entry = journal.read(path)
        except (OSError, ValueError) as error:
            replayed.left.append(str(error))
            continue
        if entry.store != here:
            replayed.left.append(f"{path}: belongs to the store {entry.store}")
            continue
        if retrying(database, lambda: _write_once(database, entry), on_retry=on_retry):
            replayed.stored += 1
        else:
            replayed.already += 1
        path.unlink(missing_ok=True)
    return replayed
