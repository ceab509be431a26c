"""Characterisation without a comparison: the exact interval of a median, and a native-only campaign's report
(medians with intervals and the machine bounds in report.md and report.json, not "nothing to compare")."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpistack.analysis.answers import Settings
from mpistack.analysis.characterise import median_interval
from mpistack.report.data import collect
from mpistack.report.write import write_report
from mpistack.store.query import Where

from .campaign_like import LAUNCHES, ROWS, build_campaign_like


@pytest.mark.parametrize("n, ranks, coverage", [
    (3, (1, 3), 0.75), (5, (1, 5), 0.9375), (6, (1, 6), 0.96875), (9, (2, 8), 0.9609375),
    (12, (3, 10), 0.96142578125), (20, (6, 15), 0.9586105346679688)])
def test_the_interval_is_the_exact_order_statistic_one(n, ranks, coverage):
    # the published table of exact binomial intervals of the median (largest j with coverage >= 95%)
    values = [float(index) for index in range(1, n + 1)]
    low, high, covered = median_interval(reversed(values))
    assert (low, high) == ranks and covered == pytest.approx(coverage)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=1e-3, max_value=1e6, allow_nan=False), min_size=1, max_size=40))
def test_the_interval_holds_the_median_and_lies_within_the_launches(values):
    low, high, coverage = median_interval(values)
    ordered = sorted(values)
    middle = (ordered[(len(ordered) - 1) // 2] + ordered[len(ordered) // 2]) / 2
    assert ordered[0] <= low <= middle <= high <= ordered[-1]
    assert 0.0 <= coverage <= 1.0 and (coverage >= 0.95) == (len(values) >= 6)


def test_one_launch_has_no_interval():
    assert median_interval([2.5]) == (2.5, 2.5, 0.0)
    with pytest.raises(ValueError):
        median_interval([])


@pytest.fixture(scope="module")
def native_only(tmp_path_factory):
    """A centre characterising its own MPICH: native runs only, with the machine bounds."""
    folder = tmp_path_factory.mktemp("native")
    rows = [row for row in ROWS if row[0] == "host-mpich" and row[2] == "default"]
    engine = build_campaign_like(folder / "native.db", rows=rows)
    report = collect(engine, [Where("campaign", "=", 1)], Settings(), title="native (campaign #1)",
                     campaign={"id": 1, "name": "native"})
    engine.dispose()
    paths = write_report(report, folder / "report")
    return report, {path.suffix.lstrip("."): path for path in paths}


def test_the_json_report_characterises_every_row_with_intervals_and_bounds(native_only):
    _, paths = native_only
    data = json.loads(paths["json"].read_text())
    assert data["answers"] == [] and data["bounds"]["host"] == "node-a"
    assert {kind["kind"] for kind in data["bounds"]["sources"]} >= {"memcpy-cache", "tcp-latency"}
    rows = {item["benchmark"]: item for item in data["characterisation"]}
    assert set(rows) == {"latency", "bw"} and rows["latency"]["launches"] == LAUNCHES
    one_byte = rows["latency"]["sizes"][0]
    assert one_byte["size"] == 1 and one_byte["launches"] == LAUNCHES
    assert one_byte["ci_low"] <= one_byte["median"] <= one_byte["ci_high"]
    assert one_byte["coverage"] == pytest.approx(1 - 2 * 0.5 ** LAUNCHES)  # 8 launches: the range, 99.2 %
    assert math.isclose(one_byte["median"], 0.25, rel_tol=0.05)  # the synthetic 1-byte latency


def test_the_markdown_report_gives_numbers_not_nothing_to_compare(native_only):
    _, paths = native_only
    text = paths["md"].read_text()
    section = text[text.index("## Characterisation: rows without a baseline"):]
    table = section[section.index("| size | launches | median | interval | coverage | TCP loopback (us) |"):]
    one_byte = table.splitlines()[2].split(" | ")
    assert one_byte[0] == "| 1 B" and one_byte[1] == str(LAUNCHES) and "–" in one_byte[3]
    assert one_byte[4] == "99%" and float(one_byte[5].rstrip(" |")) == pytest.approx(12, rel=0.01)
    assert "memcpy bound (MB/s)" in section  # bw beside the memcpy bound
    assert "Nothing compared: no row has a baseline" in text


def test_the_html_report_has_the_same_table(native_only):
    _, paths = native_only
    page = paths["html"].read_text()
    section = page[page.index('<h2 id="characterisation">'):page.index('<h2 id="benchmarks">')]
    assert "host-mpich native: latency, n2N1 H-H, 8 launches" in section
    assert "<th>TCP loopback (us)</th>" in section and section.count("<tr><td>1 B</td>") == 2
    assert "Settings: practical floor 10%" in page
