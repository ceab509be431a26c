"""The fast read path (store/reading.py): a SQLite store read with Python's sqlite3 gives exactly what the
SQLAlchemy engine gives, typed as the schema types it; a store that is not current falls back to the engine."""

from __future__ import annotations

import sqlite3
from datetime import datetime

import pytest
from sqlalchemy import JSON, Boolean, DateTime

from mpistack.store import StoreError, open_database
from mpistack.store import schema
from mpistack.store.campaigns import start_campaign
from mpistack.store.query import (Where, campaign_summaries, count_matching, launch_evidence, query_results,
                                  query_runs, run_diagnostics, run_provenance, run_record, where_problem)
from mpistack.store.reading import (BOOLEAN_COLUMNS, JSON_COLUMNS, TIME_COLUMNS, SqliteStore, open_reader,
                                    read_session)
from mpistack.parsers.model import ParsedRow, ParsedRun
from mpistack.spec.provenance import Provenance
from mpistack.spec.status import RunStatus
from mpistack.store.database import write_transaction
from mpistack.store.writer import write_runs


def test_the_decoded_columns_are_the_schemas_json_time_and_boolean_columns():
    by_type: dict[type, set[str]] = {JSON: set(), DateTime: set(), Boolean: set()}
    for table in schema.Base.metadata.tables.values():
        for column in table.columns:
            for kind, names in by_type.items():
                if isinstance(column.type, kind):
                    names.add(column.name)
    assert by_type[JSON] == JSON_COLUMNS
    assert by_type[DateTime] == TIME_COLUMNS
    assert by_type[Boolean] == BOOLEAN_COLUMNS


def fill(url: str):
    """A campaign "nightly" of three runs: ok, failed (incomplete, no results), ok, each of 3 sizes."""
    engine = open_database(url)
    campaign = start_campaign(engine, "nightly", {"name": "nightly"})
    for index, status in enumerate((RunStatus.OK, RunStatus.FAILED, RunStatus.OK)):
        rows = [] if status is RunStatus.FAILED else [
            ParsedRow(size, {"latency": 1.0 + size}, {"median": 0.5 + size}, "pass") for size in (1, 2, 4)]
        run = ParsedRun("latency", "OSU MPI Latency Test", {"latency": "us"}, rows, incomplete=index == 1)
        facts = Provenance(stack="pip-mpich", approach="container", ranks=2, nodes=1,
                           environment={"FI_PROVIDER": "shm"}, hosts=["a", "b"], transport={"netmod": "ofi"},
                           started_at=datetime(2026, 11, 22, 10, index))
        with write_transaction(engine) as connection:
            write_runs(connection, [run], campaign_id=campaign, provenance=facts, status=status,
                       message="m" if index else None, tags={"variant": "default", "case": f"c{index}"})
    return engine


@pytest.fixture
def filled(tmp_path):
    path = tmp_path / "store.db"
    return path, fill(str(path))


def test_every_query_reads_the_same_through_sqlite3_and_through_sqlalchemy(filled):
    path, engine = filled
    fast = open_reader(str(path))
    assert isinstance(fast, SqliteStore)
    filters = [Where.parse("variant=default"), Where.parse("campaign=nightly")]
    for query in (lambda store: query_results(store, filters), lambda store: query_runs(store, filters),
                  lambda store: count_matching(store, filters), lambda store: count_matching(store, filters, runs=True),
                  lambda store: run_record(store, 2), lambda store: run_provenance(store, [1, 2, 3]),
                  lambda store: run_diagnostics(store, filters), campaign_summaries):
        assert query(fast) == query(engine)
    record = run_record(fast, 2)
    assert record["incomplete"] is True and record["hosts"] == ["a", "b"] and record["transport"] == {"netmod": "ofi"}
    assert record["started_at"].replace(tzinfo=None) == datetime(2026, 11, 22, 10, 1)
    assert record["campaign_name"] == "nightly"
    with launch_evidence(fast, filters) as (runs, results):
        assert sorted(runs) == [1, 2, 3] and runs[1]["tags"]["case"] == "c0"
        assert sorted(results) == [(run, size, "latency", 0.5 + size) for run in (1, 3) for size in (1, 2, 4)]


def test_a_campaign_is_named_by_its_newest_campaign_and_an_unknown_name_is_explained(store_url):
    engine = fill(store_url)
    store = open_reader(store_url)
    assert [run["run"] for run in query_runs(store, [Where.parse("campaign=nightly")])] == [1, 2, 3]
    assert count_matching(store, [Where.parse("campaign!=nightly")], runs=True) == 0
    start_campaign(engine, "nightly", {"name": "nightly"})
    assert query_runs(store, [Where.parse("campaign=nightly")]) == []  # the newest "nightly" has no runs yet
    with launch_evidence(store, [Where.parse("campaign=1"), Where.parse("variant=default")],
                         tags=["case"]) as (runs, results):
        assert [runs[run]["tags"] for run in (1, 2, 3)] == [{"case": "c0"}, {"case": "c1"}, {"case": "c2"}]
        assert len(list(results)) == 6
    assert "no campaign of that name" in where_problem(store, [Where.parse("campaign=weekly")])
    assert where_problem(store, [Where.parse("campaign=nightly")]) is None


def test_a_store_of_an_older_revision_or_not_a_store_is_opened_by_the_engine(tmp_path):
    from alembic import command

    from mpistack.store.database import _alembic_config

    older = tmp_path / "older.db"
    with write_transaction(open_database(str(older))) as connection:
        command.downgrade(_alembic_config(connection), "0002")
    assert not isinstance(open_reader(str(older)), SqliteStore)  # (the engine migrates it)
    assert isinstance(open_reader(str(older)), SqliteStore)
    future = tmp_path / "future.db"
    open_database(str(future))
    with sqlite3.connect(future) as connection:
        connection.execute("UPDATE alembic_version SET version_num = '9999'")
    with pytest.raises(StoreError, match="newer than this mpistack"):
        open_reader(str(future))
    junk = tmp_path / "junk.db"
    junk.write_text("not a database")
    with pytest.raises(StoreError, match="junk.db"):
        open_reader(str(junk))


def test_reading_never_creates_a_file(tmp_path):
    with pytest.raises(sqlite3.OperationalError):
        with read_session(SqliteStore(tmp_path / "absent.db")):
            pass
    assert not (tmp_path / "absent.db").exists()
