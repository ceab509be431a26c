"""The OSU text parser on every output shape from 5.x to 7.x."""

import pytest

from mpistack.parsers import ParseError, parse_text
from mpistack.parsers.osu_text import parse_command

from . import osu_samples as s


def only(text):
    runs = parse_text(text, "sample.txt")
    assert len(runs) == 1
    return runs[0]


def test_latency_5x_keeps_zero_byte_row_and_version():
    run = only(s.LATENCY_5)
    assert run.benchmark == "latency"
    assert run.suite == "osu 5.6.3"
    assert run.units == {"latency": "us"}
    assert [(row.size, row.values["latency"]) for row in run.rows] == [(0, 0.22), (1, 0.23), (2, 0.24),
                                                                        (4194304, 512.5)]
    assert run.status == "ok" and not run.incomplete


def test_bandwidth_columns_by_header():
    run = only(s.BW_5)
    assert run.benchmark == "bw" and run.units == {"bandwidth": "MB/s"}
    assert run.rows[-1].values == {"bandwidth": 11250.21}


def test_mbw_mr_has_bandwidth_and_message_rate():
    run = only(s.MBW_MR_5)
    assert run.benchmark == "mbw_mr"
    assert run.units == {"bandwidth": "MB/s", "message_rate": "messages/s"}
    assert run.rows[1].values == {"bandwidth": 8.93, "message_rate": 4463186.20}


def test_multi_lat():
    run = only(s.MULTI_LAT_5)
    assert run.benchmark == "multi_lat" and run.rows[0].size == 0


def test_collective_full_statistics():
    run = only(s.ALLREDUCE_FULL_5)
    assert run.benchmark == "allreduce"
    row = run.rows[1]
    assert row.values == {"latency": 1.07}
    assert row.stats == {"min": 0.99, "max": 1.15, "iterations": 1000}


@pytest.mark.parametrize("text, stats", [(s.BARRIER_5, {}),
                                         (s.BARRIER_FULL_7, {"min": 1.20, "max": 1.25, "iterations": 1000})])
def test_barrier_has_no_size(text, stats):
    run = only(text)
    assert run.benchmark == "barrier"
    assert len(run.rows) == 1
    assert run.rows[0].size is None and run.rows[0].values == {"latency": 1.23}
    assert run.rows[0].stats == stats


def test_tail_latency_percentiles():
    run = only(s.LATENCY_TAIL_7)
    assert run.rows[0].values == {"latency": 0.21}
    assert run.rows[0].stats == {"p50": 0.20, "p90": 0.22, "p99": 0.30}


def test_tail_bandwidth_percentiles():
    run = only(s.BW_TAIL_7)
    assert run.rows[0].values == {"bandwidth": 2.51}
    assert run.rows[0].stats == {"p50": 2.60, "p90": 2.40, "p99": 2.10}


def test_cuda_title_and_send_buffer_line():
    run = only(s.CUDA_SEND_BUFFER_5)
    assert run.provenance.device == "cuda"
    assert run.provenance.buffers == "D-H"
    assert run.title == "OSU MPI-CUDA Latency Test"


def test_validation_column_and_error_line():
    run = only(s.VALIDATION_ERROR_6)
    assert [row.validation for row in run.rows] == ["pass", "fail"]
    assert run.status == "validation-failed"
    assert any("DATA VALIDATION ERROR" in message for message in run.messages)


def test_validation_error_line_alone_fails_the_run():
    text = s.LATENCY_5 + "DATA VALIDATION ERROR: osu_latency exited with status 1 on message size 4194304.\n"
    assert only(text).status == "validation-failed"


def test_collective_with_full_statistics_and_validation():
    run = only(s.ALLTOALL_7_FULL)
    assert run.benchmark == "alltoall"
    assert run.rows[0].stats == {"min": 21.0, "max": 23.5, "iterations": 1000}
    assert run.rows[0].validation == "pass"


def test_several_benchmarks_in_one_file_with_noise():
    noise = ("/opt/osu/osu_bw: /usr/lib/libnl-3.so.200: no version information available (required by libcxi.so.1)\n"
             "srun: job 123 queued and waiting for resources\n"
             "[1700000000.123] [nid001:12345] UCX  WARN  unused env variable: UCX_FOO\n")
    runs = parse_text(noise + s.LATENCY_5 + noise + "\n" + s.BW_5 + noise, "log.txt")
    assert [run.benchmark for run in runs] == ["latency", "bw"]
    assert [len(run.rows) for run in runs] == [4, 3]


def test_rows_indented_inside_markdown_code_blocks():
    indented = "".join("    " + line + "\n" for line in s.BW_5.splitlines())
    assert only(indented).rows[0].values == {"bandwidth": 5.29}


def test_truncated_output_keeps_complete_rows():
    cut = s.BW_5.rstrip("\n").rsplit("\n", 1)[0] + "\n4194304        1125"
    run = only(cut)
    assert run.incomplete and run.status == "failed"
    assert [row.size for row in run.rows] == [1, 2]
    assert [row.values["bandwidth"] for row in run.rows] == [5.29, 10.61]


def test_truncated_row_missing_validation_column():
    cut = s.VALIDATION_ERROR_6.split("8    ")[0] + "8                       1.08"
    run = only(cut)
    assert run.incomplete and [row.size for row in run.rows] == [4]


def test_header_without_rows_is_incomplete():
    run = only("# OSU MPI Latency Test v7.5\n# Datatype: MPI_CHAR.\n# Size       Avg Latency(us)\n")
    assert run.incomplete and run.rows == []


def test_garbled_row_names_file_line_and_expectation():
    garbled = s.BW_5.replace("2                      10.61", "2                      10.6x1")
    with pytest.raises(ParseError) as error:
        parse_text(garbled, "bad.txt")
    assert error.value.line == 4
    assert str(error.value) == "bad.txt:4: '10.6x1' is not a number in column Bandwidth (MB/s)"
    extra = s.BW_5.replace("2                      10.61", "2                      10.61   7")
    with pytest.raises(ParseError, match=r"^bad.txt:4: malformed row .*expected 2 columns \(Size, Bandwidth \(MB/s\)\)"):
        parse_text(extra, "bad.txt")


def test_cut_short_row_in_the_middle_is_an_error():
    broken = s.LATENCY_5.replace("2                       0.24", "2")
    with pytest.raises(ParseError) as error:
        parse_text(broken, "mid.txt")
    assert error.value.line == 5


def test_not_osu_output():
    with pytest.raises(ParseError, match="no OSU benchmark output found"):
        parse_text("hello world\n1 2 3\n", "notes.txt")


def test_nan_figure_is_rejected():
    with pytest.raises(ParseError):
        parse_text(s.BW_5.replace("5.29", "nan"), "nan.txt")


def test_mpistack_bench_identity_in_title():
    text = s.LATENCY_TAIL_7.replace(" v7.3", " (mpistack-bench 0.1)")
    run = only(text)
    assert run.suite == "mpistack-bench 0.1" and run.benchmark == "latency"


@pytest.mark.parametrize("title, benchmark", [
    ("# OSU MPI Bi-Directional Bandwidth Test v7.5", "bibw"),
    ("# OSU MPI All-to-All Personalized Exchange Latency Test v7.5", "alltoall"),
    ("# OSU MPI Reduce_scatter Latency Test v7.5", "reduce_scatter"),
    ("# OSU MPI Broadcast Latency Test v7.5", "bcast"),
    ("# OSU MPI Gatherv Latency Test v7.5", "gatherv"),
    ("# OSU MPI_Put Latency Test v7.5", "put_latency"),
    ("# OSU MPI Non-blocking Allreduce Latency Test v7.5", "iallreduce"),
    ("# OSU MPI-ROCM Allgather Latency Test v7.5", "allgather"),
])
def test_titles(title, benchmark):
    run = only(f"{title}\n# Size       Avg Latency(us)\n1                       2.00\n")
    assert run.benchmark == benchmark


def test_command_prompt_gives_environment_and_placement():
    facts = parse_command(
        "MPIR_CVAR_CH4_OFI_ENABLE_HMEM=1 srun -N2 --ntasks-per-node=4 --mpi=pmi2 ./collective/osu_alltoall -d cuda")
    assert facts.environment == {"MPIR_CVAR_CH4_OFI_ENABLE_HMEM": "1"}
    assert (facts.launcher, facts.nodes, facts.ranks, facts.buffers) == ("srun", 2, 8, None)
    facts = parse_command("srun --mpi=pmi2 -t00:05:00 -n2 -N1 ./pt2pt/osu_bw D H")
    assert facts.ranks == 2 and facts.nodes == 1 and facts.buffers == "D-H"


def test_non_ascii_digits_are_not_sizes():
    """'¹' passes str.isdigit() but not int(): the line is noise, not a crash (found by hypothesis)."""
    run = only("# OSU MPI Latency Test v5.6.3\n# Size          Latency (us)\n0      0.22\n¹ 0\n1      0.23\n")
    assert [(row.size, row.values["latency"]) for row in run.rows] == [(0, 0.22), (1, 0.23)]
