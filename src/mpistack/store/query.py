"""Reading results back: `--where key=value` filters over result fields, run fields and tags."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

from sqlalchemy import Engine, and_, exists, func, select

from .schema import RESULT_STAT_FIELDS, RunRow, RunTagRow, ResultRow

_RESULTS = ResultRow.__table__.c
_RUNS = RunRow.__table__.c
_TAGS = RunTagRow.__table__.c

_WHERE_RE = re.compile(r"^\s*([A-Za-z_][\w.-]*)\s*(!=|>=|<=|=|>|<)\s*(.*?)\s*$")
_OPERATORS = {
    "=": lambda column, value: column.is_(None) if value is None else column == value,
    "!=": lambda column, value: column.is_not(None) if value is None else column != value,
    ">": lambda column, value: column > value,
    ">=": lambda column, value: column >= value,
    "<": lambda column, value: column < value,
    "<=": lambda column, value: column <= value,
}
# Where keys that name a column; anything else is a tag.
_RESULT_KEYS = {"benchmark": _RESULTS.benchmark, "size": _RESULTS.size, "metric": _RESULTS.metric,
                "value": _RESULTS.value, "unit": _RESULTS.unit, "validation": _RESULTS.validation,
                "iterations": _RESULTS.iterations, "run": _RESULTS.run_id}
_RUN_KEYS = {"status": _RUNS.status, "stack": _RUNS.stack, "approach": _RUNS.approach, "launcher": _RUNS.launcher,
             "ranks": _RUNS.ranks, "nodes": _RUNS.nodes, "device": _RUNS.device, "buffers": _RUNS.buffers,
             "suite": _RUNS.benchmark_suite, "campaign": _RUNS.campaign_id, "incomplete": _RUNS.incomplete,
             "libfabric_provider": _RUNS.libfabric_provider, "image_digest": _RUNS.image_digest,
             "benchmark": _RUNS.benchmark, "run": _RUNS.id}  # the last two: when runs are selected on their own
_NUMERIC_KEYS = {"size", "value", "iterations", "run", "ranks", "nodes", "campaign"}

# Fields of every output row, in order; tags follow.
OUTPUT_FIELDS = ("run", "benchmark", "size", "metric", "value", "unit", "status", "stack", "approach", "launcher",
                 "ranks", "nodes", "buffers", "device", "suite", "validation")
STAT_FIELDS = tuple(field for field in RESULT_STAT_FIELDS if field != "validation")


class WhereError(ValueError):
    pass


@dataclass(frozen=True)
class Where:
    key: str
    operator: str
    value: str | float | int | None

    @classmethod
    def parse(cls, text: str) -> "Where":
        match = _WHERE_RE.match(text)
        if not match:
            raise WhereError(f"--where {text!r}: expected KEY=VALUE (or !=, <, <=, >, >=), e.g. benchmark=bw")
        key, operator, raw = match.groups()
        value: str | float | int | None = raw
        if raw.lower() in {"null", "none"}:
            value = None
        elif key in _NUMERIC_KEYS:
            try:
                value = int(raw) if re.fullmatch(r"[-+]?\d+", raw) else float(raw)
            except ValueError:
                raise WhereError(f"--where {text!r}: {key} takes a number") from None
        elif key == "incomplete":
            value = raw.lower() in {"1", "true", "yes"}
        if operator not in {"=", "!="} and (value is None or key not in _NUMERIC_KEYS):
            raise WhereError(f"--where {text!r}: {operator} needs a numeric field ({', '.join(sorted(_NUMERIC_KEYS))})")
        return cls(key, operator, value)

    def clause(self, run_id=_RESULTS.run_id, result_keys: bool = True):
        """The SQL condition; `run_id` is the column that names the run (results' or runs' own)."""
        column = _RESULT_KEYS.get(self.key) if result_keys else None
        column = column if column is not None else _RUN_KEYS.get(self.key)
        if column is not None:
            return _OPERATORS[self.operator](column, self.value)
        tag_match = and_(_TAGS.run_id == run_id, _TAGS.key == self.key)
        if self.value is None:
            present = exists().where(tag_match)
            return ~present if self.operator == "=" else present
        matching = exists().where(and_(tag_match, _TAGS.value == str(self.value)))
        return matching if self.operator == "=" else ~matching


def _run_columns(fields: Iterable[str]) -> list:
    """The runs-table columns of these fields, in order, each under the field's name: a --where key's column
    (run, campaign and suite name theirs otherwise), else the column of that name."""
    return [(_RUN_KEYS[name] if name in _RUN_KEYS else getattr(_RUNS, name)).label(name) for name in fields]


def id_chunks(ids: Iterable[int], size: int = 5000) -> Iterator[list[int]]:
    """Distinct ids in sorted chunks, for IN lists that stay under the databases' bound-parameter limits."""
    ordered = sorted(set(ids))
    for start in range(0, len(ordered), size):
        yield ordered[start:start + size]


# Fields of each run `query_runs` returns (tags follow).
RUN_FIELDS = ("run", "campaign", "benchmark", "status", "stack", "approach", "launcher", "ranks", "nodes", "buffers",
              "message", "started_at", "transport")


def query_runs(engine: Engine, filters: list[Where] | None = None, limit: int | None = None) -> list[dict]:
    """Runs matching every filter (run fields and tags), in the order they were recorded, with their tags."""
    statement = select(*_run_columns(RUN_FIELDS))
    for where in filters or []:
        statement = statement.where(where.clause(run_id=_RUNS.id, result_keys=False))
    rows, tags = _fetch(engine, statement.order_by(_RUNS.id), limit)
    for row in rows:
        row["tags"] = tags.get(row["run"], {})
    return rows


def _fetch(engine: Engine, statement, limit: int | None) -> tuple[list[dict], dict[int, dict[str, str]]]:
    """The rows of `statement` (each with a `run` column) and the tags of their runs."""
    if limit:
        statement = statement.limit(limit)
    with engine.connect() as connection:
        rows = [dict(row._mapping) for row in connection.execute(statement)]
        return rows, _tags_of(connection, [row["run"] for row in rows])


def _tags_of(connection, run_ids: list[int]) -> dict[int, dict[str, str]]:
    tags: dict[int, dict[str, str]] = {}
    for chunk in id_chunks(run_ids):
        for run_id, key, value in connection.execute(
            select(_TAGS.run_id, _TAGS.key, _TAGS.value).where(_TAGS.run_id.in_(chunk))
        ):
            tags.setdefault(run_id, {})[key] = value
    return tags


def count_matching(engine: Engine, filters: list[Where] | None = None, runs: bool = False) -> int:
    """How many results (with `runs`: runs) match every filter: the whole of which a --limit listing is a part."""
    if runs:
        statement = select(func.count()).select_from(RunRow.__table__)
        clauses = [where.clause(run_id=_RUNS.id, result_keys=False) for where in filters or []]
    else:
        statement = select(func.count()).select_from(
            ResultRow.__table__.join(RunRow.__table__, _RUNS.id == _RESULTS.run_id))
        clauses = [where.clause() for where in filters or []]
    with engine.connect() as connection:
        return connection.execute(statement.where(*clauses)).scalar_one()


def query_results(engine: Engine, filters: list[Where] | None = None, limit: int | None = None) -> list[dict]:
    """Results matching every filter, ordered by run and size, each with its run's fields and tags."""
    columns = [
        _RESULTS.run_id.label("run"), _RESULTS.benchmark, _RESULTS.size, _RESULTS.metric, _RESULTS.value,
        _RESULTS.unit, _RUNS.status, _RUNS.stack, _RUNS.approach, _RUNS.launcher, _RUNS.ranks, _RUNS.nodes,
        _RUNS.buffers, _RUNS.device, _RUNS.benchmark_suite.label("suite"), _RESULTS.validation,
        _RUNS.mpi_library_version, _RUNS.transport,
        *[getattr(_RESULTS, name) for name in STAT_FIELDS],
    ]
    statement = select(*columns).join(RunRow.__table__, _RUNS.id == _RESULTS.run_id)
    for where in filters or []:
        statement = statement.where(where.clause())
    rows, tags = _fetch(engine, statement.order_by(_RESULTS.run_id, _RESULTS.size, _RESULTS.id), limit)
    for row in rows:
        for name in STAT_FIELDS:
            if row[name] is None:
                del row[name]
        run_tags = tags.get(row["run"], {})
        for key, value in run_tags.items():
            row.setdefault(key, value)
        row["tags"] = run_tags
    return rows


# Run fields the analysis reads of each launch, beside the run's tags.
EVIDENCE_RUN_FIELDS = ("run", "campaign", "benchmark", "status", "stack", "approach", "ranks", "nodes", "buffers",
                       "message", "mpi_library_version")


@contextlib.contextmanager
def launch_evidence(engine: Engine, filters: list[Where] | None = None,
                    tags: Sequence[str] | None = None) -> Iterator[tuple[dict[int, dict], Iterable[tuple]]]:
    """What the analysis reads, lean enough for millions of results: the matching runs (with their tags, failed
    and skipped runs included) by id, and their results as ``(run, size, metric, figure)`` tuples, where the
    figure is the run's median over iterations when the benchmark reported one, else its value; only positive
    figures (a missing or non-positive one is no evidence). ``tags``: the tag keys to read (default: all).

    A context manager: the results are read from the database as they are iterated, within the block, so that a
    million of them are never all in memory at once."""
    conditions = []
    for where in filters or []:
        if where.key in _RESULT_KEYS and where.key not in _RUN_KEYS:
            raise WhereError(f"--where {where.key}: the analysis selects runs; filter on a run field or a tag")
        conditions.append(where.clause(run_id=_RUNS.id, result_keys=False))
    figure = func.coalesce(_RESULTS.median, _RESULTS.value)
    with engine.connect() as connection:
        # the driver's plain tuples, not a Row object each; joins on the same conditions, not IN lists of ids
        by_id = {}
        runs = connection.execute(select(*_run_columns(EVIDENCE_RUN_FIELDS)).where(*conditions).order_by(_RUNS.id))
        for values in runs.cursor.fetchall():
            run = dict(zip(EVIDENCE_RUN_FIELDS, values))
            run["tags"] = {}
            by_id[values[0]] = run
        shown = RunTagRow.__table__.alias("shown")  # tag filters correlate with run_tags itself
        tag_conditions = [] if tags is None else [shown.c.key.in_(tags)]
        for run_id, key, value in connection.execute(
            select(shown.c.run_id, shown.c.key, shown.c.value).join(RunRow.__table__, _RUNS.id == shown.c.run_id)
            .where(*conditions, *tag_conditions)
        ).cursor.fetchall():
            by_id[run_id]["tags"][key] = value
        yield by_id, connection.execute(
            select(_RESULTS.run_id, _RESULTS.size, _RESULTS.metric, figure)
            .join(RunRow.__table__, _RUNS.id == _RESULTS.run_id).where(*conditions, figure > 0)
        ).cursor


# Run columns a report shows as a run's provenance.
PROVENANCE_FIELDS = ("run", "stack", "approach", "launcher", "command", "environment", "benchmark_suite",
                     "mpi_library_version", "libfabric_version", "libfabric_provider", "image_digest", "hosts",
                     "tool_version", "started_at", "transport")


def run_provenance(engine: Engine, run_ids: list[int]) -> dict[int, dict]:
    """Provenance of the given runs (command, environment, MPI library version, image digest, hosts, ...) by id,
    read in one query per 5000 ids."""
    columns = _run_columns(PROVENANCE_FIELDS)
    out: dict[int, dict] = {}
    with engine.connect() as connection:
        for chunk in id_chunks(run_ids):
            for row in connection.execute(select(*columns).where(_RUNS.id.in_(chunk))):
                out[row.run] = dict(row._mapping)
    return out


# Fields of a run's full record, as `run_record` returns them (tags and result counts follow).
RUN_RECORD_FIELDS = ("run", "campaign", "campaign_name", "benchmark", "title", "status", "incomplete", "message",
                     "stack", "approach", "launcher", "ranks", "nodes", "buffers", "device", "command",
                     "environment", "benchmark_suite", "mpi_library_version", "libfabric_version",
                     "libfabric_provider", "image_digest", "hosts", "tool_version", "source", "started_at",
                     "finished_at", "created_at", "transport")


def run_record(engine: Engine, run_id: int) -> dict | None:
    """Everything stored about one run: its columns, its campaign's name, its tags, and how many results it has
    with their smallest and largest message size; None when there is no run of that id."""
    from .schema import CampaignRow

    campaigns = CampaignRow.__table__.c
    columns = [*_run_columns(RUN_RECORD_FIELDS[:2]), campaigns.name.label("campaign_name"),
               *_run_columns(RUN_RECORD_FIELDS[3:])]
    with engine.connect() as connection:
        row = connection.execute(
            select(*columns).outerjoin(CampaignRow.__table__, campaigns.id == _RUNS.campaign_id)
            .where(_RUNS.id == run_id)
        ).first()
        if row is None:
            return None
        record = dict(row._mapping)
        record["tags"] = _tags_of(connection, [run_id]).get(run_id, {})
        count, smallest, largest = connection.execute(
            select(func.count(_RESULTS.id), func.min(_RESULTS.size), func.max(_RESULTS.size))
            .where(_RESULTS.run_id == run_id)
        ).one()
    record.update(results=count, min_size=smallest, max_size=largest)
    return record


def unknown_where_key(engine: Engine, filters: list[Where]) -> str | None:
    """Why a filter can match nothing because its key is neither a field nor a tag of any stored run (a typo
    would otherwise give 0 rows silently); None when every key is known."""
    keys = {where.key for where in filters} - _RESULT_KEYS.keys() - _RUN_KEYS.keys()
    if not keys:
        return None
    with engine.connect() as connection:
        tags = {key for (key,) in connection.execute(select(_TAGS.key).distinct())}
    missing = sorted(keys - tags)
    if not missing:
        return None
    fields = ", ".join(sorted({*_RESULT_KEYS, *_RUN_KEYS}))
    known_tags = ", ".join(sorted(tags)) or "none"
    return (f"--where {missing[0]}: no such field, and no stored run has that tag; fields: {fields}; "
            f"tags in this store: {known_tags}")


# Run fields the doctor reads of each run (its tags and failed sizes follow).
DIAGNOSTIC_FIELDS = ("run", "campaign", "benchmark", "status", "message", "stack", "approach", "launcher", "ranks",
                     "nodes", "buffers", "command", "environment", "transport", "mpi_library_version",
                     "libfabric_provider")


def run_diagnostics(engine: Engine, filters: list[Where] | None = None) -> list[dict]:
    """What the doctor reads of each matching run: status, message, command, environment, the transport its MPI
    reported, with its tags and the sizes whose validation failed (``failed_sizes``)."""
    statement = select(*_run_columns(DIAGNOSTIC_FIELDS))
    for where in filters or []:
        statement = statement.where(where.clause(run_id=_RUNS.id, result_keys=False))
    rows, tags = _fetch(engine, statement.order_by(_RUNS.id), None)
    failed: dict[int, list] = {}
    with engine.connect() as connection:
        for chunk in id_chunks(row["run"] for row in rows):
            for run_id, size in connection.execute(
                select(_RESULTS.run_id, _RESULTS.size).where(_RESULTS.run_id.in_(chunk), _RESULTS.validation == "fail")
            ):
                failed.setdefault(run_id, []).append(size)
    for row in rows:
        row["tags"] = tags.get(row["run"], {})
        row["failed_sizes"] = sorted(set(failed.get(row["run"], [])), key=lambda size: size or 0)
    return rows
