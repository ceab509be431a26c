"""The first estimate of a campaign: a model of each launch's cost, not its timeout, and its correction as
launches finish."""

from __future__ import annotations

from pathlib import Path

from mpistack.campaign.estimate import corrected, estimate, launch_seconds
from mpistack.campaign.matrix import expand
from mpistack.spec.campaign import load_campaign

REPO = Path(__file__).resolve().parents[2]


def test_the_default_campaigns_first_estimate_is_a_model_not_its_timeouts():
    campaign = load_campaign(REPO / "examples" / "local.toml")
    cases = expand(campaign)
    size = estimate(campaign, cases)
    # `make run` took about 16 minutes on a 2-core guest; the timeouts say 19 h
    assert 10 * 60 <= size.seconds <= 40 * 60 and size.at_timeouts > 10 * 3600
    assert "estimated" in size.describe() and "from a model of a launch" in size.describe()
    assert "at most" not in size.describe()
    by_case = {(case.benchmark.name, case.approach.name): launch_seconds(campaign, case) for case in cases}
    assert by_case[("bibw", "container")] > by_case[("bw", "container")] > by_case[("bw", "native")]
    assert by_case[("latency", "container")] > by_case[("latency", "native")]  # a container's start costs


def test_more_sizes_and_no_adaptive_stop_cost_more():
    campaign = load_campaign(REPO / "examples" / "local.toml")
    case = next(case for case in expand(campaign) if case.benchmark.name == "bw")
    few = campaign.model_copy(update={"benchmark_options": ["-m", "1:1024", "--stop", "ci:0.03"]})
    many = campaign.model_copy(update={"benchmark_options": ["-m", "1:4194304"]})
    assert launch_seconds(few, case) < launch_seconds(campaign, case) < launch_seconds(many, case)
    tight = campaign.model_copy(update={"timeout": 0.5, "benchmark_options": ["-m", "1:4194304"]})
    assert launch_seconds(tight, case) == 0.5  # never beyond the timeout


def test_the_rest_is_corrected_by_the_launches_that_finished():
    assert corrected(600.0, [(1.0, 2.0)]) == 600.0  # one launch says little
    assert corrected(600.0, [(1.0, 2.0), (1.0, 2.5), (2.0, 3.5)]) == 600.0 * 8.0 / 4.0


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _left_lines(seconds_per_case: float, cases: int, modelled: float = 1.0) -> list[str]:
    """The "about N left" lines of a campaign of ``cases`` cases, each modelled at ``modelled`` seconds and taking
    ``seconds_per_case``, as the run's display prints them."""
    from io import StringIO

    from rich.console import Console

    from mpistack.campaign.session import _Display
    from mpistack.campaign.stages import Outcome
    from mpistack.spec.status import RunStatus

    class Case:
        skip = False
        key = "case"

    clock = _Clock()
    console = Console(file=StringIO(), width=80)
    display = _Display(console, cases, model=lambda case: modelled, cases=[Case()] * cases, clock=clock)
    for _ in range(cases):
        clock.now += seconds_per_case
        display.ended(Case(), Outcome(RunStatus.OK, seconds=seconds_per_case))
    return [line for line in console.file.getvalue().splitlines() if line.startswith("about ")]


def test_what_is_left_is_said_only_when_it_says_something():
    """A tiny campaign (a dozen cases of a second) gets no "about N left" line at all, where it had one after each
    case; a long one gets a line now and then, never twice within SAY_EVERY_S, each one a changed estimate."""
    assert _left_lines(1.0, 12) == []
    lines = _left_lines(10.0, 200, modelled=10.0)
    assert 3 <= len(lines) <= 20, lines  # 2000 s: a line at most every 30 s, and only when it moved by a fifth
    assert len(set(lines)) == len(lines)
