"""Writing parsed runs into the store with Core inserts (fast enough for thousands of files a second).

The caller owns the transaction: a file's runs are written together or not at all.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Iterable

from sqlalchemy import Connection, bindparam, delete, insert, select

from ..parsers.model import ParsedRun
from ..spec.provenance import Provenance
from ..spec.status import RunStatus
from .schema import RESULT_STAT_FIELDS, ResultRow, RunRow, RunTagRow, utcnow

# Provenance fields stored in a column of the same name; environment is JSON, the rest are scalars.
_PROVENANCE_COLUMNS = tuple(item.name for item in dataclasses.fields(Provenance))


def run_row(run: ParsedRun, *, source: str | None, campaign_id: int | None = None,
            provenance: Provenance | None = None, status: RunStatus | None = None,
            message: str | None = None) -> dict:
    """The runs-table row of a parsed run: what the output says, then what the caller knows."""
    facts = Provenance().update(run.provenance)
    if provenance is not None:
        facts.update(provenance)
    row = {
        "campaign_id": campaign_id,
        "benchmark": run.benchmark,
        "title": run.title,
        "status": (status or run.status).value,
        "incomplete": run.incomplete,
        "message": message or "\n".join(run.messages) or None,
        "benchmark_suite": run.suite,
        "source": f"{source}:{run.line}" if source and run.line else source,
        "created_at": utcnow(),
    }
    for name in _PROVENANCE_COLUMNS:
        row[name] = getattr(facts, name) or None
    return row


def result_rows(run: ParsedRun, run_id: int) -> list[dict]:
    """One results-table row per metric per message size; statistics go with the primary metric."""
    rows = []
    primary = run.primary_metric
    empty_stats = dict.fromkeys(RESULT_STAT_FIELDS)
    for parsed in run.rows:
        for metric, value in parsed.values.items():
            row = {
                **empty_stats,
                "run_id": run_id, "benchmark": run.benchmark, "size": parsed.size, "metric": metric,
                "value": value, "unit": run.units.get(metric, ""), "validation": parsed.validation,
            }
            if metric == primary:
                row.update(parsed.stats)
            rows.append(row)
    return rows


def write_runs(connection: Connection, runs: Iterable[ParsedRun], *, source: str | None = None,
               tags: dict[str, str] | None = None, campaign_id: int | None = None,
               provenance: Provenance | None = None, status: RunStatus | None = None,
               message: str | None = None) -> list[int]:
    """Insert runs with their tags and results; returns the new run ids. `provenance`, `status` and
    `message` are what the caller knows beyond the output (a campaign: what it launched, how it ended)."""
    tags = tags or {}
    # Every row is built before the first insert, so that a bad value never leaves part of a file behind.
    prepared = []
    for run in runs:
        run_tags = {**run.tags, **tags}
        prepared.append((run, run_tags, run_row(run, source=source, campaign_id=campaign_id,
                                                provenance=provenance, status=status, message=message)))
    run_ids = []
    results: list[dict] = []
    tag_rows: list[dict] = []
    run_insert = _driver_insert(connection, RunRow.__table__, returning=True)
    for run, run_tags, row in prepared:
        run_id = connection.exec_driver_sql(run_insert.sql, run_insert.bind(row)).scalar_one()
        run_ids.append(run_id)
        tag_rows.extend({"run_id": run_id, "key": key, "value": str(value)} for key, value in run_tags.items())
        results.extend(result_rows(run, run_id))
    # Straight to the driver's executemany: SQLAlchemy's per-statement and per-row processing cost more
    # than the inserts themselves (a typical file has 20-50 results).
    if tag_rows:
        connection.exec_driver_sql(_driver_insert(connection, RunTagRow.__table__).sql, tag_rows)
    if results:
        connection.exec_driver_sql(_driver_insert(connection, ResultRow.__table__).sql, results)
    return run_ids


@dataclass(frozen=True)
class _DriverInsert:
    """An INSERT compiled once per dialect, and the column types' own bind processors (JSON, dates)."""

    sql: str
    columns: tuple[str, ...]
    processors: dict[str, Callable]

    def bind(self, row: dict) -> dict:
        bound = dict.fromkeys(self.columns)
        bound.update(row)
        for name, process in self.processors.items():
            bound[name] = process(bound[name])
        return bound


_DRIVER_INSERTS: dict[tuple[str, str, bool], _DriverInsert] = {}


def _driver_insert(connection: Connection, table, returning: bool = False) -> _DriverInsert:
    """INSERT of every column but an autoincrement key, named parameters in the driver's style."""
    dialect = connection.dialect
    key = (dialect.name, table.name, returning)
    if key not in _DRIVER_INSERTS:
        columns = [column for column in table.columns
                   if not (column.primary_key and column.autoincrement is not False and len(table.primary_key) == 1)]
        statement = insert(table).values({column.name: bindparam(column.name) for column in columns})
        if returning:
            statement = statement.returning(*table.primary_key.columns)
        compiled = statement.compile(dialect=dialect)
        if compiled.positiontup:
            raise RuntimeError(f"{dialect.name}: driver uses positional parameters")
        processors = {column.name: process for column in columns
                      if (process := column.type._cached_bind_processor(dialect)) is not None}
        _DRIVER_INSERTS[key] = _DriverInsert(compiled.string, tuple(column.name for column in columns), processors)
    return _DRIVER_INSERTS[key]


def delete_runs_tagged(connection: Connection, key: str, value: str) -> None:
    """Remove every run carrying the tag key=value (with its results and tags): reloading a published
    reference replaces its earlier copy."""
    tagged = select(RunTagRow.run_id).where(RunTagRow.key == key, RunTagRow.value == value)
    connection.execute(delete(RunRow).where(RunRow.id.in_(tagged)))
