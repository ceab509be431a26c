"""A sequential campaign's launches: a pilot of rounds for every case, then stages of rounds for the cases of
open rows only, up to the maximum, within a time budget.

    pilot   rounds 1 .. pilot of every case, in the campaign's own order (campaign/schedule.py)
    look    after each stage, the analysis says which rows are settled (handed in as `judge`: the campaign
            stage does not import the analysis, which comes after it); the level of each look is planned
            (analysis/sequential.py), so looking does not raise the error rates
    stage   the rounds up to the next planned look, for the cases of rows that go on, each with its
            baselines (a baseline runs while any of its candidates is open) and the A/A control in every
            round; blocks paired and counterbalanced as in any round (schedule.schedule)
    maximum without a budget, the campaign's `repeats`; with one, planned when the pilot ends from what the
            pilot cost: the most rounds the rest of the budget reaches if every case went on (`planned_maximum`),
            recorded with the campaign, and the one look after the pilot's. The looks' levels are spent over the rounds up to it, so a budget that
            ends the launches early wastes no level on looks it never reaches; the plan depends on the launches'
            cost alone, never on what they measured, so the spending stays valid (Lan and DeMets)
    budget  a stage starts only when its estimated cost (the launches' durations seen so far) fits in what
            is left; no launch starts once the budget is spent. Through a batch system a stage is submitted
            whole: its cost is the wall time per launch of the stages before (queue included), and once
            submitted it runs to its end

Every decision is a function of the stored rounds up to a look, so `--resume` takes the same path again:
a stage's launches are those the look before it chose, less those already stored.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping, Sequence

from sqlalchemy import Engine

from ..spec.campaign import Campaign, CampaignError, budgeted_looks, planned_looks
from ..spec.case import Case
from . import schedule
from .estimate import Estimate, duration, estimate

#: a row as the analysis names it: stack, approach, variant, benchmark, ranks, nodes, buffers
RowIdentity = tuple[str, str, str, str, int, int, str]


def row_identity(case: Case) -> RowIdentity:
    return (case.stack.name, case.approach.name, case.variant_name, case.benchmark.name, case.placement.ranks,
            case.placement.nodes, case.buffers)


@dataclass(frozen=True)
class Look:
    """What the analysis says of the campaign's rows after the rounds up to a look."""

    going_on: Mapping[RowIdentity, str]  # open rows that get more rounds (the A/A control aside), with a name
    decided: int  # rows settled (Y, (Y), N)
    open: int  # rows not settled, going on or not
    stopped: Sequence[tuple[str, str]] = ()  # open rows that get no more rounds: (name, why)
    controls: Sequence[str] = ()  # A/A control rows still open (they run while any other row goes on)


#: the campaign id and the last round to read -> the look there (the caller's analysis)
Judge = Callable[[int, int], Look]


@dataclass(frozen=True)
class Stage:
    first: int  # rounds, inclusive
    last: int


def stages_of(campaign: Campaign, maximum: int | None = None) -> list[Stage]:
    """The stages: the pilot, then the rounds up to each planned look (to the campaign's `repeats`), or, given
    the `maximum` a budget planned, the rounds up to it (spec.campaign.budgeted_looks); one stage for a fixed
    design. The first stage is the pilot whatever the maximum."""
    if maximum is not None and campaign.pilot:
        looks = budgeted_looks(campaign.pilot, maximum)
    else:
        looks = planned_looks(campaign.pilot, campaign.repeats) or (campaign.repeats,)
    return [Stage(before + 1, rounds) for before, rounds in zip((0, *looks), looks)]


def planned_maximum(campaign: Campaign, pilot_cost: float, left: float) -> int:
    """The most rounds a budgeted sequential campaign plans its looks to, once its pilot ended: the pilot and
    as many more rounds as the rest of the budget (`left`, seconds) holds at the pilot's cost per round
    (`pilot_cost`, the budget its rounds took), as if every case went on; an even number more, so that the last
    look ends a counterbalanced pair of rounds; never beyond `repeats`. Rows that settle make the later rounds
    cheaper, so the budget reaches it; the cost is the launches', not what they measured."""
    pilot = campaign.pilot or campaign.repeats
    per_round = pilot_cost / pilot
    more = math.floor(max(left, 0.0) / per_round + 1e-9) if per_round > 0 else campaign.repeats  # 200/(200/6): 6
    return max(pilot, min(campaign.repeats, pilot + more - more % 2))


def pilot_estimate(campaign: Campaign, cases: Sequence[Case], database: Engine | None = None,
                   refused: frozenset[str] | set[str] = frozenset()) -> Estimate:
    """How long the pilot (every case's first stage) should take, by campaign/estimate.py."""
    first = stages_of(campaign)[0]
    return estimate(campaign, [case for case in cases if case.repeat <= first.last], database, refused)


def describe_plan(campaign: Campaign, pilot: Estimate, planned: Sequence[int] = ()) -> str:
    """The sequential plan in a sentence, for the dry run and the run's start. `planned`: the looks a resumed
    budgeted campaign recorded when its pilot ended."""
    budget = f"; budget {duration(campaign.budget)}" if campaign.budget else ""
    if not campaign.pilot:
        return f"every case {campaign.repeats} times (a fixed design){budget}"
    done = "its launches stored" if not pilot.launches else f"{pilot.launches} launches, {_cost(pilot)}"
    head = (f"sequential: a pilot of {campaign.pilot} rounds for every case ({done}), then rounds for the cases "
            "of open rows only")
    if planned:
        return (f"{head}, looks after {', '.join(map(str, planned))} rounds (planned when the pilot ended; a "
                f"larger budget does not change them){budget}")
    if campaign.budget:
        return (f"{head}, up to the most rounds the budget reaches at the pilot's cost (planned when the pilot "
                f"ends; at most {campaign.repeats}){budget}")
    looks = ", ".join(str(rounds) for rounds in campaign.looks)
    return f"{head}, looks after {looks} rounds (the maximum)"


def describe_most(campaign: Campaign) -> str:
    """The most launches come from: the maximum of rounds, and the budget that may end them earlier."""
    budget = f"; the budget, {duration(campaign.budget)}, may end them sooner" if campaign.budget else "; no budget"
    if not campaign.pilot:
        return f"every case {campaign.repeats} times{budget}"
    return f"most: the maximum of {campaign.repeats} rounds{budget}"


def describe_spent(campaign: Campaign, spent: float) -> str:
    """A resumed campaign's budget: what its stored launches took of it, and what is left for this session."""
    return (f"the budget: {duration(spent)} of {duration(campaign.budget)} spent by the sessions before (from "
            f"the start of their launches to their last stored one); {duration(campaign.budget - spent)} left")


def _cost(pilot: Estimate) -> str:
    """The pilot's cost as the budget check reads it: from earlier runs, from the model of a launch's cost, or
    only the cases' timeouts to go by."""
    if pilot.from_history:
        return f"estimated {_seconds(pilot.seconds)}"
    if pilot.modelled:
        return f"estimated {_seconds(pilot.seconds)} by a model of a launch's cost; no earlier runs to go by"
    return f"at most {duration(pilot.at_timeouts)} at the cases' timeouts; no earlier runs to go by"


def _seconds(seconds: float) -> str:
    """A duration as `duration` says it, with a decimal under two minutes: a budget of 5 s against a pilot of
    5.4 s must not read as 5 s against 5 s."""
    return f"{round(seconds, 1):g} s" if seconds < 120 else duration(seconds)


def check_budget(campaign: Campaign, pilot: Estimate, spent: float = 0.0) -> str | None:
    """Before any launch: a budget the pilot cannot fit is an error when earlier runs tell the pilot's cost,
    a warning (with the figures) when only the timeouts do. `spent`: what a resumed campaign's stored launches
    took of it; a budget they spent is an error."""
    if campaign.budget is None:
        return None
    where = campaign.path or campaign.name
    if spent and spent >= campaign.budget:
        raise CampaignError(f"{where}: the budget is spent: the sessions before took {duration(spent)} of "
                            f"its {duration(campaign.budget)}; give a larger one to go on (`mpistack run --resume "
                            "--budget 30m`, or budget = in the file)")
    if pilot.seconds <= campaign.budget - spent:
        return None
    left = f" left of {duration(campaign.budget)}" if spent else ""
    text = (f"{where}: budget = {_seconds(campaign.budget - spent)}{left} is less than the pilot's {_cost(pilot)} "
            f"({pilot.launches} launches)")
    if pilot.from_history >= pilot.launches:
        raise CampaignError(f"{text}: raise the budget (budget = in the file, or `mpistack run --budget 30m`) "
                            "or lower the pilot (every case's pilot runs before any row can be settled)")
    return f"{text}: the budget may end the pilot before its look"


@dataclass
class Launches:
    """The cases to launch, stage by stage, as the looks choose them. Iterate it to get them; tell it how
    long each took (`ended`); `stopped` says why it ended early ("" when it ran its course)."""

    campaign: Campaign
    cases: Sequence[Case]  # every case of the campaign, every round, in the campaign's order
    done: frozenset[str] | set[str]  # keys already stored (--resume)
    judge: Judge | None
    campaign_id: int
    say: Callable[[str], None] = lambda text: None
    per_launch: float = 0.0  # seconds a launch is expected to take before any has run here
    clock: Callable[[], float] = time.monotonic
    spent: float = 0.0  # seconds of the budget the campaign's earlier sessions spent (--resume)
    #: the most rounds the looks are planned to: given when recorded (--resume); a budgeted campaign plans it
    #: as its pilot ends (`planned_maximum`) and hands its looks to `record_looks`; else the campaign's `repeats`
    maximum: int | None = None
    record_looks: Callable[[tuple[int, ...]], None] = lambda looks: None
    #: launched through a batch system: a stage's cost is counted in its wall time, its jobs' queue included
    queued: bool = False
    stopped: str = ""
    look: Look | None = None
    planned: int = 0  # launches chosen so far (the progress bar's total)
    _seconds: dict[tuple, list[float]] = field(default_factory=dict)
    _stage_walls: list[tuple[float, int]] = field(default_factory=list)  # (wall seconds, launches) per stage
    _start: float | None = None
    _cut: bool = False  # the budget ran out inside a stage, not before the next one

    def __iter__(self) -> Iterator[Case]:
        """Case after case (a launcher that runs them one by one): no launch starts once the budget is spent."""
        for todo in self.stages():
            for case in todo:
                if self.campaign.budget is not None and self.left() <= 0:
                    self.stopped, self._cut = "budget", True
                    self.say("the budget is spent: no more launches")
                    return
                yield case

    def stages(self) -> Iterator[list[Case]]:
        """Stage after stage, each as its look chose it (a batch launcher submits a stage's launches at once).
        The look before a stage is taken when the caller asks for it, so every launch of the stage before must
        be stored by then; the wall time from handing a stage out to being asked for the next is its cost."""
        self._start = self.clock()
        number = 0
        while number < len(planned := stages_of(self.campaign, self.maximum)):
            if number == 1 and self.maximum is None and self.campaign.budget is not None:
                self._plan_maximum()
                continue
            stage = planned[number]
            chosen = self._stage_cases(stage, number)
            if chosen is None:
                return
            todo = [case for case in chosen if case.key not in self.done]
            if number and self.campaign.budget is not None and todo:
                cost = self._stage_cost(todo)
                if cost > self.left():
                    self.stopped = "budget"
                    self.say(f"rounds {stage.first}–{stage.last} ({len(todo)} launches, about {duration(cost)}) do "
                             f"not fit in the {duration(self.left())} left of the budget: stopping here")
                    return
            self.planned += len(todo)
            if number:
                self.say(f"rounds {stage.first}–{stage.last}: {len(todo)} launches"
                         + (f", about {duration(self._stage_cost(todo))}" if todo else ""))
            number += 1
            if not todo:
                continue
            began = self.clock()
            yield todo
            self._stage_walls.append((self.clock() - began, len(todo)))

    def _plan_maximum(self) -> None:
        """The pilot ended: plan the looks to the most rounds the rest of the budget reaches (planned_maximum),
        from the budget the pilot took (earlier sessions' included), and record it before the first look."""
        used = self.campaign.budget - self.left()
        self.maximum = planned_maximum(self.campaign, used, self.left())
        self.record_looks(budgeted_looks(self.campaign.pilot, self.maximum))
        if self.maximum <= stages_of(self.campaign)[0].last < self.campaign.repeats:
            self.stopped = "budget"
            self.say(f"the pilot took {duration(used)} of the budget: no further round fits in the "
                     f"{duration(max(self.left(), 0))} left, so the pilot's look is the only one")
            return
        looks = ", ".join(map(str, budgeted_looks(self.campaign.pilot, self.maximum)))
        self.say(f"the pilot took {duration(used)} of the budget: looks planned after {looks} rounds (the most the "
                 f"{duration(max(self.left(), 0))} left reach if every case went on; rows that settle stop sooner)")

    def _stage_cost(self, todo: Sequence[Case]) -> float:
        """A stage's expected cost: launched one by one, the sum of its launches' expected durations; through a
        batch system (`queued`), its launches times the wall time per launch of the stages before, which holds
        the queue, the jobs' start and their probe steps."""
        walls = sum(seconds for seconds, _ in self._stage_walls)
        count = sum(launches for _, launches in self._stage_walls)
        if self.queued and count:
            return len(todo) * walls / count
        return sum(self._expected(case) for case in todo)

    @property
    def status(self) -> str:
        """For the progress line: rows decided and open at the last look, and the budget left."""
        rows = "" if self.look is None else f"{self.look.decided} decided, {self.look.open} open"
        left = "" if self.campaign.budget is None else f"{duration(max(self.left(), 0))} left"
        return ", ".join(part for part in (rows, left) if part)

    def ended(self, case: Case, seconds: float) -> None:
        self._seconds.setdefault((case.benchmark.name, case.approach.name), []).append(seconds)

    def left(self) -> float:
        if self.campaign.budget is None:
            return float("inf")
        spent = 0.0 if self._start is None else self.clock() - self._start
        return self.campaign.budget - self.spent - spent

    def _expected(self, case: Case) -> float:
        """A launch's expected duration: the mean of this run's launches of its benchmark and approach, else
        of all its launches, else the estimate from before the run."""
        seen = self._seconds.get((case.benchmark.name, case.approach.name))
        if seen:
            return sum(seen) / len(seen)
        every = [seconds for durations in self._seconds.values() for seconds in durations]
        return sum(every) / len(every) if every else self.per_launch

    def _stage_cases(self, stage: Stage, number: int) -> list[Case] | None:
        """The stage's cases in run order; None when the look before it ends the campaign."""
        in_stage = [case for case in self.cases if stage.first <= case.repeat <= stage.last]
        if number == 0 or self.judge is None:
            return in_stage  # the pilot, or a fixed design: every case, as scheduled
        self.look = look = self.judge(self.campaign_id, stage.first - 1)
        left = "" if self.campaign.budget is None else f"; {duration(max(self.left(), 0))} of the budget left"
        controls = (f" ({len(look.controls)} of them the A/A control, which runs while any row goes on)"
                    if look.controls else "")
        self.say(f"look after {stage.first - 1} rounds: {look.decided} row(s) decided, {look.open} open{controls}, "
                 f"{len(look.going_on)} going on{left}")
        if not look.going_on:
            self.stopped = "decided"
            return None
        first = [case for case in in_stage if getattr(case, "launch", 1) == 1]
        chosen = _with_baselines([case for case in first if row_identity(case) in look.going_on
                                  or (case.variant is not None and case.variant.control)], first)
        blocks = self.campaign.order != "matrix"
        return schedule.schedule(chosen, (self.campaign.seed or 0) + stage.first if blocks else None, blocks)

    def conclude(self) -> list[tuple[str, str]]:
        """After the run: each open row and why it got no more rounds (the last look, on every round stored)."""
        if self.judge is None:
            return []
        self.look = look = self.judge(self.campaign_id, self.maximum or self.campaign.repeats)
        going = {"budget": ("budget: spent before the rounds up to the next look were all launched" if self._cut
                            else "budget: the next rounds did not fit in what was left of it"),
                 "": "interrupted"}.get(self.stopped, self.stopped)
        served = ("the A/A control: it runs only as the yardstick of open rows, and none went on" if not look.going_on
                  else going)
        return [*((name, self._budget_said(why)) for name, why in look.stopped),
                *((name, going) for name in look.going_on.values()), *((name, served) for name in look.controls)]

    def _budget_said(self, why: str) -> str:
        """An open row's reason, with where its maximum came from when the budget planned it below `repeats`
        (the analysis names the maximum, not what set it)."""
        if why.startswith("maximum") and self.maximum is not None and self.maximum < self.campaign.repeats:
            return (f"{why} (the most rounds the budget reached at the pilot's cost, of repeats = "
                    f"{self.campaign.repeats}; a new run with a larger budget reaches more)")
        return why


def _with_baselines(chosen: list[Case], cases: Sequence[Case]) -> list[Case]:
    """The chosen cases and, in each round, the baselines they are compared with (schedule.baselines)."""
    groups: dict[tuple, list[Case]] = {}
    for case in cases:
        groups.setdefault((case.repeat, schedule.comparison_group(case)), []).append(case)
    keys = {case.key for case in chosen}
    for case in list(chosen):
        for baseline in schedule.baselines(case, groups[(case.repeat, schedule.comparison_group(case))]):
            if baseline.key not in keys:
                keys.add(baseline.key)
                chosen.append(baseline)
    return [case for case in cases if case.key in keys]  # in the listed order
