"""`--resume` continues the campaign its file started, or refuses: the campaign file as recorded in the store
is compared with the file given now, and a difference is named rather than silently mixing the results of
two sets of settings in one campaign. `--force` continues with the new file and records it."""

from __future__ import annotations

import json

from pydantic import ValidationError
from sqlalchemy import Engine

from ..spec.campaign import PLANNED_LOOKS, Campaign, CampaignError
from ..store.campaigns import campaign_spec, latest_campaign, replace_campaign_spec

#: fields whose change does not alter what is measured (a new budget only says how long this session may take)
IGNORED_FIELDS = frozenset({"description", "budget"})
SHOWN_CHANGES = 8


class CampaignChanged(CampaignError):
    """The campaign file differs from the one the campaign to resume started with; the message says how."""


def recorded_spec(campaign: Campaign) -> dict:
    """The campaign as the store records it (JSON, table names as in the file)."""
    return json.loads(campaign.model_dump_json(by_alias=True))


def spec_changes(old, new, where: str = "") -> list[str]:
    """`field: old -> new` for every difference between two recorded specs, by dotted path."""
    if isinstance(old, dict) and isinstance(new, dict):
        changes = []
        for key in sorted(set(old) | set(new), key=str):
            if not where and key in IGNORED_FIELDS:
                continue
            path = f"{where}.{key}" if where else str(key)
            if key not in old:
                changes.append(f"{path}: added {_short(new[key])}")
            elif key not in new:
                changes.append(f"{path}: removed (was {_short(old[key])})")
            else:
                changes.extend(spec_changes(old[key], new[key], path))
        return changes
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [change for index, (a, b) in enumerate(zip(old, new)) for change in spec_changes(a, b, f"{where}[{index}]")]
    if isinstance(old, list) and isinstance(new, list):
        return [f"{where}: {len(old)} -> {len(new)} entries ({_short(old)} -> {_short(new)})"]
    return [] if old == new else [f"{where}: {_short(old)} -> {_short(new)}"]


def _short(value, limit: int = 80) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _normalised(spec: dict) -> dict:
    """A recorded spec with the defaults of this mpistack filled in, so that a field added since it was
    recorded is no difference; as recorded when it no longer validates."""
    try:
        return recorded_spec(Campaign.model_validate(spec))
    except ValidationError:
        return spec


def resumed(campaign: Campaign, database: Engine, force: bool = False) -> tuple[int | None, Campaign]:
    """The campaign to continue (None: there is none of this name) and the campaign to run: the file's,
    with the recorded random-order seed when the file sets none. Raises CampaignChanged when the file
    differs from the recorded one, unless `force`, which records the file's."""
    campaign_id = latest_campaign(database, campaign.name)
    if campaign_id is None:
        return None, campaign
    recorded = {key: value for key, value in (campaign_spec(database, campaign_id) or {}).items()
                if key != PLANNED_LOOKS}  # a fact of the run, not of its file
    if not recorded:
        return campaign_id, campaign
    if campaign.seed is None and isinstance(recorded.get("seed"), int):
        campaign = campaign.model_copy(update={"seed": recorded["seed"]})
    changes = spec_changes(_normalised(recorded), recorded_spec(campaign))
    if changes and not force:
        shown = "; ".join(changes[:SHOWN_CHANGES]) + (f"; and {len(changes) - SHOWN_CHANGES} more"
                                                      if len(changes) > SHOWN_CHANGES else "")
        raise CampaignChanged(
            f"{campaign.path or campaign.name}: changed since campaign #{campaign_id} started: {shown}. Resuming "
            "would mix results of both settings in one campaign: run it as a new campaign (without --resume), "
            "or add --force to continue under the new settings (they are recorded with the campaign)")
    if changes:
        replace_campaign_spec(database, campaign_id, recorded_spec(campaign))
    return campaign_id, campaign
