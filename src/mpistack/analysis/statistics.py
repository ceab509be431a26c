"""Candidate against baseline at one message size: ratio of medians, its confidence interval, a rank test, a verdict.

The unit of evidence is a *launch* (one ``mpirun``/``srun``): each side gives one figure per launch (for example
OSU's average latency at that size in that launch), never one figure per iteration, because iterations within a
launch share a placement, a warm-up and a noise state and are not independent repeats (Hoefler & Belli,
"Scientific Benchmarking of Parallel Computing Systems", SC15, DOI 10.1145/2807591.2807644, section 4.1).

``compare_size`` follows Hoefler & Belli's rules for nondeterministic data:

* medians, not means, and no normality assumption (rules 6 and 8): the location is the median of the launches;
* a ratio of the two medians, never a summary of per-launch ratios (rule 4), oriented so that 1.0 is parity and
  below 1.0 a loss (bandwidth: candidate / baseline; time: baseline / candidate);
* a confidence interval for that ratio (rule 5): a percentile bootstrap over launches, resampling each side
  independently (``scipy.stats.bootstrap``), deterministic for a given seed;
* a statistically sound comparison (rule 7): the one-sided Mann-Whitney U test (``scipy.stats.mannwhitneyu``),
  exact for the sample sizes benchmarks have;
* a practical floor next to the statistical test, so that a significant but tiny difference is not called a loss
  (rule 7's effect size).

All functions here are pure: no I/O, no database, nothing from the rest of mpistack.
"""

from __future__ import annotations

import enum
import inspect
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats

__all__ = [
    "DEFAULT_FLOOR",
    "MIN_LAUNCHES",
    "N_RESAMPLES",
    "PracticalFloor",
    "SizeComparison",
    "Verdict",
    "compare_size",
    "launches_needed",
    "smallest_p_value",
]

#: Launches per side needed before a confidence interval is trusted for an at-speed claim: Hoefler & Belli
#: (SC15, section 4.2.2) state that more than 5 measurements are needed to assess a confidence interval
#: nonparametrically; the exact binomial 95% interval of a median exists from 6 values on.
MIN_LAUNCHES = 6

#: Bootstrap resamples per size. 2000 keeps one comparison near 1.5 ms for 8 launches per side; the Monte Carlo
#: error of a 2.5% percentile from 2000 resamples is well below the width of the intervals seen at 6 to 20 launches.
N_RESAMPLES = 2000

#: Above this many launch pairs the Mann-Whitney p-value is taken from the normal approximation (with tie
#: correction) instead of the exact null distribution; below it the exact distribution is cheap.
_EXACT_LIMIT = 2500

#: ``launches_needed`` estimates above this are reported as None ("cannot be settled by repeating"): the ratio sits
#: on a decision boundary.
_NEEDED_CAP = 1000

# scipy >= 1.15 takes ``rng``; older releases ``random_state`` (both accept an integer seed).
_SEED_ARG = "rng" if "rng" in inspect.signature(stats.bootstrap).parameters else "random_state"


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
    confidence: float = 0.95
    too_few_launches: bool = False  # INCONCLUSIVE because a side has fewer launches than a verdict needs


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
    """Launches per side at which the observed spread would settle the comparison.

    The bootstrap interval's half-width on a log scale, ``h = (ln ci_high - ln ci_low) / 2``, shrinks like the
    standard error of a difference of two medians, ``sqrt(1/n_c + 1/n_b)``. The margin ``m`` it has to fit is the
    distance from ``ln ratio`` to the decision it is closest to: inside the parity band, the nearer band edge (so
    that the whole interval fits in the band: at speed); outside it, ``|ln ratio|`` (so that the interval excludes
    parity: slower or faster). With ``n`` launches on each side, ``h_n = h * sqrt((2/n) / (1/n_c + 1/n_b))``, and
    ``h_n <= m`` gives

        n = ceil(2 * (h / m)**2 / (1/n_c + 1/n_b))

    raised to at least one launch more than the larger side has now. None when it cannot be estimated (fewer than
    2 launches on a side, a ratio exactly on a boundary) or exceeds 1000.
    """
    if n_candidate < 2 or n_baseline < 2 or not (ratio > 0 and ci_low > 0 and ci_high > 0):
        return None
    low, high = band
    log_ratio = math.log(ratio)
    if low <= ratio <= high:
        margin = min(math.log(high) - log_ratio if math.isfinite(high) else math.inf, log_ratio - math.log(low))
    else:
        margin = abs(log_ratio)
    if margin <= 0.0:
        return None
    half_width = (math.log(ci_high) - math.log(ci_low)) / 2.0
    needed = math.ceil(2.0 * (half_width / margin) ** 2 / (1.0 / n_candidate + 1.0 / n_baseline))
    needed = max(needed, max(n_candidate, n_baseline) + 1)
    return needed if needed <= _NEEDED_CAP else None


def _ratio_of_medians(candidate, baseline, axis=-1):
    return np.median(candidate, axis=axis) / np.median(baseline, axis=axis)


def _rank_tests(candidate: np.ndarray, baseline: np.ndarray, worse: str) -> tuple[float, float]:
    """One-sided Mann-Whitney U p-values: (candidate worse, candidate better).

    "Better" is the ``worse`` alternative with the samples swapped; with equal sample sizes both tests go through
    one batched SciPy call (the per-call overhead dominates at benchmark sample sizes).
    """
    method = "exact" if candidate.size * baseline.size <= _EXACT_LIMIT else "asymptotic"
    if candidate.size == baseline.size:
        result = stats.mannwhitneyu(
            np.stack([candidate, baseline]), np.stack([baseline, candidate]), alternative=worse, axis=-1,
            method=method,
        )
        return float(result.pvalue[0]), float(result.pvalue[1])
    return (
        float(stats.mannwhitneyu(candidate, baseline, alternative=worse, method=method).pvalue),
        float(stats.mannwhitneyu(baseline, candidate, alternative=worse, method=method).pvalue),
    )


def _figures(values: Sequence[float], side: str) -> np.ndarray:
    array = np.asarray(values, dtype=float).ravel()
    if array.size == 0:
        raise ValueError(f"no launches for the {side}: nothing to compare (mark the size untested instead)")
    if not np.all(np.isfinite(array)) or np.any(array <= 0.0):
        raise ValueError(f"{side} figures must be finite and positive, got {values!r}")
    return array


def _fmt(value: float) -> str:
    return f"{value:.3g}"


def compare_size(
    candidate: Sequence[float],
    baseline: Sequence[float],
    *,
    higher_is_better: bool,
    floor: PracticalFloor = DEFAULT_FLOOR,
    confidence: float = 0.95,
    alpha: float = 0.05,
    seed: int = 0,
    min_launches: int = MIN_LAUNCHES,
    n_resamples: int = N_RESAMPLES,
    size: int | None = None,
) -> SizeComparison:
    """Compare the per-launch figures of a candidate with those of the baseline at one message size.

    ``candidate`` and ``baseline`` hold one figure per launch (positive and finite). ``higher_is_better`` is True
    for bandwidths and rates, False for times (latencies, in microseconds when ``floor.absolute_us`` is used).

    Verdicts (``band`` is ``floor.band(median_baseline)``, normally ``[1 - floor.relative, 1 + floor.relative]``):

    * SLOWER: the one-sided rank test says worse (``p_value < alpha``) and the ratio is below the band;
    * FASTER: the mirror image (``p_value_faster < alpha`` and the ratio above the band);
    * AT_SPEED: the whole confidence interval lies inside the band, with at least ``min_launches`` per side;
    * INCONCLUSIVE otherwise, including "too few launches" (fewer than 2 on a side; or fewer than ``min_launches``
      and the exact rank test cannot reach ``p < alpha``), with ``launches_needed`` estimated.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    c = _figures(candidate, "candidate")
    b = _figures(baseline, "baseline")
    n_c, n_b = int(c.size), int(b.size)
    median_c, median_b = float(np.median(c)), float(np.median(b))
    ratio = median_c / median_b if higher_is_better else median_b / median_c
    band = floor.band(median_b, higher_is_better=higher_is_better)
    floor_text = floor.describe(higher_is_better=higher_is_better)
    common = dict(
        n_candidate=n_c, n_baseline=n_b, median_candidate=median_c, median_baseline=median_b, ratio=ratio,
        floor_low=band[0], floor_high=band[1], higher_is_better=higher_is_better, size=size, confidence=confidence,
    )

    if n_c < 2 or n_b < 2:
        return SizeComparison(
            **common, ci_low=math.nan, ci_high=math.nan, p_value=1.0, p_value_faster=1.0,
            verdict=Verdict.INCONCLUSIVE, launches_needed=max(min_launches, 2), too_few_launches=True,
            reason=f"too few launches ({n_c} and {n_b}): a confidence interval needs at least 2 per side",
        )

    # Confidence interval of the ratio of medians: percentile bootstrap, each side resampled on its own.
    worse = "less" if higher_is_better else "greater"
    result = stats.bootstrap(
        (c, b) if higher_is_better else (b, c), _ratio_of_medians, vectorized=True, paired=False,
        n_resamples=n_resamples, confidence_level=confidence, method="percentile", **{_SEED_ARG: seed},
    )
    # The percentile interval contains the observed ratio in practice (each resampled median falls on either side
    # of the observed one with probability near 1/2); the min/max only makes that an invariant.
    ci_low = min(float(result.confidence_interval.low), ratio)
    ci_high = max(float(result.confidence_interval.high), ratio)
    p_worse, p_better = _rank_tests(c, b, worse)
    reachable = smallest_p_value(n_c, n_b) < alpha
    enough = min(n_c, n_b) >= min_launches
    summary = f"{_fmt(ratio)}× (CI {_fmt(ci_low)}–{_fmt(ci_high)})"
    needed = None

    if p_worse < alpha and ratio < band[0]:
        verdict = Verdict.SLOWER
        reason = f"{summary}, p = {p_worse:.2g}: slower beyond the {floor_text} floor"
    elif p_better < alpha and ratio > band[1]:
        verdict = Verdict.FASTER
        reason = f"{summary}, p = {p_better:.2g}: faster beyond the {floor_text} floor"
    elif enough and band[0] <= ci_low and ci_high <= band[1]:
        verdict = Verdict.AT_SPEED
        reason = f"{summary} within the {floor_text} floor"
        if p_worse < alpha or p_better < alpha:
            reason += f" (a significant difference, p = {min(p_worse, p_better):.2g}, below the floor)"
    else:
        verdict = Verdict.INCONCLUSIVE
        needed = launches_needed(ratio, ci_low, ci_high, n_c, n_b, band)
        if not enough:
            needed = None if needed is None else max(needed, min_launches)
            if not reachable:
                reason = (
                    f"too few launches ({n_c} and {n_b}): the rank test cannot reach p < {alpha:g} "
                    f"(smallest possible p = {smallest_p_value(n_c, n_b):.2g}) and an at-speed claim needs "
                    f"{min_launches} per side; {summary}"
                )
            else:
                reason = f"too few launches ({n_c} and {n_b}) for an at-speed claim (needs {min_launches}); {summary}"
        elif not reachable:
            reason = (
                f"{summary} not settled: with {n_c} and {n_b} launches the rank test cannot reach p < {alpha:g}"
            )
        else:
            p = p_worse if ratio <= 1.0 else p_better
            reason = f"{summary}, p = {p:.2g}: the interval crosses the {floor_text} floor"
    return SizeComparison(
        **common, ci_low=ci_low, ci_high=ci_high, p_value=p_worse, p_value_faster=p_better,
        verdict=verdict, reason=reason, launches_needed=needed,
        too_few_launches=verdict is Verdict.INCONCLUSIVE and not enough,
    )
