"""Writing parsed runs into the store with Core inserts (fast enough for thousands of files a second).

The caller owns the transaction: a file's runs are written together or not at all. Results go to the
database in batches, so that a run of millions of rows is never held as rows of Python dicts at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from sqlalchemy import Connection, bindparam, delete, insert, select, text

from ..parsers.model import INTEGER_STATS, NO_SIZE, VALIDATION_NAMES, ParsedRun
from ..spec.provenance import Provenance
from ..spec.status import RunStatus
from .query import RESULT_STAT_FIELDS, id_chunks
from .schema import ResultRow, RunRow, RunTagRow, utcnow

# Provenance fields stored in a column of the same name; environment is JSON, the rest are scalars.
_PROVENANCE_COLUMNS = tuple(item.name for item in dataclasses.fields(Provenance))
RESULT_BATCH = 20_000  # results per executemany: large enough to cost nothing, small enough for any table
# PostgreSQL advisory lock class of "this content is being ingested" (the migration lock is a single 64-bit key,
# a separate key space)
_CONTENT_LOCK_CLASS = 0x6D70_6973


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


def result_batches(run: ParsedRun, run_id: int) -> Iterator[list[dict]]:
    """The results-table rows of a run (one per metric per message size; statistics go with the primary
    metric), RESULT_BATCH at a time, read straight from its row table's columns."""
    rows: list[dict] = []
    primary = run.primary_metric
    sizes, validations, metrics, stats = run.rows.columns()
    # one template per metric, copied per row: cheaper than building each row's twenty keys
    templates = {metric: {**dict.fromkeys(RESULT_STAT_FIELDS), "run_id": run_id, "benchmark": run.benchmark,
                          "metric": metric, "unit": run.units.get(metric, "")} for metric in metrics}
    columns = list(metrics.items())
    for index, size in enumerate(sizes):
        size = None if size == NO_SIZE else size
        validation = VALIDATION_NAMES[validations[index]]
        for metric, values in columns:
            value = values[index]
            if value != value:  # NaN: no figure of this metric in this row
                continue
            row = templates[metric].copy()
            row["size"] = size
            row["value"] = value
            row["validation"] = validation
            if metric == primary:
                for name, column in stats.items():
                    figure = column[index]
                    if figure == figure:
                        row[name] = int(figure) if name in INTEGER_STATS else figure
            rows.append(row)
        if len(rows) >= RESULT_BATCH:
            yield rows
            rows = []
    if rows:
        yield rows


def write_runs(connection: Connection, runs: Iterable[ParsedRun], *, source: str | None = None,
               tags: dict[str, str] | None = None, campaign_id: int | None = None,
               provenance: Provenance | None = None, status: RunStatus | None = None,
               message: str | None = None, content_sha256: str | None = None) -> list[int]:
    """Insert runs with their tags and results; returns the new run ids. `provenance`, `status` and
    `message` are what the caller knows beyond the output (a campaign: what it launched, how it ended);
    `content_sha256`: the hash of the file the runs were read from (see `stored_content`)."""
    tags = tags or {}
    # Every run row is built before the first insert, so that a bad value never leaves part of a file behind.
    prepared = []
    for run in runs:
        run_tags = {**run.tags, **tags}
        row = run_row(run, source=source, campaign_id=campaign_id, provenance=provenance, status=status,
                      message=message)
        row["content_sha256"] = content_sha256
        prepared.append((run, run_tags, row))
    run_ids = []
    tag_rows: list[dict] = []
    run_insert = _driver_insert(connection, RunRow.__table__, returning=True)
    for run, run_tags, row in prepared:
        run_ids.append(connection.exec_driver_sql(run_insert.sql, run_insert.bind(row)).scalar_one())
        tag_rows.extend({"run_id": run_ids[-1], "key": key, "value": str(value)} for key, value in run_tags.items())
    # Straight to the driver's executemany: SQLAlchemy's per-statement and per-row processing cost more
    # than the inserts themselves (a typical file has 20-50 results).
    if tag_rows:
        connection.exec_driver_sql(_driver_insert(connection, RunTagRow.__table__).sql, tag_rows)
    result_insert = _driver_insert(connection, ResultRow.__table__).sql
    for (run, _tags, _row), run_id in zip(prepared, run_ids):
        for batch in result_batches(run, run_id):
            connection.exec_driver_sql(result_insert, batch)
    return run_ids


def stored_content(connection: Connection, content_sha256: str, lock: bool = True) -> list[int]:
    """The ids of the runs already stored from a file of this content (sha256), in order. On PostgreSQL it first
    takes a lock on the content until the transaction ends, so that two ingests of one file at once store it
    once (SQLite: the caller's transaction holds the write lock already, see ingest). `lock=False`: a look
    without the lock, for a guess made outside the writing transaction (which may hold that very lock)."""
    if lock and connection.dialect.name == "postgresql":
        key = int(content_sha256[:8], 16) - 2**31  # a signed 32-bit key from the hash
        connection.execute(text("SELECT pg_advisory_xact_lock(:kind, :key)"),
                           {"kind": _CONTENT_LOCK_CLASS, "key": key})
    cursor = connection.connection.cursor()  # the driver's own: one small query per file
    try:
        cursor.execute(_content_lookup(connection), {"digest": content_sha256})
        return [run_id for (run_id,) in cursor.fetchall()]
    finally:
        cursor.close()


_CONTENT_LOOKUPS: dict[str, str] = {}


def _content_lookup(connection: Connection) -> str:
    """The lookup by content hash, compiled once per dialect: compiling it for each file costs more than the
    lookup itself (ingest does one per file)."""
    name = connection.dialect.name
    if name not in _CONTENT_LOOKUPS:
        runs = RunRow.__table__.c
        statement = select(runs.id).where(runs.content_sha256 == bindparam("digest")).order_by(runs.id)
        _CONTENT_LOOKUPS[name] = statement.compile(dialect=connection.dialect).string
    return _CONTENT_LOOKUPS[name]


@contextlib.contextmanager
def savepoint(connection: Connection) -> Iterator[None]:
    """A savepoint in the caller's transaction, in the driver's SQL: what runs inside is undone if it raises.
    (SQLAlchemy's nested transactions cost more than writing a small file.)"""
    connection.exec_driver_sql("SAVEPOINT mpistack_unit")  # (also begins the transaction if none has)
    cursor = connection.connection.cursor()
    try:
        yield
    except BaseException:
        cursor.execute("ROLLBACK TO SAVEPOINT mpistack_unit")
        cursor.execute("RELEASE SAVEPOINT mpistack_unit")
        raise
    else:
        cursor.execute("RELEASE SAVEPOINT mpistack_unit")
    finally:
        cursor.close()


def delete_runs(connection: Connection, run_ids: Iterable[int]) -> int:
    """Remove runs by id, with their results and tags (the schema's ON DELETE CASCADE: every store connection
    has foreign keys on); returns how many were removed."""
    runs = RunRow.__table__
    return sum(connection.execute(delete(runs).where(runs.c.id.in_(chunk))).rowcount
               for chunk in id_chunks(run_ids))


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


def runs_tagged(connection: Connection, key: str, value: str) -> list[int]:
    """The ids of the runs carrying the tag key=value, in order (a published reference's earlier copy)."""
    return sorted(connection.scalars(select(RunTagRow.run_id).where(RunTagRow.key == key, RunTagRow.value == value)))
