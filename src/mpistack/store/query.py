"""Reading results back: `--where key=value` filters over result fields, run fields and tags."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import Engine, and_, exists, select

from .schema import RESULT_STAT_FIELDS, Run, RunTag, Result

_RESULTS = Result.__table__.c
_RUNS = Run.__table__.c
_TAGS = RunTag.__table__.c

_WHERE_RE = re.compile(r"^\s*([A-Za-z_][\w.-]*)\s*(!=|>=|<=|=|>|<)\s*(.*?)\s*$")
_OPERATORS = {
    "=": lambda column, value: column.is_(None) if value is None else column == value,
    "!=": lambda column, value: column.is_not(None) if value is None else column != value,
    ">": lambda column, value: column > value,
    ">=": lambda column, value: column >= value,
    "<": lambda column, value: column < value,
    "<=": lambda column, value: column <= value,
}
# Filter keys that name a column; anything else is a tag.
_RESULT_KEYS = {"benchmark": _RESULTS.benchmark, "size": _RESULTS.size, "metric": _RESULTS.metric,
                "value": _RESULTS.value, "unit": _RESULTS.unit, "validation": _RESULTS.validation,
                "iterations": _RESULTS.iterations, "run": _RESULTS.run_id}
_RUN_KEYS = {"status": _RUNS.status, "stack": _RUNS.stack, "approach": _RUNS.approach, "launcher": _RUNS.launcher,
             "ranks": _RUNS.ranks, "nodes": _RUNS.nodes, "device": _RUNS.device, "buffers": _RUNS.buffers,
             "suite": _RUNS.benchmark_suite, "campaign": _RUNS.campaign_id, "incomplete": _RUNS.incomplete,
             "libfabric_provider": _RUNS.libfabric_provider, "image_digest": _RUNS.image_digest}
_NUMERIC_KEYS = {"size", "value", "iterations", "run", "ranks", "nodes", "campaign"}

# Fields of every output row, in order; tags follow.
OUTPUT_FIELDS = ("run", "benchmark", "size", "metric", "value", "unit", "status", "stack", "approach", "launcher",
                 "ranks", "nodes", "buffers", "device", "suite", "validation")
STAT_FIELDS = tuple(field for field in RESULT_STAT_FIELDS if field != "validation")


class FilterError(ValueError):
    pass


@dataclass(frozen=True)
class Filter:
    key: str
    operator: str
    value: str | float | int | None

    @classmethod
    def parse(cls, text: str) -> "Filter":
        match = _WHERE_RE.match(text)
        if not match:
            raise FilterError(f"--where {text!r}: expected KEY=VALUE (or !=, <, <=, >, >=), e.g. benchmark=bw")
        key, operator, raw = match.groups()
        value: str | float | int | None = raw
        if raw.lower() in {"null", "none"}:
            value = None
        elif key in _NUMERIC_KEYS:
            try:
                value = int(raw) if re.fullmatch(r"[-+]?\d+", raw) else float(raw)
            except ValueError:
                raise FilterError(f"--where {text!r}: {key} takes a number") from None
        elif key == "incomplete":
            value = raw.lower() in {"1", "true", "yes"}
        if operator not in {"=", "!="} and (value is None or key not in _NUMERIC_KEYS):
            raise FilterError(f"--where {text!r}: {operator} needs a numeric field ({', '.join(sorted(_NUMERIC_KEYS))})")
        return cls(key, operator, value)

    def clause(self):
        column = _RESULT_KEYS[self.key] if self.key in _RESULT_KEYS else _RUN_KEYS.get(self.key)
        if column is not None:
            return _OPERATORS[self.operator](column, self.value)
        tag_match = and_(_TAGS.run_id == _RESULTS.run_id, _TAGS.key == self.key)
        if self.value is None:
            present = exists().where(tag_match)
            return ~present if self.operator == "=" else present
        matching = exists().where(and_(tag_match, _TAGS.value == str(self.value)))
        return matching if self.operator == "=" else ~matching


def query_results(engine: Engine, filters: list[Filter] | None = None, limit: int | None = None) -> list[dict]:
    """Results matching every filter, ordered by run and size, each with its run's fields and tags."""
    columns = [
        _RESULTS.run_id.label("run"), _RESULTS.benchmark, _RESULTS.size, _RESULTS.metric, _RESULTS.value,
        _RESULTS.unit, _RUNS.status, _RUNS.stack, _RUNS.approach, _RUNS.launcher, _RUNS.ranks, _RUNS.nodes,
        _RUNS.buffers, _RUNS.device, _RUNS.benchmark_suite.label("suite"), _RESULTS.validation,
        *[getattr(_RESULTS, name) for name in STAT_FIELDS],
    ]
    statement = select(*columns).join(Run.__table__, _RUNS.id == _RESULTS.run_id)
    for where in filters or []:
        statement = statement.where(where.clause())
    statement = statement.order_by(_RESULTS.run_id, _RESULTS.size, _RESULTS.id)
    if limit:
        statement = statement.limit(limit)
    with engine.connect() as connection:
        rows = [dict(row._mapping) for row in connection.execute(statement)]
        run_ids = sorted({row["run"] for row in rows})
        tags: dict[int, dict[str, str]] = {}
        for start in range(0, len(run_ids), 5000):  # stay under bound-parameter limits
            chunk = run_ids[start:start + 5000]
            for run_id, key, value in connection.execute(
                select(_TAGS.run_id, _TAGS.key, _TAGS.value).where(_TAGS.run_id.in_(chunk))
            ):
                tags.setdefault(run_id, {})[key] = value
    for row in rows:
        for name in STAT_FIELDS:
            if row[name] is None:
                del row[name]
        run_tags = tags.get(row["run"], {})
        for key, value in run_tags.items():
            row.setdefault(key, value)
        row["tags"] = run_tags
    return rows
