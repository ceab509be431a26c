"""Sequential campaigns: the level spent over planned looks keeps the error rates, a row settled at a look stays
settled, and the rule reads the same from the rounds a campaign really ran as from the rounds it was deciding on."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings as hypothesis_settings, strategies as st

from mpistack.analysis.answers import SYSTEM, Settings, answer
from mpistack.analysis.evidence import rows_from
from mpistack.analysis.sequential import CONTROL, MAXIMUM, spent_levels, until_round
from mpistack.analysis.statistics import PracticalFloor, Verdict, compare_many
from mpistack.spec.campaign import planned_looks

SIZES = [1, 64, 4096, 65536, 1048576]
LOOKS = planned_looks(6, 24)


class Rounds:
    """Launches in rounds, in the shape ``store.query.launch_evidence`` returns: every launch of a round shares
    that round's machine state (a slow mode), as neighbouring launches do."""

    def __init__(self, seed: int = 3, shared: float = 0.08, spread: float = 0.02):
        self.runs: dict[int, dict] = {}
        self.results: list[tuple] = []
        self.ids = itertools.count(1)
        self.seed, self.shared, self.spread = seed, shared, spread

    def noise(self, number: int, row: tuple) -> float:
        """The log noise of a row's launch in a round: the round's machine state and the launch's own, the same
        whichever other rows run in that round."""
        machine = np.random.default_rng([self.seed, number]).normal(0.0, self.shared)
        own = np.random.default_rng([self.seed, number, *map(ord, "/".join(row))]).normal(0.0, self.spread)
        return float(machine + own)

    def round(self, number: int, rows: dict[tuple, float]) -> None:
        """One round: a launch of each (stack, approach, variant) in ``rows``, its figures scaled by the value."""
        for (stack, approach, variant), scale in rows.items():
            run = next(self.ids)
            tags = {"mpi": "mpich", "origin": "host" if approach == "native" else "image", "variant": variant,
                    "round": str(number), "block": "1"}
            if variant == "a-a":
                tags["control"] = "a-a"
            self.runs[run] = {"run": run, "campaign": 1, "benchmark": "bw", "status": "ok", "stack": stack,
                              "approach": approach, "ranks": 2, "nodes": 1, "buffers": "H-H", "message": None,
                              "mpi_library_version": "MPICH Version: 4.0.2", "libfabric_version": None,
                              "libfabric_provider": None, "source": "test", "tags": tags}
            noise = self.noise(number, (stack, approach, variant))
            for size in SIZES:
                self.results.append((run, size, "bandwidth", (100.0 + size / 100) * scale * float(np.exp(noise))))

    def rows(self):
        return rows_from(self.runs, self.results)


SYSTEM_ROW = ("host-mpich", "native", "default")
CONTROL_ROW = ("host-mpich", "native", "a-a")
SLOW = ("pip-mpich", "container", "tcp")
AT_SPEED = ("debian-mpich", "container", "default")
EDGE = ("pip-mpich", "container", "default")


def by_row(answers) -> dict[tuple, object]:
    return {(a.key.stack, a.key.approach, a.key.variant): a for a in answers if a.baseline == SYSTEM}


def sequential(rows) -> dict[tuple, object]:
    return by_row(answer(rows, Settings(looks=LOOKS)))


def test_the_level_is_spent_over_the_looks_strictly_early_and_sums_to_alpha():
    levels = spent_levels(LOOKS, 0.05)
    assert LOOKS == (6, 10, 16, 24)
    assert sum(levels) == pytest.approx(0.05)
    assert levels[0] < 0.001 and levels[-1] > 0.03  # O'Brien-Fleming-like: the last look near the fixed design
    assert list(levels) == sorted(levels)
    with pytest.raises(ValueError):
        spent_levels((6, 6, 12), 0.05)


def test_a_row_cut_at_a_round_keeps_only_the_launches_up_to_it():
    rounds = Rounds()
    for number in range(1, 11):
        rounds.round(number, {SYSTEM_ROW: 1.0})
    row = next(iter(rounds.rows().values()))
    cut = until_round(row, 6)
    assert cut.launches == 6 and len(cut.schedule) == 6 and all(len(v) == 6 for v in cut.figures.values())
    assert max(slot.round for slot in cut.schedule.values()) == 6
    assert until_round(row, 10) is row


def full_campaign(seed: int = 3) -> Rounds:
    rounds = Rounds(seed)
    for number in range(1, 25):
        rounds.round(number, {SYSTEM_ROW: 1.0, CONTROL_ROW: 1.0, SLOW: 0.3, AT_SPEED: 1.0, EDGE: 0.9})
    return rounds


def test_clear_rows_settle_early_and_a_row_on_the_floor_stops_without_a_verdict():
    answers = sequential(full_campaign().rows())
    assert answers[SLOW].label == "(Y)" and answers[SLOW].look == 6
    assert "settled after 6 rounds" in answers[SLOW].row_class.reason
    # at speed within 2 %: settled before the maximum (the looks before 16 rounds test at 99.99 % and 99.95 %:
    # with 10 pairs no exact interval at 99.95 % exists, which stops nothing)
    assert answers[AT_SPEED].label == "Y" and answers[AT_SPEED].look <= 16
    edge = answers[EDGE]  # a true loss of exactly the floor: no count of launches settles it
    assert edge.label == "?" and not edge.continues and edge.stopped.startswith(MAXIMUM)
    assert 10 <= edge.look <= 24
    assert answers[AT_SPEED].look_alpha == pytest.approx(spent_levels(LOOKS, 0.05)[LOOKS.index(answers[AT_SPEED].look)])


def test_a_report_of_the_rounds_the_campaign_ran_agrees_with_what_it_decided():
    """The campaign stops a row at the look that settles it while its baseline runs on for the open rows: the
    stored rounds then hold fewer launches of that row. Judged again, it keeps the class and the look."""
    everything = sequential(full_campaign().rows())
    ran = Rounds(3)
    for number in range(1, 25):
        row_scales = {SYSTEM_ROW: 1.0, CONTROL_ROW: 1.0, SLOW: 0.3, AT_SPEED: 1.0, EDGE: 0.9}
        ran.round(number, {row: scale for row, scale in row_scales.items()  # the baseline and control: always
                           if row in (SYSTEM_ROW, CONTROL_ROW) or number <= everything[row].look
                           or everything[row].continues})
    stored = sequential(ran.rows())
    for row in (SLOW, AT_SPEED, EDGE, CONTROL_ROW):
        assert (stored[row].label, stored[row].look) == (everything[row].label, everything[row].look), row
    assert stored[SLOW].launches == 6  # where the time went: six launches, not 24


@pytest.mark.parametrize("ratio, goes_on", [(0.94, True), (0.895, True), (0.91, False)])
def test_an_open_row_goes_on_while_its_forecast_fits_in_the_maximum(ratio, goes_on):
    """After 16 of at most 24 rounds: a row whose own forecast settles it within the margin of the maximum gets
    more rounds; one just inside the floor, whose at-speed verdict would need far more launches, stops and says
    so. After 10 rounds the look's level, 99.95 %, has no exact interval from 10 pairs: nothing to forecast
    from, so no row stops there on its forecast."""
    rounds = Rounds(spread=0.04)
    for number in range(1, 17):
        rounds.round(number, {SYSTEM_ROW: 1.0, EDGE: ratio})
    edge = sequential(rounds.rows())[EDGE]
    assert edge.label == "?" and edge.look == 16
    assert edge.continues is goes_on
    assert goes_on or edge.stopped.startswith(MAXIMUM)


def test_open_rows_stop_when_the_control_cannot_resolve_them():
    """A machine whose A/A control comes out slower than itself: no more rounds for open rows."""
    rounds = Rounds(shared=0.02, spread=0.02)
    for number in range(1, 11):
        rounds.round(number, {SYSTEM_ROW: 1.0, CONTROL_ROW: 0.6, EDGE: 0.92})
    answers = sequential(rounds.rows())
    assert answers[CONTROL_ROW].label == "(Y)"
    assert answers[EDGE].label == "?" and answers[EDGE].stopped.startswith(CONTROL)


def test_a_fixed_design_is_judged_as_before():
    rows = full_campaign().rows()
    fixed = by_row(answer(rows, Settings()))
    assert all(a.look == 0 and not a.stopped for a in fixed.values())


# --- error rates under optional stopping --------------------------------------------------------------------------


def first_verdicts(ratio: float, looks, levels, *, sequences: int, spread: float, shared: float, seed: int,
                   floor: PracticalFloor = PracticalFloor()) -> Counter:
    """Simulated sequences of paired rounds (a shared machine state per round, as on a busy host) with a true
    ratio; each is judged at every look with that look's level and stops at its first verdict. Returns how
    many stopped with each verdict."""
    rng = np.random.default_rng(seed)
    common = rng.normal(0.0, shared, (sequences, looks[-1]))
    baseline = np.exp(common + rng.normal(0.0, spread, common.shape))
    candidate = ratio * np.exp(common + rng.normal(0.0, spread, common.shape))
    first: dict[int, Verdict] = {}
    for rounds, level in zip(looks, levels):
        entries = {}
        for index in range(sequences):
            if index not in first:
                c, b = tuple(candidate[index, :rounds]), tuple(baseline[index, :rounds])
                entries[index] = (c, b, None, (c, b))
        for index, comparison in compare_many(entries, higher_is_better=True, alpha=level, floor=floor).items():
            if comparison.verdict is not Verdict.INCONCLUSIVE:
                first[index] = comparison.verdict
    return Counter(first.values())


def tolerance(rate: float, sequences: int) -> float:
    return 3.0 * (rate * (1.0 - rate) / sequences) ** 0.5  # Monte Carlo error: three standard errors


@hypothesis_settings(max_examples=6, deadline=None)
@given(spread=st.floats(0.005, 0.2), shared=st.floats(0.0, 0.4), seed=st.integers(0, 2**16),
       looks=st.sampled_from([planned_looks(6, 24), planned_looks(4, 12), planned_looks(6, 48)]))
def test_an_aa_comparison_is_called_slower_at_most_at_the_nominal_rate_with_planned_looks(spread, shared, seed,
                                                                                        looks):
    """The A/A null: two identical configurations, any difference counted (no practical floor). With the level
    spent over the planned looks, false 'slower' verdicts over all looks stay at or under alpha."""
    sequences, alpha = 1200, 0.05
    found = first_verdicts(1.0, looks, spent_levels(looks, alpha), sequences=sequences, spread=spread,
                           shared=shared, seed=seed, floor=PracticalFloor(0.0, 0.0))
    assert found[Verdict.SLOWER] / sequences <= alpha + tolerance(alpha, sequences)


def test_peeking_without_planned_looks_inflates_the_error_and_the_spending_keeps_it():
    """At the least favourable null of the minimum-effect test (a true loss of exactly the floor, 0.90×), a
    fixed design calls 'slower' about alpha of the time; stopping at the first of four looks each at the full
    level, about twice that; with the level spent over the looks, at most alpha. The same for a false 'at
    speed' (the equivalence test)."""
    sequences, alpha = 2000, 0.05
    common = dict(sequences=sequences, spread=0.05, shared=0.1, seed=11)
    naive = first_verdicts(0.9, LOOKS, [alpha] * len(LOOKS), **common)
    spent = first_verdicts(0.9, LOOKS, spent_levels(LOOKS, alpha), **common)
    limit = alpha + tolerance(alpha, sequences)
    for verdict in (Verdict.SLOWER, Verdict.AT_SPEED):
        assert spent[verdict] / sequences <= limit, verdict
        assert naive[verdict] / sequences > 1.4 * alpha, verdict


def test_rows_of_a_campaign_stopped_inside_its_pilot_are_judged_on_the_rounds_there_are():
    rounds = Rounds()
    for number in range(1, 5):
        rounds.round(number, {SYSTEM_ROW: 1.0, SLOW: 0.3, AT_SPEED: 1.0})
    answers = sequential(rounds.rows())
    assert {a.look for a in answers.values()} == {4}  # not the pilot's 6 rounds, which were never reached
    assert answers[AT_SPEED].continues and answers[AT_SPEED].label == "?"


@pytest.mark.parametrize("needed, launches_a_round, goes_on", [
    (60, 2, True),  # 60 launches: within 4 x the 20 that 10 rounds give a case launched twice a round
    (60, 1, False),  # the same forecast for a case launched once a round: beyond 4 x 10
    (100, 2, False),
])
def test_a_forecast_is_set_against_the_launches_the_maximum_gives_the_row_not_its_rounds(needed, launches_a_round,
                                                                                        goes_on):
    """A forecast counts launches a side; a case launched more than once a round (a native build that is also a
    same-stack baseline) gets that many launches from each round up to the maximum. An early look's forecast
    stops a row only beyond FORECAST_MARGIN times those."""
    from mpistack.analysis import sequential as rule
    from mpistack.analysis.answers import Answer
    from mpistack.analysis.classes import RowClass
    from mpistack.analysis.evidence import RowKey
    from mpistack.analysis.statistics import SizeComparison

    unit = SizeComparison(n_candidate=12, n_baseline=12, median_candidate=1.0, median_baseline=1.0, ratio=0.95,
                          ci_low=0.8, ci_high=1.1, p_value=float("nan"), verdict=Verdict.INCONCLUSIVE, reason="open",
                          launches_needed=needed, floor_low=0.9, floor_high=1.1, higher_is_better=True,
                          paired=True, n_pairs=12)
    row_class = RowClass("?", [], "not settled", launches_needed=needed, regimes={"large": unit})
    key = RowKey("campaign 1", "pip-mpich", "native", "default", "bw", "bandwidth", 2, 1, "H-H")
    row = Answer(key, SYSTEM, None, row_class, sizes=[unit], launches=6 * launches_a_round, look=6)
    opened = rule._open(row, False, "", 10, lambda n: n)
    assert opened.continues is goes_on
    assert goes_on or f"more than {rule.FORECAST_MARGIN}× the {10 * launches_a_round} the maximum of 10 rounds" \
        in opened.stopped


def test_the_rule_of_one_look_reads_as_one():
    assert Settings(looks=(6,)).rule() == ("sequential, one look, after 6 rounds (no further round was planned): a "
                                           "class is decided by the 90% interval of each message regime")
    assert "looks after 6, 12 rounds" in Settings(looks=(6, 12)).rule()
