"""Campaign rows: start one, find the one to resume, and which of its cases already ended."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import Engine, func, insert, select

from ..spec.status import FINAL_STATUSES
from .schema import CampaignRow, RunRow, RunTagRow


def start_campaign(database: Engine, name: str, spec: dict) -> int:
    """A new campaign row; returns its id."""
    table = CampaignRow.__table__
    with database.begin() as connection:
        return connection.execute(
            insert(table).returning(table.c.id),
            {"name": name, "spec": spec, "created_at": datetime.now(timezone.utc)},
        ).scalar_one()


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


def campaign_summaries(database: Engine) -> list[dict]:
    """Every campaign, oldest first: id, name, created_at, runs (their number) and statuses (run count by status,
    most frequent first), read in one grouped query."""
    campaigns, runs = CampaignRow.__table__.c, RunRow.__table__.c
    statement = (
        select(campaigns.id, campaigns.name, campaigns.created_at, runs.status, func.count(runs.id))
        .outerjoin(RunRow.__table__, runs.campaign_id == campaigns.id)
        .group_by(campaigns.id, campaigns.name, campaigns.created_at, runs.status)
        .order_by(campaigns.id)
    )
    summaries: dict[int, dict] = {}
    with database.connect() as connection:
        for campaign_id, name, created_at, status, count in connection.execute(statement):
            summary = summaries.setdefault(campaign_id, {"id": campaign_id, "name": name, "created_at": created_at,
                                                         "runs": 0, "statuses": {}})
            if status is not None and count:
                summary["runs"] += count
                summary["statuses"][status] = count
    for summary in summaries.values():
        summary["statuses"] = dict(sorted(summary["statuses"].items(), key=lambda item: (-item[1], item[0])))
    return list(summaries.values())
