"""Characterisation without a comparison: a row's per-size medians over its launches, each with a
distribution-free confidence interval, for rows that have no baseline to be compared with (a campaign of
native runs only, a centre characterising its own MPI, or a candidate whose baseline did not run).

The interval of a median from n launches is the exact order-statistic interval [x(j), x(n-j+1)] with the
largest j whose binomial coverage is still at least the level asked for (Hoefler and Belli, "Scientific
Benchmarking of Parallel Computing Systems", SC15, section 3.1.3, https://doi.org/10.1145/2807591.2807644,
give the normal approximation of the same ranks). Below 6 launches no 95 % interval exists: the range of the
launches is given with the coverage it really has (75 % at 3 launches, 94 % at 5), and the row says so.

Pure: no I/O.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Mapping

from .evidence import Row, RowKey

__all__ = ["CONFIDENCE", "Characterisation", "SizeFigure", "characterise", "median_interval", "uncompared_rows"]

CONFIDENCE = 0.95


@lru_cache(maxsize=256)
def _interval_rank(n: int, confidence: float) -> tuple[int, float]:
    """(j, coverage): the largest 1-based rank j such that [x(j), x(n-j+1)] covers the median with at least
    ``confidence``; j = 1 (the range) with its own coverage when even the range falls short."""
    best, coverage = 1, 1.0 - 2.0 * 0.5 ** n  # the range misses the median only when all lie on one side
    for j in range(2, (n + 1) // 2 + 1):
        # coverage of [x(j), x(n-j+1)]: P(j <= B <= n-j) for B ~ Binomial(n, 1/2)
        inside = math.fsum(math.comb(n, k) for k in range(j, n - j + 1)) / 2.0 ** n
        if inside < confidence:
            break
        best, coverage = j, inside
    return best, coverage


def median_interval(values: Iterable[float], confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(low, high, coverage) of the median of ``values``: the exact order-statistic interval. One value gives
    (value, value, 0.0): no interval."""
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        raise ValueError("median_interval needs at least one value")
    if n == 1:
        return ordered[0], ordered[0], 0.0
    j, coverage = _interval_rank(n, confidence)
    return ordered[j - 1], ordered[n - j], coverage


@dataclass(frozen=True)
class SizeFigure:
    """One message size of a characterised row: the median over its launches and the interval of that median."""

    size: int | None
    launches: int
    median: float
    low: float
    high: float
    coverage: float  # what the interval really covers (below the level asked for with fewer than 6 launches)

    def to_dict(self) -> dict:
        return {"size": self.size, "launches": self.launches, "median": self.median, "ci_low": self.low,
                "ci_high": self.high, "coverage": self.coverage}


@dataclass
class Characterisation:
    """A row's figures per size, without a comparison."""

    key: RowKey
    origin: str
    launches: int
    sizes: list[SizeFigure] = field(default_factory=list)
    confidence: float = CONFIDENCE

    @property
    def short_of_level(self) -> bool:
        """Whether some size's interval covers less than the level asked for (too few launches for it)."""
        return any(figure.coverage < self.confidence for figure in self.sizes)

    def to_dict(self) -> dict:
        key = self.key
        return {"scope": key.scope, "stack": key.stack, "approach": key.approach, "variant": key.variant,
                "benchmark": key.benchmark, "metric": key.metric, "ranks": key.ranks, "nodes": key.nodes,
                "buffers": key.buffers, "origin": self.origin, "launches": self.launches,
                "confidence": self.confidence, "sizes": [figure.to_dict() for figure in self.sizes]}


def characterise(row: Row, confidence: float = CONFIDENCE) -> Characterisation:
    """The row's per-size medians with their intervals, sizes in order (a sizeless benchmark first)."""
    sizes = []
    for size in sorted(row.figures, key=lambda size: (size is not None, size or 0)):
        values = row.figures[size]
        if not values:
            continue
        low, high, coverage = median_interval(values, confidence)
        sizes.append(SizeFigure(size, len(values), statistics.median(values), low, high, coverage))
    return Characterisation(row.key, row.origin, row.launches, sizes, confidence)


def uncompared_rows(rows: Mapping[RowKey, Row], compared: Iterable[RowKey],
                    baselines: Iterable[RowKey]) -> list[Row]:
    """The rows with launches that were neither compared with a baseline (``compared``: the candidates of answers
    that have per-size comparisons) nor served as one (``baselines``): what only a characterisation describes."""
    seen = set(compared) | set(baselines)
    return [rows[key] for key in sorted(rows) if key not in seen and rows[key].launches and rows[key].figures]
