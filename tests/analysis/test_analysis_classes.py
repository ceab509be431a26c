"""Row classes from per-size comparisons: Y, (Y), ?, N; slow ranges per regime; size formatting."""

from __future__ import annotations

import numpy as np
import pytest

from mpistack.analysis import (
    MAX_INCONCLUSIVE,
    SizeComparison,
    SizeRanges,
    SlowRange,
    Verdict,
    adjust_for_sizes,
    classify,
    compare_size,
    failed_class,
    format_size,
    format_sizes,
    merge_adjacent,
    untested_class,
)

SIZES = [2**i for i in range(23)]  # 1 B .. 4 MiB, as OSU's point-to-point tests


def comparison(size, verdict, ratio=1.0, *, n=8, needed=None, too_few=False, p=None):
    """A SizeComparison with the fields classify reads; the statistics are filled in plausibly (a SLOWER or FASTER
    size has p = 1e-4, as 8 clearly separated launches per side give, unless ``p`` says otherwise)."""
    strong = 1e-4 if p is None else p
    return SizeComparison(
        n_candidate=n, n_baseline=n, median_candidate=1.0, median_baseline=ratio, ratio=ratio,
        ci_low=ratio * 0.95, ci_high=ratio * 1.05, verdict=verdict, reason=verdict.value,
        p_value=strong if verdict is Verdict.SLOWER else 0.5,
        p_value_faster=strong if verdict is Verdict.FASTER else 0.5,
        launches_needed=needed, floor_low=0.9, floor_high=1.1, higher_is_better=False, size=size,
        too_few_launches=too_few,
    )


def row(verdicts: dict[int, tuple[Verdict, float]], default=(Verdict.AT_SPEED, 1.0), **kwargs):
    return [comparison(size, *verdicts.get(size, default), **kwargs) for size in SIZES]


@pytest.mark.parametrize(
    "size, text",
    [(1, "1 B"), (512, "512 B"), (1023, "1023 B"), (1024, "1 KiB"), (1536, "1.5 KiB"), (8192, "8 KiB"),
     (524288, "512 KiB"), (1048576, "1 MiB"), (4194304, "4 MiB"), (2**30, "1 GiB"), (None, "no size")],
)
def test_format_size(size, text):
    assert format_size(size) == text


def test_format_sizes():
    assert format_sizes([1, 2, 4, 8192]) == "1 B–8 KiB"
    assert format_sizes([1048576]) == "1 MiB"
    assert format_sizes([]) == ""


def test_merge_adjacent_follows_the_tested_order():
    assert merge_adjacent([1, 2, 4, 8, 16], {1, 2, 8}) == [[1, 2], [8]]
    assert merge_adjacent([1, 2, 4, 8, 16], set()) == []
    assert merge_adjacent([1, 2, 4, 8, 16], {1, 2, 4, 8, 16}) == [[1, 2, 4, 8, 16]]
    assert merge_adjacent([1, 4, 16], {1, 4}) == [[1, 4]]  # adjacent among the sizes tested
    assert merge_adjacent([1, 2, 4], {2, 99}) == [[2]]  # entries not tested are ignored


def test_size_ranges():
    ranges = SizeRanges()
    assert [ranges.regime(s) for s in (1, 8191, 8192, 524287, 524288, 4194304, None)] == [
        "small", "small", "mid", "mid", "large", "large", "small"]
    custom = SizeRanges(small_below=64 * 1024, large_from=64 * 1024)
    assert [custom.regime(s) for s in (8192, 65536)] == ["small", "large"]
    with pytest.raises(ValueError):
        SizeRanges(small_below=1024, large_from=512)


def test_all_at_speed_is_y():
    result = classify(row({}))
    assert result.label == "Y"
    assert result.slow == [] and result.inconclusive == []
    assert result.reason == "at native speed at all 23 sizes (1 B–4 MiB)"


def test_slow_small_messages_is_y_in_parentheses():
    slow = {s: (Verdict.SLOWER, 0.42 if s == 1 else 0.6) for s in SIZES if s < 8192}
    result = classify(row(slow))
    assert result.label == "(Y)"
    assert result.slow == [SlowRange("small", [s for s in SIZES if s < 8192], 0.42, 1)]
    assert result.reason == "slower at 1 B–4 KiB (small messages): 0.42× worst at 1 B"


def test_slow_ranges_split_at_gaps_and_regimes():
    slow = {2: (Verdict.SLOWER, 0.8), 4: (Verdict.SLOWER, 0.7),  # small, adjacent
            64: (Verdict.SLOWER, 0.85),  # small, alone
            4096: (Verdict.SLOWER, 0.5), 8192: (Verdict.SLOWER, 0.6), 16384: (Verdict.SLOWER, 0.4)}  # crosses 8 KiB
    result = classify(row(slow))
    assert result.label == "(Y)"
    assert [(r.regime, r.sizes, r.worst_ratio, r.worst_size) for r in result.slow] == [
        ("small", [2, 4], 0.7, 4), ("small", [64], 0.85, 64), ("small", [4096], 0.5, 4096),
        ("mid", [8192, 16384], 0.4, 16384)]
    assert result.reason.startswith("slower at 2 B–4 B (small messages): 0.7× worst at 4 B; 64 B (small messages)")
    assert "8 KiB–16 KiB (mid-size messages): 0.4× worst at 16 KiB" in result.reason


def test_one_slow_size_among_fast_ones_is_not_averaged_away():
    # the geometric mean of these ratios is above 1, but one size is a real loss
    verdicts = {s: (Verdict.FASTER, 1.5) for s in SIZES}
    verdicts[1048576] = (Verdict.SLOWER, 0.5)
    result = classify(row(verdicts))
    assert result.label == "(Y)"
    assert [r.sizes for r in result.slow] == [[1048576]]
    assert result.slow[0].regime == "large"


def test_slow_with_inconclusive_sizes_stays_y_in_parentheses():
    verdicts = {s: (Verdict.INCONCLUSIVE, 1.0) for s in SIZES[:12]}
    verdicts[4194304] = (Verdict.SLOWER, 0.7)
    result = classify(row(verdicts))
    assert result.label == "(Y)"
    assert result.reason.endswith("; inconclusive at 12 of 23 sizes")


def test_few_inconclusive_sizes_not_leaning_slower_is_y_with_a_note():
    verdicts = {4: (Verdict.INCONCLUSIVE, 0.95), 1048576: (Verdict.INCONCLUSIVE, 1.02)}
    result = classify(row(verdicts))
    assert result.label == "Y"
    assert result.inconclusive == [4, 1048576]
    assert result.reason == "at native speed at 21 of 23 sizes; inconclusive at 4 B, 1 MiB (none leaning slower)"


def test_an_inconclusive_size_leaning_slower_makes_it_a_question():
    verdicts = {65536: (Verdict.INCONCLUSIVE, 0.8)}
    result = classify(row(verdicts, needed=20))
    assert result.label == "?"
    assert result.reason == (
        "inconclusive at 1 of 23 sizes, leaning slower at 64 KiB (0.8× at 64 KiB): "
        "~12 more launches per side would settle it")
    assert result.launches_needed == 20


def test_many_inconclusive_sizes_make_it_a_question():
    verdicts = {s: (Verdict.INCONCLUSIVE, 1.0) for s in SIZES[:12]}
    result = classify(row(verdicts, needed=18))
    assert result.label == "?"
    assert result.reason == "inconclusive at 12 of 23 sizes: ~10 more launches per side would settle half of them"
    assert result.inconclusive == SIZES[:12]


def test_the_inconclusive_allowance_is_configurable():
    verdicts = {s: (Verdict.INCONCLUSIVE, 1.0) for s in SIZES[:4]}  # 4 of 23 = 17%
    assert classify(row(verdicts)).label == "Y"
    assert 4 / 23 <= MAX_INCONCLUSIVE
    assert classify(row(verdicts), max_inconclusive=0.1).label == "?"
    assert classify(row(verdicts), max_inconclusive=0.0).label == "?"
    verdicts = {s: (Verdict.INCONCLUSIVE, 1.0) for s in SIZES[:5]}  # 22%
    assert classify(row(verdicts)).label == "?"
    assert classify(row(verdicts), max_inconclusive=0.5).label == "Y"


def test_too_few_launches_everywhere():
    result = classify(row({}, default=(Verdict.INCONCLUSIVE, 1.0), n=3, needed=6, too_few=True))
    assert result.label == "?"
    assert result.reason == (
        "inconclusive at 23 of 23 sizes: too few launches (as few as 3 on a side; a verdict needs 6)")


def test_faster_sizes_are_noted():
    verdicts = {s: (Verdict.FASTER, 1.3 if s != 2097152 else 1.4) for s in SIZES if s >= 1048576}
    result = classify(row(verdicts))
    assert result.label == "Y"
    assert result.faster == [1048576, 2097152, 4194304]
    assert result.reason == "at native speed at all 23 sizes (1 B–4 MiB); faster at 1 MiB–4 MiB (1.4× best at 2 MiB)"


def test_sizeless_benchmark_and_order():
    result = classify([comparison(None, Verdict.SLOWER, 0.5)])
    assert result.label == "(Y)"
    assert result.reason == "slower at no size (small messages): 0.5× worst at no size"
    shuffled = list(reversed(row({1: (Verdict.SLOWER, 0.5), 2: (Verdict.SLOWER, 0.6)})))
    assert [r.sizes for r in classify(shuffled).slow] == [[1, 2]]


def test_failed_untested_and_empty():
    assert failed_class("timed out after 600 s").label == "N"
    assert failed_class("timed out after 600 s").reason == "timed out after 600 s"
    assert failed_class("  ").reason == "failed"
    assert untested_class("no native run to compare").label == "?"
    empty = classify([])
    assert empty.label == "?" and "untested" in empty.reason


def test_duplicate_sizes_are_rejected():
    with pytest.raises(ValueError):
        classify([comparison(8, Verdict.AT_SPEED), comparison(8, Verdict.AT_SPEED)])


def test_end_to_end_small_message_latency_loss():
    """A container whose small-message latency is 1.6x native and whose other sizes match, 8 launches a side."""
    rng = np.random.default_rng(0)
    comparisons = []
    for size in SIZES:
        native = 0.5 + size / 2e3  # us
        container = native * (1.6 if size < 8192 else 1.0)
        comparisons.append(compare_size(
            container * rng.lognormal(0, 0.03, 8), native * rng.lognormal(0, 0.03, 8), higher_is_better=False,
            size=size, seed=size))
    result = classify(comparisons)
    assert result.label == "(Y)", result.reason
    assert [(r.regime, r.sizes) for r in result.slow] == [("small", [s for s in SIZES if s < 8192])]
    assert 0.55 < result.slow[0].worst_ratio < 0.7
    assert result.reason.startswith("slower at 1 B–4 KiB (small messages): 0.")


def test_a_lone_slower_size_must_survive_the_adjustment_across_sizes():
    verdicts = {65536: (Verdict.SLOWER, 0.85)}
    lone = row(verdicts, p=0.02)  # significant alone, not among 23 sizes (adjusted p = 0.02 * 23 > 0.05)
    result = classify(lone)
    assert result.label == "?"
    assert result.unconfirmed == [65536] and result.inconclusive == [65536]
    assert result.reason.startswith("inconclusive at 1 of 23 sizes, leaning slower at 64 KiB (0.85× at 64 KiB)")
    assert result.reason.endswith("; 64 KiB not confirmed across the 23 sizes")
    unadjusted = classify(lone, adjust=False)
    assert unadjusted.label == "(Y)" and unadjusted.unconfirmed == []
    # a strong lone loss survives: 1e-4 * 23 < 0.05
    assert classify(row(verdicts)).label == "(Y)"
    # ten sizes at p = 0.01 survive together: Benjamini-Hochberg rewards a consistent pattern (0.01 * 23 / 10)
    many = {s: (Verdict.SLOWER, 0.8) for s in SIZES[-10:]}
    together = classify(row(many, p=0.01))
    assert together.label == "(Y)" and together.unconfirmed == []
    assert [r.sizes for r in together.slow] == [SIZES[-10:-4], SIZES[-4:]]  # mid, then large


def test_an_unconfirmed_faster_size_is_only_inconclusive():
    result = classify(row({1024: (Verdict.FASTER, 1.3)}, p=0.03))
    assert result.label == "Y"
    assert result.faster == [] and result.unconfirmed == [1024]
    assert result.reason == (
        "at native speed at 22 of 23 sizes; inconclusive at 1 KiB (none leaning slower); "
        "1 KiB not confirmed across the 23 sizes")


def test_adjust_for_sizes_keeps_other_verdicts():
    comparisons = row({1: (Verdict.SLOWER, 0.5), 2: (Verdict.SLOWER, 0.85), 4: (Verdict.INCONCLUSIVE, 1.0)})
    comparisons[1] = comparison(2, Verdict.SLOWER, 0.85, p=0.04)
    adjusted = adjust_for_sizes(comparisons)
    assert [c.verdict for c in adjusted[:3]] == [Verdict.SLOWER, Verdict.INCONCLUSIVE, Verdict.INCONCLUSIVE]
    assert "not confirmed across 23 sizes (adjusted p = 0.46)" in adjusted[1].reason
    assert adjusted[1].launches_needed is not None
    assert adjusted[3:] == comparisons[3:]
    assert adjust_for_sizes([]) == []


def test_rows_at_speed_are_rarely_called_slower():
    """Every size at speed, 10% spread per launch, 8 launches, sizes independent (the worst case): each size
    alone is falsely SLOWER about 1% of the time, so without the adjustment about a third of such rows would be
    (Y); with it, about alpha or less."""
    rows = 30
    adjusted = unadjusted = 0
    for seed in range(rows):
        rng = np.random.default_rng(40_000 + seed)
        comparisons = [
            compare_size(rng.lognormal(0, 0.1, 8), rng.lognormal(0, 0.1, 8), higher_is_better=True, size=s, seed=s)
            for s in SIZES
        ]
        adjusted += classify(comparisons).label == "(Y)"
        unadjusted += classify(comparisons, adjust=False).label == "(Y)"
    assert adjusted <= 0.1 * rows
    assert unadjusted >= adjusted
