"""One class per result row (a stack, an approach, a benchmark) from its per-size comparisons.

Labels:

* ``Y``: at native speed at every size tested (a few inconclusive sizes are tolerated, see ``classify``);
* ``(Y)``: runs, but slower at some sizes; the slow sizes are listed as ranges per message regime, never averaged
  across sizes (Hoefler & Belli, SC15, rule 4: do not summarise ratios);
* ``N``: the runs failed (``failed_class``);
* ``?``: inconclusive or untested, with the reason.

Pure functions: no I/O, nothing from the rest of mpistack.
"""

from __future__ import annotations

import dataclasses
import statistics as _stdlib_statistics
from dataclasses import dataclass, field
from typing import Collection, Hashable, Iterable, Literal, Sequence

import numpy as np
from scipy import stats

from .statistics import SizeComparison, Verdict, launches_needed

__all__ = [
    "LABELS",
    "MAX_INCONCLUSIVE",
    "adjust_for_sizes",
    "REGIME_TEXT",
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

#: A row without slower sizes is still ``Y`` when at most this fraction of its sizes is inconclusive and none of
#: those leans slower (point ratio beyond the floor); otherwise it is ``?``.
MAX_INCONCLUSIVE = 0.2

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
    """Adjacent tested sizes of one regime that are all slower."""

    regime: Regime
    sizes: list[int | None]
    worst_ratio: float
    worst_size: int | None

    def describe(self) -> str:
        return (
            f"{format_sizes(self.sizes)} ({REGIME_TEXT[self.regime]}): "
            f"{self.worst_ratio:.2g}× worst at {format_size(self.worst_size)}"
        )


@dataclass(frozen=True)
class RowClass:
    label: Label
    slow: list[SlowRange] = field(default_factory=list)
    reason: str = ""
    inconclusive: list[int | None] = field(default_factory=list)  # sizes without a verdict (unconfirmed included)
    faster: list[int | None] = field(default_factory=list)  # sizes where the candidate is faster
    launches_needed: int | None = None  # for '?': launches per side that would settle half the open sizes
    unconfirmed: list[int | None] = field(default_factory=list)  # slower or faster alone, not after the adjustment


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


def adjusted_p_values(rows: Sequence[Sequence[float]]) -> list[list[float]]:
    """Benjamini-Hochberg adjusted p-values of each row of p-values (``scipy.stats.false_discovery_control``); rows
    of one length go through one batched call, which is what keeps a million-result report fast. A p-value that
    was not computed (nan) is no evidence: 1."""
    out: list[list[float]] = [[] for _ in rows]
    by_length: dict[int, list[int]] = {}
    for index, row in enumerate(rows):
        if row:
            by_length.setdefault(len(row), []).append(index)
    for indices in by_length.values():
        batch = np.nan_to_num(np.array([rows[index] for index in indices], dtype=float), nan=1.0)
        adjusted = stats.false_discovery_control(batch, axis=-1, method="bh")
        for index, values in zip(indices, adjusted.tolist()):
            out[index] = values
    return out


def adjust_for_sizes(comparisons: Sequence[SizeComparison], *, alpha: float = 0.05,
                     adjusted: tuple[Sequence[float], Sequence[float]] | None = None) -> list[SizeComparison]:
    """Confirm SLOWER and FASTER verdicts across the sizes of one row (Benjamini-Hochberg).

    Each size's verdict comes from its own test at level ``alpha``; a row of 23 sizes gives 23 chances for a
    false one. The one-sided p-values are adjusted with ``scipy.stats.false_discovery_control`` (Benjamini &
    Hochberg 1995) over the row's sizes; a SLOWER (FASTER) size whose adjusted p is not below ``alpha`` becomes
    INCONCLUSIVE, with its reason saying so and ``launches_needed`` estimated. When every size is at speed, a row
    is then called slower at most about ``alpha`` of the time. ``adjusted`` passes the adjusted (worse, better)
    p-values of the tested sizes when the caller computed them in a batch (``adjusted_p_values``).

    Descriptive comparisons (single published figures, ``SizeComparison.descriptive``) have no p-value to adjust:
    they are kept as they are and take no part in the adjustment of the others.
    """
    tested = [index for index, c in enumerate(comparisons) if not c.descriptive]
    if not tested:
        return list(comparisons)

    if adjusted is None:
        adjusted = tuple(adjusted_p_values([[comparisons[index].p_value for index in tested],
                                            [comparisons[index].p_value_faster for index in tested]]))
    adjusted_worse, adjusted_better = adjusted
    adjusted_p = dict(zip(tested, zip(adjusted_worse, adjusted_better)))
    out = []
    for index, c in enumerate(comparisons):
        p_worse, p_better = adjusted_p.get(index, (0.0, 0.0))  # descriptive: kept as it is
        p = p_worse if c.verdict is Verdict.SLOWER else p_better if c.verdict is Verdict.FASTER else 0.0
        if p < alpha:
            out.append(c)
            continue
        band = (c.floor_low, c.floor_high)
        needed = launches_needed(c.ratio, c.ci_low, c.ci_high, c.n_candidate, c.n_baseline, band)
        reason = f"{c.reason}; not confirmed across {len(comparisons)} sizes (adjusted p = {p:.2g})"
        out.append(dataclasses.replace(c, verdict=Verdict.INCONCLUSIVE, reason=reason, launches_needed=needed))
    return out


def classify(
    comparisons: Sequence[SizeComparison],
    *,
    ranges: SizeRanges = SizeRanges(),
    max_inconclusive: float = MAX_INCONCLUSIVE,
    adjust: bool = True,
    alpha: float = 0.05,
    adjusted: tuple[Sequence[float], Sequence[float]] | None = None,
) -> RowClass:
    """The row's class from its per-size comparisons (one per size; ``size`` set on each, or one sizeless).

    First, with ``adjust`` (the default), SLOWER and FASTER sizes must survive a Benjamini-Hochberg adjustment of
    their p-values over the row's sizes at ``alpha`` (``adjust_for_sizes``); those that do not are inconclusive
    here and listed in ``unconfirmed``. Then:

    * any SLOWER size: ``(Y)``, the slower sizes merged into ranges per regime;
    * otherwise, no INCONCLUSIVE size: ``Y``;
    * otherwise ``Y`` with a note when at most ``max_inconclusive`` of the sizes are inconclusive and none of them
      leans slower (its point ratio below the parity band), else ``?`` with how many launches would settle it.
    """
    if not 0.0 <= max_inconclusive <= 1.0:
        raise ValueError(f"max_inconclusive must be in [0, 1], got {max_inconclusive!r}")
    if not comparisons:
        return untested_class("untested: no message sizes compared")
    ordered = sorted(comparisons, key=_size_key)
    sizes = [c.size for c in ordered]
    if len(set(sizes)) != len(sizes):
        raise ValueError(f"one comparison per size expected, got sizes {sizes}")
    unconfirmed: list[int | None] = []
    if adjust:
        confirmed = adjust_for_sizes(ordered, alpha=alpha, adjusted=adjusted)
        unconfirmed = [a.size for a, b in zip(ordered, confirmed) if a.verdict is not b.verdict]
        ordered = confirmed
    total = len(ordered)
    slow = _ranges(ordered, Verdict.SLOWER, ranges)
    faster = [c.size for c in ordered if c.verdict is Verdict.FASTER]
    open_ = [c for c in ordered if c.verdict is Verdict.INCONCLUSIVE]
    common = dict(inconclusive=[c.size for c in open_], faster=faster, unconfirmed=unconfirmed)
    notes = (
        f"; {_list_sizes(ordered, unconfirmed)} not confirmed across the {total} sizes" if unconfirmed else ""
    )
    if any(c.descriptive for c in ordered):
        notes += "; descriptive: single published figures, no test of significance"

    if slow:
        reason = "slower at " + "; ".join(r.describe() for r in slow)
        if open_:
            reason += f"; inconclusive at {len(open_)} of {total} sizes"
        return RowClass("(Y)", slow, reason + notes, **common)

    faster_note = ""
    if faster:
        best = max((c for c in ordered if c.verdict is Verdict.FASTER), key=lambda c: c.ratio)
        faster_note = (f"; faster at {_list_sizes(ordered, faster)} "
                       f"({best.ratio:.2g}× best at {format_size(best.size)})")
    if not open_:
        span = format_sizes([sizes[0], sizes[-1]]) if total > 1 else format_size(sizes[0])
        return RowClass("Y", [], f"at native speed at all {total} sizes ({span}){faster_note}{notes}",
                        **common)

    leaning = [c for c in open_ if c.ratio < c.floor_low]
    if not leaning and len(open_) <= max_inconclusive * total:
        reason = (
            f"at native speed at {total - len(open_)} of {total} sizes; inconclusive at "
            f"{_list_sizes(ordered, common['inconclusive'])} (none leaning slower){faster_note}{notes}"
        )
        return RowClass("Y", [], reason, **common)

    reason = f"inconclusive at {len(open_)} of {total} sizes"
    if leaning:
        worst = min(leaning, key=lambda c: c.ratio)
        reason += (
            f", leaning slower at {_list_sizes(ordered, [c.size for c in leaning])} "
            f"({worst.ratio:.2g}× at {format_size(worst.size)})"
        )
    needed = _launches_to_settle(open_)
    if all(c.too_few_launches for c in open_):
        fewest = min(min(c.n_candidate, c.n_baseline) for c in open_)
        reason += f": too few launches (as few as {fewest} on a side"
        reason += f"; a verdict needs {needed})" if needed else ")"
    elif needed is not None:
        current = _stdlib_statistics.median_low([max(c.n_candidate, c.n_baseline) for c in open_])
        more = max(needed - current, 1)
        settles = "it" if len(open_) == 1 else "half of them"
        reason += f": ~{more} more launches per side would settle {settles}"
    return RowClass("?", [], reason + notes, launches_needed=needed, **common)


def _launches_to_settle(open_: Sequence[SizeComparison]) -> int | None:
    """The median, over the inconclusive sizes, of the launches per side each needs (unknown estimates count as
    unbounded); None when half or more cannot be estimated."""
    estimates = sorted(c.launches_needed if c.launches_needed is not None else float("inf") for c in open_)
    middle = _stdlib_statistics.median_low(estimates)
    return None if middle == float("inf") else int(middle)


def failed_class(message: str) -> RowClass:
    """``N``: the runs failed; ``message`` says how (status, error)."""
    return RowClass("N", [], message.strip() or "failed")


def untested_class(reason: str) -> RowClass:
    """``?`` for a row that has nothing to compare (no baseline, skipped), with why."""
    return RowClass("?", [], reason.strip() or "untested")
