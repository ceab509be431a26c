"""A finite figure no benchmark can report (1.7e308 µs, the largest double is 1.797e308) is refused with the
file and row, in every format, never stored as ok."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpistack.parsers import ParseError, parse_text
from mpistack.parsers.model import FIGURE_LIMIT
from tests.parsers.test_impossible_values import OSU_LATENCY, bench_document

MARKDOWN = ("| OSU MPI Latency Test v7.2 | | |\n|---|---|---|\n| # Size | Host to Host | Device to Device |\n"
            "| 1 | {first} | 2.0 |\n")


@pytest.mark.parametrize("text", [OSU_LATENCY.format(first="1.7e308"), bench_document(1.7e308),
                                  MARKDOWN.format(first="1.7e308")], ids=["osu-text", "bench-json", "markdown"])
def test_a_finite_but_absurd_figure_is_refused_naming_the_row(text):
    with pytest.raises(ParseError, match=r"x:\d+: .*1\.7e\+308: larger than any benchmark reports"):
        parse_text(text, "x")


@given(st.floats(min_value=FIGURE_LIMIT, max_value=1.7976931348623157e308, exclude_min=True))
def test_every_figure_beyond_the_limit_is_refused(value):
    with pytest.raises(ParseError):
        parse_text(OSU_LATENCY.format(first=repr(value)), "x")
    with pytest.raises(ParseError):
        parse_text(json.dumps(json.loads(bench_document(value))), "x")


@given(st.floats(min_value=0, max_value=FIGURE_LIMIT))
def test_every_figure_up_to_the_limit_is_kept(value):
    (run,) = parse_text(OSU_LATENCY.format(first=repr(value)), "x")
    assert run.rows[0].values["latency"] == value
