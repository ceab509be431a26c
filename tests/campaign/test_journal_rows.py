"""A journal entry keeps a run's rows exactly, column by column, whatever metrics each row has."""

import json
import math

import pytest

from mpistack.campaign.journal import Entry
from mpistack.parsers.model import ParsedRow, ParsedRun, RowTable
from mpistack.spec.provenance import Provenance


def _run() -> ParsedRun:
    rows = [ParsedRow(size=1, values={"latency": 0.21}, stats={"p50": 0.2, "iterations": 1000}, validation="pass",
                      line=4),
            ParsedRow(size=2, values={"latency": 0.22, "bandwidth": 9.5}, line=5),  # a metric only this row has
            ParsedRow(size=None, values={"latency": 1.5}, validation="fail", line=6)]
    return ParsedRun(benchmark="latency", title="OSU MPI Latency Test", units={"latency": "us"}, rows=rows)


def test_rows_survive_the_journal_exactly():
    entry = Entry(store="/tmp/x.db", campaign_id=1, case="c", runs=[_run()], source="s", tags={},
                  provenance=Provenance(), status=None, message=None)
    back = Entry.from_json(entry.to_json(), "journal/c.json").runs[0]
    assert list(back.rows) == list(_run().rows)
    assert back.rows.figure_count() == _run().rows.figure_count() == 4


def test_the_rows_are_written_as_columns_not_objects():
    data = json.loads(Entry(store="s", campaign_id=1, case="c", runs=[_run()], source="s", tags={},
                            provenance=Provenance(), status=None, message=None).to_json())
    rows = data["runs"][0]["rows"]
    assert rows["sizes"][:2] == [1, 2] and rows["values"]["latency"] == [0.21, 0.22, 1.5]
    assert math.isnan(rows["values"]["bandwidth"][0])


def test_columns_of_different_lengths_are_refused():
    data = RowTable(_run().rows).to_data()
    data["lines"].pop()
    with pytest.raises(ValueError, match="different lengths"):
        RowTable.from_data(data)
