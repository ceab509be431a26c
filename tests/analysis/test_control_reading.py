"""The A/A control interpreted: what a run resolves per benchmark and regime, which answers that limits, and the
one action the control points to."""

from __future__ import annotations

import math

from mpistack.analysis.answers import SYSTEM, Answer, control_advice, control_reading, control_resolution
from mpistack.analysis.classes import RowClass
from mpistack.analysis.evidence import RowKey
from mpistack.analysis.statistics import SizeComparison, Verdict


def _regime(low: float, high: float, pairs: int) -> SizeComparison:
    verdict = Verdict.AT_SPEED if 0.9 <= low and high <= 1.1 else Verdict.INCONCLUSIVE
    return SizeComparison(n_candidate=12, n_baseline=12, median_candidate=1.0, median_baseline=1.0, ratio=1.0,
                          ci_low=low, ci_high=high, verdict=verdict, reason="", p_value=math.nan, launches_needed=None,
                          floor_low=0.9, floor_high=1.1, higher_is_better=False, size=None, n_pairs=pairs)


def _control(benchmark: str, pairs: int = 12, **regimes: tuple[float, float]) -> Answer:
    key = RowKey("campaign 1", "host-mpich", "native", "a-a", benchmark, "latency", 2, 1, "H-H")
    compared = {name: _regime(low, high, pairs) for name, (low, high) in regimes.items()}
    label = "Y" if all(c.verdict is Verdict.AT_SPEED for c in compared.values()) else "?"
    return Answer(key, SYSTEM, None, RowClass(label, [], ""), regimes=compared, control=True)


def test_the_reading_says_per_benchmark_and_regime_what_the_run_resolves_and_one_action():
    answers = [_control("latency", small=(0.97, 1.03), mid=(0.96, 1.04), large=(0.95, 1.05)),
               _control("bw", small=(0.90, 1.20), mid=(0.95, 1.04), large=(0.88, 1.19))]
    text = control_reading(answers, 0.10)
    assert text.startswith("A/A: this run resolves a 10% loss in latency ±5 %, bw mid ±5 %")
    assert "action: a quieter machine (more launches only average its noise); elsewhere a ? is this machine's " \
           "noise" in text
    assert text.endswith("(bw small large −10…+20 %)")


def test_the_action_is_more_launches_while_the_control_is_not_paired_yet():
    answers = [_control("bw", pairs=0, small=(0.85, 1.25), mid=(0.95, 1.04))]
    assert control_advice(control_resolution(answers)).startswith("more launches")


def test_a_control_that_resolves_everything_asks_for_nothing():
    answers = [_control("latency", small=(0.98, 1.02), mid=(0.97, 1.03))]
    assert control_advice(control_resolution(answers)) == ""
    assert "not in" not in control_reading(answers, 0.10)


def test_an_interval_off_parity_is_written_with_its_signs():
    answers = [_control("bw", small=(1.01, 1.06), mid=(0.93, 1.0), large=(0.97, 1.03))]
    assert [r.span for r in control_resolution(answers)] == ["+1…+6 %", "−7…+0 %", "±3 %"]
