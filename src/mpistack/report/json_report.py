"""report.json: the campaign, the analysis settings (and where they came from), the A/A control's result, the
machine bounds, every answer (``Answer.to_dict``), the compatibility matrix against both baselines (one object
per cell), the failed runs, the cases not run (each reason once), the rows only characterised (medians with
intervals), the transport each stack and approach recorded and the doctor's findings. Not-a-number (a confidence interval from a single launch) is written as null, so that the file is valid
JSON. Lists are written one item per line: readable, diffable, and fast (each
item goes through the C encoder; an indented dump of a whole store's answers would take seconds)."""

from __future__ import annotations

import dataclasses
import json
import math

from ..analysis.answers import SYSTEM, control_resolution
from ..analysis.bulk import collector_paused
from .data import Report

_LISTS = ("answers", "matrix", "same_stack_matrix", "failures", "not_run", "transports", "characterisation")


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
        "settings_from": report.settings_origin,
        "control": _control(report),
        "bounds": _bounds(report),
        "matrix_columns": [column.label for column in report.matrix.columns],
        "answers": [answer.to_dict() for answer in report.answers],
        "matrix": report.matrix.records(),
        # the same cells against the same build natively (the deployment's own cost), where there is one
        "same_stack_matrix": report.same_stack_matrix.records(),
        "failures": [{"stack": failure.key.stack, "approach": failure.key.approach, "variant": failure.key.variant,
                      "benchmark": failure.key.benchmark, "ranks": failure.key.ranks, "nodes": failure.key.nodes,
                      "buffers": failure.key.buffers, "reason": failure.reason, "count": failure.count,
                      "launches": failure.launches} for failure in report.failures],
        "not_run": [{"reason": reason, "cases": count, "where": where} for reason, count, where in report.skip_reasons],
        # rows neither compared nor a baseline: their per-size medians with the interval of each median
        "characterisation": [item.to_dict() for item in report.characterised],
        "regressions": [regression.to_dict() for regression in report.regressions],
        "regression_summary": report.regression_summary,
        # what each stack and approach's MPI said it used (its first run's probe): the evidence the findings rest on
        "transports": [{"scope": entry.scope, "stack": entry.stack, "column": entry.column, "runs": entry.runs,
                        "transport": entry.transport} for entry in report.provenance],
        "findings": [{"scope": scope, "stack": stack, "approach": approach, "variant": variant, "findings": found}
                     for ((scope, stack), (approach, variant)), found in report.findings.items()],
        # per slower or failing cell, the finding that explains its loss (its benchmark and sizes), with its fix, or
        # null and what was checked
        "causes": _causes(report),
    }


def _causes(report: Report) -> list[dict]:
    causes = []
    for row in report.matrix.rows:
        for column in report.matrix.columns:
            if not report.losing(row, column):
                continue
            cause = report.loss_cause(row, column)
            causes.append({"scope": row.scope, "stack": row.stack, "approach": column.approach,
                           "variant": column.variant, "cause": cause,
                           **({} if cause else {"checked": report.checked(row, column)})})
    return causes


def _control(report: Report) -> dict | None:
    """The A/A control's result: the system MPI against itself, one answer per benchmark (its regimes' ratios
    and intervals are in ``answers`` too)."""
    controls = [a for a in report.answers if a.control and a.baseline == SYSTEM]
    if not controls:
        return None
    return {"stack": controls[0].key.stack, "variant": controls[0].key.variant,
            "all_at_speed": all(a.label == "Y" for a in controls), "summary": report.control_lines,
            # per benchmark and regime, how far identical runs drifted apart, and whether the floor was resolved
            "resolution": [{"benchmark": r.benchmark, "regime": r.regime, "ci_low": r.low, "ci_high": r.high,
                            "resolves_floor": r.within_floor} for r in control_resolution(report.answers)],
            "benchmarks": [{"benchmark": a.key.benchmark, "metric": a.key.metric, "class": a.label,
                            "reason": a.row_class.reason,
                            "regimes": {name: {"ratio": c.ratio, "ci_low": c.ci_low, "ci_high": c.ci_high}
                                        for name, c in a.regimes.items()}} for a in controls]}


def _bounds(report: Report) -> dict | None:
    """The machine bounds the campaign measured (analysis/bounds.py), with how each was measured; None when it
    measured none."""
    machine = report.bounds
    if machine is None:
        return None
    return {"host": machine.host, "cpu_model": machine.cpu_model, "kernel": machine.kernel,
            "network": machine.network, "describe": machine.describe(),
            "figures": [dataclasses.asdict(figure) for figure in machine.figures],
            "sources": [{key: (value.isoformat() if hasattr(value, "isoformat") else value)
                         for key, value in dataclasses.asdict(source).items()} for source in machine.sources]}


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
