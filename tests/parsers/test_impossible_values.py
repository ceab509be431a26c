"""Figures no benchmark can produce (a negative time or rate, an infinity, NaN) are refused by the parsers
with the file, the row and what is wrong, never stored."""

from __future__ import annotations

import json

import pytest

from mpistack.parsers import ParseError, parse_text

OSU_LATENCY = "# OSU MPI Latency Test v7.2\n# Size          Latency (us)\n1   {first}\n2   1.0\n"


def bench_document(value) -> str:
    """A minimal mpistack-bench document (the shape its --json writes) with one figure."""
    return json.dumps({
        "schema": "mpistack-bench/1", "benchmark": "bw", "title": "OSU MPI Bandwidth Test",
        "tool": {"name": "mpistack-bench", "version": "0.1"},
        "mpi": {"library_version": "MPICH Version: 4.0.2", "ranks": 2, "hosts": ["a", "a"], "wtick": 1e-9},
        "options": {"min_size": 1, "max_size": 1, "iterations": 10, "warmup": 1, "window": 64, "validation": False,
                    "buffers": "H H", "device": "none"},
        "metrics": [{"name": "bandwidth", "unit": "MB/s"}], "status": "ok",
        "results": [{"size": 1, "iterations": 10, "warmup": 1, "values": {"bandwidth": value}}],
    })


def test_a_negative_latency_in_osu_text_names_the_row():
    with pytest.raises(ParseError, match=r"x\.txt:3: negative Latency \(us\) -1\.5 in row .* cannot be negative"):
        parse_text(OSU_LATENCY.format(first="-1.5"), "x.txt")


@pytest.mark.parametrize("first, problem", [("inf", "is not a finite number"), ("nan", "is not a number"),
                                            ("1e400", "is not a finite number")])
def test_no_infinity_in_osu_text(first, problem):
    with pytest.raises(ParseError) as error:
        parse_text(OSU_LATENCY.format(first=first), "x.txt")
    assert str(error.value) == f"x.txt:3: {first!r} {problem} in column Latency (us)"


def test_the_document_itself_parses():
    (run,) = parse_text(bench_document(1.5), "b.json")
    assert run.result_count == 1


@pytest.mark.parametrize("value", [-3.0, float("inf"), float("nan")])
def test_impossible_figures_in_bench_json_are_refused(value):
    with pytest.raises(ParseError, match=r"b\.json"):
        parse_text(bench_document(value), "b.json")
