"""Reading results back: `--where key=value` filters over result fields, run fields and tags.

Plain SQL in the subset SQLite and PostgreSQL share, run through store/reading.py: a SQLite store is read with
Python's own sqlite3 module (the listing verbs start without SQLAlchemy), any other through SQLAlchemy. Every
function takes either a reader from `open_reader` or an SQLAlchemy Engine."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

from .reading import decoded, read_session

_WHERE_RE = re.compile(r"^\s*([A-Za-z_][\w.-]*)\s*(!=|>=|<=|=|>|<)\s*(.*?)\s*$")
# Where keys that name a column; anything else is a tag.
_RESULT_KEYS = {"benchmark": "results.benchmark", "size": "results.size", "metric": "results.metric",
                "value": "results.value", "unit": "results.unit", "validation": "results.validation",
                "iterations": "results.iterations", "run": "results.run_id"}
_RUN_KEYS = {"status": "runs.status", "stack": "runs.stack", "approach": "runs.approach",
             "launcher": "runs.launcher", "ranks": "runs.ranks", "nodes": "runs.nodes", "device": "runs.device",
             "buffers": "runs.buffers", "suite": "runs.benchmark_suite", "campaign": "runs.campaign_id",
             "incomplete": "runs.incomplete", "libfabric_provider": "runs.libfabric_provider",
             "image_digest": "runs.image_digest",
             "benchmark": "runs.benchmark", "run": "runs.id"}  # the last two: when runs are selected on their own
_NUMERIC_KEYS = {"size", "value", "iterations", "run", "ranks", "nodes", "campaign"}
# The newest campaign of a name: what `--where campaign=NAME` means, as `mpistack report NAME` does.
_CAMPAIGN_BY_NAME = "(SELECT max(campaigns.id) FROM campaigns WHERE campaigns.name = {})"

# Fields of every output row, in order; tags follow.
OUTPUT_FIELDS = ("run", "benchmark", "size", "metric", "value", "unit", "status", "stack", "approach", "launcher",
                 "ranks", "nodes", "buffers", "device", "suite", "validation")
# Columns of a result (schema.ResultRow) that a parser may fill besides benchmark/size/metric/value/unit.
RESULT_STAT_FIELDS = ("min", "max", "mean", "median", "p50", "p90", "p99", "stddev", "ci95_low", "ci95_high",
                      "iterations", "validation")
STAT_FIELDS = tuple(field for field in RESULT_STAT_FIELDS if field != "validation")


class WhereError(ValueError):
    pass


class _Parameters(dict):
    """The bound values of one statement, each under a fresh `:pN` name."""

    def bind(self, value) -> str:
        name = f"p{len(self)}"
        self[name] = value
        return f":{name}"

    def bind_list(self, values: Iterable) -> str:
        return ", ".join(self.bind(value) for value in values)


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
        elif key == "campaign" and not re.fullmatch(r"[-+]?\d+", raw):
            value = raw  # a campaign's name
        elif key in _NUMERIC_KEYS:
            try:
                value = int(raw) if re.fullmatch(r"[-+]?\d+", raw) else float(raw)
            except ValueError:
                raise WhereError(f"--where {text!r}: {key} takes a number") from None
        elif key == "incomplete":
            value = raw.lower() in {"1", "true", "yes"}
        if operator not in {"=", "!="} and (not isinstance(value, (int, float)) or key not in _NUMERIC_KEYS):
            raise WhereError(f"--where {text!r}: {operator} needs a numeric field ({', '.join(sorted(_NUMERIC_KEYS))})")
        return cls(key, operator, value)

    def clause(self, parameters: _Parameters, run_id: str = "results.run_id", result_keys: bool = True) -> str:
        """The SQL condition, its values bound in `parameters`; `run_id` is the column that names the run
        (results' or runs' own)."""
        column = _RESULT_KEYS.get(self.key) if result_keys else None
        column = column or _RUN_KEYS.get(self.key)
        if column is not None:
            if self.value is None:
                return f"{column} IS {'NOT ' if self.operator == '!=' else ''}NULL"
            if self.key == "campaign" and isinstance(self.value, str):
                return f"{column} {self.operator} {_CAMPAIGN_BY_NAME.format(parameters.bind(self.value))}"
            return f"{column} {self.operator} {parameters.bind(self.value)}"
        tag_match = f"tag.run_id = {run_id} AND tag.key = {parameters.bind(self.key)}"
        if self.value is None:
            present = f"EXISTS (SELECT 1 FROM run_tags AS tag WHERE {tag_match})"
            return f"NOT {present}" if self.operator == "=" else present
        matching = f"EXISTS (SELECT 1 FROM run_tags AS tag WHERE {tag_match} AND tag.value = {parameters.bind(str(self.value))})"
        return matching if self.operator == "=" else f"NOT {matching}"


def _where(filters: Sequence[Where] | None, parameters: _Parameters, runs_only: bool = False,
           extra: Sequence[str] = ()) -> str:
    """`WHERE ...` for every filter (and the `extra` conditions); empty when there are none. `runs_only`: the
    statement selects from runs alone, so every key must be a run field or a tag (WhereError otherwise: a result
    field would be taken for a tag and match nothing, or everything)."""
    if runs_only and (problem := _result_field_problem(filters)):
        raise WhereError(problem)
    clauses = [where.clause(parameters, run_id="runs.id", result_keys=False) if runs_only else where.clause(parameters)
               for where in filters or []]
    clauses += extra
    return f" WHERE {' AND '.join(f'({clause})' for clause in clauses)}" if clauses else ""


def _result_field_problem(filters: Sequence[Where] | None) -> str | None:
    """Why filters on runs alone cannot take a result field (None when none of them is one)."""
    for where in filters or []:
        if where.key in _RESULT_KEYS and where.key not in _RUN_KEYS:
            return (f"--where {where.key}: a field of results, not of runs (filter results with `mpistack results`; "
                    "runs on a run field or a tag)")
    return None


# The runs-table column of each field that is not named after its column.
_RUN_FIELD_COLUMNS = {"run": "id", "campaign": "campaign_id", "suite": "benchmark_suite"}


def _run_columns(fields: Iterable[str], table: str = "runs") -> str:
    """The select list of these run fields, in order."""
    return ", ".join(f"{table}.{_RUN_FIELD_COLUMNS.get(name, name)}" for name in fields)


def _records(fields: Sequence[str], rows: Iterable[tuple]) -> list[dict]:
    """Rows as dicts of these fields, each value as the schema types it."""
    return [{field: decoded(field, value) for field, value in zip(fields, row)} for row in rows]


def id_chunks(ids: Iterable[int], size: int = 5000) -> Iterator[list[int]]:
    """Distinct ids in sorted chunks, for IN lists that stay under the databases' bound-parameter limits."""
    ordered = sorted(set(ids))
    for start in range(0, len(ordered), size):
        yield ordered[start:start + size]


def _tags_of(session, run_ids: Iterable[int]) -> dict[int, dict[str, str]]:
    tags: dict[int, dict[str, str]] = {}
    for chunk in id_chunks(run_ids):
        parameters = _Parameters()
        for run_id, key, value in session.rows(
                f"SELECT run_id, key, value FROM run_tags WHERE run_id IN ({parameters.bind_list(chunk)})",
                parameters):
            tags.setdefault(run_id, {})[key] = value
    return tags


def _with_tags(store, fields: Sequence[str], sql: str, parameters: _Parameters, limit: int | None) -> list[dict]:
    """The rows of `sql` (whose first field is the run) as dicts, each with its run's `tags`."""
    if limit:
        sql += f" LIMIT {int(limit)}"
    with read_session(store) as session:
        rows = _records(fields, session.rows(sql, parameters))
        tags = _tags_of(session, [row["run"] for row in rows])
    for row in rows:
        row["tags"] = tags.get(row["run"], {})
    return rows


# Fields of each run `query_runs` returns (tags follow).
RUN_FIELDS = ("run", "campaign", "benchmark", "status", "stack", "approach", "launcher", "ranks", "nodes", "buffers",
              "message", "started_at", "transport")


def query_runs(store, filters: list[Where] | None = None, limit: int | None = None) -> list[dict]:
    """Runs matching every filter (run fields and tags), in the order they were recorded, with their tags."""
    parameters = _Parameters()
    sql = f"SELECT {_run_columns(RUN_FIELDS)} FROM runs{_where(filters, parameters, runs_only=True)} ORDER BY runs.id"
    return _with_tags(store, RUN_FIELDS, sql, parameters, limit)


def count_matching(store, filters: list[Where] | None = None, runs: bool = False) -> int:
    """How many results (with `runs`: runs) match every filter: the whole of which a --limit listing is a part."""
    parameters = _Parameters()
    if runs:
        sql = f"SELECT count(*) FROM runs{_where(filters, parameters, runs_only=True)}"
    else:
        sql = f"SELECT count(*) FROM results JOIN runs ON runs.id = results.run_id{_where(filters, parameters)}"
    with read_session(store) as session:
        return session.rows(sql, parameters)[0][0]


# Fields `query_results` reads of each result: its own, then its run's, then its statistics.
_RESULT_FIELDS = ("run", "benchmark", "size", "metric", "value", "unit")
_RESULT_RUN_FIELDS = ("status", "stack", "approach", "launcher", "ranks", "nodes", "buffers", "device", "suite")
_RESULT_QUERY_FIELDS = (*_RESULT_FIELDS, *_RESULT_RUN_FIELDS, "validation", "mpi_library_version", "transport",
                        *STAT_FIELDS)


def query_results(store, filters: list[Where] | None = None, limit: int | None = None) -> list[dict]:
    """Results matching every filter, ordered by run and size, each with its run's fields and tags."""
    parameters = _Parameters()
    columns = ", ".join([
        "results.run_id", *(f"results.{name}" for name in _RESULT_FIELDS[1:]), _run_columns(_RESULT_RUN_FIELDS),
        "results.validation", _run_columns(("mpi_library_version", "transport")),
        *(f"results.{name}" for name in STAT_FIELDS)])
    sql = (f"SELECT {columns} FROM results JOIN runs ON runs.id = results.run_id{_where(filters, parameters)} "
           "ORDER BY results.run_id, results.size, results.id")
    rows = _with_tags(store, _RESULT_QUERY_FIELDS, sql, parameters, limit)
    for row in rows:
        for name in STAT_FIELDS:
            if row[name] is None:
                del row[name]
        for key, value in row["tags"].items():
            row.setdefault(key, value)
    return rows


# Run fields the analysis reads of each launch, beside the run's tags.
EVIDENCE_RUN_FIELDS = ("run", "campaign", "benchmark", "status", "stack", "approach", "ranks", "nodes", "buffers",
                       "message", "mpi_library_version")


@contextlib.contextmanager
def launch_evidence(store, filters: list[Where] | None = None,
                    tags: Sequence[str] | None = None) -> Iterator[tuple[dict[int, dict], Iterable[tuple]]]:
    """What the analysis reads, lean enough for millions of results: the matching runs (with their tags, failed
    and skipped runs included) by id, and their results as ``(run, size, metric, figure)`` tuples, where the
    figure is the run's median over iterations when the benchmark reported one, else its value; only positive
    figures (a missing or non-positive one is no evidence). ``tags``: the tag keys to read (default: all).

    A context manager: the results are read from the database as they are iterated, within the block, so that a
    million of them are never all in memory at once."""
    parameters = _Parameters()
    conditions = _where(filters, parameters, runs_only=True)
    figure = "coalesce(results.median, results.value)"
    with read_session(store) as session:
        # joins on the same conditions, not IN lists of ids
        by_id = {}
        for run in _records(EVIDENCE_RUN_FIELDS, session.rows(
                f"SELECT {_run_columns(EVIDENCE_RUN_FIELDS)} FROM runs{conditions} ORDER BY runs.id", parameters)):
            run["tags"] = {}
            by_id[run["run"]] = run
        tag_parameters = _Parameters(parameters)
        shown = "" if tags is None else f" AND shown.key IN ({tag_parameters.bind_list(tags)})"
        for run_id, key, value in session.rows(
                f"SELECT shown.run_id, shown.key, shown.value FROM run_tags AS shown "
                f"JOIN runs ON runs.id = shown.run_id{conditions or ' WHERE 1 = 1'}{shown}", tag_parameters):
            by_id[run_id]["tags"][key] = value
        yield by_id, session.cursor(
            f"SELECT results.run_id, results.size, results.metric, {figure} FROM results "
            f"JOIN runs ON runs.id = results.run_id{conditions or ' WHERE 1 = 1'} AND {figure} > 0", parameters)


# Run columns a report shows as a run's provenance.
PROVENANCE_FIELDS = ("run", "stack", "approach", "launcher", "command", "environment", "benchmark_suite",
                     "mpi_library_version", "libfabric_version", "libfabric_provider", "image_digest", "hosts",
                     "tool_version", "started_at", "transport")


def run_provenance(store, run_ids: list[int]) -> dict[int, dict]:
    """Provenance of the given runs (command, environment, MPI library version, image digest, hosts, ...) by id,
    read in one query per 5000 ids."""
    out: dict[int, dict] = {}
    with read_session(store) as session:
        for chunk in id_chunks(run_ids):
            parameters = _Parameters()
            for record in _records(PROVENANCE_FIELDS, session.rows(
                    f"SELECT {_run_columns(PROVENANCE_FIELDS)} FROM runs WHERE runs.id IN ({parameters.bind_list(chunk)})",
                    parameters)):
                out[record["run"]] = record
    return out


# Fields of a run's full record, as `run_record` returns them (tags and result counts follow).
RUN_RECORD_FIELDS = ("run", "campaign", "campaign_name", "benchmark", "title", "status", "incomplete", "message",
                     "stack", "approach", "launcher", "ranks", "nodes", "buffers", "device", "command",
                     "environment", "benchmark_suite", "mpi_library_version", "libfabric_version",
                     "libfabric_provider", "image_digest", "hosts", "tool_version", "source", "started_at",
                     "finished_at", "created_at", "transport")


def run_record(store, run_id: int) -> dict | None:
    """Everything stored about one run: its columns, its campaign's name, its tags, and how many results it has
    with their smallest and largest message size; None when there is no run of that id."""
    columns = f"{_run_columns(RUN_RECORD_FIELDS[:2])}, campaigns.name, {_run_columns(RUN_RECORD_FIELDS[3:])}"
    with read_session(store) as session:
        rows = session.rows(f"SELECT {columns} FROM runs LEFT OUTER JOIN campaigns ON campaigns.id = runs.campaign_id "
                            "WHERE runs.id = :run", {"run": run_id})
        if not rows:
            return None
        record = _records(RUN_RECORD_FIELDS, rows)[0]
        record["tags"] = _tags_of(session, [run_id]).get(run_id, {})
        [(count, smallest, largest)] = session.rows(
            "SELECT count(results.id), min(results.size), max(results.size) FROM results WHERE results.run_id = :run",
            {"run": run_id})
    record.update(results=count, min_size=smallest, max_size=largest)
    return record


def where_problem(store, filters: list[Where], runs_only: bool = False) -> str | None:
    """Why a filter can match nothing because of what it names: a key that is neither a field nor a tag of any
    stored run (a typo would otherwise give 0 rows silently), a campaign no campaign is, or (`runs_only`: runs are
    listed, not results) a result field; None when every filter names something stored."""
    if runs_only and (problem := _result_field_problem(filters)):
        return problem
    keys = {where.key for where in filters} - _RESULT_KEYS.keys() - _RUN_KEYS.keys()
    named = [where.value for where in filters if where.key == "campaign" and where.operator == "="
             and where.value is not None]
    if not keys and not named:
        return None
    tags = set(stored_tag_keys(store)) if keys else set()
    with read_session(store) as session:
        campaigns = session.rows("SELECT id, name FROM campaigns") if named else []
    if missing := sorted(keys - tags):
        fields = ", ".join(sorted({*_RESULT_KEYS, *_RUN_KEYS}))
        known_tags = ", ".join(sorted(tags)) or "none"
        return (f"--where {missing[0]}: no such field, and no stored run has that tag; fields: {fields}; "
                f"tags in this store: {known_tags}")
    known = {value for row in campaigns for value in row}
    if unknown := [value for value in named if value not in known]:
        newest = ", ".join(f"{number} {name}" for number, name in sorted(campaigns)[-10:]) or "none"
        what = "of that name" if isinstance(unknown[0], str) else "of that number"
        return (f"--where campaign={unknown[0]}: no campaign {what} (campaign takes a number or a name; "
                f"campaigns in this store, newest 10: {newest})")
    return None


def stored_tag_keys(store) -> list[str]:
    """Every tag key some stored run has, sorted."""
    with read_session(store) as session:
        return sorted(key for (key,) in session.rows("SELECT DISTINCT key FROM run_tags"))


# Run fields the doctor reads of each run (its tags and failed sizes follow).
DIAGNOSTIC_FIELDS = ("run", "campaign", "benchmark", "status", "message", "stack", "approach", "launcher", "ranks",
                     "nodes", "buffers", "command", "environment", "transport", "mpi_library_version",
                     "libfabric_provider")


def run_diagnostics(store, filters: list[Where] | None = None) -> list[dict]:
    """What the doctor reads of each matching run: status, message, command, environment, the transport its MPI
    reported, with its tags and the sizes whose validation failed (``failed_sizes``)."""
    parameters = _Parameters()
    rows = _with_tags(store, DIAGNOSTIC_FIELDS, f"SELECT {_run_columns(DIAGNOSTIC_FIELDS)} FROM runs"
                      f"{_where(filters, parameters, runs_only=True)} ORDER BY runs.id", parameters, None)
    failed: dict[int, list] = {}
    with read_session(store) as session:
        for chunk in id_chunks(row["run"] for row in rows):
            chunk_parameters = _Parameters()
            for run_id, size in session.rows(
                    f"SELECT run_id, size FROM results WHERE run_id IN ({chunk_parameters.bind_list(chunk)}) "
                    "AND validation = 'fail'", chunk_parameters):
                failed.setdefault(run_id, []).append(size)
    for row in rows:
        row["failed_sizes"] = sorted(set(failed.get(row["run"], [])), key=lambda size: size or 0)
    return rows


def campaign_summaries(store) -> list[dict]:
    """Every campaign, oldest first: id, name, created_at, runs (their number) and statuses (run count by status,
    most frequent first), read in one grouped query."""
    summaries: dict[int, dict] = {}
    with read_session(store) as session:
        rows = session.rows(
            "SELECT campaigns.id, campaigns.name, campaigns.created_at, runs.status, count(runs.id) FROM campaigns "
            "LEFT OUTER JOIN runs ON runs.campaign_id = campaigns.id "
            "GROUP BY campaigns.id, campaigns.name, campaigns.created_at, runs.status ORDER BY campaigns.id")
    for campaign_id, name, created_at, status, count in rows:
        summary = summaries.setdefault(campaign_id, {"id": campaign_id, "name": name,
                                                     "created_at": decoded("created_at", created_at),
                                                     "runs": 0, "statuses": {}})
        if status is not None and count:
            summary["runs"] += count
            summary["statuses"][status] = count
    for summary in summaries.values():
        summary["statuses"] = dict(sorted(summary["statuses"].items(), key=lambda item: (-item[1], item[0])))
    return list(summaries.values())
