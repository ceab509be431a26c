"""Analysis stage: is a candidate (a container) at the speed of the baseline (native), size by size and per row.

Pure functions, importable on their own (no database, no I/O, nothing else from mpistack):

* ``compare_size``: per-launch figures of both sides at one message size -> ``SizeComparison`` (ratio of
  medians, bootstrap confidence interval, one-sided Mann-Whitney U, verdict, launches needed);
* ``classify``: a row's comparisons -> ``RowClass`` (``Y``, ``(Y)``, ``?``); ``failed_class`` gives ``N``.

The method and its sources are in docs/analysis.md.
"""

from .classes import (
    LABELS,
    MAX_INCONCLUSIVE,
    RowClass,
    SizeRanges,
    SlowRange,
    adjust_for_sizes,
    classify,
    failed_class,
    format_size,
    format_sizes,
    merge_adjacent,
    untested_class,
)
from .statistics import (
    DEFAULT_FLOOR,
    MIN_LAUNCHES,
    N_RESAMPLES,
    PracticalFloor,
    SizeComparison,
    Verdict,
    compare_many,
    compare_size,
    compare_sizes,
    launches_needed,
    smallest_p_value,
)

__all__ = [
    "DEFAULT_FLOOR",
    "LABELS",
    "MAX_INCONCLUSIVE",
    "MIN_LAUNCHES",
    "N_RESAMPLES",
    "PracticalFloor",
    "RowClass",
    "SizeComparison",
    "SizeRanges",
    "SlowRange",
    "Verdict",
    "adjust_for_sizes",
    "classify",
    "compare_many",
    "compare_size",
    "compare_sizes",
    "failed_class",
    "format_size",
    "format_sizes",
    "launches_needed",
    "merge_adjacent",
    "smallest_p_value",
    "untested_class",
]
