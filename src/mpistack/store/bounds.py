"""Machine bounds in the store: one row per campaign, host, kind of bound and MPI family, with how it was
measured (command, library version, when, how many launches, how it ended) and its figures per size (a JSON
list of {size, value, low, high, launches}).

The table is its own, apart from schema.Base: only this module reads and writes it (the listing verbs' plain
SQLite reader never does). campaign/bounds.py writes it, analysis/bounds.py reads it into MachineBounds.
"""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import (JSON, Column, DateTime, Engine, ForeignKey, Integer, MetaData, String, Table, Text, insert,
                        select)

from .database import write_transaction
from .schema import CampaignRow

METADATA = MetaData()
# the campaigns table as a foreign key target (a copy in this metadata: the table itself is schema.py's)
CampaignRow.__table__.to_metadata(METADATA)

BOUNDS = Table(
    "machine_bounds", METADATA,
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
#: a row's provenance fields (BoundSource's)
SOURCE_FIELDS = ("kind", "mpi", "host", "command", "library_version", "measured_at", "launches", "status", "message")


def write_bounds(engine: Engine, campaign_id: int, machine: dict, measurements: list[dict]) -> None:
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
    with write_transaction(engine) as connection:
        connection.execute(insert(BOUNDS), rows)


def measured(engine: Engine, campaign_id: int, host: str) -> set[tuple[str, str]]:
    """(kind, mpi) of the bounds the campaign already has for `host`, measured to the end (status ok): what
    a resumed campaign does not measure again."""
    with engine.connect() as connection:
        return set(connection.execute(
            select(BOUNDS.c.kind, BOUNDS.c.mpi).where(BOUNDS.c.campaign_id == campaign_id, BOUNDS.c.host == host,
                                                      BOUNDS.c.status == "ok")).all())


def read_bounds(engine: Engine, campaign_id: int, host: str | None = None) -> tuple[dict, list[dict], list[dict]] | None:
    """The campaign's bounds on `host` (default: the first host measured) as (machine, figures, sources): the
    newest row of each (kind, mpi), an ok one before one that failed; None when the campaign has none."""
    with engine.connect() as connection:
        query = select(BOUNDS).where(BOUNDS.c.campaign_id == campaign_id).order_by(BOUNDS.c.id)
        rows = [row._mapping for row in connection.execute(query)]
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
    machine = {"host": host, "cpu_model": last["cpu_model"] or "", "kernel": last["kernel"] or ""}
    figures = [{"kind": row["kind"], "mpi": row["mpi"], **{key: figure[key] for key in FIGURE_FIELDS}}
               for row in newest.values() for figure in row["figures"] or []]
    sources = [{key: (row[key] if row[key] is not None else "") for key in SOURCE_FIELDS} for row in newest.values()]
    return machine, figures, sources


def bound_hosts(engine: Engine, campaign_id: int) -> list[str]:
    """The hosts the campaign's bounds were measured on, in the order they were."""
    with engine.connect() as connection:
        hosts = connection.execute(select(BOUNDS.c.host).where(BOUNDS.c.campaign_id == campaign_id)
                                   .order_by(BOUNDS.c.id)).scalars()
        return list(dict.fromkeys(hosts))


def copy_recent(engine: Engine, campaign_id: int, host: str, since: datetime,
                skip: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """Copy to the campaign the newest ok bound of each (kind, mpi) that another campaign measured on `host`
    after `since`, but those in `skip`; the (kind, mpi) copied. A copy keeps its measurement's time and says
    which campaign measured it."""
    with write_transaction(engine) as connection:
        rows = connection.execute(
            select(BOUNDS).where(BOUNDS.c.host == host, BOUNDS.c.status == "ok", BOUNDS.c.measured_at >= since,
                                 BOUNDS.c.campaign_id != campaign_id).order_by(BOUNDS.c.id.desc()))
        newest: dict[tuple[str, str], dict] = {}
        for row in rows:
            key = (row.kind, row.mpi)
            if key not in skip and key not in newest:
                copy = dict(row._mapping)
                del copy["id"]
                copy["message"] = f"measured for campaign {copy['campaign_id']}"
                copy["campaign_id"] = campaign_id
                newest[key] = copy
        if newest:
            connection.execute(insert(BOUNDS), list(newest.values()))
    return list(newest)
