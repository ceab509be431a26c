"""Candidate against baseline at one message size (or one size regime): a ratio, its interval, a verdict.

The unit of evidence is a *launch* (one ``mpirun``/``srun``): each side gives one figure per launch (for example
OSU's average latency at that size in that launch), never one figure per iteration, because iterations within a
launch share a placement, a warm-up and a noise state and are not independent repeats (Hoefler & Belli,
"Scientific Benchmarking of Parallel Computing Systems", SC15, DOI 10.1145/2807591.2807644, section 4.1).

One interval decides, and one rule reads it (two one-sided tests; Schuirmann 1987; Lakens, "Equivalence Tests",
https://doi.org/10.1177/1948550617697177):

* the interval is that of the log ratio at level ``1 - 2 alpha`` (90 % for alpha = 5 %), oriented so that 1.0 is
  parity and below 1.0 a loss (bandwidth: candidate / baseline; time: baseline / candidate);
* AT_SPEED when it lies inside the parity band (equivalence), SLOWER when it lies wholly below the band and
  FASTER when wholly above it (a minimum-effect test), INCONCLUSIVE otherwise, with a graded reason. Between the
  edges of ``Y`` and ``(Y)`` there is thereby a gap of two interval half-widths: a row cannot be ``Y`` in one run
  and ``(Y)`` in the next unless its estimate moves by that much.

Two ways to get the interval:

* *paired* (launches scheduled in rounds, a candidate launch next to its baseline's): the log ratio of each
  candidate launch to the baseline launch of its block, summarised by the Hodges-Lehmann estimate (the median of
  the Walsh averages) with the exact Wilcoxon signed-rank interval. Neighbouring launches share the machine's
  slow modes, which the pair's ratio cancels;
* *unpaired* (ingested files, references, launches without rounds): the ratio of the two medians with a
  percentile bootstrap over launches, each side resampled on its own (Hoefler & Belli rule 4: a ratio of
  summaries, never a summary of ratios). A one-sided Mann-Whitney U p-value is kept beside it as a description
  only: its estimand (stochastic order) is not the interval's.

All functions here are pure: no I/O, no database, nothing from the rest of mpistack.
"""

from __future__ import annotations

import enum
import functools
import math
from dataclasses import dataclass
from statistics import NormalDist, median
from typing import Hashable, Mapping, Sequence

import numpy as np

__all__ = [
    "DEFAULT_FLOOR",
    "MIN_LAUNCHES",
    "MIN_PAIRS",
    "N_RESAMPLES",
    "PracticalFloor",
    "SizeComparison",
    "Verdict",
    "compare_many",
    "compare_size",
    "compare_sizes",
    "launches_needed",
    "replication_probability",
    "signed_rank_interval",
    "smallest_p_value",
]


#: the normal distribution's quantiles and tail areas, from the standard library: importing scipy.stats for them
#: alone costs a report more than its whole analysis of a paired campaign
_STANDARD_NORMAL = NormalDist()


def _scipy_stats():
    """scipy.stats, imported on first use: it costs about a second, which a dry run and the listing verbs, that
    need only this module's constants and the exact signed-rank interval, should not pay."""
    from scipy import stats

    return stats


#: Launches per side needed before a confidence interval is trusted for an at-speed claim: Hoefler & Belli
#: (SC15, section 4.2.2) state that more than 5 measurements are needed to assess a confidence interval
#: nonparametrically; the exact binomial 95% interval of a median exists from 6 values on.
MIN_LAUNCHES = 6

#: Pairs needed before a comparison is paired: from 10 pairs on, the exact 90 % signed-rank interval excludes
#: more Walsh averages at each end (k = 11 of 55) than one pair can make (10), so a single wild pair (a launch
#: that hit a slow mode its partner missed) cannot stretch the interval; with 6 pairs (k = 2) it can. Fewer
#: pairs are compared unpaired, on the medians of each side.
MIN_PAIRS = 10

#: Bootstrap resamples per comparison: the Monte Carlo error of a 2.5% percentile from 2000 resamples is well below
#: the width of the intervals seen at 6 to 20 launches.
N_RESAMPLES = 2000

#: Above this many launch pairs the Mann-Whitney p-value is taken from the normal approximation (with tie
#: correction) instead of the exact null distribution; below it the exact distribution is cheap.
_EXACT_LIMIT = 2500

#: ``launches_needed`` estimates above this are reported as None ("cannot be settled by repeating"): the ratio sits
#: on a decision boundary.
_NEEDED_CAP = 1000


class Verdict(enum.Enum):
    """What one size's comparison says about the candidate."""

    AT_SPEED = "at speed"
    SLOWER = "slower"
    FASTER = "faster"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class PracticalFloor:
    """The smallest difference that counts.

    ``relative``: a loss or gain smaller than this fraction of the baseline is practically irrelevant (0.10 = 10%).
    ``absolute_us``: for lower-is-better figures (times, in microseconds), a difference smaller than this many
    microseconds is irrelevant too, however large it is relative to a tiny latency. It is ignored for
    higher-is-better figures (bandwidths, rates). 0.05 us is five steps of the 0.01 us resolution OSU prints
    latencies with. Set it to 0 to judge times on the relative floor alone.
    """

    relative: float = 0.10
    absolute_us: float = 0.05

    def __post_init__(self) -> None:
        if not 0.0 <= self.relative < 1.0 or not math.isfinite(self.relative):
            raise ValueError(f"relative floor must be in [0, 1), got {self.relative!r}")
        if not self.absolute_us >= 0.0 or not math.isfinite(self.absolute_us):
            raise ValueError(f"absolute floor must be a finite number >= 0, got {self.absolute_us!r}")

    def band(self, median_baseline: float, *, higher_is_better: bool) -> tuple[float, float]:
        """The interval of ratios that are practically parity.

        It is ``[1 - relative, 1 + relative]``, widened for lower-is-better figures to every ratio whose absolute
        difference from the baseline median is at most ``absolute_us``: with the ratio ``r = baseline / candidate``
        and a baseline median ``b``, a candidate ``b + d`` gives ``r = b / (b + d)``, so ``|d| <= a`` is
        ``b / (b + a) <= r <= b / (b - a)`` (no upper bound when ``b <= a``). A difference counts only when it is
        beyond both floors.
        """
        low, high = 1.0 - self.relative, 1.0 + self.relative
        if not higher_is_better and self.absolute_us > 0.0:
            b, a = median_baseline, self.absolute_us
            low = min(low, b / (b + a))
            high = max(high, b / (b - a) if b > a else math.inf)
        return low, high

    def describe(self, *, higher_is_better: bool) -> str:
        text = f"{self.relative:.0%}"
        if not higher_is_better and self.absolute_us > 0.0:
            text += f" / {self.absolute_us:g} us"
        return text


DEFAULT_FLOOR = PracticalFloor()


@dataclass(frozen=True)
class SizeComparison:
    """The comparison at one message size. Ratios are oriented so that 1.0 is parity and below 1.0 a loss."""

    n_candidate: int
    n_baseline: int
    median_candidate: float
    median_baseline: float
    ratio: float
    ci_low: float  # nan with fewer than 2 launches on a side
    ci_high: float  # nan with fewer than 2 launches on a side
    p_value: float  # one-sided Mann-Whitney U, alternative: the candidate is worse
    verdict: Verdict
    reason: str
    launches_needed: int | None  # for INCONCLUSIVE: launches per side estimated to settle it
    p_value_faster: float = math.nan  # one-sided Mann-Whitney U, alternative: the candidate is better
    floor_low: float = math.nan  # the parity band in ratio terms (PracticalFloor.band)
    floor_high: float = math.nan
    higher_is_better: bool = True
    size: int | None = None  # message size in bytes, when the caller gave it
    confidence: float = 0.90
    too_few_launches: bool = False  # INCONCLUSIVE because a side has fewer launches than a verdict needs
    descriptive: bool = False  # a single (published) figure on a side: the verdict is the ratio against the floor
    paired: bool = False  # the interval is of per-pair log ratios (Hodges-Lehmann), not of a ratio of medians
    n_pairs: int = 0  # launches paired with a baseline launch of their block (paired comparisons)


@functools.lru_cache(maxsize=1024)  # asked once per comparison, with the few launch counts a campaign has
def smallest_p_value(n_candidate: int, n_baseline: int) -> float:
    """The smallest one-sided p-value an exact rank test can give with these sample sizes: ``1 / C(n1 + n2, n1)``.

    With 3 launches per side it is 1/20 = 0.05, so p < 0.05 is out of reach however large the difference; with 4
    per side it is 1/70 (two-sided: twice that).
    """
    if n_candidate < 1 or n_baseline < 1:
        return 1.0
    count = math.comb(n_candidate + n_baseline, n_candidate)  # exact: 1/20 must compare equal to 0.05
    return 1.0 / count if count.bit_length() < 1000 else 0.0


def launches_needed(
    ratio: float, ci_low: float, ci_high: float, n_candidate: int, n_baseline: int, band: tuple[float, float]
) -> int | None:
    """Launches per side at which the observed spread would settle the comparison under the interval rule.

    On a log scale, each end of the interval reaches some distance from the estimate (``ln ratio - ln ci_low``
    below it, ``ln ci_high - ln ratio`` above: a paired interval need not be symmetric), and that reach shrinks
    like ``1 / sqrt(n)``. The margin each reach has to fit is the distance from the estimate to the edge that end
    must clear: inside the parity band, both band edges (the whole interval inside: at speed); below the band,
    its lower edge for the upper end (the whole interval beyond the floor: slower); above it, its upper edge for
    the lower end. With ``n`` the launches per side now (the harmonic mean of the two sides' counts) and the
    largest ``reach / margin`` ratio ``q``,

        n' = ceil(n * q**2)

    raised to at least one launch more than the larger side has now. None when it cannot be estimated (fewer than
    2 launches on a side, a ratio on a band edge) or exceeds 1000: then repeating will not settle it.
    """
    if n_candidate < 2 or n_baseline < 2 or not (ratio > 0 and ci_low > 0 and ci_high > 0):
        return None
    low, high = (math.log(edge) if edge > 0 else -math.inf for edge in band)
    centre, below, above = math.log(ratio), math.log(ci_low), math.log(ci_high)
    if low <= centre <= high:
        pairs = [(centre - below, centre - low), (above - centre, high - centre)]
    elif centre < low:
        pairs = [(above - centre, low - centre)]
    else:
        pairs = [(centre - below, centre - high)]
    if any(not margin > 0.0 for _, margin in pairs):
        return None
    worst = max(reach / margin for reach, margin in pairs)
    if not math.isfinite(worst):
        return None
    now = 2.0 / (1.0 / n_candidate + 1.0 / n_baseline)
    needed = math.ceil(now * worst ** 2)
    needed = max(needed, max(n_candidate, n_baseline) + 1)
    return needed if needed <= _NEEDED_CAP else None


def replication_probability(comparison: "SizeComparison") -> float:
    """The probability that a rerun of the same size, with as many launches, reaches the same verdict.

    A normal approximation on the log scale (Cumming & Maillardet, "Confidence intervals and replication: Where
    will the next mean fall?", Psychological Methods 11(3), 2006): with ``e`` the estimate and ``s`` its standard
    error (read off the interval), a rerun's estimate falls around ``e`` with standard deviation ``s * sqrt(2)``
    (both runs are noisy), and its interval has the same half-width ``z s``. AT_SPEED holds when the rerun's
    estimate lies at least ``z s`` inside both band edges, SLOWER when it lies ``z s`` below the lower edge, FASTER
    ``z s`` above the upper one, INCONCLUSIVE otherwise. NaN without an interval.
    """
    c = comparison
    if not (c.ci_low > 0 and c.ci_high > 0 and c.ratio > 0) or c.ci_high <= c.ci_low:
        return 1.0 if c.ci_low == c.ci_high and c.ci_low > 0 else math.nan
    z = _STANDARD_NORMAL.inv_cdf(0.5 + c.confidence / 2.0)
    se = (math.log(c.ci_high) - math.log(c.ci_low)) / (2.0 * z)
    e, spread = math.log(c.ratio), se * math.sqrt(2.0)
    low = math.log(c.floor_low) if c.floor_low > 0 else -math.inf
    high = math.log(c.floor_high) if math.isfinite(c.floor_high) else math.inf

    def below(edge: float) -> float:  # P(rerun estimate < edge)
        return _STANDARD_NORMAL.cdf((edge - e) / spread)

    slower, faster = below(low - z * se), 1.0 - below(high + z * se)
    at_speed = max(0.0, below(high - z * se) - below(low + z * se))
    same = {Verdict.SLOWER: slower, Verdict.FASTER: faster, Verdict.AT_SPEED: at_speed,
            Verdict.INCONCLUSIVE: 1.0 - slower - faster - at_speed}
    return same[c.verdict]


@functools.lru_cache(maxsize=256)
def _signed_rank_null(n: int) -> np.ndarray:
    """The cumulative null distribution of the Wilcoxon signed-rank statistic for ``n`` pairs:
    ``P(T+ <= t)`` for ``t = 0 .. n(n+1)/2``, from the exact counts (the coefficients of prod (1 + x^i))."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for i in range(1, n + 1):
        counts[i:] = counts[i:] + counts[:-i].copy()
    return np.cumsum(counts) / 2.0 ** n


@functools.lru_cache(maxsize=256)
def _signed_rank_rank(n: int, confidence: float) -> int:
    """The rank ``k`` (1-based) such that the Walsh averages ``W(k)`` and ``W(M - k + 1)`` bound the exact
    signed-rank interval at ``confidence``: the largest ``k`` with ``P(T+ <= k - 1) <= (1 - confidence) / 2``;
    0 when even the extreme Walsh averages do not reach that confidence (too few pairs)."""
    if n < 1:
        return 0
    if n > 300:  # the normal approximation, with no loss at these counts
        mean, sd = n * (n + 1) / 4.0, math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
        return max(0, int(math.floor(mean - _STANDARD_NORMAL.inv_cdf(0.5 + confidence / 2.0) * sd)))
    cumulative = _signed_rank_null(n)
    return int(np.searchsorted(cumulative, (1.0 - confidence) / 2.0 + 1e-12, side="right"))


def signed_rank_interval(differences: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hodges-Lehmann estimates with their exact Wilcoxon signed-rank intervals, one per row of ``differences``
    (shape ``(rows, n)``, each row the paired differences of one comparison). Returns (estimate, low, high)
    arrays; low and high are nan where ``n`` pairs cannot reach ``confidence`` (fewer than 5 pairs at 90 %).
    ``tests/analysis`` checks the interval against scipy's signed-rank test inverted by brute force."""
    rows, n = differences.shape
    first, second = np.triu_indices(n)
    walsh = np.sort((differences[:, first] + differences[:, second]) / 2.0, axis=1)
    estimate = np.median(walsh, axis=1)
    k = _signed_rank_rank(n, confidence)
    if k < 1:
        nan = np.full(rows, math.nan)
        return estimate, nan, nan.copy()
    return estimate, walsh[:, k - 1], walsh[:, walsh.shape[1] - k]


@functools.lru_cache(maxsize=64)
def _u_frequencies(n1: int, n2: int) -> tuple[int, ...]:
    """Of the C(n1 + n2, n1) orders of two samples without ties, how many give each Mann-Whitney U from 0 to
    n1 n2: the coefficients of the Gaussian binomial [n1 + n2 choose n1]_q, the product over i of
    (1 - q^(n2 + i)) / (1 - q^i) (Mann and Whitney 1947, the null distribution SciPy's exact method tabulates)."""
    size = n1 * n2 + 1
    series = [1] + [0] * (size - 1)
    for i in range(1, n1 + 1):
        for k in range(size - 1, n2 + i - 1, -1):  # times (1 - q^(n2 + i))
            series[k] -= series[k - n2 - i]
        for k in range(i, size):  # divided by (1 - q^i)
            series[k] += series[k - i]
    return tuple(series)


def _exact_rank_test(x: Sequence[float], y: Sequence[float], alternative: str) -> float:
    """``scipy.stats.mannwhitneyu(x, y, alternative=alternative, method="exact").pvalue`` for one pair of samples,
    without importing scipy.stats (about a second, more than one row's whole analysis): U from mid-ranks, truncated
    to an integer as SciPy does, against the exact null distribution (not corrected for ties, as SciPy's is not).
    ``tests/analysis`` checks it against SciPy."""
    n1, n2 = len(x), len(y)
    pooled = sorted((value, index) for index, value in enumerate([*x, *y]))
    ranks = [0.0] * (n1 + n2)
    start = 0
    while start < len(pooled):
        end = start
        while end + 1 < len(pooled) and pooled[end + 1][0] == pooled[start][0]:
            end += 1
        for position in range(start, end + 1):  # a tie shares the mean of its ranks
            ranks[pooled[position][1]] = (start + end) / 2 + 1
        start = end + 1
    u1 = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    u = int(u1 if alternative == "greater" else n1 * n2 - u1)
    frequencies = _u_frequencies(min(n1, n2), max(n1, n2))
    return min(1.0, max(0.0, sum(frequencies[u:]) / math.comb(n1 + n2, n1)))


def _rank_tests(candidate: np.ndarray, baseline: np.ndarray, worse: str) -> list[tuple[float, float]]:
    """One-sided Mann-Whitney U p-values per row of the two 2-D arrays: (candidate worse, candidate better).

    "Better" is the ``worse`` alternative with the samples swapped. Within ``_EXACT_LIMIT`` each comes from the
    exact null distribution (``_exact_rank_test``); beyond it, both go through one batched SciPy call (the
    per-call overhead dominates at benchmark sample sizes).
    """
    n_c, n_b = candidate.shape[-1], baseline.shape[-1]
    method = "exact" if n_c * n_b <= _EXACT_LIMIT else "asymptotic"
    if method == "exact":
        return [(_exact_rank_test(c, b, worse), _exact_rank_test(b, c, worse))
                for c, b in zip(candidate.tolist(), baseline.tolist())]
    stats = _scipy_stats()
    if n_c == n_b:
        result = stats.mannwhitneyu(np.concatenate([candidate, baseline]), np.concatenate([baseline, candidate]),
                                    alternative=worse, axis=-1, method=method)
        p_values = np.atleast_1d(result.pvalue).tolist()
        rows = len(candidate)
        return list(zip(p_values[:rows], p_values[rows:]))
    worse_p = np.atleast_1d(stats.mannwhitneyu(candidate, baseline, alternative=worse, axis=-1, method=method).pvalue)
    better_p = np.atleast_1d(stats.mannwhitneyu(baseline, candidate, alternative=worse, axis=-1,
                                                method=method).pvalue)
    return list(zip(worse_p.tolist(), better_p.tolist()))


def _figures(rows: list[Sequence[float]], keys: list, side: str) -> np.ndarray:
    """The per-launch figures of one batch as a 2-D array; every figure must be finite and positive."""
    array = np.asarray(rows, dtype=float)
    if array.shape[1] == 0:
        raise ValueError(f"no launches for the {side} of {keys[0]!r}: nothing to compare (mark it untested)")
    bad = ~(np.isfinite(array) & (array > 0.0))
    if bad.any():
        row = int(np.nonzero(bad.any(axis=1))[0][0])
        raise ValueError(f"{side} figures must be finite and positive, got {list(rows[row])!r} at {keys[row]!r}")
    return array


def _fmt(value: float) -> str:
    return f"{value:.3g}"


def compare_size(
    candidate: Sequence[float],
    baseline: Sequence[float],
    *,
    higher_is_better: bool,
    floor: PracticalFloor = DEFAULT_FLOOR,
    confidence: float | None = None,
    alpha: float = 0.05,
    seed: int = 0,
    min_launches: int = MIN_LAUNCHES,
    n_resamples: int = N_RESAMPLES,
    size: int | None = None,
    descriptive: bool = False,
    paired: tuple[Sequence[float], Sequence[float]] | None = None,
) -> SizeComparison:
    """Compare the per-launch figures of a candidate with those of the baseline at one message size.

    ``candidate`` and ``baseline`` hold one figure per launch (positive and finite). ``higher_is_better`` is True
    for bandwidths and rates, False for times (latencies, in microseconds when ``floor.absolute_us`` is used).
    ``paired``: the figures of the launches that ran in one block, as (candidate, baseline) sequences aligned
    pair by pair; with at least ``MIN_PAIRS`` (and ``min_launches``) pairs the interval is the paired one.

    Verdicts, with ``band = floor.band(median_baseline)`` (normally ``[1 - floor.relative, 1 + floor.relative]``)
    and the interval at ``confidence`` (by default ``1 - 2 alpha``: 90 %), with at least ``min_launches`` launches per side
    (or pairs):

    * AT_SPEED: the whole interval lies inside the band;
    * SLOWER: the whole interval lies below the band; FASTER: wholly above it;
    * INCONCLUSIVE otherwise, including "too few launches", with ``launches_needed`` estimated.

    ``descriptive``: see ``compare_many``.
    """
    entry = (candidate, baseline, size) if paired is None else (candidate, baseline, size, paired)
    (result,) = compare_many(
        {size: entry}, higher_is_better=higher_is_better, floor=floor, confidence=confidence, alpha=alpha,
        seed=seed, min_launches=min_launches, n_resamples=n_resamples, descriptive=descriptive,
    ).values()
    return result


def compare_sizes(
    candidate: Mapping[int | None, Sequence[float]],
    baseline: Mapping[int | None, Sequence[float]],
    *,
    higher_is_better: bool,
    **settings,
) -> list[SizeComparison]:
    """``compare_size`` at every size both sides have, in the order of ``candidate``'s sizes (see ``compare_many``;
    ``settings`` are ``compare_size``'s keyword arguments), unpaired."""
    pairs = {size: (candidate[size], baseline[size], size) for size in candidate if size in baseline}
    return list(compare_many(pairs, higher_is_better=higher_is_better, **settings).values())


Entry = tuple  # (candidate, baseline, size) or (candidate, baseline, size, (paired candidate, paired baseline))


def compare_many(
    pairs: Mapping[Hashable, Entry],
    *,
    higher_is_better: bool,
    floor: PracticalFloor = DEFAULT_FLOOR,
    confidence: float | None = None,
    alpha: float = 0.05,
    seed: int = 0,
    min_launches: int = MIN_LAUNCHES,
    n_resamples: int = N_RESAMPLES,
    descriptive: bool = False,
) -> dict[Hashable, SizeComparison]:
    """``compare_size`` for many entries at once, keyed as given: the sizes of one row, or of every row of a
    campaign. An entry is ``(candidate, baseline, size)``, or with a fourth item, the paired figures (see
    ``compare_size``).

    Unpaired comparisons with the same number of launches on each side share one bootstrap draw and one batched
    rank test; paired ones with the same number of pairs share one sort of their Walsh averages: a whole campaign
    costs a few array operations.

    ``descriptive`` is for published references, which give one figure per size (an OSU table): no interval is
    possible, and without this flag such a size is INCONCLUSIVE ("too few launches"). With it, a size with a
    single figure on a side is judged by its ratio against the parity band alone (SLOWER below it, FASTER above,
    AT_SPEED inside; against repeats, the ratio uses their median), with ``descriptive`` set. Never set it for
    campaign runs on both sides: a missing repeat there is a flaw to fix, not a figure to describe.
    """
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha!r}")
    confidence = 1.0 - 2.0 * alpha if confidence is None else confidence
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    settings = _Settings(higher_is_better, floor, confidence, alpha, min_launches, descriptive)
    unpaired: dict[tuple[int, int], list] = {}
    by_pairs: dict[int, list] = {}
    for key, entry in pairs.items():
        aligned = entry[3] if len(entry) > 3 else None
        if aligned is not None and len(aligned[0]) >= max(min_launches, MIN_PAIRS) and not descriptive:
            by_pairs.setdefault(len(aligned[0]), []).append(key)
        else:
            unpaired.setdefault((len(entry[0]), len(entry[1])), []).append(key)
    out: dict[Hashable, SizeComparison] = {}
    for (n_c, n_b), keys in unpaired.items():
        c = _figures([pairs[key][0] for key in keys], keys, "candidate")
        b = _figures([pairs[key][1] for key in keys], keys, "baseline")
        if n_c < 2 or n_b < 2:
            intervals = [(math.nan, math.nan)] * len(keys)
            p_values = [(1.0, 1.0)] * len(keys)
        else:
            intervals = _ratio_intervals(c, b, settings, seed, n_resamples)
            p_values = _rank_tests(c, b, "less" if higher_is_better else "greater")
        medians_c, medians_b = np.median(c, axis=1).tolist(), np.median(b, axis=1).tolist()
        for row, key in enumerate(keys):
            ratio = medians_c[row] / medians_b[row] if higher_is_better else medians_b[row] / medians_c[row]
            out[key] = _judge((n_c, n_b), (medians_c[row], medians_b[row]), ratio, intervals[row], p_values[row],
                              settings, pairs[key][2])
    for n, keys in by_pairs.items():
        c = _figures([pairs[key][3][0] for key in keys], keys, "paired candidate")
        b = _figures([pairs[key][3][1] for key in keys], keys, "paired baseline")
        log_ratios = np.log(c) - np.log(b) if higher_is_better else np.log(b) - np.log(c)
        estimate, low, high = signed_rank_interval(log_ratios, confidence)
        for row, key in enumerate(keys):
            side_c = _figures([pairs[key][0]], [key], "candidate")[0]
            side_b = _figures([pairs[key][1]], [key], "baseline")[0]
            # the standard library's median: numpy's costs more per call than a dozen figures take to sort
            out[key] = _judge((len(side_c), len(side_b)), (median(side_c.tolist()), median(side_b.tolist())),
                              math.exp(estimate[row]), (math.exp(low[row]), math.exp(high[row])),
                              (math.nan, math.nan), settings, pairs[key][2], n_pairs=n)
    return {key: out[key] for key in pairs}


@dataclass(frozen=True)
class _Settings:
    higher_is_better: bool
    floor: PracticalFloor
    confidence: float
    alpha: float
    min_launches: int
    descriptive: bool = False

    @functools.cached_property
    def floor_text(self) -> str:
        """``floor.describe``, made once per batch rather than once per comparison."""
        return self.floor.describe(higher_is_better=self.higher_is_better)


@functools.lru_cache(maxsize=256)
def _resampled_medians(n: int, n_resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Where the medians of ``n_resamples`` bootstrap resamples of a sorted sample of ``n`` launches lie.

    A resample draws ``n`` positions with replacement; because sorting is monotone, the median of the resampled
    values is the mean of the sorted sample at the two middle drawn positions (one position twice for odd ``n``).
    Returns the distinct (lower, upper) position pairs, shape ``(pairs, 2)``, and each resample's pair index.
    Drawn once per sample size and seed and shared by every comparison.
    """
    drawn = np.sort(np.random.default_rng(seed).integers(0, n, size=(n_resamples, n)), axis=1)
    pairs, pair_of_resample = np.unique(drawn[:, [(n - 1) // 2, n // 2]], axis=0, return_inverse=True)
    return pairs, pair_of_resample.ravel()


@dataclass(frozen=True)
class _BootstrapPlan:
    """The resamples of a ratio of medians, as distinct (numerator pair, denominator pair) combinations.

    A median of ``n`` resampled launches is one of at most ``n (n + 1) / 2`` midpoints of the sorted sample, so the
    ``n_resamples`` resampled ratios are a multiset of a few hundred distinct values (370 for 8 launches a side),
    each drawn ``counts`` times: sorting those few hundred per comparison gives the very quantiles the full
    2000 would, at a fraction of the cost.
    """

    top_pairs: np.ndarray  # sorted-sample positions whose mean is a numerator median: (pairs, 2)
    bottom_pairs: np.ndarray
    top_of: np.ndarray  # per combination, its numerator pair
    bottom_of: np.ndarray
    counts: np.ndarray  # per combination, how many resamples drew it


@functools.lru_cache(maxsize=256)
def _bootstrap_plan(n_top: int, n_bottom: int, n_resamples: int, seed: int) -> _BootstrapPlan:
    top_pairs, top_of_resample = _resampled_medians(n_top, n_resamples, seed)
    bottom_pairs, bottom_of_resample = _resampled_medians(n_bottom, n_resamples, seed + 1)
    combinations, counts = np.unique(np.stack([top_of_resample, bottom_of_resample], axis=1), axis=0,
                                     return_counts=True)
    return _BootstrapPlan(top_pairs, bottom_pairs, combinations[:, 0], combinations[:, 1], counts)


def _midpoints(sorted_rows: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Per row, the mean of the sorted sample at each pair of positions: half of each, rounded once (what a
    matrix product with 0.5 weights gives; one position twice is the value itself)."""
    half = np.float32(0.5)
    return sorted_rows[:, pairs[:, 0]] * half + sorted_rows[:, pairs[:, 1]] * half


def _repeated_quantiles(values: np.ndarray, counts: np.ndarray, probabilities: tuple[float, ...]) -> np.ndarray:
    """``np.quantile(np.repeat(values, counts, axis=1), probabilities, axis=1)`` (linear interpolation, nan where
    a row has a nan) without repeating: the order statistics are read off the cumulative counts of each row's
    sorted values, and interpolated exactly as NumPy does. Shape ``(len(probabilities), rows)``."""
    total = int(counts.sum())
    virtual = (total - 1) * np.asarray(probabilities, dtype=float)
    below = np.floor(virtual).astype(np.intp)
    above = np.minimum(below + 1, total - 1)
    order = np.argsort(values, axis=1)
    cumulative = np.cumsum(counts[order], axis=1)

    def order_statistic(rank: int) -> np.ndarray:
        position = np.argmax(cumulative > rank, axis=1)[:, None]  # the first value whose count reaches past rank
        return np.take_along_axis(values, np.take_along_axis(order, position, axis=1), axis=1)[:, 0]

    low = np.stack([order_statistic(rank) for rank in below])
    high = np.stack([order_statistic(rank) for rank in above])
    gamma = (virtual - below)[:, None]
    # numpy.lib._function_base_impl._lerp, step for step, so that the figures are NumPy's to the last bit
    difference = high - low
    result = np.add(low, difference * gamma)
    np.subtract(high, difference * (1 - gamma), out=result, where=gamma >= 0.5, casting="unsafe")
    result[:, np.isnan(values).any(axis=1)] = np.nan
    return result


_CHUNK = 1024  # comparisons per block of bootstrap arithmetic: bounds memory to a few MB per array


def _ratio_intervals(c: np.ndarray, b: np.ndarray, settings: _Settings, seed: int,
                     n_resamples: int) -> list[tuple[float, float]]:
    """Percentile-bootstrap intervals of the ratio of medians, one per row, each side resampled on its own
    (independent draws: the sides are independent launches). ``tests/analysis`` checks them against
    ``scipy.stats.bootstrap``, and against resampling all ``n_resamples`` ratios one by one."""
    numerator, denominator = (c, b) if settings.higher_is_better else (b, c)
    plan = _bootstrap_plan(numerator.shape[1], denominator.shape[1], n_resamples, seed)
    tail = (1.0 - settings.confidence) / 2.0
    out: list[tuple[float, float]] = []
    # single precision: the interval is reported to 3 digits, and it halves the cost of a million-result report
    numerator = np.sort(numerator, axis=1).astype(np.float32)
    denominator = np.sort(denominator, axis=1).astype(np.float32)
    for start in range(0, len(numerator), _CHUNK):
        ratios = _midpoints(numerator[start:start + _CHUNK], plan.top_pairs)[:, plan.top_of]
        ratios /= _midpoints(denominator[start:start + _CHUNK], plan.bottom_pairs)[:, plan.bottom_of]
        lows, highs = _repeated_quantiles(ratios, plan.counts, (tail, 1.0 - tail))
        out += zip(lows.tolist(), highs.tolist())
    return out


def _judge(counts: tuple[int, int], medians: tuple[float, float], ratio: float, interval: tuple[float, float],
           p_values: tuple[float, float], settings: _Settings, size: int | None,
           n_pairs: int = 0) -> SizeComparison:
    """The verdict at one size from its launch counts, medians, estimate, interval and (unpaired) one-sided
    p-values, by the one interval rule (see ``compare_size``). ``n_pairs``: a paired comparison of that many
    pairs (the interval is of the per-pair log ratios)."""
    floor, min_launches = settings.floor, settings.min_launches
    n_c, n_b = counts
    median_c, median_b = medians
    band = floor.band(median_b, higher_is_better=settings.higher_is_better)
    floor_text = settings.floor_text
    ci_low = ci_high = p_worse = p_better = math.nan
    needed, too_few, descriptive = None, False, False
    paired = n_pairs > 0
    level = f"{settings.confidence:.0%}"

    if settings.descriptive and min(n_c, n_b) == 1:
        verdict, reason = _describe(n_c, n_b, ratio, band, floor_text)
        descriptive = True
    elif n_c < 2 or n_b < 2:
        p_worse = p_better = 1.0
        verdict, needed, too_few = Verdict.INCONCLUSIVE, max(min_launches, 2), True
        reason = f"too few launches ({n_c} and {n_b}): an interval needs at least 2 per side"
    else:
        p_worse, p_better = p_values
        if math.isfinite(interval[0]) and math.isfinite(interval[1]):
            # a percentile interval contains the observed ratio in practice; the min/max makes it an invariant
            ci_low, ci_high = min(interval[0], ratio), max(interval[1], ratio)
        launches = n_pairs if paired else min(n_c, n_b)
        enough = launches >= min_launches and math.isfinite(ci_low)
        what = f"paired over {n_pairs} rounds" if paired else f"{level} CI"
        summary = (f"{_fmt(ratio)}× ({what}: {_fmt(ci_low)}–{_fmt(ci_high)})" if paired and math.isfinite(ci_low)
                   else f"{_fmt(ratio)}× ({level} CI {_fmt(ci_low)}–{_fmt(ci_high)})")
        if enough and ci_high < band[0]:
            verdict, reason = Verdict.SLOWER, f"{summary}: slower beyond the {floor_text} floor"
        elif enough and ci_low > band[1]:
            verdict, reason = Verdict.FASTER, f"{summary}: faster beyond the {floor_text} floor"
        elif enough and band[0] <= ci_low and ci_high <= band[1]:
            verdict, reason = Verdict.AT_SPEED, f"{summary} within the {floor_text} floor"
        else:
            verdict = Verdict.INCONCLUSIVE
            too_few = not enough
            needed = launches_needed(ratio, ci_low, ci_high, n_c, n_b, band)
            if not enough and launches >= min_launches:  # enough launches, but no interval at this level
                reason = (f"too few launches ({launches}{' pairs' if paired else f' and {max(n_c, n_b)}'}) for "
                          f"an interval at {settings.confidence:.4g} (an early look's strict level); {summary}")
            elif not enough:
                needed = None if needed is None else max(needed, min_launches)
                reason = (f"too few launches ({launches}{' pairs' if paired else f' and {max(n_c, n_b)}'}) for a "
                          f"verdict (needs {min_launches}); {summary}")
            else:
                reason = f"{summary}: {_graded(ci_low, ci_high, band, floor_text)}"
    return SizeComparison(
        n_candidate=n_c, n_baseline=n_b, median_candidate=median_c, median_baseline=median_b, ratio=ratio,
        ci_low=ci_low, ci_high=ci_high, p_value=p_worse, verdict=verdict, reason=reason, launches_needed=needed,
        p_value_faster=p_better, floor_low=band[0], floor_high=band[1], higher_is_better=settings.higher_is_better,
        size=size, confidence=settings.confidence, too_few_launches=too_few, descriptive=descriptive,
        paired=paired, n_pairs=n_pairs,
    )


def _graded(ci_low: float, ci_high: float, band: tuple[float, float], floor_text: str) -> str:
    """Why an interval decides nothing, graded by where it lies against parity and the band."""
    if ci_high < 1.0:
        return f"slower, by about the {floor_text} floor (not shown to be beyond it)"
    if ci_low > 1.0:
        return f"faster, by about the {floor_text} floor (not shown to be beyond it)"
    if ci_low < band[0] and ci_high > band[1]:
        return f"too wide to tell: reaches beyond the {floor_text} floor on both sides"
    side = "slow" if ci_low < band[0] else "fast"
    return f"no difference shown, but the interval reaches past the {floor_text} floor on the {side} side"


def _describe(n_c: int, n_b: int, ratio: float, band: tuple[float, float], floor_text: str) -> tuple[Verdict, str]:
    """The verdict, and its reason, of a size with a single (published) figure on a side: its ratio against the
    parity band, with no interval and no p-value."""
    if n_c == n_b == 1:
        what = "single published figures"
    else:
        what = (f"the median of {n_c} launches against a single published figure" if n_c > 1
                else f"a single published figure against the median of {n_b} launches")
    if ratio < band[0]:
        verdict, where = Verdict.SLOWER, f"slower beyond the {floor_text} floor"
    elif ratio > band[1]:
        verdict, where = Verdict.FASTER, f"faster beyond the {floor_text} floor"
    else:
        verdict, where = Verdict.AT_SPEED, f"within the {floor_text} floor"
    return verdict, f"{what}, no test of significance: {_fmt(ratio)}×, {where}"
