"""Analysis stage: is a candidate (a container) at the speed of the baseline (native), per size regime and size.

Pure functions, importable on their own (no database, no I/O, nothing else from mpistack):

* ``compare_size``: per-launch figures of both sides at one message size (paired within rounds, or not) ->
  ``SizeComparison`` (the ratio, its interval at ``1 - 2 alpha``, the verdict of the one interval rule, the
  launches that would settle it);
* ``classify``: a row's comparisons per regime and per size -> ``RowClass`` (``Y``, ``(Y)``, ``?``);
  ``failed_class`` gives ``N``.

The method and its sources are in docs/analysis.md.
"""

from .classes import (
    LABELS,
    STABLE,
    RowClass,
    SizeRanges,
    SlowRange,
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
    MIN_PAIRS,
    N_RESAMPLES,
    PracticalFloor,
    SizeComparison,
    Verdict,
    compare_many,
    compare_size,
    compare_sizes,
    launches_needed,
    replication_probability,
    signed_rank_interval,
    smallest_p_value,
)

__all__ = [
    "DEFAULT_FLOOR",
    "LABELS",
    "MIN_LAUNCHES",
    "MIN_PAIRS",
    "N_RESAMPLES",
    "STABLE",
    "PracticalFloor",
    "RowClass",
    "SizeComparison",
    "SizeRanges",
    "SlowRange",
    "Verdict",
    "classify",
    "compare_many",
    "compare_size",
    "compare_sizes",
    "failed_class",
    "format_size",
    "format_sizes",
    "launches_needed",
    "merge_adjacent",
    "replication_probability",
    "signed_rank_interval",
    "smallest_p_value",
    "untested_class",
]
