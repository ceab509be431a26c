"""Property tests: whatever text the parsers are fed, only the documented ParseError comes out, and
rows printed in OSU's own format read back to the same numbers."""

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpistack.parsers import ParseError, parse_text

from . import osu_samples as s

PROPERTY_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def parse_or_documented_error(text):
    try:
        runs = parse_text(text, "fuzz.txt")
    except ParseError as error:
        assert str(error).startswith("fuzz.txt")
        return None
    for run in runs:
        assert run.benchmark and run.units
        for row in run.rows:
            assert row.values
    return runs


@PROPERTY_SETTINGS
@given(st.text(max_size=2000))
def test_random_text(text):
    parse_or_documented_error(text)


@PROPERTY_SETTINGS
@given(st.sampled_from(s.ALL_SAMPLES), st.data())
def test_mutated_osu_output(sample, data):
    lines = sample.splitlines(keepends=True)
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(0, len(lines) - 1))
        action = data.draw(st.sampled_from(["delete", "duplicate", "garble", "truncate", "insert"]))
        if action == "delete" and len(lines) > 1:
            del lines[index]
        elif action == "duplicate":
            lines.insert(index, lines[index])
        elif action == "garble":
            line = lines[index]
            position = data.draw(st.integers(0, max(len(line) - 1, 0)))
            char = data.draw(st.sampled_from(list(string.printable) + ["\x00", "é", "∞"]))
            lines[index] = line[:position] + char + line[position + 1:]
        elif action == "truncate":
            lines = lines[:index + 1]
            lines[-1] = lines[-1][: data.draw(st.integers(0, len(lines[-1])))]
        else:
            lines.insert(index, data.draw(st.text(max_size=80)) + "\n")
    parse_or_documented_error("".join(lines))


sizes = st.lists(st.integers(0, 2**31), min_size=1, max_size=30, unique=True).map(sorted)
figures = st.floats(min_value=0, max_value=1e9, allow_nan=False, allow_infinity=False)


@PROPERTY_SETTINGS
@given(sizes, st.data())
def test_osu_format_round_trip(row_sizes, data):
    values = [round(data.draw(figures), 2) for _ in row_sizes]
    text = "\n# OSU MPI Bandwidth Test v7.5\n# Datatype: MPI_CHAR.\n" + f"{'# Size':<10}{'Bandwidth (MB/s)':>18}\n"
    text += "".join(f"{size:<10d}{value:>18.2f}\n" for size, value in zip(row_sizes, values))
    (run,) = parse_text(text, "round.txt")
    assert [row.size for row in run.rows] == row_sizes
    assert [row.values["bandwidth"] for row in run.rows] == [float(f"{value:.2f}") for value in values]
