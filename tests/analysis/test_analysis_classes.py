"""Row classes from comparisons per regime and per size: Y, (Y), ?, N; where a row is slower; size formatting."""

from __future__ import annotations

import pytest

from mpistack.analysis import (
    SizeComparison,
    SizeRanges,
    SlowRange,
    Verdict,
    classify,
    failed_class,
    format_size,
    format_sizes,
    merge_adjacent,
    untested_class,
)

SIZES = [2**i for i in range(23)]  # 1 B .. 4 MiB, as OSU's point-to-point tests


def comparison(size, verdict, ratio=1.0, *, n=8, needed=None, too_few=False, width=0.02):
    """A SizeComparison with the fields classify reads: an interval of ``ratio`` +- ``width`` (relative)."""
    return SizeComparison(
        n_candidate=n, n_baseline=n, median_candidate=1.0, median_baseline=ratio, ratio=ratio,
        ci_low=ratio * (1 - width), ci_high=ratio * (1 + width), verdict=verdict, reason=verdict.value,
        p_value=float("nan"), launches_needed=needed, floor_low=0.9, floor_high=1.1, higher_is_better=False,
        size=size, too_few_launches=too_few,
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


def regimes(**units):
    """Regime comparisons: ``small=(Verdict.AT_SPEED, 1.0)``..."""
    return {name: comparison(None, *unit) for name, unit in units.items()}


AT_SPEED = (Verdict.AT_SPEED, 1.0)


def test_all_at_speed_is_y():
    result = classify(row({}))
    assert result.label == "Y"
    assert result.slow == [] and result.inconclusive == []
    assert result.reason == "at native speed at all 23 sizes (1 B–4 MiB)"
    by_regime = classify(row({}), regimes(small=AT_SPEED, mid=AT_SPEED, large=AT_SPEED))
    assert by_regime.label == "Y"
    assert by_regime.reason.startswith("at native speed in every regime (small 1.00× (CI 0.98–1.02), mid 1.00×")
    assert by_regime.stability > 0.99 and by_regime.unstable == ""


def test_a_ratio_made_parity_by_the_floor_in_microseconds_says_so():
    """0.80× at a 0.2 us latency is 0.05 us: inside the band the absolute floor widens, so Y, and the reason names
    the band instead of leaving a reader to wonder how 0.80× is native speed."""
    import dataclasses

    small = dataclasses.replace(comparison(None, Verdict.AT_SPEED, 0.80), floor_low=0.78, floor_high=1.28)
    result = classify(row({}), {"small": small, "mid": comparison(None, *AT_SPEED)})
    assert result.label == "Y"
    assert "small 0.80× (CI 0.78–0.82) within the band 0.78–1.28×, widened at these latencies by the floor in " \
           "microseconds" in result.reason
    assert "mid 1.00× (CI 0.98–1.02);" in result.reason  # a relative band, a ratio near 1: nothing to add


def test_regimes_decide_and_sizes_describe():
    """Open sizes do not stop a row whose regimes are all at speed; a slower regime makes it (Y) and names the
    sizes leaning slower, with the regime's estimate first."""
    sizes = row({4: (Verdict.INCONCLUSIVE, 0.95), 1048576: (Verdict.INCONCLUSIVE, 1.02)})
    assert classify(sizes, regimes(small=AT_SPEED, mid=AT_SPEED, large=AT_SPEED)).label == "Y"
    assert classify(sizes).label == "?"  # deciding by size, an open size is open
    small_loss = row({s: (Verdict.INCONCLUSIVE, 0.8) for s in (1, 2, 4)} | {8: (Verdict.SLOWER, 0.6)})
    result = classify(small_loss, regimes(small=(Verdict.SLOWER, 0.7), mid=AT_SPEED, large=AT_SPEED))
    assert result.label == "(Y)"
    assert result.slow == [SlowRange("small", [1, 2, 4, 8], 0.6, 8, 0.7, 0.7 * 0.98, 0.7 * 1.02)]
    assert result.reason == "slower at 1 B–8 B (small messages): 0.70× (CI 0.69–0.71), worst 0.60× at 8 B"


def test_an_isolated_loss_in_a_regime_at_speed_is_flagged():
    sizes = row({65536: (Verdict.SLOWER, 0.8)})
    result = classify(sizes, regimes(small=AT_SPEED, mid=AT_SPEED, large=AT_SPEED))
    assert result.label == "Y"
    assert [c.size for c in result.isolated] == [65536]
    assert result.reason.endswith("; isolated loss at 64 KiB 0.80× (CI 0.78–0.82)")


def test_an_open_regime_makes_it_a_question_with_its_graded_reason():
    open_mid = comparison(None, Verdict.INCONCLUSIVE, 0.9, needed=24, width=0.05)
    open_mid = SizeComparison(**{**open_mid.__dict__, "reason": "0.9× (90% CI 0.855–0.945): slower, by about the "
                                                                 "10% floor (not shown to be beyond it)"})
    result = classify(row({}), {"small": comparison(None, *AT_SPEED), "mid": open_mid,
                                "large": comparison(None, *AT_SPEED)})
    assert result.label == "?"
    assert result.reason == ("not settled: mid-size messages 0.9× (90% CI 0.855–0.945): slower, by about the 10% "
                             "floor (not shown to be beyond it); ~16 more launches per side would settle it")
    assert result.launches_needed == 24


def test_a_forecast_far_beyond_the_launches_made_is_not_quoted():
    """317 launches forecast from 8 is the spread extrapolated, not an estimate: the advice is a quieter machine."""
    far = comparison(None, Verdict.INCONCLUSIVE, 0.9, needed=317, width=0.2)
    result = classify(row({}), {"small": comparison(None, *AT_SPEED), "mid": far,
                                "large": comparison(None, *AT_SPEED)})
    assert result.label == "?" and "317" not in result.reason and "309" not in result.reason
    assert result.cause.endswith("more launches alone are unlikely to settle it (it would take over 4× the 8 made "
                                 "at this spread): a quieter machine")


def test_rows_open_for_the_same_reason_share_their_cause():
    """The cause leaves out each row's own figures, so a matrix cell can group the benchmarks open alike."""
    first = classify(row({}), regimes(small=AT_SPEED, mid=(Verdict.INCONCLUSIVE, 0.93), large=AT_SPEED))
    second = classify(row({}), regimes(small=AT_SPEED, mid=(Verdict.INCONCLUSIVE, 1.07), large=(Verdict.FASTER, 1.3)))
    assert first.cause == second.cause == (
        "not settled at mid-size messages: more launches alone are unlikely to settle it (the estimate sits on a "
        "decision edge)")
    assert classify(row({}, default=(Verdict.INCONCLUSIVE, 1.0), n=3, needed=6, too_few=True)).cause == (
        "too few launches (as few as 3 on a side; a verdict needs 6)")


def test_slower_wins_over_open_regimes():
    result = classify(row({}), regimes(small=(Verdict.SLOWER, 0.5), mid=(Verdict.INCONCLUSIVE, 1.0),
                                       large=AT_SPEED))
    assert result.label == "(Y)"
    assert result.reason.endswith("; not settled at mid-size messages")


def test_a_decision_near_its_edge_is_marked_unstable():
    """An interval that only just fits inside the band: a rerun keeps Y well under 80 % of the time."""
    edge = comparison(None, Verdict.AT_SPEED, 0.93, width=0.03)  # 0.902..0.958, band edge 0.9
    result = classify(row({}), {"small": edge, "mid": comparison(None, *AT_SPEED), "large": comparison(None, *AT_SPEED)})
    assert result.label == "Y"
    assert result.stability < 0.8
    assert result.unstable == "small messages at 0.93× (CI 0.90–0.96)"
    assert "may change on a rerun" in result.reason


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
    verdicts = {s: (Verdict.FASTER, 1.5) for s in SIZES}
    verdicts[1048576] = (Verdict.SLOWER, 0.5)
    result = classify(row(verdicts))
    assert result.label == "(Y)"
    assert [r.sizes for r in result.slow] == [[1048576]]
    assert result.slow[0].regime == "large"


def test_too_few_launches_with_a_wide_spread_quote_the_minimum_not_a_forecast():
    """Three launches a side, spread wide: the interval arithmetic would forecast hundreds of launches, which from
    so few is mostly their spread; the cause names the rule's minimum instead."""
    sizes = row({}, default=(Verdict.INCONCLUSIVE, 1.0), n=3, needed=937, too_few=True)
    result = classify(sizes)
    assert result.label == "?" and result.launches_needed == 937
    assert result.reason == "too few launches (as few as 3 on a side; a verdict needs at least 6, more at this spread)"


def test_too_few_launches_everywhere():
    result = classify(row({}, default=(Verdict.INCONCLUSIVE, 1.0), n=3, needed=6, too_few=True))
    assert result.label == "?"
    assert result.reason == "too few launches (as few as 3 on a side; a verdict needs 6)"


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




def test_a_row_is_settled_by_one_regime_shown_slower_so_its_forecast_is_that_regimes():
    """One open regime leaning slower settles the row as (Y) alone; another on a band edge (no forecast) does
    not make the row "unlikely to settle" (a replay of stored rounds found such a row settled by the launches
    the forecast had given up on)."""
    leaning_slower = comparison(None, Verdict.INCONCLUSIVE, 0.67, needed=38, width=0.3)
    on_an_edge = comparison(None, Verdict.INCONCLUSIVE, 1.11, needed=None, width=0.1)
    result = classify(row({}), {"small": leaning_slower, "mid": on_an_edge, "large": comparison(None, *AT_SPEED)})
    assert result.label == "?" and result.launches_needed == 38
    # leaning neither way, every open regime must settle: the largest need, or none when one has none
    both = {"small": comparison(None, Verdict.INCONCLUSIVE, 0.95, needed=30, width=0.1),
            "mid": comparison(None, Verdict.INCONCLUSIVE, 1.0, needed=80, width=0.15)}
    assert classify(row({}), both).launches_needed == 80
    assert classify(row({}), {**both, "large": on_an_edge}).launches_needed is None
