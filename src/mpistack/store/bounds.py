"""Machine bounds in the store: one row per campaign, host, kind of bound and MPI family, with how it was
measured (command, library version, when, how many launches, how it ended) and its figures per size (a JSON
list of {size, value, low, high, launches}).

The table is its own, apart from schema.Base: only this module reads and writes it. It is read with plain SQL
(store/reading.py: `mpistack show` reads a SQLite store without loading SQLAlchemy), written through
SQLAlchemy. campaign/bounds.py writes it, analysis/bounds.py reads it into MachineBounds.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from functools import lru_cache
from typing import TYPE_CHECKING

from .reading import read_session

if TYPE_CHECKING:
    from sqlalchemy import Engine


@lru_cache(maxsize=1)
def bounds_table():
    """The machine_bounds table (migration 0004), for writing; the campaigns table beside it as a foreign key
    target (a copy in this metadata: the table itself is schema.py's)."""
    from sqlalchemy import JSON, Column, DateTime, ForeignKey, Integer, MetaData, String, Table, Text

    from .schema import CampaignRow

    metadata = MetaData()
    CampaignRow.__table__.to_metadata(metadata)
    return Table(
        "machine_bounds", metadata,
        Column("id", Integer, primary_key=True),
        Column("campaign_id", Integer, ForeignKey("campaigns.id", ondelete="CASCADE"), nullable=False, index=True),
        Column("host", String(255), nullable=False),
        Column("cpu_model", Text),
        Column("kernel", String(200)),
        Column("kind", String(32), nullable=False),
        Column("mpi", String(32), nullable=False),
        Column("command", Text),
        Column("library_version", Text),
        Column("measured_at", DateTime(timezone=True), nullable=False),
        Column("launches", Integer, nullable=False),
        Column("status", String(16), nullable=False),
        Column("message", Text),
        Column("figures", JSON),
    )


#: the fields of one stored figure (BoundFigure's, less kind and mpi: they are the row's)
FIGURE_FIELDS = ("size", "value", "low", "high", "launches")
#: how an inter-node bound's message begins: the link it measured ("link: TCP between node1 and node2 ..."),
#: then, after "; ", what else happened; the host record's `network` is read from it
LINK_PREFIX = "link: "
#: a row's provenance fields (BoundSource's)
SOURCE_FIELDS = ("kind", "mpi", "host", "command", "library_version", "measured_at", "launches", "status", "message")


def write_bounds(engine: "Engine", campaign_id: int, machine: dict, measurements: list[dict]) -> None:
    """Store measurements of one host for a campaign. `machine`: host, cpu_model, kernel; each measurement:
    kind, mpi, command, library_version, measured_at, launches, status, message and figures (dicts of
    FIGURE_FIELDS). Earlier rows stay: a reader takes the newest of each kind."""
    if not measurements:
        return
    rows = [{"campaign_id": campaign_id, "host": machine["host"], "cpu_model": machine.get("cpu_model", ""),
             "kernel": machine.get("kernel", ""),
             **{key: m.get(key) for key in SOURCE_FIELDS if key != "host"},
             "measured_at": m.get("measured_at") or datetime.now(timezone.utc),
             "figures": [{key: figure[key] for key in FIGURE_FIELDS} for figure in m.get("figures", [])]}
            for m in measurements]
    from sqlalchemy import insert

    from .database import write_transaction

    with write_transaction(engine) as connection:
        connection.execute(insert(bounds_table()), rows)


def measured(store, campaign_id: int, host: str) -> set[tuple[str, str]]:
    """(kind, mpi) of the bounds the campaign already has for `host`, measured to the end (status ok): what
    a resumed campaign does not measure again."""
    with read_session(store) as session:
        return set(session.rows("SELECT kind, mpi FROM machine_bounds WHERE campaign_id = :campaign AND host = :host "
                                "AND status = 'ok'", {"campaign": campaign_id, "host": host}))


_COLUMNS = ("id", "host", "cpu_model", "kernel", "kind", "mpi", "command", "library_version", "measured_at",
            "launches", "status", "message", "figures")


def read_bounds(store, campaign_id: int, host: str | None = None) -> tuple[dict, list[dict], list[dict]] | None:
    """The campaign's bounds on `host` (default: the first host measured) as (machine, figures, sources): the
    newest row of each (kind, mpi), an ok one before one that failed; None when the campaign has none. `store`:
    an Engine or a SqliteStore (store/reading.py)."""
    with read_session(store) as session:
        rows = [dict(zip(_COLUMNS, row)) for row in session.rows(
            f"SELECT {', '.join(_COLUMNS)} FROM machine_bounds WHERE campaign_id = :campaign ORDER BY id",
            {"campaign": campaign_id})]
    if not rows:
        return None
    host = host if host is not None else rows[0]["host"]
    newest: dict[tuple[str, str], dict] = {}
    for row in rows:
        if row["host"] != host:
            continue
        key = (row["kind"], row["mpi"])
        if row["status"] == "ok" or newest.get(key, {}).get("status") != "ok":
            newest[key] = row
    if not newest:
        return None
    last = max(newest.values(), key=lambda row: row["id"])
    links = sorted({link_of(row["message"]) for row in newest.values() if row["status"] == "ok"} - {""})
    machine = {"host": host, "cpu_model": last["cpu_model"] or "", "kernel": last["kernel"] or "",
               "network": "; ".join(links) or "not measured"}
    figures, sources = [], []
    for row in newest.values():
        stored = row["figures"]  # SQLite gives JSON text, PostgreSQL's driver the list
        for figure in (json.loads(stored) if isinstance(stored, str) else stored) or []:
            figures.append({"kind": row["kind"], "mpi": row["mpi"], **{key: figure[key] for key in FIGURE_FIELDS}})
        when = row["measured_at"]
        sources.append({**{key: (row[key] if row[key] is not None else "") for key in SOURCE_FIELDS},
                        "measured_at": datetime.fromisoformat(when) if isinstance(when, str) else when})
    return machine, figures, sources


def link_of(message: str | None) -> str:
    """The link an inter-node bound's message names ("" for any other message)."""
    if not message or not message.startswith(LINK_PREFIX):
        return ""
    return message[len(LINK_PREFIX):].split("; ", 1)[0]


def bound_hosts(store, campaign_id: int) -> list[str]:
    """The hosts the campaign's bounds were measured on, in the order they were."""
    with read_session(store) as session:
        rows = session.rows("SELECT host FROM machine_bounds WHERE campaign_id = :campaign ORDER BY id",
                            {"campaign": campaign_id})
    return list(dict.fromkeys(host for (host,) in rows))


def copy_recent(engine: "Engine", campaign_id: int, host: str, since: datetime,
                skip: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """Copy to the campaign the newest ok bound of each (kind, mpi) that another campaign measured on `host`
    after `since`, but those in `skip`; the (kind, mpi) copied. A copy keeps its measurement's time and says
    which campaign measured it."""
    from sqlalchemy import insert, select

    from .database import write_transaction

    table = bounds_table()
    with write_transaction(engine) as connection:
        rows = connection.execute(
            select(table).where(table.c.host == host, table.c.status == "ok", table.c.measured_at >= since,
                                table.c.campaign_id != campaign_id).order_by(table.c.id.desc()))
        newest: dict[tuple[str, str], dict] = {}
        for row in rows:
            key = (row.kind, row.mpi)
            if key not in skip and key not in newest:
                copy = dict(row._mapping)
                del copy["id"]
                link = link_of(copy["message"])  # an inter-node bound keeps the link it measured
                copy["message"] = (f"{LINK_PREFIX}{link}; " if link else "") + \
                    f"measured for campaign {copy['campaign_id']}"
                copy["campaign_id"] = campaign_id
                newest[key] = copy
        if newest:
            connection.execute(insert(table), list(newest.values()))
    return list(newest)
