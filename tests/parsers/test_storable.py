"""Values a store cannot hold are refused by the parsers, with the file, the line and what is wrong; the
limits are the store's own column sizes. Also: a byte order mark is accepted, large files are read as a
stream with the same result, and the job size is read from the output."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpistack.parsers import HEAD_BYTES, ParseError, RowTable, parse_file, parse_text
from mpistack.parsers.model import ParsedRow
from mpistack.parsers.storable import METRIC_NAME_LIMIT, RUN_TEXT_LIMITS, TAG_KEY_LIMIT, UNIT_LIMIT
from mpistack.store.schema import ResultRow, RunRow, RunTagRow

from . import osu_samples as s
from .test_impossible_values import bench_document


def test_limits_are_the_store_columns():
    columns = RunRow.__table__.c
    for name, limit in RUN_TEXT_LIMITS.items():
        column = columns["benchmark_suite" if name == "suite" else name]
        assert column.type.length == limit, name
    assert ResultRow.__table__.c.metric.type.length == METRIC_NAME_LIMIT
    assert ResultRow.__table__.c.unit.type.length == UNIT_LIMIT
    assert RunTagRow.__table__.c.key.type.length == TAG_KEY_LIMIT


def refused(text, source="x.txt"):
    with pytest.raises(ParseError) as error:
        parse_text(text, source)
    return str(error.value)


def test_a_size_beyond_64_bits_names_the_line():
    assert refused(s.BW_5.replace("4194304 ", "99999999999999999999 ")) == \
        "x.txt:5: size 99999999999999999999 in column Size is beyond 2^63-1, the largest a store holds"


def test_iterations_beyond_32_bits_are_refused():
    assert refused(s.ALLREDUCE_FULL_5.replace(" 1000", " 9999999999", 1)) == \
        "x.txt:3: 9999999999 in column Iterations is beyond 2^31-1, the largest a store holds"


def test_nan_says_what_is_wrong_with_the_value():
    assert refused(s.LATENCY_5.replace("0.23", "nan")) == "x.txt:4: 'nan' is not a number in column Latency (us)"


def test_nul_anywhere_is_refused_with_its_line():
    assert refused(s.BW_5.replace("Bandwidth Test", "Bandwidth\x00Test")).startswith("x.txt:1: NUL character")
    document = bench_document(1.0).replace("OSU MPI Bandwidth Test", "OSU MPI\\u0000 Bandwidth Test")
    assert "title 'OSU MPI\\x00 Bandwidth Test' holds a NUL character" in refused(document, "b.json")


def test_text_longer_than_its_column_is_refused():
    long_title = s.BW_5.replace("Bandwidth Test", "Bandwidth " + "x" * 300 + " Test")
    assert "is 310 characters long; the store holds at most 64" in refused(long_title)
    device = s.LATENCY_5.replace("OSU MPI Latency", "OSU MPI-ACCELERATORXYZABCDEF Latency")
    assert "device 'acceleratorxyzabcdef' is 20 characters long; the store holds at most 16" in refused(device)


def test_bench_json_limits():
    document = json.loads(bench_document(1.0))
    document["mpi"]["ranks"] = 2**40
    assert "ranks 1099511627776: expected a whole number in 1..2^31-1" in refused(json.dumps(document), "b.json")
    document = json.loads(bench_document(1.0))
    document["results"][0]["size"] = 2**64
    assert "outside 0..2^63-1" in refused(json.dumps(document), "b.json")
    assert "x.json:1: JSON nested too deeply" in refused('{"schema": ' + "[" * 100_000 + "]" * 100_000 + "}",
                                                         "x.json")


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(s.ALL_SAMPLES))
def test_a_byte_order_mark_is_accepted(sample):
    assert parse_text("\ufeff" + sample, "x.txt") == parse_text(sample, "x.txt")


def test_a_byte_order_mark_in_a_file(tmp_path):
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbf" + s.BW_5.encode())
    (run,) = parse_file(path)
    assert [row.size for row in run.rows] == [1, 2, 4194304]
    document = tmp_path / "bom.json"
    document.write_bytes(b"\xef\xbb\xbf" + bench_document(1.5).encode())
    (run,) = parse_file(document)
    assert run.result_count == 1


def big_output(rows: int) -> str:
    body = "".join(f"{2 ** (index % 23):<10d}{index / 7:>18.2f}\n" for index in range(rows))
    return "$ mpirun -np 2 ./osu_bw\n" + s.BW_5.split("1 ")[0] + body


def test_a_large_file_is_streamed_to_the_same_runs(tmp_path):
    text = big_output(HEAD_BYTES // 28 + 5000)  # beyond the head: read line by line
    path = tmp_path / "big.txt"
    path.write_text(text)
    assert path.stat().st_size > HEAD_BYTES
    (streamed,) = parse_file(path)
    (whole,) = parse_text(text, str(path))
    assert streamed == whole and streamed.provenance.ranks == 2
    assert len(streamed.rows) == HEAD_BYTES // 28 + 5000


def test_a_large_file_names_the_line_of_a_bad_byte(tmp_path):
    text = big_output(HEAD_BYTES // 28 + 100)
    lines = text.count("\n")
    path = tmp_path / "big.txt"
    path.write_bytes(text.encode() + b"8   1.\xff\n")
    with pytest.raises(ParseError, match=rf"big.txt:{lines + 1}: not UTF-8 text"):
        parse_file(path)
    path.write_bytes(text.encode() + b"8   1.0\x00\n")
    with pytest.raises(ParseError, match=rf"big.txt:{lines + 1}: NUL character"):
        parse_file(path)


@pytest.mark.parametrize("text, ranks, nodes", [
    ("$ mpirun -np 4 ./osu_mbw_mr\n" + s.MBW_MR_5, 4, None),  # the command wins over the header
    (s.MBW_MR_5, 2, None),  # '# [ pairs: 1 ]'
    ("+ srun -n 8 -N 2 ./osu_allreduce\n" + s.ALLREDUCE_FULL_5, 8, 2),
    ("me@login1:~/osu$ mpiexec -np 3 ./osu_allreduce\n" + s.ALLREDUCE_FULL_5, 3, None),
    (s.ALLREDUCE_FULL_5.replace("# Size", "# Number of processes: 16\n# Size"), 16, None),
])
def test_job_size_from_the_output(text, ranks, nodes):
    (run,) = parse_text(text, "x.txt")
    assert (run.provenance.ranks, run.provenance.nodes) == (ranks, nodes)


def test_row_table_reads_back_what_was_added():
    rows = [ParsedRow(None, {"latency": 1.5}), ParsedRow(4, {"bandwidth": 2.0, "message_rate": 3.0},
                                                         {"iterations": 100, "min": 1.0}, "fail", 7)]
    table = RowTable(rows)
    assert list(table) == rows and table == rows and table[-1] == rows[-1] and table[:1] == rows[:1]
    assert table.figure_count() == 3 and table.any_failed()
    assert table.pop() == rows[1] and table == rows[:1] and table.figure_count() == 1
