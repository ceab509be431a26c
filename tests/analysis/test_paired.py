"""Paired rounds: a candidate launch against the baseline launch of its block; regimes decide (real store)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from mpistack.analysis.answers import Settings, answer
from mpistack.analysis.evidence import Row, RowKey, Slot, load_rows, pair_launches
from mpistack.analysis.statistics import Verdict, compare_size, signed_rank_interval
from mpistack.parsers.model import ParsedRow, ParsedRun
from mpistack.spec.provenance import Provenance
from mpistack.store.campaigns import start_campaign
from mpistack.store.database import open_database
from mpistack.store.query import Where
from mpistack.store.writer import write_runs

SIZES = [2**i for i in range(21)]  # 1 B .. 1 MiB


@pytest.mark.parametrize("n", [5, 6, 9, 16])
def test_the_signed_rank_interval_is_scipys_test_inverted(n):
    """The interval holds exactly the shifts that a two-sided signed-rank test at 10 % does not reject."""
    rng = np.random.default_rng(n)
    d = rng.normal(0.1, 0.2, n)
    estimate, low, high = signed_rank_interval(d[None, :], 0.90)
    walsh = sorted((a + b) / 2 for a, b in itertools.combinations_with_replacement(d, 2))
    assert estimate[0] == pytest.approx(np.median(walsh))
    inside = [w for w in walsh if stats.wilcoxon(d - w + 1e-9, method="exact").pvalue > 0.10]
    assert low[0] <= min(inside) + 1e-12 and max(inside) <= high[0] + 1e-12
    below = [w for w in walsh if w < low[0]]
    assert all(stats.wilcoxon(d - w - 1e-9, method="exact").pvalue <= 0.10 for w in below)


def test_four_pairs_cannot_reach_ninety_percent():
    _, low, high = signed_rank_interval(np.array([[0.1, 0.2, 0.3, 0.4]]), 0.90)
    assert math.isnan(low[0]) and math.isnan(high[0])


def _launch_noise(rng, rounds: int, per_round: int) -> np.ndarray:
    """Slowness shared by neighbouring launches: a slow mode that lasts a few launches (about one launch in five
    slow by 25-60 %, mostly in runs of three), as measured on a busy 2-core host."""
    slow = rng.random(rounds * per_round) < 0.07
    slow = np.convolve(slow, np.ones(3), mode="same") > 0
    return np.where(slow, rng.uniform(1.25, 1.6, slow.size), 1.0) * rng.lognormal(0, 0.02, slow.size)


def _rows(rounds: int, loss, seed: int) -> tuple[Row, Row]:
    """A baseline and a candidate row whose launches alternate within each round (one block per round)."""
    rng = np.random.default_rng(seed)
    noise = _launch_noise(rng, rounds, 2)
    rows = []
    for side in (0, 1):
        key = RowKey("campaign 1", "host-mpich" if side == 0 else "debian-mpich", "native" if side == 0 else "container",
                     "default", "latency", "latency", 2, 1, "H-H")
        row = Row(key, "host" if side == 0 else "image", "mpich")
        for r in range(rounds):
            run = 1000 * side + r
            position = 2 * r + (side if r % 2 == 0 else 1 - side)  # counterbalanced order within the block
            row.schedule[run] = Slot(r + 1, "b1", position)
            row.runs.append(run)
            row.launches += 1
            for size in SIZES:
                value = (0.2 + size / 5000) * noise[position] * (loss(size) if side == 1 else 1.0)
                row.figures.setdefault(size, []).append(value)
                row.launch_of.setdefault(size, []).append(run)
        rows.append(row)
    return rows[0], rows[1]


def test_launches_pair_within_their_block_and_round():
    baseline, candidate = _rows(4, lambda size: 1.0, 0)
    assert pair_launches(candidate, baseline) == {1000 + r: r for r in range(4)}
    candidate.schedule[1000] = Slot(1, "b9", 7)  # another block: the nearest launch of the round
    assert pair_launches(candidate, baseline)[1000] == 0
    candidate.schedule[1001] = Slot(99)  # a round the baseline never ran
    assert 1001 not in pair_launches(candidate, baseline)


def _answer(baseline: Row, candidate: Row):
    (result,) = answer({baseline.key: baseline, candidate.key: candidate}, Settings())
    return result


def test_pairing_cancels_the_machines_slow_modes():
    """The same build on both sides (true ratio 1.00) on a machine with slow modes: paired, the class is Y in
    nearly every campaign; the same launches unpaired leave it open far more often."""
    paired_y = unpaired_y = false_losses = 0
    for seed in range(20):
        baseline, candidate = _rows(16, lambda size: 1.0, seed)
        result = _answer(baseline, candidate)
        paired_y += result.label == "Y"
        false_losses += result.label == "(Y)"
        assert all(c.paired for c in result.regimes.values())
        for row in (baseline, candidate):
            row.schedule.clear()
        unpaired = _answer(baseline, candidate)
        assert not any(c.paired for c in unpaired.regimes.values())
        unpaired_y += unpaired.label == "Y"
    assert false_losses == 0
    assert paired_y >= 18 and paired_y > unpaired_y


@pytest.mark.parametrize("loss, regime, at_least", [(0.8, "small", 9), (0.8, "large", 9), (0.85, "mid", 8)])
def test_a_loss_in_one_regime_is_found_and_named(loss, regime, at_least):
    """A 20 % loss in one regime is (Y) naming that regime in at least 9 of 10 campaigns, a 15 % loss in 8 of 10;
    none is ever Y."""
    from mpistack.analysis.classes import SizeRanges

    ranges = SizeRanges()
    found = 0
    for seed in range(10):
        baseline, candidate = _rows(16, lambda size: 1 / loss if ranges.regime(size) == regime else 1.0, 100 + seed)
        result = _answer(baseline, candidate)
        found += result.label == "(Y)" and [slow.regime for slow in result.row_class.slow] == [regime]
        assert result.label != "Y"
    assert found >= at_least


def test_a_paired_campaign_read_from_the_store(tmp_path):
    """Round and block tags written with the runs reach the analysis: the rows pair, regimes decide."""
    engine = open_database(str(tmp_path / "paired.db"))
    campaign = start_campaign(engine, "paired", {})
    rng = np.random.default_rng(5)
    noise = rng.lognormal(0, 0.02, 24)  # a quiet machine: the point here is that the tags reach the analysis
    for r in range(12):
        for side, (stack, approach, origin) in enumerate((("host-mpich", "native", "host"),
                                                          ("debian-mpich", "container", "image"))):
            factor = noise[2 * r + side]
            run = ParsedRun(benchmark="latency", title="latency", units={"latency": "us"},
                            rows=[ParsedRow(size, {"latency": round((0.2 + size / 5000) * factor, 4)})
                                  for size in SIZES])
            with engine.begin() as connection:
                write_runs(connection, [run], source="synthetic", campaign_id=campaign,
                           provenance=Provenance(stack=stack, approach=approach, ranks=2, nodes=1, buffers="H-H"),
                           tags={"mpi": "mpich", "variant": "default", "origin": origin, "repeat": str(r + 1),
                                 "round": str(r + 1), "block": "b1", "position": str(2 * r + side)})
    rows = load_rows(engine, [Where("campaign", "=", campaign)])
    (result,) = answer(rows, Settings())
    assert all(c.paired and c.n_pairs == 12 for c in result.regimes.values())
    assert result.label == "Y", result.row_class.reason
    assert set(result.regimes) == {"small", "mid", "large"}


def test_a_paired_size_reports_its_pairs():
    base = [1.0, 1.5, 1.0, 2.0, 1.0, 1.1, 1.0, 1.6, 1.2, 1.0]
    candidate = [b * 1.01 for b in base]
    result = compare_size(candidate, base, higher_is_better=False, paired=(candidate, base))
    assert result.paired and result.n_pairs == 10 and result.verdict is Verdict.AT_SPEED
    assert result.reason.startswith("0.99× (paired over 10 rounds:")


def _control_rows(rounds: int, seed: int, spread: float) -> dict:
    """The system MPI, its A/A variant and a container row, launches alternating within each round."""
    rng = np.random.default_rng(seed)
    rows = {}
    for index, (stack, approach, variant, origin) in enumerate((("host-mpich", "native", "default", "host"),
                                                                ("host-mpich", "native", "a-a", "host"),
                                                                ("debian-mpich", "container", "default", "image"))):
        key = RowKey("campaign 1", stack, approach, variant, "latency", "latency", 2, 1, "H-H")
        row = Row(key, origin, "mpich", control=variant == "a-a")
        for r in range(rounds):
            run = 1000 * index + r
            row.schedule[run] = Slot(r + 1, "b1", 3 * r + index)
            row.runs.append(run)
            row.launches += 1
            noise = rng.lognormal(0, spread)
            for size in SIZES:
                row.figures.setdefault(size, []).append((0.2 + size / 5000) * noise)
                row.launch_of.setdefault(size, []).append(run)
        rows[key] = row
    return rows


def test_the_a_a_control_is_answered_and_summarised_first():
    from mpistack.analysis.answers import control_summary

    answers = answer(_control_rows(12, 0, 0.01), Settings())
    (control,) = [a for a in answers if a.control]
    assert control.label == "Y" and control.key.variant == "a-a"
    (line,) = control_summary(answers)
    assert line.startswith("A/A latency (host-mpich a-a against itself): Y, small 1.00× [")


def test_a_machine_too_noisy_for_its_own_control_says_so_instead_of_forecasting():
    answers = answer(_control_rows(12, 3, 0.25), Settings())
    control = next(a for a in answers if a.control)
    assert control.label != "Y"
    container = next(a for a in answers if a.key.approach == "container")
    assert container.label == "?"
    assert "this machine was too noisy to settle it: the A/A control was" in container.row_class.reason
    assert "more launches per side would settle" not in container.row_class.reason


def test_each_sides_slow_launch_share_is_reported():
    baseline, candidate = _rows(16, lambda size: 1.0, 0)
    for size in SIZES:  # the candidate's first four launches ran 40 % slow at every size
        candidate.figures[size][:4] = [value * 1.4 for value in candidate.figures[size][:4]]
    assert candidate.slow_launch_share() >= 4 / 16
    result = _answer(baseline, candidate)
    assert result.slow_launches[0] == candidate.slow_launch_share()
    assert result.to_dict()["slow_launches"]["baseline"] == baseline.slow_launch_share()


def test_one_wild_pair_cannot_stretch_a_paired_interval_and_fewer_pairs_stay_unpaired():
    """A 20x loss, with one pair whose baseline launch hit a slow mode its partner missed."""
    from mpistack.analysis.statistics import MIN_PAIRS

    for n in (MIN_PAIRS, 16):
        base = [1.0 + 0.01 * i for i in range(n)]
        candidate = [20.0 * b for b in base]
        base[0] *= 30  # the wild pair
        result = compare_size(candidate, base, higher_is_better=False, paired=(candidate, base))
        assert result.paired and result.verdict is Verdict.SLOWER and result.ci_high < 0.06, result.reason
    few = compare_size(candidate[:6], base[:6], higher_is_better=False, paired=(candidate[:6], base[:6]))
    assert not few.paired and few.verdict is Verdict.SLOWER, few.reason
