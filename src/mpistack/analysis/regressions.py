"""Regressions: a case in one campaign against its own history, the earlier campaigns of the same name.

A *case* is a row without its scope: stack, approach, variant, benchmark, metric, placement (ranks, nodes) and
buffers. The unit of history is the campaign, not the launch: launches of one campaign share that campaign's
state of the machine (its load, its slow modes), so pooling the launches of earlier campaigns as if they were
exchangeable would make any test far too sure of itself. Each earlier campaign therefore gives one figure per
size, its median over its launches, and the current campaign's median is judged against those figures.

On the log scale, ``k`` earlier medians have a mean ``m`` and a standard deviation ``s``. One more campaign from
the same machine is predicted to fall within the prediction interval

    m ± t(1 − alpha, k − 1) · s' · sqrt(1 + 1/k),     s' = max(s, s_floor)

(Student's t with ``k − 1`` degrees of freedom; ``alpha`` is ``Settings.alpha``, one-sided). A size is a *drop*
when the current median lies beyond the bound on the worse side (below for rates, above for times).

The spread is floored at the practical floor: ``s_floor = log(1 / low) / z(1 − alpha)``, where ``low`` is the
lower edge of the parity band (``Settings.floor``: 10 % and, for times, 0.05 us) at the history's figure. That is
the spread at which an endless, perfectly steady history would put the bound exactly at the floor. So two
identical earlier campaigns (``s = 0``) do not make every wiggle a regression, and since ``t · sqrt(1 + 1/k)``
exceeds ``z`` for every ``k``, a drop is always beyond the practical floor. A short history widens the bound
(``k = 2``: t = 6.3), which is what two campaigns can tell.

Fewer than ``MIN_HISTORY`` (2) earlier campaigns at a size give no spread at all: such a size is *not enough
history*, counted and said (``RegressionCheck.summary``), never silently passed. Drops at adjacent tested sizes
are merged into ranges (``merge_adjacent``).
"""

from __future__ import annotations

import math
import statistics as _stdlib_statistics
from dataclasses import dataclass
from datetime import datetime
from statistics import NormalDist
from typing import Sequence

from sqlalchemy import Engine

from ..store.campaigns import campaign_record, earlier_campaigns
from ..store.query import Where
from .answers import Settings
from .classes import format_size, format_sizes, merge_adjacent
from .evidence import Row, RowKey, load_rows

#: Earlier campaigns a size needs before its history has a spread at all.
MIN_HISTORY = 2
#: Earlier campaigns of the same name a campaign is checked against by default.
HISTORY = 5


@dataclass(frozen=True)
class CampaignRef:
    """A campaign as a regression names it."""

    id: int
    name: str
    created_at: datetime | None = None

    def describe(self) -> str:
        when = f", {self.created_at:%Y-%m-%d}" if self.created_at else ""
        return f"campaign {self.id} ({self.name}{when})"

    def to_dict(self) -> dict:
        return {"id": self.id, "name": self.name,
                "created_at": self.created_at.isoformat() if self.created_at else None}


@dataclass(frozen=True)
class CampaignRows:
    """One campaign's rows, as ``load_rows`` gives them."""

    campaign: CampaignRef
    rows: dict[RowKey, Row]


@dataclass(frozen=True)
class SizeDrop:
    """One size where the current campaign fell beyond the prediction interval of its history."""

    size: int | None
    median: float  # the current campaign's median over its launches
    history_median: float  # the geometric mean of the earlier campaigns' medians (exp of m)
    history_spread: float  # s' on the log scale: their standard deviation, floored at the practical floor
    bound: float  # the prediction interval's edge on the worse side, in the figure's unit
    ratio: float  # current against history, oriented: below 1.0 a loss
    campaigns: int  # k, the earlier campaigns at this size
    launches: int

    def to_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class SizeRun:
    """Adjacent tested sizes that all dropped, with the worst of them."""

    sizes: tuple[int | None, ...]
    worst_ratio: float
    worst_size: int | None

    def describe(self) -> str:
        return f"{format_sizes(self.sizes)}: {self.worst_ratio:.2g}× worst at {format_size(self.worst_size)}"


@dataclass(frozen=True)
class Regression:
    """A case that dropped below its history in one campaign, at the sizes in ``ranges``."""

    case: RowKey  # scope: the current campaign
    campaign: CampaignRef
    history: tuple[CampaignRef, ...]  # the earlier campaigns that ran the case, newest first
    drops: tuple[SizeDrop, ...]
    ranges: tuple[SizeRun, ...]

    @property
    def worst(self) -> SizeDrop:
        return min(self.drops, key=lambda drop: drop.ratio)

    def describe(self) -> str:
        key = self.case
        ids = ", ".join(str(ref.id) for ref in self.history)
        return (f"{key.stack} {key.approach} {key.benchmark} {key.metric} ({key.ranks} ranks, {key.nodes} nodes, "
                f"{key.buffers}) in {self.campaign.describe()}: slower than campaigns {ids} at "
                + "; ".join(run.describe() for run in self.ranges))

    def to_dict(self) -> dict:
        key = self.case
        return {
            "stack": key.stack, "approach": key.approach, "variant": key.variant, "benchmark": key.benchmark,
            "metric": key.metric, "ranks": key.ranks, "nodes": key.nodes, "buffers": key.buffers,
            "campaign": self.campaign.to_dict(), "history": [ref.to_dict() for ref in self.history],
            "ranges": [{"sizes": list(run.sizes), "worst_ratio": run.worst_ratio, "worst_size": run.worst_size}
                       for run in self.ranges],
            "worst_ratio": self.worst.ratio, "worst_size": self.worst.size,
            "drops": [drop.to_dict() for drop in self.drops],
            "description": self.describe(),
        }


@dataclass(frozen=True)
class RegressionCheck:
    """A campaign checked against its history: the regressions found, and how much could be checked."""

    campaign: CampaignRef
    history: tuple[CampaignRef, ...]  # the earlier campaigns of the name looked at, newest first
    regressions: list[Regression]
    checked: int  # sizes of cases with at least MIN_HISTORY earlier campaigns
    unchecked: int  # sizes of cases with fewer: not enough history

    def summary(self) -> str:
        """One sentence on what the check could say: what it found, or why it could not look."""
        earlier = len(self.history)
        if not self.checked and not self.unchecked:
            return f"Nothing to check: no launch of {self.campaign.describe()} succeeded."
        if not self.checked and earlier < MIN_HISTORY:
            return (f"Not enough history: {self.campaign.describe()} has {earlier} earlier campaign"
                    f"{'' if earlier == 1 else 's'} of its name, and a regression needs at least {MIN_HISTORY}.")
        if not self.checked:
            return (f"Not enough history: fewer than {MIN_HISTORY} of the {earlier} earlier campaigns of this name "
                    "ran these cases.")
        ids = ", ".join(str(ref.id) for ref in self.history)
        found = (f"{len(self.regressions)} case(s) slower than" if self.regressions else "None against")
        text = f"{found} campaigns {ids} of this name at {self.checked} case sizes"
        if self.unchecked:
            text += f"; {self.unchecked} case sizes had fewer than {MIN_HISTORY} earlier campaigns (not enough history)"
        return text + "."

    def to_dict(self) -> dict:
        return {"campaign": self.campaign.to_dict(), "history": [ref.to_dict() for ref in self.history],
                "regressions": [regression.to_dict() for regression in self.regressions],
                "checked": self.checked, "unchecked": self.unchecked, "summary": self.summary()}


def find_regressions(engine: Engine, campaign_id: int, settings: Settings = Settings(),
                     history: int = HISTORY, rows: dict[RowKey, Row] | None = None) -> RegressionCheck:
    """A stored campaign against the last ``history`` campaigns of the same name; ``rows``: the campaign's rows
    where the caller has read them already (a report)."""
    record = campaign_record(engine, campaign_id)
    if record is None:
        raise LookupError(f"no campaign {campaign_id} in the store")
    current = _campaign_rows(engine, record, rows)
    past = [_campaign_rows(engine, earlier) for earlier in earlier_campaigns(engine, campaign_id, history)]
    return regressions_in(current, past, settings)


def regressions_in(current: CampaignRows, history: Sequence[CampaignRows],
                   settings: Settings = Settings()) -> RegressionCheck:
    """``current`` against ``history`` (earlier campaigns, newest first); pure, no store."""
    past = [(entry.campaign, {key.with_(scope=""): row for key, row in entry.rows.items() if row.launches})
            for entry in history]
    regressions, checked, unchecked = [], 0, 0
    for key, row in sorted(current.rows.items()):
        if row.launches == 0:
            continue
        earlier = [(ref, rows[key.with_(scope="")]) for ref, rows in past if key.with_(scope="") in rows]
        drops: dict[int | None, SizeDrop] = {}
        refs: set[CampaignRef] = set()
        for size, figures in row.figures.items():
            runs = [(ref, past_row.figures[size]) for ref, past_row in earlier if past_row.figures.get(size)]
            if len(runs) < MIN_HISTORY:
                unchecked += 1
                continue
            checked += 1
            drop = size_drop(size, figures, [_stdlib_statistics.median(values) for _, values in runs],
                             row.key.higher_is_better, settings)
            if drop is not None:
                drops[size] = drop
                refs.update(ref for ref, _ in runs)
        if drops:
            regressions.append(_regression(current.campaign, row, drops, refs))
    return RegressionCheck(current.campaign, tuple(entry.campaign for entry in history), regressions, checked,
                           unchecked)


def size_drop(size: int | None, figures: Sequence[float], history_medians: Sequence[float], higher_is_better: bool,
              settings: Settings = Settings()) -> SizeDrop | None:
    """The drop at one size, or None when the current median lies within the prediction interval of the earlier
    campaigns' medians (at least ``MIN_HISTORY`` of them, all positive)."""
    k = len(history_medians)
    logs = [math.log(value) for value in history_medians]
    centre = sum(logs) / k
    spread = _stdlib_statistics.stdev(logs)
    expected = math.exp(centre)
    low = settings.floor.band(expected, higher_is_better=higher_is_better)[0]
    floored = max(spread, math.log(1 / low) / NormalDist().inv_cdf(1 - settings.alpha))
    from scipy.stats import t as student_t  # here, not at the top: a first campaign has no history to check

    reach = float(student_t.ppf(1 - settings.alpha, k - 1)) * floored * math.sqrt(1 + 1 / k)
    current = _stdlib_statistics.median(figures)
    worse = math.log(current) - centre if not higher_is_better else centre - math.log(current)
    if worse <= reach:
        return None
    bound = math.exp(centre - reach if higher_is_better else centre + reach)
    ratio = current / expected if higher_is_better else expected / current
    return SizeDrop(size, current, expected, floored, bound, ratio, k, len(figures))


def _regression(campaign: CampaignRef, row: Row, drops: dict[int | None, SizeDrop],
                refs: set[CampaignRef]) -> Regression:
    tested = sorted(row.figures, key=lambda size: (size is not None, size or 0))
    runs = []
    for run in merge_adjacent(tested, drops):
        worst = min(run, key=lambda size: drops[size].ratio)
        runs.append(SizeRun(tuple(run), drops[worst].ratio, worst))
    ordered = tuple(drops[size] for size in tested if size in drops)
    return Regression(row.key, campaign, tuple(sorted(refs, key=lambda ref: -ref.id)), ordered, tuple(runs))


def _campaign_rows(engine: Engine, record: dict, rows: dict[RowKey, Row] | None = None) -> CampaignRows:
    ref = CampaignRef(record["id"], record["name"], record["created_at"])
    return CampaignRows(ref, rows if rows is not None else load_rows(engine, [Where("campaign", "=", ref.id)]))
