"""Confidence levels as headers print them: an alpha-spent look's level is not rounded up to a certainty."""

from hypothesis import given, strategies as st

from mpistack.analysis.answers import format_level


def test_the_levels_in_use_read_as_they_are():
    assert [format_level(level) for level in (0.9, 0.95, 0.9984, 0.99432, 0.9776, 0.9296, 0.9999756)] == \
        ["90%", "95%", "99.84%", "99.43%", "97.76%", "92.96%", "99.99%"]


@given(st.floats(min_value=0.5, max_value=0.9999999))
def test_a_level_short_of_certainty_never_reads_100(level):
    shown = format_level(level)
    assert shown != "100%" and float(shown.rstrip("%")) <= level * 100 + 1e-9
