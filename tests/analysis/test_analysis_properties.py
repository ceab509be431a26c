"""Properties of compare_size over generated per-launch data (hypothesis)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mpistack.analysis import PracticalFloor, Verdict, compare_size

# per-launch figures as OSU prints them: two decimals, 0.01 .. 10^4
figure = st.integers(1, 10**6).map(lambda v: v / 100)
sample = st.lists(figure, min_size=2, max_size=12)
# many launches near a centre, as real runs look: centre * (1 + noise)
noisy = st.tuples(st.integers(100, 10**5), st.lists(st.integers(-30, 30), min_size=2, max_size=12)).map(
    lambda t: [round(t[0] * (1 + k / 100)) / 100 for k in t[1]]
)
NO_ABSOLUTE = PracticalFloor(relative=0.10, absolute_us=0.0)
PROPERTY = settings(max_examples=150, deadline=None)


@PROPERTY
@given(sample | noisy, sample | noisy, st.booleans(), st.integers(0, 2**31))
def test_ratio_lies_in_its_interval(candidate, baseline, higher_is_better, seed):
    result = compare_size(candidate, baseline, higher_is_better=higher_is_better, seed=seed)
    assert 0 < result.ci_low <= result.ratio <= result.ci_high < math.inf
    assert 0.0 <= result.p_value <= 1.0 and 0.0 <= result.p_value_faster <= 1.0
    medians = (float(np.median(candidate)), float(np.median(baseline)))
    assert (result.median_candidate, result.median_baseline) == medians
    expected = medians[0] / medians[1] if higher_is_better else medians[1] / medians[0]
    assert result.ratio == expected


@PROPERTY
@given(sample | noisy, sample | noisy, st.booleans(), st.integers(0, 2**31))
def test_verdicts_follow_the_one_interval_rule(candidate, baseline, higher_is_better, seed):
    """One interval decides: wholly below the band is slower, wholly above faster, inside at speed; a verdict
    needs 6 launches a side; so at speed and slower can never both hold (the gap between Y and (Y))."""
    result = compare_size(candidate, baseline, higher_is_better=higher_is_better, seed=seed)
    decided = result.verdict is not Verdict.INCONCLUSIVE
    if decided:
        assert min(result.n_candidate, result.n_baseline) >= 6
    if result.verdict is Verdict.SLOWER:
        assert result.ci_high < result.floor_low
    elif result.verdict is Verdict.FASTER:
        assert result.ci_low > result.floor_high
    elif result.verdict is Verdict.AT_SPEED:
        assert result.floor_low <= result.ci_low and result.ci_high <= result.floor_high
    else:
        assert result.reason
        inside = result.floor_low <= result.ci_low and result.ci_high <= result.floor_high
        beyond = result.ci_high < result.floor_low or result.ci_low > result.floor_high
        assert result.too_few_launches or not (inside or beyond)


@PROPERTY
@given(st.lists(st.floats(-0.5, 0.5), min_size=10, max_size=24), st.floats(0.5, 2.0), st.booleans())
def test_paired_interval_holds_its_estimate_and_follows_the_rule(log_ratios, base, higher_is_better):
    baseline = [base * (1 + 0.01 * i) for i in range(len(log_ratios))]
    factor = [math.exp(d if higher_is_better else -d) for d in log_ratios]
    candidate = [b * f for b, f in zip(baseline, factor)]
    result = compare_size(candidate, baseline, higher_is_better=higher_is_better, paired=(candidate, baseline),
                          floor=NO_ABSOLUTE)
    assert result.paired and result.n_pairs == len(log_ratios)
    assert result.ci_low <= result.ratio <= result.ci_high
    if result.verdict is Verdict.SLOWER:
        assert result.ci_high < 0.9
    if result.verdict is Verdict.AT_SPEED:
        assert 0.9 <= result.ci_low and result.ci_high <= 1.1


@PROPERTY
@given(sample | noisy, sample | noisy, st.booleans(), st.integers(-20, 20), st.integers(0, 2**31))
def test_scaling_both_sides_by_a_power_of_two_changes_nothing(candidate, baseline, higher_is_better, exponent, seed):
    """Exact in floating point: every figure, median and ratio scales without rounding."""
    floor = NO_ABSOLUTE  # an absolute floor in microseconds is deliberately not scale-free
    scale = 2.0**exponent
    first = compare_size(candidate, baseline, higher_is_better=higher_is_better, floor=floor, seed=seed)
    scaled = compare_size([scale * v for v in candidate], [scale * v for v in baseline],
                          higher_is_better=higher_is_better, floor=floor, seed=seed)
    assert scaled.verdict is first.verdict
    assert (scaled.ratio, scaled.ci_low, scaled.ci_high, scaled.p_value) == (
        first.ratio, first.ci_low, first.ci_high, first.p_value)


@PROPERTY
@given(noisy, noisy, st.booleans(), st.floats(1e-3, 1e3), st.integers(0, 2**31))
def test_scaling_both_sides_by_any_constant_keeps_the_verdict(candidate, baseline, higher_is_better, scale, seed):
    """Any positive constant: the same verdict, unless rounding puts the ratio or an interval end on a boundary
    of the parity band (then only a last-digit difference separates the two). Interval ends are computed in
    single precision (see statistics._ratio_intervals), so they agree to its rounding."""
    floor = NO_ABSOLUTE
    first = compare_size(candidate, baseline, higher_is_better=higher_is_better, floor=floor, seed=seed)
    scaled = compare_size([scale * v for v in candidate], [scale * v for v in baseline],
                          higher_is_better=higher_is_better, floor=floor, seed=seed)
    assert math.isclose(scaled.ratio, first.ratio, rel_tol=1e-12)
    assert math.isclose(scaled.ci_low, first.ci_low, rel_tol=1e-6)
    assert math.isclose(scaled.ci_high, first.ci_high, rel_tol=1e-6)
    on_edge = any(math.isclose(x, edge, rel_tol=1e-6) for x in (first.ratio, first.ci_low, first.ci_high)
                  for edge in (first.floor_low, first.floor_high))
    assume(not on_edge)
    assert scaled.verdict is first.verdict
    assert scaled.p_value == first.p_value


@PROPERTY
@given(sample | noisy, sample | noisy, st.integers(0, 2**31))
def test_swapping_sides_inverts_the_ratio_and_the_tests(candidate, baseline, seed):
    forward = compare_size(candidate, baseline, higher_is_better=True, floor=NO_ABSOLUTE, seed=seed)
    backward = compare_size(baseline, candidate, higher_is_better=True, floor=NO_ABSOLUTE, seed=seed)
    assert math.isclose(forward.ratio * backward.ratio, 1.0, rel_tol=1e-12)
    assert (forward.p_value, forward.p_value_faster) == (backward.p_value_faster, backward.p_value)
    assert not (forward.verdict is Verdict.SLOWER and backward.verdict is Verdict.SLOWER)


@PROPERTY
@given(sample | noisy, sample | noisy, st.integers(0, 2**31))
def test_latency_and_bandwidth_of_the_same_figures_are_reciprocal(candidate, baseline, seed):
    """The same numbers read as a rate and as a time: reciprocal ratios, and the one-sided tests swap."""
    rate = compare_size(candidate, baseline, higher_is_better=True, floor=NO_ABSOLUTE, seed=seed)
    time = compare_size(candidate, baseline, higher_is_better=False, floor=NO_ABSOLUTE, seed=seed)
    assert math.isclose(rate.ratio * time.ratio, 1.0, rel_tol=1e-12)
    assert (rate.p_value, rate.p_value_faster) == (time.p_value_faster, time.p_value)
