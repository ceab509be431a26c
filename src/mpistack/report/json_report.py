"""report.json: the campaign, the analysis settings, every answer (``Answer.to_dict``), the compatibility matrix
(one object per cell) and the failed runs. Not-a-number (a confidence interval from a single launch) is written
as null, so that the file is valid JSON. Lists are written one item per line: readable, diffable, and fast (each
item goes through the C encoder; an indented dump of a whole store's answers would take seconds)."""

from __future__ import annotations

import json
import math

from .data import Report

_LISTS = ("answers", "matrix", "failures")


def _finite(value):
    """The value with every NaN or infinity replaced by None, recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def _finite_answer(item: dict) -> dict:
    """``_finite`` for an answer, quick on its many per-size figures."""
    sizes = [{key: (None if isinstance(value, float) and not math.isfinite(value) else value)
              for key, value in size.items()} for size in item["sizes"]]
    return {**_finite({key: value for key, value in item.items() if key != "sizes"}), "sizes": sizes}


def report_dict(report: Report) -> dict:
    return {
        "campaign": _finite(report.campaign),
        "title": report.title,
        "filters": report.filters,
        "generated": report.generated,
        "settings": _finite(report.settings_dict()),
        "matrix_columns": [column.label for column in report.matrix.columns],
        "answers": [_finite_answer(answer.to_dict()) for answer in report.answers],
        "matrix": _finite(report.matrix.records()),
        "failures": [{"stack": issue.key.stack, "approach": issue.key.approach, "variant": issue.key.variant,
                      "benchmark": issue.key.benchmark, "ranks": issue.key.ranks, "nodes": issue.key.nodes,
                      "buffers": issue.key.buffers, "reason": issue.reason, "count": issue.count,
                      "launches": issue.launches} for issue in report.failures],
        "regressions": [_finite(regression.to_dict()) for regression in report.regressions],
    }


def _dumps(value) -> str:
    return json.dumps(value, allow_nan=False, default=str, ensure_ascii=False)


def render_json(report: Report) -> str:
    items = []
    for key, value in report_dict(report).items():
        if key in _LISTS and value:
            body = ",\n  ".join(_dumps(item) for item in value)
            items.append(f" {_dumps(key)}: [\n  {body}\n ]")
        else:
            items.append(f" {_dumps(key)}: {_dumps(value)}")
    return "{\n" + ",\n".join(items) + "\n}\n"
