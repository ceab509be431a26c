"""Writing parsed runs into the store with Core inserts (fast enough for thousands of files a second).

The caller owns the transaction: a file's runs are written together or not at all.
"""

from __future__ import annotations

from datetime import datetime
from typing import Iterable

from sqlalchemy import Connection, bindparam, insert

from ..parsers.model import ParsedRun
from .schema import RESULT_STAT_FIELDS, Result, Run, RunTag, utcnow

# Tags that are also columns of a run: given as --tag they fill the column (and stay a tag too).
RUN_COLUMN_TAGS = {
    "stack", "approach", "launcher", "ranks", "nodes", "device", "buffers", "image_digest",
    "mpi_library_version", "libfabric_version", "libfabric_provider", "tool_version", "benchmark_suite",
}
_INTEGER_COLUMNS = {"ranks", "nodes"}
_TIME_COLUMNS = {"started_at", "finished_at"}


def _column_value(key: str, value):
    if value is None:
        return None
    if key in _INTEGER_COLUMNS:
        try:
            return int(value)
        except (TypeError, ValueError):
            raise ValueError(f"tag {key}={value!r}: expected a whole number") from None
    if key in _TIME_COLUMNS and isinstance(value, str):
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value


def run_row(run: ParsedRun, *, source: str | None, tags: dict[str, str], campaign_id: int | None = None,
            extra: dict | None = None) -> dict:
    """The runs-table row for a parsed run: parsed provenance, then tags, then explicit extra fields."""
    row = {
        "campaign_id": campaign_id,
        "benchmark": run.benchmark,
        "title": run.title,
        "status": run.status,
        "incomplete": run.incomplete,
        "message": "\n".join(run.messages) or None,
        "command": run.command,
        "environment": run.environment or None,
        "benchmark_suite": run.suite,
        "device": run.device,
        "buffers": run.buffers,
        "source": f"{source}:{run.line}" if source and run.line else source,
        "created_at": utcnow(),
    }
    for key, value in run.provenance.items():
        if key in Run.__table__.columns:
            row[key] = _column_value(key, value)
    for key, value in tags.items():
        if key in RUN_COLUMN_TAGS:
            row[key] = _column_value(key, value)
    for key, value in (extra or {}).items():
        row[key] = _column_value(key, value)
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
               extra: dict | None = None) -> list[int]:
    """Insert runs with their tags and results; returns the new run ids."""
    tags = tags or {}
    runs = list(runs)
    # Every row is built (and every tag checked) before the first insert, so that a bad value never
    # leaves part of a file behind.
    prepared = []
    for run in runs:
        run_tags = {**run.tags, **tags}
        prepared.append((run, run_tags, run_row(run, source=source, tags=run_tags, campaign_id=campaign_id,
                                                extra=extra)))
    run_ids = []
    results: list[dict] = []
    tag_rows: list[dict] = []
    for run, run_tags, row in prepared:
        run_id = connection.execute(insert(Run.__table__).returning(Run.__table__.c.id), row).scalar_one()
        run_ids.append(run_id)
        tag_rows.extend({"run_id": run_id, "key": key, "value": str(value)} for key, value in run_tags.items())
        results.extend(result_rows(run, run_id))
    if tag_rows:
        connection.exec_driver_sql(_insert_sql(connection, RunTag.__table__), tag_rows)
    if results:
        # Straight to the driver's executemany: SQLAlchemy's per-row parameter processing cost more
        # than the insert itself (a typical file has 20-50 results).
        connection.exec_driver_sql(_insert_sql(connection, Result.__table__), results)
    return run_ids


_INSERT_SQL: dict[tuple[str, str], str] = {}


def _insert_sql(connection: Connection, table) -> str:
    """INSERT for every column but an autoincrement key, with named parameters in the driver's style."""
    key = (connection.dialect.name, table.name)
    if key not in _INSERT_SQL:
        columns = {column.name: bindparam(column.name) for column in table.columns
                   if not (column.primary_key and column.autoincrement is not False and len(table.primary_key) == 1)}
        compiled = insert(table).values(columns).compile(dialect=connection.dialect)
        if compiled.positiontup:
            raise RuntimeError(f"{connection.dialect.name}: driver uses positional parameters")
        _INSERT_SQL[key] = compiled.string
    return _INSERT_SQL[key]
