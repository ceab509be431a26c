"""Regressions: a case in one campaign against its own history, the earlier campaigns of the same name.

A *case* is a row without its scope: stack, approach, variant, benchmark, metric, placement (ranks, nodes) and
buffers. At each message size the history gives one median per earlier campaign; their median is the expected
figure and their median absolute deviation, scaled to a standard deviation (x 1.4826, exact for normal data),
is the campaign-to-campaign noise. Medians and the MAD rather than mean and standard deviation, because one bad
night in the history must move neither (Hoefler & Belli, SC15, rule 8: robust measures).

A size is a *drop* when all three hold:

* beyond the history's noise: the current median is worse than the history's median by more than
  ``NOISE_SPREADS`` (3) robust spreads (lower for rates, higher for times);
* beyond the practical floor (``Settings.floor``, 10% and, for times, 0.05 us): the same rule as every answer;
* significant: a one-sided Mann-Whitney U test of the current campaign's launches against the **pooled launches
  of the history** (every earlier campaign that ran the case at that size), p < ``Settings.alpha``. Pooled,
  because a regression that persists must stay flagged in the campaigns after the one it appeared in, until it
  has become the history's median; the campaign-to-campaign variation that pooling hides from the test is what
  the noise criterion above accounts for. The test needs at least 2 launches per side: a campaign without
  repeats cannot show a regression.

Three criteria together make a false flag need a large, consistent deviation, so no further adjustment across
the sizes of a case is made. Drops at adjacent tested sizes are merged into ranges (``merge_adjacent``).
"""

from __future__ import annotations

import statistics as _stdlib_statistics
from dataclasses import dataclass
from datetime import datetime
from typing import Sequence

from sqlalchemy import Engine

from ..store.campaigns import campaign_record, earlier_campaigns
from ..store.query import Where
from .answers import Settings
from .classes import format_size, format_sizes, merge_adjacent
from .evidence import Row, RowKey, load_rows
from .statistics import compare_many

#: How many robust spreads (MAD scaled to sigma) of the history's campaign medians a drop must exceed.
NOISE_SPREADS = 3.0
#: Earlier campaigns a size needs before its history has a spread at all (a MAD of two medians is not one).
MIN_HISTORY = 3
#: Earlier campaigns of the same name a campaign is checked against by default.
HISTORY = 5
_MAD_TO_SIGMA = 1.4826


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
    """One size where the current campaign fell below its history."""

    size: int | None
    median: float  # the current campaign's median over its launches
    history_median: float  # the median of the earlier campaigns' medians
    history_spread: float  # their MAD scaled to a standard deviation
    ratio: float  # current against history, oriented: below 1.0 a loss
    p_value: float  # one-sided Mann-Whitney U against the pooled history launches
    launches: int
    history_launches: int

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


def find_regressions(engine: Engine, campaign_id: int, settings: Settings = Settings(),
                     history: int = HISTORY) -> list[Regression]:
    """The regressions of a stored campaign against the last ``history`` campaigns of the same name."""
    record = campaign_record(engine, campaign_id)
    if record is None:
        raise LookupError(f"no campaign {campaign_id} in the store")
    current = _campaign_rows(engine, record)
    past = [_campaign_rows(engine, earlier) for earlier in earlier_campaigns(engine, campaign_id, history)]
    return regressions_in(current, past, settings)


def regressions_in(current: CampaignRows, history: Sequence[CampaignRows], settings: Settings = Settings(), *,
                   spreads: float = NOISE_SPREADS, min_history: int = MIN_HISTORY) -> list[Regression]:
    """The regressions of ``current`` against ``history`` (earlier campaigns, newest first); pure, no store."""
    past = [(entry.campaign, {key.with_(scope=""): row for key, row in entry.rows.items() if row.launches})
            for entry in history]
    candidates: dict[tuple[RowKey, int | None], _Candidate] = {}
    for key, row in sorted(current.rows.items()):
        if row.launches == 0:
            continue
        earlier = [(ref, rows[key.with_(scope="")]) for ref, rows in past if key.with_(scope="") in rows]
        for size, figures in row.figures.items():
            candidate = _candidate(row, size, figures, earlier, settings, spreads, min_history)
            if candidate is not None:
                candidates[(key, size)] = candidate
    significant = _significant(candidates, settings)
    return [_regression(current, key, candidates, significant) for key in
            sorted({key for key, size in significant})]


@dataclass(frozen=True)
class _Candidate:
    """A size beyond the noise and the floor, waiting for its rank test."""

    row: Row
    figures: list[float]
    pooled: list[float]
    median: float
    history_median: float
    spread: float
    ratio: float
    history: tuple[CampaignRef, ...]


def _candidate(row: Row, size, figures: list[float], earlier: list[tuple[CampaignRef, Row]], settings: Settings,
               spreads: float, min_history: int) -> _Candidate | None:
    """The size's drop before its test, or None when it is within the history's noise or the floor."""
    runs = [(ref, past.figures[size]) for ref, past in earlier if size in past.figures]
    if len(runs) < min_history:
        return None
    medians = [_stdlib_statistics.median(values) for _, values in runs]
    center = _stdlib_statistics.median(medians)
    spread = _MAD_TO_SIGMA * _stdlib_statistics.median(abs(m - center) for m in medians)
    current = _stdlib_statistics.median(figures)
    higher = row.key.higher_is_better
    beyond_noise = current < center - spreads * spread if higher else current > center + spreads * spread
    ratio = current / center if higher else center / current
    if not beyond_noise or ratio >= settings.floor.band(center, higher_is_better=higher)[0]:
        return None
    pooled = [value for _, values in runs for value in values]
    return _Candidate(row, figures, pooled, current, center, spread, ratio, tuple(ref for ref, _ in runs))


def _significant(candidates: dict[tuple, _Candidate], settings: Settings) -> dict[tuple, float]:
    """The one-sided p-value of each candidate that is below ``alpha`` (``compare_many``, one batch per direction
    of the metric)."""
    out: dict[tuple, float] = {}
    for higher in (True, False):
        chosen = {key: (c.figures, c.pooled, key[1]) for key, c in candidates.items()
                  if c.row.key.higher_is_better is higher}
        if not chosen:
            continue
        compared = compare_many(chosen, higher_is_better=higher, floor=settings.floor, alpha=settings.alpha,
                                confidence=settings.confidence, seed=settings.seed)
        out.update({key: c.p_value for key, c in compared.items() if c.p_value < settings.alpha})
    return out


def _regression(current: CampaignRows, key: RowKey, candidates: dict[tuple, _Candidate],
                significant: dict[tuple, float]) -> Regression:
    row = current.rows[key]
    tested = sorted(row.figures, key=lambda size: (size is not None, size or 0))
    drops = {size: _drop(size, candidates[(key, size)], p) for (k, size), p in significant.items() if k == key}
    runs = []
    for run in merge_adjacent(tested, drops):
        worst = min(run, key=lambda size: drops[size].ratio)
        runs.append(SizeRun(tuple(run), drops[worst].ratio, worst))
    history = sorted({ref for size in drops for ref in candidates[(key, size)].history}, key=lambda r: -r.id)
    ordered = tuple(drops[size] for size in tested if size in drops)
    return Regression(key, current.campaign, tuple(history), ordered, tuple(runs))


def _drop(size, candidate: _Candidate, p_value: float) -> SizeDrop:
    return SizeDrop(size, candidate.median, candidate.history_median, candidate.spread, candidate.ratio, p_value,
                    len(candidate.figures), len(candidate.pooled))


def _campaign_rows(engine: Engine, record: dict) -> CampaignRows:
    ref = CampaignRef(record["id"], record["name"], record["created_at"])
    return CampaignRows(ref, load_rows(engine, [Where("campaign", "=", ref.id)]))
