"""compare_size on synthetic per-launch data: verdicts, orientation, floors, small samples, launches needed."""

from __future__ import annotations

import math
import subprocess
import sys
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mpistack.analysis import (
    MIN_LAUNCHES,
    PracticalFloor,
    Verdict,
    compare_size,
    launches_needed,
    smallest_p_value,
)

NO_FLOOR = PracticalFloor(relative=0.0, absolute_us=0.0)


def launches(rng: np.random.Generator, median: float, spread: float, n: int) -> list[float]:
    """n per-launch figures, log-normal around ``median`` with a relative spread ``spread``."""
    return list(median * rng.lognormal(0.0, spread, n))


@pytest.mark.parametrize("higher_is_better", [True, False])
def test_clear_2x_loss_with_8_launches_is_slower(higher_is_better):
    rng = np.random.default_rng(1)
    worse = 0.5 if higher_is_better else 2.0  # half the bandwidth, or twice the time
    candidate = launches(rng, 1000.0 * worse, 0.05, 8)
    baseline = launches(rng, 1000.0, 0.05, 8)
    result = compare_size(candidate, baseline, higher_is_better=higher_is_better)
    assert result.verdict is Verdict.SLOWER, result.reason
    assert result.p_value < 0.05
    assert result.ci_high < 1.0  # the interval excludes parity
    assert result.ci_low <= result.ratio <= result.ci_high
    assert result.ratio == pytest.approx(0.5, rel=0.1)
    assert (result.n_candidate, result.n_baseline) == (8, 8)
    assert result.launches_needed is None
    assert "slower" in result.reason


def test_orientation_bandwidth_against_latency():
    rng = np.random.default_rng(2)
    low = launches(rng, 100.0, 0.02, 8)
    high = launches(rng, 150.0, 0.02, 8)
    # the candidate has the higher figure: better as a bandwidth, worse as a latency
    as_bandwidth = compare_size(high, low, higher_is_better=True)
    as_latency = compare_size(high, low, higher_is_better=False)
    assert as_bandwidth.ratio == pytest.approx(np.median(high) / np.median(low))
    assert as_latency.ratio == pytest.approx(np.median(low) / np.median(high))
    assert as_bandwidth.ratio > 1.4 and as_latency.ratio < 0.7
    assert as_bandwidth.verdict is Verdict.FASTER, as_bandwidth.reason
    assert as_latency.verdict is Verdict.SLOWER, as_latency.reason
    # the one-sided p-values are oriented too: small for "worse" only as a latency
    assert as_latency.p_value < 0.05 < as_bandwidth.p_value
    assert as_bandwidth.p_value_faster < 0.05 < as_latency.p_value_faster
    assert as_bandwidth.median_candidate == as_latency.median_candidate == pytest.approx(np.median(high))


@pytest.mark.parametrize("higher_is_better", [True, False])
def test_identical_distributions_are_at_speed_or_inconclusive(higher_is_better):
    """Equal distributions, 5% spread, 8 launches: almost always AT_SPEED or INCONCLUSIVE. A SLOWER needs a
    median ratio beyond the 10% floor *and* p < 0.05, which chance gives well under 1% of the time (seed 133 is
    one: 0.898x, p = 0.019)."""
    trials = 200
    verdicts = []
    for seed in range(trials):
        rng = np.random.default_rng(seed)
        result = compare_size(
            launches(rng, 5.0, 0.05, 8), launches(rng, 5.0, 0.05, 8), higher_is_better=higher_is_better, seed=seed
        )
        verdicts.append(result.verdict)
    assert verdicts.count(Verdict.SLOWER) <= 0.02 * trials
    assert verdicts.count(Verdict.FASTER) <= 0.02 * trials
    assert verdicts.count(Verdict.AT_SPEED) > trials / 2  # mostly settled


def test_false_slower_rate_is_below_alpha_without_a_floor():
    """With no practical floor, SLOWER rests on the rank test alone: under equal distributions it must come out
    at most about alpha of the time (the exact test is conservative with ties)."""
    trials, slower = 400, 0
    for seed in range(trials):
        rng = np.random.default_rng(10_000 + seed)
        # rounded to 2 decimals as OSU prints them, so ties occur
        candidate = np.round(launches(rng, 3.0, 0.1, 8), 2)
        baseline = np.round(launches(rng, 3.0, 0.1, 8), 2)
        result = compare_size(candidate, baseline, higher_is_better=False, floor=NO_FLOOR, seed=seed)
        slower += result.verdict is Verdict.SLOWER
    # alpha = 0.05; the binomial standard deviation at 400 trials is 0.011
    assert slower / trials <= 0.075


def test_false_slower_rate_with_large_noise_and_the_default_floor():
    trials, slower = 300, 0
    for seed in range(trials):
        rng = np.random.default_rng(20_000 + seed)
        result = compare_size(launches(rng, 1.0, 0.3, 8), launches(rng, 1.0, 0.3, 8), higher_is_better=True)
        slower += result.verdict is Verdict.SLOWER
    assert slower / trials <= 0.05


@pytest.mark.parametrize("higher_is_better", [True, False])
def test_three_launches_per_side_is_never_slower_and_says_why(higher_is_better):
    candidate = [10.0, 10.5, 11.0] if higher_is_better else [300.0, 310.0, 305.0]
    baseline = [100.0, 101.0, 102.0]  # a 10x difference in both orientations
    result = compare_size(candidate, baseline, higher_is_better=higher_is_better)
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.too_few_launches
    assert result.reason.startswith("too few launches (3 and 3) for a verdict (needs 6)")
    assert result.launches_needed is not None and result.launches_needed >= MIN_LAUNCHES
    assert result.ratio < 0.5  # the ratio is still reported


def test_smallest_p_value():
    assert smallest_p_value(3, 3) == 0.05
    assert smallest_p_value(4, 4) == pytest.approx(1 / 70)
    assert smallest_p_value(5, 5) == pytest.approx(1 / 252)
    assert smallest_p_value(2, 8) == pytest.approx(1 / 45)
    assert smallest_p_value(1000, 1000) == 0.0
    assert smallest_p_value(0, 5) == 1.0


def test_a_verdict_needs_six_launches_a_side_unless_told_otherwise():
    rng = np.random.default_rng(3)
    slow = compare_size(launches(rng, 50.0, 0.02, 4), launches(rng, 100.0, 0.02, 4), higher_is_better=True)
    assert slow.verdict is Verdict.INCONCLUSIVE and slow.too_few_launches, slow.reason
    same = [100.0, 100.1, 99.9, 100.05], [100.0, 100.02, 99.95, 100.1]
    assert compare_size(*same, higher_is_better=True).verdict is Verdict.INCONCLUSIVE
    assert compare_size(*same, higher_is_better=True, min_launches=4).verdict is Verdict.AT_SPEED
    assert compare_size(launches(rng, 50.0, 0.02, 4), launches(rng, 100.0, 0.02, 4), higher_is_better=True,
                        min_launches=4).verdict is Verdict.SLOWER


def test_one_launch_on_a_side():
    result = compare_size([5.0], [1.0, 1.1, 1.2, 1.0, 1.1, 1.2], higher_is_better=False)
    assert result.verdict is Verdict.INCONCLUSIVE and result.too_few_launches
    assert math.isnan(result.ci_low) and math.isnan(result.ci_high)
    assert "at least 2 per side" in result.reason


def test_significant_3_percent_difference_is_not_slower():
    rng = np.random.default_rng(4)
    candidate = launches(rng, 970.0, 0.003, 30)
    baseline = launches(rng, 1000.0, 0.003, 30)
    result = compare_size(candidate, baseline, higher_is_better=True)
    assert result.p_value < 1e-6  # clearly significant ...
    assert result.ratio == pytest.approx(0.97, abs=0.005)
    assert result.verdict is Verdict.AT_SPEED, result.reason  # ... but below the 10% floor
    # the same data against a 1% floor is a loss: the floor is what made the difference
    strict = compare_size(candidate, baseline, higher_is_better=True, floor=PracticalFloor(relative=0.01))
    assert strict.verdict is Verdict.SLOWER


def test_absolute_floor_applies_to_latencies_only():
    rng = np.random.default_rng(5)
    # 0.20 us native, 0.23 us in the container: 13% slower, but only 0.03 us
    candidate = launches(rng, 0.23, 0.01, 10)
    baseline = launches(rng, 0.20, 0.01, 10)
    latency = compare_size(candidate, baseline, higher_is_better=False)
    assert latency.p_value < 0.05 and latency.ratio < 0.9
    assert latency.verdict is not Verdict.SLOWER, latency.reason
    assert latency.floor_low == pytest.approx(0.20 / 0.25, rel=0.02)  # widened by 0.05 us at a 0.2 us baseline
    assert latency.verdict is Verdict.AT_SPEED, latency.reason
    relative_only = compare_size(
        candidate, baseline, higher_is_better=False, floor=PracticalFloor(relative=0.10, absolute_us=0.0)
    )
    assert relative_only.verdict is Verdict.SLOWER
    assert (relative_only.floor_low, relative_only.floor_high) == (0.9, 1.1)
    # a bandwidth ignores the absolute floor
    bandwidth = compare_size(baseline, candidate, higher_is_better=True)
    assert (bandwidth.floor_low, bandwidth.floor_high) == (0.9, 1.1)
    assert bandwidth.verdict is Verdict.SLOWER


def test_absolute_floor_on_large_latencies_changes_nothing():
    rng = np.random.default_rng(6)
    candidate = launches(rng, 230.0, 0.01, 10)
    baseline = launches(rng, 200.0, 0.01, 10)
    result = compare_size(candidate, baseline, higher_is_better=False)
    assert result.verdict is Verdict.SLOWER
    assert result.floor_low == pytest.approx(0.9)


def test_inconclusive_reports_launches_needed():
    rng = np.random.default_rng(7)
    result = compare_size(launches(rng, 1.0, 0.25, 8), launches(rng, 1.0, 0.25, 8), higher_is_better=True)
    assert result.verdict is Verdict.INCONCLUSIVE, result.reason
    assert not result.too_few_launches
    assert result.launches_needed is not None and result.launches_needed > 8
    assert "reaches" in result.reason or "by about the" in result.reason


def test_launches_needed_formula():
    # parity, CI [0.8, 1.25]: h = ln 1.25; margin to the band [0.9, 1.1] is ln 1.1; 8 and 8 launches
    expected = math.ceil(8 * (math.log(1.25) / math.log(1.1)) ** 2)
    assert launches_needed(1.0, 0.8, 1.25, 8, 8, (0.9, 1.1)) == expected == 44
    # below the band, the interval has to lie wholly below it: the margin is the distance to its lower edge
    expected = math.ceil(2 / (1 / 6 + 1 / 10) * (math.log(1.3) / math.log(0.9 / 0.8)) ** 2)
    assert launches_needed(0.8, 0.8 / 1.3, 0.8 * 1.3, 6, 10, (0.9, 1.1)) == expected
    # the forecast the old rule got wrong: 16 launches, an interval reaching 0.84, its estimate at 0.88
    assert launches_needed(0.88, 0.84, 0.95, 16, 16, (0.9, 1.1)) > 60
    # an asymmetric (paired) interval: the end that reaches past the band decides, not the mean half-width
    # (seen: 0.979, interval 0.849-0.995 after 12 rounds was forecast as "~1 more")
    expected = math.ceil(12 * (math.log(0.979 / 0.849) / math.log(0.979 / 0.9)) ** 2)
    assert launches_needed(0.979, 0.849, 0.995, 12, 12, (0.9, 1.1)) == expected == 35
    # never fewer than one more launch than now; None on a boundary, with too few launches, or beyond the cap
    assert launches_needed(1.0, 0.99, 1.01, 8, 8, (0.9, 1.1)) == 9
    assert launches_needed(0.9, 0.8, 1.0, 8, 8, (0.9, 1.1)) is None
    assert launches_needed(1.0, 0.5, 2.0, 1, 8, (0.9, 1.1)) is None
    assert launches_needed(1.0, 0.2, 5.0, 8, 8, (0.99, 1.01)) is None


def test_launches_needed_is_a_useful_estimate():
    """Repeating with the estimated number of launches settles a parity case in a good share of cases (the
    estimate puts the expected half-width at the margin, so about even odds are what it promises)."""
    settled = tried = 0
    for seed in range(40):
        rng = np.random.default_rng(30_000 + seed)
        first = compare_size(launches(rng, 1.0, 0.1, 8), launches(rng, 1.0, 0.1, 8), higher_is_better=True)
        if first.verdict is not Verdict.INCONCLUSIVE or first.launches_needed is None:
            continue
        n = first.launches_needed
        second = compare_size(launches(rng, 1.0, 0.1, n), launches(rng, 1.0, 0.1, n), higher_is_better=True)
        tried += 1
        settled += second.verdict is not Verdict.INCONCLUSIVE
    assert tried >= 10
    assert settled / tried >= 0.4


def test_deterministic_for_a_seed():
    rng = np.random.default_rng(8)
    candidate, baseline = launches(rng, 1.0, 0.2, 8), launches(rng, 1.0, 0.2, 8)
    first = compare_size(candidate, baseline, higher_is_better=False, seed=11)
    assert compare_size(candidate, baseline, higher_is_better=False, seed=11) == first
    other = compare_size(candidate, baseline, higher_is_better=False, seed=12)
    assert (other.ratio, other.p_value) == (first.ratio, first.p_value)  # only the bootstrap depends on the seed


def test_all_equal_figures_are_at_speed():
    result = compare_size([1.25] * 8, [1.25] * 8, higher_is_better=False)
    assert result.verdict is Verdict.AT_SPEED
    assert (result.ci_low, result.ratio, result.ci_high) == (1.0, 1.0, 1.0)


def test_constant_but_different_sides():
    result = compare_size([2.5] * 8, [1.25] * 8, higher_is_better=False)
    assert result.verdict is Verdict.SLOWER
    assert result.ratio == result.ci_low == result.ci_high == 0.5


@pytest.mark.parametrize(
    "candidate, baseline",
    [([], [1.0, 2.0]), ([1.0, 2.0], []), ([1.0, 0.0], [1.0, 2.0]), ([1.0, -2.0], [1.0]), ([math.nan, 1.0], [1.0]),
     ([math.inf, 1.0], [1.0])],
)
def test_rejects_figures_that_cannot_be_compared(candidate, baseline):
    with pytest.raises(ValueError):
        compare_size(candidate, baseline, higher_is_better=True)


def test_rejects_bad_parameters():
    with pytest.raises(ValueError):
        PracticalFloor(relative=1.5)
    with pytest.raises(ValueError):
        PracticalFloor(absolute_us=-1.0)
    with pytest.raises(ValueError):
        compare_size([1.0, 2.0], [1.0, 2.0], higher_is_better=True, confidence=95)
    with pytest.raises(ValueError):
        compare_size([1.0, 2.0], [1.0, 2.0], higher_is_better=True, alpha=0.0)


def test_timing_23_sizes_of_8_launches():
    rng = np.random.default_rng(9)
    data = [(launches(rng, 2.0, 0.05, 8), launches(rng, 2.0, 0.05, 8)) for _ in range(23)]
    compare_size(*data[0], higher_is_better=False)  # imports and caches
    start = time.perf_counter()
    for size, (candidate, baseline) in enumerate(data):
        compare_size(candidate, baseline, higher_is_better=False, size=2**size)
    per_size_ms = (time.perf_counter() - start) * 1000 / len(data)
    print(f"compare_size: {per_size_ms:.2f} ms per size (23 sizes x 8 launches per side)")
    assert per_size_ms < 50  # about 3.3 ms on a development machine; generous for loaded CI runners


def test_the_package_imports_on_its_own():
    """mpistack.analysis needs nothing else from mpistack (and so no database layer)."""
    code = (
        "import sys, mpistack.analysis\n"
        "other = sorted(m for m in sys.modules if m.startswith('mpistack') and not m.startswith('mpistack.analysis')"
        " and m != 'mpistack')\n"
        "print(other, 'sqlalchemy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] False"


def test_batched_sizes_give_the_numbers_of_one_call_per_size():
    from mpistack.analysis import compare_sizes

    rng = np.random.default_rng(5)
    sizes = [2**power for power in range(12)]
    candidate = {size: launches(rng, 10.0 + size / 100, 0.1, 8) for size in sizes}
    baseline = {size: launches(rng, 9.0 + size / 100, 0.1, 8) for size in sizes}
    candidate[4] = candidate[4][:6]  # a size with fewer launches goes through a batch of its own
    batched = compare_sizes(candidate, baseline, higher_is_better=False, seed=3)
    single = [compare_size(candidate[size], baseline[size], higher_is_better=False, seed=3, size=size)
              for size in sizes]
    assert [result.size for result in batched] == sizes
    for one, many in zip(single, batched):
        assert (one.ratio, one.ci_low, one.ci_high, one.p_value, one.p_value_faster, one.verdict) == pytest.approx(
            (many.ratio, many.ci_low, many.ci_high, many.p_value, many.p_value_faster, many.verdict))


@pytest.mark.parametrize("n_candidate,n_baseline", [(6, 6), (7, 10), (12, 9)])
def test_bootstrap_interval_agrees_with_scipy_bootstrap(n_candidate, n_baseline):
    from scipy import stats

    rng = np.random.default_rng(n_candidate * 100 + n_baseline)
    candidate = launches(rng, 120.0, 0.15, n_candidate)
    baseline = launches(rng, 100.0, 0.15, n_baseline)
    ours = compare_size(candidate, baseline, higher_is_better=True, n_resamples=20000, seed=1)
    reference = stats.bootstrap(
        (np.array(candidate), np.array(baseline)),
        lambda c, b, axis=-1: np.median(c, axis=axis) / np.median(b, axis=axis),
        vectorized=True, paired=False, n_resamples=20000, method="percentile", confidence_level=0.95,
        random_state=2,
    ).confidence_interval
    # the same distribution, two independent Monte Carlo draws: equal within a few percent
    assert ours.ci_low == pytest.approx(reference.low, rel=0.03)
    assert ours.ci_high == pytest.approx(reference.high, rel=0.03)


def _every_resample_interval(candidate: np.ndarray, baseline: np.ndarray, *, seed: int, n_resamples: int,
                             confidence: float) -> list[tuple[float, float]]:
    """The percentile interval the long way: a 0.5-weight matrix maps each sorted sample to the medians of all
    its resamples (one matrix product per side), then ``np.quantile`` over every resampled ratio."""
    def medians(sample: np.ndarray, seed: int) -> np.ndarray:
        n = sample.shape[1]
        drawn = np.sort(np.random.default_rng(seed).integers(0, n, size=(n_resamples, n)), axis=1)
        selector = np.zeros((n, n_resamples), dtype=np.float32)
        np.add.at(selector, (drawn[:, (n - 1) // 2], np.arange(n_resamples)), 0.5)
        np.add.at(selector, (drawn[:, n // 2], np.arange(n_resamples)), 0.5)
        return np.sort(sample, axis=1).astype(np.float32) @ selector

    ratios = medians(candidate, seed) / medians(baseline, seed + 1)
    tail = (1.0 - confidence) / 2.0
    lows, highs = np.quantile(ratios, [tail, 1.0 - tail], axis=1)
    return list(zip(lows.tolist(), highs.tolist()))


@pytest.mark.parametrize("n_candidate,n_baseline,confidence,n_resamples", [
    (8, 8, 0.95, 2000), (6, 6, 0.95, 2000), (3, 7, 0.9, 2000), (12, 5, 0.99, 500), (2, 2, 0.95, 2000),
    (20, 16, 0.95, 2000), (8, 8, 0.5, 7)])
def test_bootstrap_intervals_are_those_of_every_resample_to_the_last_bit(n_candidate, n_baseline, confidence,
                                                                         n_resamples):
    """The intervals are read off the distinct resampled medians and how often each was drawn; they must be
    exactly what resampling every ratio gives, ties between launches included."""
    from mpistack.analysis.statistics import DEFAULT_FLOOR, _ratio_intervals, _Settings

    rng = np.random.default_rng(n_candidate * 1000 + n_baseline)
    candidate = rng.lognormal(0.0, 0.2, size=(300, n_candidate))
    baseline = rng.lognormal(0.0, 0.2, size=(300, n_baseline))
    candidate[::3] = np.round(candidate[::3], 1) + 0.1  # repeated figures: equal resampled ratios
    settings = _Settings(True, DEFAULT_FLOOR, confidence, 0.05, MIN_LAUNCHES)
    ours = _ratio_intervals(candidate, baseline, settings, 11, n_resamples)
    assert ours == _every_resample_interval(candidate, baseline, seed=11, n_resamples=n_resamples,
                                            confidence=confidence)


def test_quantiles_of_repeated_values_are_numpys():
    from mpistack.analysis.statistics import _repeated_quantiles

    rng = np.random.default_rng(4)
    values = rng.lognormal(size=(50, 40)).astype(np.float32)
    values[7, 3] = np.nan
    values[9] = values[9, 0]  # one value throughout
    counts = rng.integers(1, 30, size=40)
    for probabilities in [(0.025, 0.975), (0.0001, 0.5, 0.9999), (0.3,)]:
        expected = np.quantile(np.repeat(values, counts, axis=1), probabilities, axis=1)
        assert np.array_equal(_repeated_quantiles(values, counts, probabilities), expected, equal_nan=True)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 8), min_size=2, max_size=12), st.lists(st.integers(1, 8), min_size=2, max_size=12),
       st.sampled_from(["less", "greater"]))
def test_the_exact_rank_test_is_scipys(x, y, alternative):
    """The one-sided Mann-Whitney p-value made without importing scipy.stats is SciPy's exact one, ties (few
    distinct values here, as a loaded machine's repeated figures give) included."""
    from scipy.stats import mannwhitneyu

    from mpistack.analysis.statistics import _exact_rank_test

    expected = mannwhitneyu(x, y, alternative=alternative, method="exact").pvalue
    assert _exact_rank_test([float(v) for v in x], [float(v) for v in y], alternative) == pytest.approx(
        expected, rel=1e-9, abs=1e-12)
