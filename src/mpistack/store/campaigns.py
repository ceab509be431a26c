"""Campaign rows: start one, find the one to resume, and which of its cases already ended."""

from __future__ import annotations

import os
import socket
from datetime import datetime, timezone

from sqlalchemy import Connection, Engine, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from ..spec.campaign import PLANNED_LOOKS
from ..spec.status import FINAL_STATUSES
from .database import write_transaction
from .schema import CampaignLockRow, CampaignRow, RunRow, RunTagRow

LOCK_ATTEMPTS = 5  # tries when the lock changes hands while it is being taken


class CampaignLocked(RuntimeError):
    """Another live process runs this campaign; the message names it."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def lock_campaign(database: Engine, name: str) -> None:
    """Hold the lock of the campaign of this name for this process, or raise CampaignLocked naming its holder.
    A lock left by a process of this host that is gone (killed) is taken over; one held on another host is
    not, as its process cannot be checked from here."""
    table = CampaignLockRow.__table__
    host, pid = socket.gethostname(), os.getpid()
    for _ in range(LOCK_ATTEMPTS):
        try:
            with write_transaction(database) as connection:
                connection.execute(insert(table), {"name": name, "host": host, "pid": pid,
                                                   "since": datetime.now(timezone.utc)})
            return
        except IntegrityError:
            pass
        with write_transaction(database) as connection:
            holder = connection.execute(select(table).where(table.c.name == name)).first()
            if holder is None:
                continue  # released meanwhile: try again
            if holder.host == host and (holder.pid == pid or not _alive(holder.pid)):
                taken = connection.execute(update(table).where(
                    table.c.name == name, table.c.host == holder.host, table.c.pid == holder.pid
                ).values(pid=pid, since=datetime.now(timezone.utc))).rowcount
                if taken == 1:
                    return
                continue
        raise CampaignLocked(f"campaign {name} is being run by process {holder.pid} on {holder.host} since "
                             f"{holder.since:%Y-%m-%d %H:%M:%S} UTC: wait for it to end, or stop it "
                             "(a lock whose process is gone is taken over)")
    raise CampaignLocked(f"campaign {name}: its lock kept changing hands; try again")


def unlock_campaign(database: Engine, name: str) -> None:
    """Give up this process's lock of the campaign (nothing if it holds none)."""
    table = CampaignLockRow.__table__
    with write_transaction(database) as connection:
        connection.execute(delete(table).where(table.c.name == name, table.c.host == socket.gethostname(),
                                               table.c.pid == os.getpid()))


def start_campaign(database: Engine, name: str, spec: dict) -> int:
    """A new campaign row; returns its id."""
    table = CampaignRow.__table__
    with write_transaction(database) as connection:
        return connection.execute(
            insert(table).returning(table.c.id),
            {"name": name, "spec": spec, "created_at": datetime.now(timezone.utc)},
        ).scalar_one()


def next_campaign_id(database: Engine | None) -> int:
    """The id the store would give the next campaign (1 for a store not yet made): what a dry run prints its
    paths with. A guess where another campaign starts first, or where PostgreSQL's sequence skipped ids."""
    if database is None:
        return 1
    with database.connect() as connection:
        return (connection.execute(select(func.max(CampaignRow.id))).scalar() or 0) + 1


def latest_campaign(database: Engine, name: str) -> int | None:
    """The id of the newest campaign of this name, or None."""
    with database.connect() as connection:
        return connection.execute(select(CampaignRow.id).where(CampaignRow.name == name)
                                  .order_by(CampaignRow.id.desc()).limit(1)).scalar()


def finished_case_keys(database: Engine, campaign_id: int) -> set[str]:
    """Case keys (the `case` tag) of the runs a campaign recorded with a final status."""
    statuses = [status.value for status in FINAL_STATUSES]
    with database.connect() as connection:
        return set(connection.execute(
            select(RunTagRow.value).join(RunRow, RunRow.id == RunTagRow.run_id)
            .where(RunRow.campaign_id == campaign_id, RunTagRow.key == "case", RunRow.status.in_(statuses))
        ).scalars())


def case_recorded(connection: Connection, campaign_id: int, case: str) -> bool:
    """Whether the campaign has a run of this case (its `case` tag): a journal entry whose commit happened
    is not written twice."""
    return connection.execute(
        select(RunRow.id).join(RunTagRow, RunTagRow.run_id == RunRow.id)
        .where(RunRow.campaign_id == campaign_id, RunTagRow.key == "case", RunTagRow.value == case).limit(1)
    ).first() is not None


def past_durations(database: Engine, benchmarks: set[str], approaches: set[str]) -> dict[tuple[str, str], list[float]]:
    """Seconds each earlier campaign launch of these benchmarks and approaches took, by (benchmark, approach):
    the history a new campaign's duration is estimated from (skipped cases never launched: left out)."""
    if not benchmarks or not approaches:
        return {}
    runs = RunRow.__table__.c
    durations: dict[tuple[str, str], list[float]] = {}
    with database.connect() as connection:
        rows = connection.execute(
            select(runs.benchmark, runs.approach, runs.started_at, runs.finished_at)
            .where(runs.campaign_id.is_not(None), runs.benchmark.in_(sorted(benchmarks)),
                   runs.approach.in_(sorted(approaches)), runs.status != "skipped",
                   runs.started_at.is_not(None), runs.finished_at.is_not(None)))
        for benchmark, approach, started, finished in rows:
            durations.setdefault((benchmark, approach), []).append(max(0.0, (finished - started).total_seconds()))
    return durations


#: the run tag that says when the session that ran it began its launches (seconds since the epoch, UTC)
SESSION_TAG = "session_launches_from"


def spent_budget_seconds(database: Engine, campaign_id: int) -> float:
    """What the campaign's earlier sessions spent of its budget, so that `--resume` goes on with what is left:
    for each session that tagged its runs (SESSION_TAG), the wall time from the start of its launches to the end
    of its last stored one (the looks, a batch system's queue and the time between launches included); for runs
    without the tag (stored before it was written), their own launch durations. Skipped cases never launched."""
    runs, tags = RunRow.__table__.c, RunTagRow.__table__.c
    with database.connect() as connection:
        rows = connection.execute(
            select(runs.started_at, runs.finished_at, tags.value)
            .outerjoin(RunTagRow.__table__, (tags.run_id == runs.id) & (tags.key == SESSION_TAG))
            .where(runs.campaign_id == campaign_id, runs.status != "skipped",
                   runs.started_at.is_not(None), runs.finished_at.is_not(None))).all()
    untagged = sum(max(0.0, (finished - started).total_seconds()) for started, finished, session in rows
                   if session is None)
    ends: dict[str, datetime] = {}
    for _, finished, session in rows:
        if session is not None:
            ends[session] = max(ends.get(session, finished), finished)
    return untagged + sum(max(0.0, _utc(finished).timestamp() - float(session)) for session, finished in ends.items())


def _utc(moment: datetime) -> datetime:
    """A stored time as UTC (SQLite gives it back without its zone)."""
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def campaign_statuses(database: Engine, campaign_id: int) -> dict[str, int]:
    """The campaign's number of runs by status."""
    runs = RunRow.__table__.c
    with database.connect() as connection:
        return dict(connection.execute(select(runs.status, func.count()).where(runs.campaign_id == campaign_id)
                                       .group_by(runs.status)).all())


def replace_campaign_spec(database: Engine, campaign_id: int, spec: dict) -> None:
    """Record a new campaign file for the campaign (`run --resume --force` after the file was edited); the
    looks it planned are a fact of the run, not of the file, and stay."""
    planned = (campaign_spec(database, campaign_id) or {}).get(PLANNED_LOOKS)
    _write_spec(database, campaign_id, spec if planned is None else {**spec, PLANNED_LOOKS: planned})


def record_planned_looks(database: Engine, campaign_id: int, looks: tuple[int, ...]) -> None:
    """Record the looks a budgeted sequential campaign planned as its pilot ended (spec.campaign.recorded_looks
    reads them back: the run's looks and a later report's are the same)."""
    _write_spec(database, campaign_id, {**(campaign_spec(database, campaign_id) or {}), PLANNED_LOOKS: list(looks)})


def _write_spec(database: Engine, campaign_id: int, spec: dict) -> None:
    with write_transaction(database) as connection:
        connection.execute(update(CampaignRow.__table__).where(CampaignRow.__table__.c.id == campaign_id)
                           .values(spec=spec))


def newest_campaign(database: Engine) -> int | None:
    """The id of the newest campaign in the store, whatever its name, or None."""
    with database.connect() as connection:
        return connection.execute(select(CampaignRow.id).order_by(CampaignRow.id.desc()).limit(1)).scalar()


def campaign_name(database: Engine, campaign_id: int) -> str | None:
    """The name of a campaign, or None when there is no campaign of that id."""
    with database.connect() as connection:
        return connection.execute(select(CampaignRow.name).where(CampaignRow.id == campaign_id)).scalar()


def campaign_record(database: Engine, campaign_id: int) -> dict | None:
    """The campaign's id, name and creation time, or None when there is no such campaign."""
    with database.connect() as connection:
        row = connection.execute(select(CampaignRow.id, CampaignRow.name, CampaignRow.created_at)
                                 .where(CampaignRow.id == campaign_id)).first()
    return dict(row._mapping) if row else None


def earlier_campaigns(database: Engine, campaign_id: int, limit: int) -> list[dict]:
    """Up to ``limit`` campaigns of the same name recorded before this one, newest first (id, name, created_at):
    the history a campaign's results are checked against for regressions."""
    current = campaign_record(database, campaign_id)
    if current is None or limit < 1:
        return []
    with database.connect() as connection:
        rows = connection.execute(
            select(CampaignRow.id, CampaignRow.name, CampaignRow.created_at)
            .where(CampaignRow.name == current["name"], CampaignRow.id < campaign_id)
            .order_by(CampaignRow.id.desc()).limit(limit)
        )
        return [dict(row._mapping) for row in rows]


def campaign_spec(database: Engine, campaign_id: int) -> dict | None:
    """The campaign file as recorded when the campaign started (its [analysis] table included), or None."""
    with database.connect() as connection:
        return connection.execute(select(CampaignRow.spec).where(CampaignRow.id == campaign_id)).scalar()
