"""report.json: the campaign, the analysis settings, every answer (``Answer.to_dict``), the compatibility matrix
(one object per cell), the failed runs, the transport each stack and approach recorded and the doctor's
findings. Not-a-number (a confidence interval from a single launch) is written as null, so that the file is valid
JSON. Lists are written one item per line: readable, diffable, and fast (each
item goes through the C encoder; an indented dump of a whole store's answers would take seconds)."""

from __future__ import annotations

import json
import math

from ..analysis.bulk import collector_paused
from .data import Report

_LISTS = ("answers", "matrix", "failures", "transports")


def _finite(value):
    """The value with every NaN or infinity replaced by None, recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def _report_values(report: Report) -> dict:
    """What report.json holds, its floats as computed (NaN and infinities included)."""
    return {
        "campaign": report.campaign,
        "title": report.title,
        "filters": report.filters,
        "generated": report.generated,
        "settings": report.settings_dict(),
        "matrix_columns": [column.label for column in report.matrix.columns],
        "answers": [answer.to_dict() for answer in report.answers],
        "matrix": report.matrix.records(),
        "failures": [{"stack": failure.key.stack, "approach": failure.key.approach, "variant": failure.key.variant,
                      "benchmark": failure.key.benchmark, "ranks": failure.key.ranks, "nodes": failure.key.nodes,
                      "buffers": failure.key.buffers, "reason": failure.reason, "count": failure.count,
                      "launches": failure.launches} for failure in report.failures],
        "regressions": [regression.to_dict() for regression in report.regressions],
        "regression_summary": report.regression_summary,
        # what each stack and approach's MPI said it used (its first run's probe): the evidence the findings rest on
        "transports": [{"scope": entry.scope, "stack": entry.stack, "column": entry.column, "runs": entry.runs,
                        "transport": entry.transport} for entry in report.provenance],
        "findings": [{"scope": scope, "stack": stack, "approach": approach, "variant": variant, "findings": found}
                     for ((scope, stack), (approach, variant)), found in report.findings.items()],
    }


def _dumps(value) -> str:
    return json.dumps(value, allow_nan=False, default=str, ensure_ascii=False)


def _dumps_finite(value) -> str:
    """``value`` as JSON, a NaN or infinity as null. The encoder checks every float anyway (``allow_nan=False``
    raises ValueError on one), so only the values that hold one are copied: walking every answer's per-size
    figures in Python would cost more than encoding them."""
    try:
        return _dumps(value)
    except ValueError:
        return _dumps(_finite(value))


@collector_paused()
def render_json(report: Report) -> str:
    parts = []  # joined once at the end: a whole store's report is tens of megabytes, not to be copied over and over
    for key, value in _report_values(report).items():
        parts.append(f"{',' if parts else '{'}\n {_dumps(key)}: ")
        if key in _LISTS and value:
            for index, item in enumerate(value):
                parts.append(",\n  " if index else "[\n  ")
                parts.append(_dumps_finite(item))
            parts.append("\n ]")
        else:
            parts.append(_dumps_finite(value))
    parts.append("\n}\n")
    return "".join(parts)
