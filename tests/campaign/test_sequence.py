"""A sequential campaign's launches: the pilot for every case, then only the cases of open rows with their
baselines and the A/A control, in paired blocks; a stage that does not fit the budget is not started; the
campaign file's pilot, maximum and budget checked before anything runs."""

from __future__ import annotations

import pytest

from mpistack.campaign.estimate import Estimate
from mpistack.campaign.matrix import expand
from mpistack.campaign.schedule import baselines, comparison_group
from mpistack.campaign.sequence import Launches, Look, check_budget, planned_maximum, row_identity, stages_of
from mpistack.spec.campaign import CampaignError, load_campaign_text

CAMPAIGN = """name = "seq"
repeats = 16
pilot = 6
approaches = ["native", "container"]
benchmarks = ["latency", "bw"]
[[stack]]
name = "host-mpich"
host = "mpich"
[[stack]]
name = "debian-mpich"
[[stack]]
name = "pip-mpich"
[[placement]]
ranks = 2
[[variant]]
name = "a-a"
control = true
env = { MPISTACK_CONTROL = "a-a" }
stacks = ["host-mpich"]
approaches = ["native"]
"""


def campaign(text: str = CAMPAIGN, **changes):
    return load_campaign_text(text, "seq.toml").model_copy(update={"seed": 9, **changes})


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def run_all(launches: Launches, clock: Clock | None = None, seconds: float = 1.0) -> list:
    ran = []
    for case in launches:
        ran.append(case)
        if clock is not None:
            clock.now += seconds
        launches.ended(case, seconds)
    return ran


def test_the_stages_end_at_the_planned_looks():
    assert [(stage.first, stage.last) for stage in stages_of(campaign())] == [(1, 6), (7, 10), (11, 16)]
    assert [(stage.first, stage.last) for stage in stages_of(campaign(pilot=None))] == [(1, 16)]


def test_after_the_pilot_only_open_rows_launch_with_their_baselines_and_the_control():
    chosen = campaign()
    cases = expand(chosen)
    open_row = next(case for case in cases if case.stack.name == "pip-mpich" and case.approach.name == "container"
                    and case.benchmark.name == "bw")
    looks = []

    def judge(campaign_id: int, through: int) -> Look:
        looks.append(through)
        return Look({row_identity(open_row): "pip-mpich container bw"}, decided=7, open=1)

    ran = run_all(Launches(chosen, cases, set(), judge, 1))
    assert looks == [6, 10]
    pilot = [case for case in ran if case.repeat <= 6]
    assert len(pilot) == len([case for case in cases if case.repeat <= 6])  # every case in the pilot
    later = [case for case in ran if case.repeat > 6]
    assert {(case.stack.name, case.approach.name, case.variant_name, case.benchmark.name) for case in later} == {
        ("pip-mpich", "container", "default", "bw"),  # the open row
        ("pip-mpich", "native", "default", "bw"),  # its same-stack baseline
        ("host-mpich", "native", "default", "bw"),  # its system baseline, and the control's
        ("host-mpich", "native", "a-a", "bw"), ("host-mpich", "native", "a-a", "latency"),  # the control
        ("host-mpich", "native", "default", "latency"),
    }
    for repeat in range(7, 17):  # each open candidate beside its baselines in its block
        in_round = [case for case in later if case.repeat == repeat]
        candidate = next(case for case in in_round if case.stack.name == "pip-mpich" and
                         case.approach.name == "container")
        group = [case for case in in_round if comparison_group(case) == comparison_group(candidate)]
        block = [case for case in group if case.block == candidate.block]
        assert {b.key.split("/r")[0] for b in baselines(candidate, group)} <= {c.key.split("/r")[0] for c in block}
    assert len({case.key for case in ran}) == len(ran)  # no launch twice


def test_the_campaign_ends_when_no_row_goes_on():
    chosen = campaign()
    ran = run_all(Launches(chosen, expand(chosen), set(), lambda *_: Look({}, decided=8, open=0), 1))
    assert max(case.repeat for case in ran) == 6


def test_a_pilot_that_leaves_no_room_for_a_round_plans_no_more_and_the_open_rows_say_budget():
    chosen = campaign(budget=100.0)
    cases = expand(chosen)
    pilot = len([case for case in cases if case.repeat <= 6])
    open_row = next(case for case in cases if case.approach.name == "container")
    clock, recorded = Clock(), []
    launches = Launches(chosen, cases, set(), lambda *_: Look({row_identity(open_row): "that row"}, 3, 1), 1,
                        clock=clock, record_looks=lambda looks: recorded.append(looks[-1]))
    ran = run_all(launches, clock, seconds=90.0 / pilot)  # the pilot took 90 of the 100 s: 15 s a round, 10 s left
    assert len(ran) == pilot and launches.stopped == "budget" and recorded == [6]
    assert launches.conclude() == [("that row", "budget: the next rounds did not fit in what was left of it")]


def test_a_stage_that_does_not_fit_the_budget_is_not_started():
    """The plan assumes the rounds cost what the pilot's did; a stage that turns out dearer is still checked."""
    chosen = campaign(budget=100.0)
    cases = expand(chosen)
    open_row = next(case for case in cases if case.approach.name == "container")
    clock = Clock()
    launches = Launches(chosen, cases, set(), lambda *_: Look({row_identity(open_row): "that row"}, 3, 1), 1,
                        clock=clock, maximum=16)  # as recorded by an earlier session
    pilot = len([case for case in cases if case.repeat <= 6])
    ran = run_all(launches, clock, seconds=90.0 / pilot)
    assert len(ran) == pilot and launches.stopped == "budget"


@pytest.mark.parametrize("pilot_cost, left, maximum", [
    (410.0, 310.0, 10),  # 68 s a round: 4 more rounds fit
    (410.0, 250.0, 8),  # 3 fit: an even number more, so the last look ends a counterbalanced pair
    (410.0, 60.0, 6),  # none fit: the pilot is the only look
    (60.0, 3600.0, 16),  # never beyond repeats
    (410.0, -5.0, 6),  # the pilot overran the budget
])
def test_the_maximum_is_the_most_rounds_the_rest_of_the_budget_reaches_at_the_pilots_cost(pilot_cost, left,
                                                                                           maximum):
    assert planned_maximum(campaign(budget=720.0), pilot_cost, left) == maximum


def test_a_budget_plans_the_looks_from_the_pilots_cost_before_the_first_look_and_records_it_once():
    chosen = campaign(budget=300.0, repeats=24)
    cases = expand(chosen)
    pilot = len([case for case in cases if case.repeat <= 6])
    open_row = next(case for case in cases if case.approach.name == "container")
    events = []

    def judge(campaign_id: int, through: int) -> Look:
        events.append(("look", through))
        return Look({row_identity(open_row): "that row"}, 3, 1)

    def record(rounds: int) -> None:
        events.append(("planned", rounds))

    clock = Clock()
    launches = Launches(chosen, cases, set(), judge, 1, clock=clock, record_looks=lambda looks: record(looks[-1]))
    ran = run_all(launches, clock, seconds=120.0 / pilot)  # 20 s a round: 180 s left hold 9 rounds, 8 planned
    assert events[:2] == [("planned", 14), ("look", 6)]  # planned before the first look, whose level depends on it
    assert [event for event in events if event[0] == "look"] == [("look", 6)]  # 14, the last: conclude's
    assert max(case.repeat for case in ran) == 14 and launches.maximum == 14
    # a resumed session reads the recorded maximum and plans nothing
    again = []
    resumed = Launches(chosen, cases, {case.key for case in ran}, judge, 1, clock=Clock(), maximum=14,
                       record_looks=again.append)
    assert run_all(resumed) == [] and again == []


def test_through_a_batch_system_a_stage_is_handed_out_whole_and_the_plan_counts_its_wall_time_queue_included():
    chosen = campaign(budget=400.0)
    cases = expand(chosen)
    open_row = next(case for case in cases if case.approach.name == "container")
    looks, planned = [], []

    def judge(campaign_id: int, through: int) -> Look:
        looks.append(through)
        return Look({row_identity(open_row): "that row"}, 3, 1)

    clock = Clock()
    launches = Launches(chosen, cases, set(), judge, 1, clock=clock, queued=True, record_looks=lambda looks: planned.append(looks[-1]))
    handed = []
    for stage in launches.stages():
        assert looks == [stage[0].repeat - 1] if handed else not looks  # each look after the stage before ended
        handed.append(stage)
        for case in stage:
            launches.ended(case, 1.0)  # a launch takes 1 s, but the queue makes the stage's wall time longer
        clock.now += 200.0
        looks.clear()
    pilot = len([case for case in cases if case.repeat <= 6])
    assert len(handed[0]) == pilot
    # the pilot's jobs took 200 s of wall time (72 launches of 1 s each, the rest queue): 200 s left hold six
    # more rounds at its rate, so the looks are after 6 and 12 rounds, and rounds 7-12 are handed out at once
    assert planned == [12] and len(handed) == 2
    assert {case.repeat for case in handed[1]} == set(range(7, 13))


def test_no_launch_starts_once_the_budget_is_spent():
    chosen = campaign(budget=10.0, pilot=None)
    clock = Clock()
    launches = Launches(chosen, expand(chosen), set(), None, 1, clock=clock)
    assert len(run_all(launches, clock, seconds=4.0)) == 3 and launches.stopped == "budget"


def test_a_resumed_campaign_has_only_what_its_stored_launches_left_of_the_budget():
    chosen = campaign(budget=10.0, pilot=None)
    clock = Clock()
    launches = Launches(chosen, expand(chosen), set(), None, 1, clock=clock, spent=6.0)
    assert len(run_all(launches, clock, seconds=4.0)) == 1 and launches.stopped == "budget"  # 4 s were left
    with pytest.raises(CampaignError, match="the budget is spent: the sessions before took 12 s of its 10 s"):
        check_budget(chosen, estimate(30.0, known=10), spent=12.0)
    assert "budget = 4 s left of 10 s is less than the pilot's" in check_budget(chosen, estimate(8.0, known=0),
                                                                                   spent=6.0)


def test_resume_skips_what_is_stored_and_takes_the_same_cases():
    chosen = campaign()
    cases = expand(chosen)
    open_row = next(case for case in cases if case.approach.name == "container")
    judge = lambda *_: Look({row_identity(open_row): "row"}, 3, 1)  # noqa: E731
    first = run_all(Launches(chosen, cases, set(), judge, 1))
    done = {case.key for case in first[:len(first) // 2]}
    again = run_all(Launches(chosen, cases, done, judge, 1))
    assert [case.key for case in again] == [case.key for case in first if case.key not in done]


def estimate(seconds: float, known: int, launches: int = 10) -> Estimate:
    return Estimate(launches, launches, seconds, launches * 60.0, known)


def test_a_budget_the_pilot_cannot_fit_is_an_error_when_earlier_runs_say_so_else_a_warning():
    chosen = campaign(budget=60.0)
    with pytest.raises(CampaignError, match=r"seq.toml: budget = 60 s is less than the pilot's estimated 5 min"):
        check_budget(chosen, estimate(300.0, known=10))
    assert "the budget may end the pilot" in check_budget(chosen, estimate(600.0, known=0))
    assert check_budget(chosen, estimate(30.0, known=10)) is None


@pytest.mark.parametrize("line, message", [
    ('budget = "0"', "budget: expected a positive time"),
    ('budget = -5', "budget: expected a positive time"),
    ('budget = "-5m"', "budget: expected a duration such as 15m"),
    ('budget = "soon"', "budget: expected a duration such as 15m"),
    ("pilot = 20", "pilot: more than repeats = 16"),
    ("pilot = 1", "pilot: Input should be greater than or equal to 2"),
])
def test_bad_pilot_and_budget_are_named_with_the_field(line, message):
    with pytest.raises(CampaignError, match=message):
        load_campaign_text(CAMPAIGN.replace("pilot = 6", line if line.startswith("pilot") else f"pilot = 6\n{line}"),
                           "seq.toml")


@pytest.mark.parametrize("text, seconds", [('"15m"', 900), ('"1h30m"', 5400), ("900", 900), ('"90s"', 90),
                                           ('"1.5h"', 5400)])
def test_budgets_read_as_people_write_them(text, seconds):
    assert campaign(CAMPAIGN.replace("pilot = 6", f"pilot = 6\nbudget = {text}")).budget == seconds


def test_the_looks_read_back_from_the_store_are_the_ones_the_run_planned(tmp_path):
    """A report, a --resume and the run's own looks read one record: the maximum planned as the pilot ended.
    The record is a fact of the run, so it is neither a change of the file (--resume) nor lost by --force."""
    from mpistack.campaign.resume import recorded_spec, resumed
    from mpistack.spec.campaign import recorded_looks
    from mpistack.store import open_database
    from mpistack.store.campaigns import campaign_spec, record_planned_looks, start_campaign

    database = open_database(f"sqlite:///{tmp_path / 's.db'}")
    budgeted = campaign(budget=720.0, repeats=24)
    number = start_campaign(database, budgeted.name, recorded_spec(budgeted))
    assert recorded_looks(campaign_spec(database, number)) == (6,)  # the pilot has not ended: its look alone
    record_planned_looks(database, number, (6, 10))
    assert recorded_looks(campaign_spec(database, number)) == (6, 10)
    assert resumed(budgeted, database) == (number, budgeted)  # the record is no change of the file
    edited = budgeted.model_copy(update={"timeout": 99})
    assert resumed(edited, database, force=True)[0] == number
    assert campaign_spec(database, number)["planned_looks"] == [6, 10] and campaign_spec(database, number)["timeout"] == 99
    # without a budget the looks go to repeats, as the file says
    assert recorded_looks(recorded_spec(campaign())) == (6, 10, 16)


def test_the_budget_check_says_seconds_with_a_decimal_and_which_estimate_it_read():
    """Under two minutes a budget and a pilot's cost that round to the same second must not read alike, and a
    pilot costed by the model of a launch says so (not the timeouts it did not read)."""
    chosen = campaign(budget=5.0)
    text = check_budget(chosen, Estimate(10, 10, 5.4, 600.0, 0, modelled=10))
    assert "budget = 5 s is less than the pilot's estimated 5.4 s by a model of a launch's cost" in text


def test_a_look_says_which_open_row_is_the_control_and_a_budget_spent_inside_a_stage_says_so():
    chosen = campaign(budget=50.0)
    cases = expand(chosen)
    open_row = next(case for case in cases if case.approach.name == "container")
    said = []
    look = Look({row_identity(open_row): "that row"}, 3, 2, controls=["the control"])
    clock = Clock()
    launches = Launches(chosen, cases, set(), lambda *_: look, 1, clock=clock, say=said.append)
    pilot = len([case for case in cases if case.repeat <= 6])
    run_all(launches, clock, seconds=60.0 / pilot)  # the budget runs out inside the pilot
    assert ("that row", "budget: spent before the rounds up to the next look were all launched") in \
        launches.conclude()
    run_all(Launches(chosen, cases, set(), lambda *_: look, 1, clock=Clock(), say=said.append,
                     maximum=16), None)
    assert any("3 row(s) decided, 2 open (1 of them the A/A control, which runs while any row goes on), "
               "1 going on" in line for line in said), said


def test_a_resumed_plan_says_the_looks_it_recorded_and_that_its_pilot_is_stored():
    from mpistack.campaign.sequence import describe_plan

    text = describe_plan(campaign(budget=300.0), Estimate(0, 0, 0.0, 0.0, 0), [6, 12])
    assert "a pilot of 6 rounds for every case (its launches stored)" in text
    assert "looks after 6, 12 rounds (planned when the pilot ended; a larger budget does not change them)" in text
