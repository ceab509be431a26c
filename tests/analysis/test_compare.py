"""Descriptive comparisons of single published figures, and row matching for `mpistack compare` (no store)."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from mpistack.analysis import Verdict, classify, compare_many, compare_size
from mpistack.analysis.compare import compare_rows, parse_match, CompareError
from mpistack.analysis.evidence import Row, RowKey

SIZES = [2**i for i in range(23)]


def test_single_figures_are_judged_by_the_ratio_against_the_floor():
    slower = compare_size([0.14], [0.88], higher_is_better=True, descriptive=True, size=1)
    assert slower.verdict is Verdict.SLOWER and slower.descriptive
    assert math.isnan(slower.p_value) and math.isnan(slower.ci_low) and slower.launches_needed is None
    assert slower.reason == "single published figures, no test of significance: 0.159×, slower beyond the 10% floor"
    faster = compare_size([130.0], [100.0], higher_is_better=True, descriptive=True)
    assert faster.verdict is Verdict.FASTER
    at_speed = compare_size([95.0], [100.0], higher_is_better=True, descriptive=True)
    assert at_speed.verdict is Verdict.AT_SPEED and "within the 10% floor" in at_speed.reason


def test_the_absolute_floor_holds_for_single_latencies():
    """0.20 against 0.23 us is 13% but only 0.03 us: within the floor."""
    assert compare_size([0.23], [0.20], higher_is_better=False, descriptive=True).verdict is Verdict.AT_SPEED
    assert compare_size([0.40], [0.20], higher_is_better=False, descriptive=True).verdict is Verdict.SLOWER


def test_without_the_flag_single_figures_stay_inconclusive():
    plain = compare_size([0.14], [0.88], higher_is_better=True)
    assert plain.verdict is Verdict.INCONCLUSIVE and plain.too_few_launches and not plain.descriptive


def test_repeats_against_one_figure_use_their_median():
    repeats = [10.0, 11.0, 9.0, 10.5, 9.5, 10.0, 10.2, 9.8]
    result = compare_size(repeats, [20.0], higher_is_better=True, descriptive=True)
    assert result.median_candidate == statistics.median(repeats) and result.verdict is Verdict.SLOWER
    assert result.reason.startswith("the median of 8 launches against a single published figure")


def test_the_flag_leaves_repeated_launches_to_the_test():
    rng = np.random.default_rng(0)
    a, b = list(rng.lognormal(0, 0.03, 8)), list(rng.lognormal(0, 0.03, 8))
    assert compare_size(a, b, higher_is_better=True, descriptive=True) == compare_size(a, b, higher_is_better=True)


def test_classify_keeps_descriptive_verdicts():
    """Deciding by size (no regimes given): three slower single figures among 23 make the row (Y)."""
    pairs = {size: ([50.0 if size in (1, 2, 4) else 100.0], [100.0], size) for size in SIZES}
    row = classify(list(compare_many(pairs, higher_is_better=True, descriptive=True).values()))
    assert row.label == "(Y)" and row.slow[0].sizes == [1, 2, 4]
    assert row.reason.endswith("descriptive: single published figures, no test of significance")
    at_speed = classify(list(compare_many({s: ([100.0], [100.0], s) for s in SIZES}, higher_is_better=True,
                                          descriptive=True).values()))
    assert at_speed.label == "Y"


def _row(scope, stack, approach, launches, *, origin="image", factor=lambda size: 1.0, seed=0, buffers="H-H"):
    key = RowKey(scope, stack, approach, "default", "latency", "latency", 2, 1, buffers)
    row = Row(key, origin, "mpich", launches=launches)
    rng = np.random.default_rng(seed)
    for size in SIZES:
        row.figures[size] = list((1.0 + size / 5000) * factor(size) * rng.lognormal(0.0, 0.05, launches))
    return row


def test_identical_distributions_are_never_Y_in_brackets():
    labels = []
    for seed in range(12):
        a = _row("campaign 2", "debian-mpich", "container", 8, seed=2 * seed)
        b = _row("campaign 1", "host-mpich", "native", 8, origin="host", seed=2 * seed + 1)
        (compared,), unmatched = compare_rows({a.key: a}, {b.key: b})
        labels.append(compared.row_class.label)
        assert not unmatched
    assert "(Y)" not in labels and labels.count("Y") >= 6


def test_repeats_against_a_published_figure_are_described_and_said_so():
    campaign = _row("campaign 2", "debian-mpich", "container", 8, factor=lambda size: 2.0 if size < 64 else 1.0)
    published = _row("reference lumi", "cray-mpich", "native", 1, origin="published")
    (compared,), _ = compare_rows({campaign.key: campaign}, {published.key: published})
    assert compared.descriptive and all(c.descriptive for c in compared.sizes)
    assert compared.evidence().startswith("the candidate's median of 8 launches against a single published figure")
    assert compared.row_class.label == "(Y)" and compared.row_class.slow[0].sizes[0] == 1


def test_several_baselines_for_one_row_are_listed_with_a_hint():
    a = _row("campaign 3", "debian-mpich", "container", 8)
    b1 = _row("campaign 1", "host-mpich", "native", 8)
    b2 = _row("campaign 1", "debian-mpich", "native", 8)
    rows, unmatched = compare_rows({a.key: a}, {b1.key: b1, b2.key: b2})
    assert rows == []
    assert [(u.side, u.reason) for u in unmatched] == [
        ("candidate", "2 baseline rows (differing in stack): add --match stack or narrow with --where-b")]
    (matched,), unmatched = compare_rows({a.key: a}, {b1.key: b1, b2.key: b2}, match=parse_match("stack"))
    assert matched.baseline is b2 and [u.row for u in unmatched] == [b1]


def test_one_baseline_serves_every_candidate_but_not_itself():
    native = _row("reference lumi", "cray-mpich", "native", 1, origin="published")
    container = _row("reference lumi", "mpich3", "container", 1, origin="published")
    rows, unmatched = compare_rows({native.key: native, container.key: container}, {native.key: native})
    assert [r.candidate for r in rows] == [container]
    assert [(u.row, u.reason) for u in unmatched] == [(native, "the baseline row itself")]


def test_match_fields_are_checked():
    assert parse_match("variant, stack") == ("stack", "variant")
    assert parse_match(None) == ()
    with pytest.raises(CompareError, match="unknown field colour"):
        parse_match("colour")
