"""One class per result row (a stack, an approach, a benchmark) from its comparisons per size regime and per size.

Labels:

* ``Y``: at native speed: in every message-size regime the interval lies inside the parity band;
* ``(Y)``: runs, but slower: in some regime the interval lies wholly beyond the floor; where (the sizes, as ranges
  per regime, never averaged across sizes: Hoefler & Belli, SC15, rule 4) and by how much;
* ``N``: the runs failed (``failed_class``);
* ``?``: not settled, or untested, with the reason.

Regimes decide and sizes describe: deciding on three regimes (small, mid, large; each from one figure per launch,
the geometric mean over its sizes) instead of twenty sizes keeps the claim "at speed everywhere" within reach
(an intersection-union claim loses power with every unit it adds: Berger & Hsu, Statistical Science 11(4),
1996) and leads with the regime's estimate, which the worst single size overstates (the winner's curse). A size
whose own interval lies wholly beyond the floor in a regime that is not slower is flagged as an isolated loss.

Pure functions: no I/O, nothing from the rest of mpistack.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Collection, Hashable, Iterable, Literal, Mapping, Sequence

from .statistics import MIN_LAUNCHES, SizeComparison, Verdict, replication_probability

__all__ = [
    "LABELS",
    "REGIME_TEXT",
    "STABLE",
    "RowClass",
    "SizeRanges",
    "SlowRange",
    "classify",
    "failed_class",
    "format_size",
    "format_sizes",
    "merge_adjacent",
    "untested_class",
]

Label = Literal["Y", "(Y)", "N", "?"]
Regime = Literal["small", "mid", "large"]
LABELS: tuple[str, ...] = ("Y", "(Y)", "N", "?")
REGIME_TEXT = {"small": "small messages", "mid": "mid-size messages", "large": "large messages"}

#: A decided row whose class a rerun keeps with less than this probability is marked "may change on a rerun".
STABLE = 0.8

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


@dataclass(frozen=True)
class SizeRanges:
    """Message-size regimes, in bytes: small below ``small_below`` (8 KiB, the usual eager limit), large from
    ``large_from`` (512 KiB) on, mid in between. Sizeless benchmarks (barrier) count as small."""

    small_below: int = 8 * 1024
    large_from: int = 512 * 1024

    def __post_init__(self) -> None:
        if not 0 < self.small_below <= self.large_from:
            raise ValueError(f"need 0 < small_below <= large_from, got {self.small_below}, {self.large_from}")

    def regime(self, size: int | None) -> Regime:
        if size is None or size < self.small_below:
            return "small"
        return "mid" if size < self.large_from else "large"


@dataclass(frozen=True)
class SlowRange:
    """Where a row is slower: adjacent tested sizes of one regime, with the regime's estimate and interval (when
    the regime decided) and the worst size's point ratio."""

    regime: Regime
    sizes: list[int | None]
    worst_ratio: float
    worst_size: int | None
    ratio: float = math.nan  # the regime's estimate
    ci_low: float = math.nan
    ci_high: float = math.nan

    def describe(self) -> str:
        where = f"{format_sizes(self.sizes)} ({REGIME_TEXT[self.regime]})"
        if math.isfinite(self.ratio):
            # a single published figure per size has no interval: its ratio stands alone
            interval = (f" (CI {self.ci_low:.2f}–{self.ci_high:.2f})" if math.isfinite(self.ci_low)
                        and math.isfinite(self.ci_high) else " (single figures: no interval)")
            text = f"{where}: {self.ratio:.2f}×{interval}"
            return text + (f", worst {self.worst_ratio:.2f}× at {format_size(self.worst_size)}"
                           if len(self.sizes) > 1 else "")
        return f"{where}: {self.worst_ratio:.2g}× worst at {format_size(self.worst_size)}"


@dataclass(frozen=True)
class RowClass:
    label: Label
    slow: list[SlowRange] = field(default_factory=list)
    reason: str = ""
    inconclusive: list[int | None] = field(default_factory=list)  # sizes without a verdict of their own
    faster: list[int | None] = field(default_factory=list)  # sizes where the candidate is faster
    launches_needed: int | None = None  # for '?': launches per side that would settle every open regime
    regimes: dict[str, SizeComparison] = field(default_factory=dict)  # the deciding comparisons, by regime
    isolated: list[SizeComparison] = field(default_factory=list)  # sizes slower beyond the floor in a regime that is not
    stability: float = math.nan  # the probability that a rerun keeps this class (decided rows)
    unstable: str = ""  # for a decided row below STABLE: what may change ("small messages at 0.91× ...")
    cause: str = ""  # for '?': the cause without the per-unit detail, the same for rows open for the same reason


def format_size(size: int | None) -> str:
    """``1 B``, ``8 KiB``, ``1 MiB``, ``1.5 KiB``; ``None`` (a sizeless benchmark) is ``no size``."""
    if size is None:
        return "no size"
    value, unit = float(size), 0
    while value >= 1024 and unit < len(_UNITS) - 1:
        value /= 1024
        unit += 1
    return f"{value:.4g} {_UNITS[unit]}"


def format_sizes(sizes: Sequence[int | None]) -> str:
    """A run of sizes as ``first–last`` (one size alone as itself)."""
    if not sizes:
        return ""
    if len(sizes) == 1:
        return format_size(sizes[0])
    return f"{format_size(sizes[0])}–{format_size(sizes[-1])}"


def merge_adjacent(tested: Sequence[Hashable], selected: Collection[Hashable]) -> list[list]:
    """Group the ``selected`` entries of ``tested`` into runs that are adjacent in ``tested``.

    Adjacent means next to each other among the sizes tested (1, 2, 4, ... double), not numerically consecutive:
    ``merge_adjacent([1, 2, 4, 8, 16], {1, 2, 8})`` is ``[[1, 2], [8]]``.
    """
    chosen = set(selected)
    runs: list[list] = []
    previous_selected = False
    for item in tested:
        if item in chosen:
            if previous_selected:
                runs[-1].append(item)
            else:
                runs.append([item])
            previous_selected = True
        else:
            previous_selected = False
    return runs


def _size_key(comparison: SizeComparison) -> tuple[int, int]:
    return (0, 0) if comparison.size is None else (1, comparison.size)


def _ranges(
    ordered: Sequence[SizeComparison], verdict: Verdict, ranges: SizeRanges, worst=min
) -> list[SlowRange]:
    by_size = {c.size: c for c in ordered}
    tested = [c.size for c in ordered]
    out = []
    for run in merge_adjacent(tested, [c.size for c in ordered if c.verdict is verdict]):
        for regime_run in _split_by_regime(run, ranges):
            extreme = worst(regime_run, key=lambda size: by_size[size].ratio)
            out.append(SlowRange(ranges.regime(regime_run[0]), regime_run, by_size[extreme].ratio, extreme))
    return out


def _split_by_regime(run: list, ranges: SizeRanges) -> Iterable[list]:
    current: list = []
    for size in run:
        if current and ranges.regime(size) != ranges.regime(current[-1]):
            yield current
            current = []
        current.append(size)
    if current:
        yield current


def _list_sizes(ordered: Sequence[SizeComparison], sizes: Collection) -> str:
    return ", ".join(format_sizes(run) for run in merge_adjacent([c.size for c in ordered], sizes))


def _interval(c: SizeComparison) -> str:
    return (f"{c.ratio:.2f}× (CI {c.ci_low:.2f}–{c.ci_high:.2f})" if math.isfinite(c.ci_low)
            else f"{c.ratio:.2f}×")


def _widened(c: SizeComparison) -> bool:
    """Whether the absolute floor (a few hundredths of a microsecond) widened this comparison's parity band beyond
    the relative one: a relative band [1 - r, 1 + r] sums to 2, a widened one to more."""
    return math.isfinite(c.floor_low) and math.isfinite(c.floor_high) and c.floor_low + c.floor_high > 2.0 + 1e-9


def _at_speed_text(c: SizeComparison) -> str:
    """A unit at speed: its estimate, and where the absolute floor made a ratio beyond 5% parity, the band that did
    ("0.80× (CI 0.79–0.81) within the band 0.78–1.28×, widened at these latencies by the floor in microseconds")."""
    text = _interval(c)
    if _widened(c) and not 0.95 <= c.ratio <= 1.05:  # said where the ratio alone would look like a difference
        text += (f" within the band {c.floor_low:.2f}–{c.floor_high:.2f}×, widened at these latencies by the "
                 "floor in microseconds")
    return text


def _unit_name(unit: Hashable) -> str:
    return REGIME_TEXT[unit] if unit in REGIME_TEXT else format_size(unit)


def classify(
    comparisons: Sequence[SizeComparison],
    regimes: Mapping[str, SizeComparison] | None = None,
    *,
    ranges: SizeRanges = SizeRanges(),
    busy: str = "",
) -> RowClass:
    """The row's class from its per-size comparisons (one per size; ``size`` set on each, or one sizeless) and, when
    given, the comparisons of its size regimes (``regime name -> comparison`` of the per-launch regime figures),
    which then decide; without them each size decides as a unit of its own.

    * any deciding unit SLOWER: ``(Y)``, with where (the regime's sizes that lean slower) and by how much;
    * every unit AT_SPEED or FASTER: ``Y``;
    * otherwise ``?``, with each open unit's graded reason and the launches that would settle them; or, given
      ``busy`` (why this machine could not settle even its A/A control), that evidence instead of a forecast.
    """
    if not comparisons:
        return untested_class("untested: no message sizes compared")
    ordered = sorted(comparisons, key=_size_key)
    sizes = [c.size for c in ordered]
    if len(set(sizes)) != len(sizes):
        raise ValueError(f"one comparison per size expected, got sizes {sizes}")
    units: dict[Hashable, SizeComparison] = (
        {name: regimes[name] for name in REGIME_TEXT if name in regimes} if regimes else {c.size: c for c in ordered})
    by_regime: dict[str, list[SizeComparison]] = {}
    for c in ordered:
        by_regime.setdefault(ranges.regime(c.size), []).append(c)
    faster = [c.size for c in ordered if c.verdict is Verdict.FASTER]
    open_sizes = [c.size for c in ordered if c.verdict is Verdict.INCONCLUSIVE]
    slower_units = {unit: c for unit, c in units.items() if c.verdict is Verdict.SLOWER}
    open_units = {unit: c for unit, c in units.items() if c.verdict is Verdict.INCONCLUSIVE}
    isolated = ([c for c in ordered if c.verdict is Verdict.SLOWER and ranges.regime(c.size) not in slower_units]
                if regimes else [])
    common = dict(inconclusive=open_sizes, faster=faster, regimes=dict(regimes or {}), isolated=isolated)

    notes = ""
    if isolated:
        notes += "; isolated loss at " + ", ".join(f"{format_size(c.size)} {_interval(c)}" for c in isolated)
    if any(c.descriptive for c in ordered):
        notes += "; descriptive: single published figures, no test of significance"

    if slower_units:
        slow = _slow_ranges(ordered, slower_units, by_regime, ranges, regimes is not None)
        reason = "slower at " + "; ".join(r.describe() for r in slow)
        if open_units:
            reason += "; not settled at " + ", ".join(_unit_name(unit) for unit in open_units)
        chance = 1.0 - math.prod(1.0 - _replicates(c) for c in slower_units.values())
        return _stability(RowClass("(Y)", slow, reason + notes, **common), chance, slower_units)

    faster_note = ""
    if faster:
        best = max((c for c in ordered if c.verdict is Verdict.FASTER), key=lambda c: c.ratio)
        faster_note = f"; faster at {_list_sizes(ordered, faster)} ({best.ratio:.2g}× best at {format_size(best.size)})"
    if not open_units:
        total = len(ordered)
        span = format_sizes([sizes[0], sizes[-1]]) if total > 1 else format_size(sizes[0])
        if regimes:
            estimates = ", ".join(f"{name} {_at_speed_text(c)}" for name, c in units.items())
            reason = f"at native speed in every regime ({estimates}; {total} sizes, {span}){faster_note}{notes}"
        else:
            reason = f"at native speed at all {total} sizes ({span}){faster_note}{notes}"
        chance = math.prod(_replicates(c) for c in units.values())
        return _stability(RowClass("Y", [], reason, **common), chance, units)

    needed = _launches_to_settle(list(open_units.values()))
    if all(c.too_few_launches for c in open_units.values()) and not busy:
        fewest = min(min(c.n_candidate, c.n_baseline) for c in open_units.values())
        # a forecast from so few launches is mostly their spread: beyond the rule's minimum it is not quoted
        need = ("" if not needed else f"; a verdict needs {needed})" if needed <= MIN_LAUNCHES else
                f"; a verdict needs at least {MIN_LAUNCHES}, more at this spread)")
        cause = f"too few launches (as few as {fewest} on a side" + (need or ")")
        return RowClass("?", [], cause + faster_note + notes, launches_needed=needed, cause=cause, **common)
    if busy:
        tail = busy
    elif needed is not None and needed <= FORECAST_REACH * (
            current := max(max(c.n_candidate, c.n_baseline) for c in open_units.values())):
        tail = f"~{max(needed - current, 1)} more launches per side would settle it"
    elif needed is not None:
        # the forecast assumes the spread holds while the launches multiply; that far out it is the spread's
        # extrapolation, not an estimate: the noise, not the count, is what to change
        tail = (f"more launches alone are unlikely to settle it (it would take over {FORECAST_REACH}× the "
                f"{current} made at this spread): a quieter machine")
    else:
        tail = "more launches alone are unlikely to settle it (the estimate sits on a decision edge)"
    detail = "; ".join(f"{_unit_name(unit)} {c.reason}" for unit, c in open_units.items())
    cause = f"not settled at {', '.join(_unit_name(unit) for unit in open_units)}: {tail}"
    return RowClass("?", [], f"not settled: {detail}; {tail}{faster_note}{notes}", launches_needed=needed,
                    cause=cause, **common)


#: how far a forecast of the launches that would settle a row is quoted: up to this many times the launches made
FORECAST_REACH = 4


def _replicates(c: SizeComparison) -> float:
    chance = replication_probability(c)
    return 1.0 if math.isnan(chance) else chance


def _stability(row_class: RowClass, chance: float, units: Mapping[Hashable, SizeComparison]) -> RowClass:
    """The row with its replication probability, marked when a rerun may well change its class (naming the unit
    nearest to its decision edge)."""
    if chance >= STABLE or not units:
        return dataclasses.replace(row_class, stability=chance)
    unit, weakest = min(units.items(), key=lambda item: _replicates(item[1]))
    note = f"{_unit_name(unit)} at {_interval(weakest)}"
    return dataclasses.replace(row_class, stability=chance, unstable=note,
                               reason=f"{row_class.reason}; may change on a rerun ({chance:.0%} to hold): {note}")


def _slow_ranges(ordered: Sequence[SizeComparison], slower: Mapping[Hashable, SizeComparison],
                 by_regime: Mapping[str, list[SizeComparison]], ranges: SizeRanges, regimes: bool) -> list[SlowRange]:
    """Where a row is slower. Deciding by regime: in each slower regime, the runs of its sizes that lean slower
    (point ratio below the parity band), with the regime's estimate; deciding by size: the runs of slower sizes."""
    if not regimes:
        return _ranges(ordered, Verdict.SLOWER, ranges)
    out = []
    for name, regime in slower.items():
        members = by_regime.get(name, [])
        leaning = [c.size for c in members if c.ratio < c.floor_low] or [c.size for c in members]
        by_size = {c.size: c for c in members}
        for run in merge_adjacent([c.size for c in ordered], leaning):
            worst = min(run, key=lambda size: by_size[size].ratio)
            out.append(SlowRange(name, run, by_size[worst].ratio, worst, regime.ratio, regime.ci_low, regime.ci_high))
    return out


def _launches_to_settle(open_: Sequence[SizeComparison]) -> int | None:
    """The launches per side that would settle the row: one open unit shown slower settles it ((Y)) as every open
    unit settled does, so the fewer of what the unit leaning slower that needs least needs and the largest
    estimate of all; None when neither can be estimated (repeating will not settle it)."""
    estimates = [c.launches_needed for c in open_]
    every = None if not estimates or any(n is None for n in estimates) else max(estimates)
    leaning_slower = [c.launches_needed for c in open_ if c.ratio < c.floor_low and c.launches_needed is not None]
    found = [n for n in (every, min(leaning_slower, default=None)) if n is not None]
    return min(found) if found else None


def failed_class(message: str) -> RowClass:
    """``N``: the runs failed; ``message`` says how (status, error)."""
    return RowClass("N", [], message.strip() or "failed")


def untested_class(reason: str) -> RowClass:
    """``?`` for a row that has nothing to compare (no baseline, skipped), with why."""
    return RowClass("?", [], reason.strip() or "untested")
