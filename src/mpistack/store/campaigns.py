"""Campaign rows: start one, find the one to resume, and which of its cases already ended."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import Engine, insert, select

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
