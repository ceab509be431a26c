"""Any two sets of launches against each other, row by row and size by size: ``mpistack compare A B``.

A is the candidate, B the baseline. Each side is a selector (``run:ID``, ``campaign:ID`` or a campaign name, a bare
campaign id, ``ref:NAME`` for a shipped reference loaded into the store), narrowed by ``Where`` filters. Rows of
the two sides are matched on what makes figures comparable at all (benchmark, metric, ranks, nodes, buffers) and,
on request, on stack, approach and variant; each matched pair is compared with the same statistics as every
other answer (``compare_pairs``, ``classify``), so a comparison here and in a report never disagree. Rows that
find no partner are listed, never dropped: a silent gap reads like a row at speed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Sequence

from sqlalchemy import Engine

from ..store.campaigns import campaign_record, latest_campaign
from ..store.query import Where, WhereError, query_runs
from .answers import PairComparison, Settings, compare_pairs
from .classes import RowClass, classify, failed_class, untested_class
from .evidence import Row, RowKey, load_rows
from .statistics import SizeComparison

#: What every matched pair shares: without these the figures measure different things.
KEY_FIELDS = ("benchmark", "metric", "ranks", "nodes", "buffers")
#: What ``--match`` may add.
MATCH_FIELDS = ("stack", "approach", "variant")
#: Key fields a source may leave unknown (0 in a row's key: a published table without ranks or nodes). An unknown
#: one matches a known one only where the user stated it, by narrowing the other side to one value (--where).
PLACEMENT_FIELDS = ("ranks", "nodes")

SELECTOR_HELP = "run:ID, campaign:ID, campaign:NAME, NAME (its latest campaign), ID (a campaign) or ref:NAME"


class CompareError(ValueError):
    """A side that cannot be selected; the message says what to type instead."""


@dataclass(frozen=True)
class Selection:
    """One side as resolved: what was typed, what it names, and the filters that select its runs."""

    text: str
    label: str  # "campaign 3 (nightly, 2025-03-07)", "reference lumi-container-approaches", "run 17"
    filters: tuple[Where, ...]
    narrowed: tuple[Where, ...] = ()  # the --where filters, shown with the label

    def describe(self) -> str:
        if not self.narrowed:
            return self.label
        return f"{self.label} with " + ", ".join(_where_text(where) for where in self.narrowed)

    def to_dict(self) -> dict:
        return {"selector": self.text, "label": self.label, "where": [_where_text(w) for w in self.narrowed]}


@dataclass
class RowComparison:
    """One matched pair of rows: per-size comparisons and the candidate's class against the baseline."""

    candidate: Row
    baseline: Row
    row_class: RowClass
    sizes: list[SizeComparison] = field(default_factory=list)
    regimes: dict[str, SizeComparison] = field(default_factory=dict)

    @property
    def descriptive(self) -> bool:
        return any(c.descriptive for c in self.sizes)

    def evidence(self) -> str:
        """What the verdicts rest on, in one sentence: a test, or single published figures described."""
        n_a, n_b = self.candidate.launches, self.baseline.launches
        if self.descriptive and n_a == n_b == 1:
            return ("single published figures on both sides: a descriptive comparison (each ratio against the "
                    "floor), no test of significance")
        if self.descriptive:
            many, side = (n_a, "candidate's") if n_a > 1 else (n_b, "baseline's")
            return (f"the {side} median of {many} launches against a single published figure: a descriptive "
                    "comparison, no test of significance")
        if min(n_a, n_b) < 2:
            return (f"{n_a} against {n_b} launches: campaign runs are never described from a single launch; repeat "
                    "them for a verdict")
        paired = any(c.paired for c in (*self.sizes, *self.regimes.values()))
        how = ("launches paired within their rounds, Hodges-Lehmann estimate with the signed-rank interval"
               if paired else "ratio of medians with a bootstrap interval")
        return f"{n_a} against {n_b} launches: {how}; the size regimes decide, each size is described"

    def to_dict(self) -> dict:
        return {
            "candidate": _key_dict(self.candidate), "baseline": _key_dict(self.baseline),
            "class": self.row_class.label, "reason": self.row_class.reason, "descriptive": self.descriptive,
            "evidence": self.evidence(),
            "slow": [{"regime": r.regime, "sizes": r.sizes, "worst_ratio": r.worst_ratio, "worst_size": r.worst_size}
                     for r in self.row_class.slow],
            "sizes": [_size_dict(c) for c in self.sizes],
        }


@dataclass(frozen=True)
class Unmatched:
    """A row of one side that was not compared, and why."""

    side: str  # "candidate" or "baseline"
    row: Row
    reason: str

    def to_dict(self) -> dict:
        return {"side": self.side, **_key_dict(self.row), "reason": self.reason}


@dataclass
class Comparison:
    """Everything ``mpistack compare`` prints."""

    candidate: Selection
    baseline: Selection
    match: tuple[str, ...]
    rows: list[RowComparison]
    unmatched: list[Unmatched]

    def to_dict(self) -> dict:
        return {
            "candidate": self.candidate.to_dict(), "baseline": self.baseline.to_dict(),
            "matched_on": [*KEY_FIELDS, *self.match],
            "rows": [row.to_dict() for row in self.rows],
            "unmatched": [entry.to_dict() for entry in self.unmatched],
        }


def compare(engine: Engine, candidate: str, baseline: str, *, where_a: Sequence[str] = (),
            where_b: Sequence[str] = (), match: tuple[str, ...] = (), settings: Settings = Settings()) -> Comparison:
    """Resolve both selectors, load their rows, match and compare them (raises ``CompareError``)."""
    side_a = select_side(engine, candidate, where_a)
    side_b = select_side(engine, baseline, where_b)
    rows_a, rows_b = _rows_of(engine, side_a), _rows_of(engine, side_b)
    # a side narrowed to one placement says what the other side's unknown ranks or nodes are compared as
    compared, unmatched = compare_rows(rows_a, rows_b, match=match, settings=settings,
                                       stated=(_stated_placement(side_b), _stated_placement(side_a)))
    return Comparison(side_a, side_b, tuple(match), compared, unmatched)


def parse_match(text: str | None) -> tuple[str, ...]:
    """``--match stack,approach`` as field names, in the order of ``MATCH_FIELDS``."""
    names = {name.strip() for name in (text or "").split(",") if name.strip()}
    unknown = sorted(names - set(MATCH_FIELDS))
    if unknown:
        raise CompareError(f"--match {text!r}: unknown field {', '.join(unknown)}; choose from "
                           f"{','.join(MATCH_FIELDS)}")
    return tuple(name for name in MATCH_FIELDS if name in names)


def select_side(engine: Engine, text: str, where: Sequence[str] = ()) -> Selection:
    """A selector and its ``--where`` filters as the filters that select the side's runs."""
    try:
        narrowed = tuple(Where.parse(item) for item in where)
    except WhereError as error:
        raise CompareError(str(error)) from None
    kind, _, rest = text.partition(":")
    if kind == "run" and rest:
        run_id = _number(rest, text)
        label, own = f"run {run_id}", Where("run", "=", run_id)
    elif kind == "ref" and rest:
        _check_reference(engine, rest)
        label, own = f"reference {rest}", Where("reference", "=", rest)
    else:
        label, own = _campaign(engine, rest if kind == "campaign" and rest else text)
    return Selection(text, label, (own, *narrowed), narrowed)


def compare_rows(candidates: dict[RowKey, Row], baselines: dict[RowKey, Row], *, match: tuple[str, ...] = (),
                 settings: Settings = Settings(), stated: tuple[dict[str, int], dict[str, int]] = ({}, {})
                 ) -> tuple[list[RowComparison], list[Unmatched]]:
    """Pair rows on ``KEY_FIELDS`` plus ``match`` and compare each pair (pure: no store).

    A candidate row is compared with the one baseline row that shares its key, so many candidates may share one
    baseline (every container approach against native). Several baseline rows for one key are ambiguous: those
    candidates are listed as unmatched, with how to narrow the selection. ``stated``: for the candidates and the
    baselines, what an unknown ranks or nodes (``PLACEMENT_FIELDS``) is taken as; an unknown one not stated
    matches only another unknown one.
    """
    by_key_a, by_key_b = _grouped(candidates, match, stated[0]), _grouped(baselines, match, stated[1])
    known_a, known_b = _known_placement(candidates), _known_placement(baselines)
    pairs: list[tuple[Row, Row]] = []
    unmatched: list[Unmatched] = []
    fields = ", ".join((*KEY_FIELDS, *match))
    for key, rows_a in by_key_a.items():
        rows_b = by_key_b.get(key, [])
        for row in rows_a:
            if not rows_b:
                unmatched.append(Unmatched("candidate", row, _unknown_placement(row, "b", stated[0], known_b)
                                           or f"no baseline row with the same {fields}"))
            elif len(rows_b) > 1:
                unmatched.append(Unmatched("candidate", row, _ambiguous(rows_b, match)))
            elif rows_b[0].key == row.key:
                unmatched.append(Unmatched("candidate", row, "the baseline row itself"))
            else:
                pairs.append((row, rows_b[0]))
    for key, rows_b in by_key_b.items():
        if key not in by_key_a:
            unmatched += [Unmatched("baseline", row, _unknown_placement(row, "a", stated[1], known_a)
                                    or f"no candidate row with the same {fields}") for row in rows_b]
    compared = compare_pairs(pairs, settings)
    return [RowComparison(a, b, _class_of(a, b, pair, settings), pair.sizes, pair.regimes)
            for (a, b), pair in zip(pairs, compared)], unmatched


def _grouped(rows: dict[RowKey, Row], match: tuple[str, ...], stated: dict[str, int]) -> dict[tuple, list[Row]]:
    groups: dict[tuple, list[Row]] = defaultdict(list)
    for key in sorted(rows):
        groups[tuple(getattr(key, name) or (stated.get(name, 0) if name in PLACEMENT_FIELDS else getattr(key, name))
                     for name in (*KEY_FIELDS, *match))].append(rows[key])
    return groups


def _stated_placement(side: Selection) -> dict[str, int]:
    """The ranks and nodes a side's --where filters narrow it to, one value each (``nodes=1``)."""
    return {where.key: where.value for where in side.narrowed
            if where.key in PLACEMENT_FIELDS and where.operator == "=" and isinstance(where.value, int)}


def _known_placement(rows: dict[RowKey, Row]) -> set[str]:
    """The placement fields some row of a side knows."""
    return {name for name in PLACEMENT_FIELDS if any(getattr(key, name) for key in rows)}


def _unknown_placement(row: Row, other: str, stated: dict[str, int], known_other: set[str]) -> str | None:
    """Why a row whose source gave no ranks or nodes was not matched where the other side knows them, and how to
    say which to compare it with."""
    unknown = [name for name in PLACEMENT_FIELDS
               if not getattr(row.key, name) and name not in stated and name in known_other]
    if not unknown:
        return None
    example = " ".join(f"--where-{other} {name}={2 if name == 'ranks' else 1}" for name in unknown)
    what = f"number of {unknown[0]} is" if len(unknown) == 1 else "numbers of ranks and nodes are"
    return (f"its {what} unknown (its source did not give {'it' if len(unknown) == 1 else 'them'}): it is matched "
            f"only with rows of the placement the other side is narrowed to, e.g. {example}")


def _ambiguous(rows_b: list[Row], match: tuple[str, ...]) -> str:
    """Why a candidate has no single baseline, and which option would tell the baseline rows apart."""
    differing = [name for name in ("scope", *MATCH_FIELDS) if len({getattr(r.key, name) for r in rows_b}) > 1]
    hints = [name for name in differing if name in MATCH_FIELDS and name not in match]
    hint = f"add --match {','.join((*match, *hints))} or narrow with --where-b" if hints else "narrow with --where-b"
    return f"{len(rows_b)} baseline rows (differing in {', '.join(differing) or 'tags'}): {hint}"


def _class_of(candidate: Row, baseline: Row, pair: PairComparison, settings: Settings) -> RowClass:
    for row, side in ((candidate, "candidate"), (baseline, "baseline")):
        if row.launches == 0 and row.failures:
            return failed_class(f"the {side}'s launches failed: {row.failures[0]}")
        if row.launches == 0:
            return untested_class(f"the {side} has no launches" + (f": {row.skipped[0]}" if row.skipped else ""))
    if not pair.sizes:
        return untested_class("no message size in common")
    return classify(pair.sizes, pair.regimes, ranges=settings.ranges)


def _rows_of(engine: Engine, side: Selection) -> dict[RowKey, Row]:
    rows = load_rows(engine, list(side.filters))
    if not rows:
        raise CompareError(f"{side.describe()}: no runs match")
    return rows


def _campaign(engine: Engine, text: str) -> tuple[str, Where]:
    """A campaign by id, or the latest campaign of a name."""
    campaign_id = int(text) if text.isdigit() else latest_campaign(engine, text)
    record = campaign_record(engine, campaign_id) if campaign_id is not None else None
    if record is None:
        raise CompareError(f"no campaign {text!r} in the store; a side is {SELECTOR_HELP}")
    created = record["created_at"]
    when = f", {created:%Y-%m-%d %H:%M}" if created else ""
    return f"campaign {record['id']} ({record['name']}{when})", Where("campaign", "=", record["id"])


def _check_reference(engine: Engine, name: str) -> None:
    """A reference must be loaded into the store; if it is shipped but not loaded, say how to load it."""
    if query_runs(engine, [Where("reference", "=", name)], limit=1):
        return
    from ..ingest.published import available

    shipped = available()
    if name in shipped:
        raise CompareError(f"reference {name} is not loaded into this store; load it with: "
                           f"mpistack ingest --reference {name}")
    raise CompareError(f"unknown reference {name!r}; shipped references: {', '.join(shipped)}")


def _number(text: str, selector: str) -> int:
    if not text.isdigit():
        raise CompareError(f"{selector!r}: expected a number after the colon; a side is {SELECTOR_HELP}")
    return int(text)


def _where_text(where: Where) -> str:
    return f"{where.key}{where.operator}{where.value}"


def _key_dict(row: Row) -> dict:
    key = row.key
    return {"scope": key.scope, "stack": key.stack, "approach": key.approach, "variant": key.variant,
            "benchmark": key.benchmark, "metric": key.metric, "ranks": key.ranks, "nodes": key.nodes,
            "buffers": key.buffers, "origin": row.origin, "launches": row.launches}


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _size_dict(c: SizeComparison) -> dict:
    return {"size": c.size, "candidate": c.median_candidate, "baseline": c.median_baseline, "ratio": c.ratio,
            "ci_low": _finite(c.ci_low), "ci_high": _finite(c.ci_high), "p_value": _finite(c.p_value),
            "verdict": c.verdict.value, "descriptive": c.descriptive, "reason": c.reason,
            "candidate_launches": c.n_candidate, "baseline_launches": c.n_baseline}
