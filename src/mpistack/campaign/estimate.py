"""How big a campaign is before it runs: its number of cases and how long they should take.

Each case that launches is counted at the median duration of the earlier launches of the same benchmark
and approach in the store, where there are any, and otherwise at what a model of one launch says it costs
(``launch_seconds``: the start of its ranks, then per message size the iterations the benchmark runs times a
message's time), never more than its timeout. The model is labelled an estimate, and corrected as launches
finish (``corrected``: the rest scaled by how the finished launches compared with their modelled cost). A
campaign beyond MAX_CASES cases or MAX_SECONDS of estimated time runs only when the user confirms it: a
matrix grows by multiplication, and a typo in it can ask for a million cases.

Public API (the campaign's schedule calls it): ``estimate``, ``Estimate``, ``launch_seconds``, ``corrected``,
``worth_saying``, ``duration``.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from sqlalchemy import Engine

from ..registry import APPROACHES
from ..spec.campaign import Campaign
from ..spec.case import Case
from ..store.campaigns import past_durations

#: the model's constants, fitted to the launches the default campaign's store recorded (`make run` on a 2-core
#: Debian 12 KVM guest shared with other work: 876 launches of its four benchmarks, median 0.21-1.01 s by approach and
#: benchmark) by `benchmarks/estimate_fit.py --db mpistack.db`: starting the ranks natively (mpiexec and MPI_Init),
#: and in containers (podman run per rank); a message's time between ranks of one node (the shared-memory latency
#: and copy rate), the fit's scale of the message term applied to both
START_NATIVE_S = 0.27
START_CONTAINER_S = 0.63
MESSAGE_US = 0.26
COPY_BYTES_PER_US = 19500.0
#: OSU's iterations per size (small below 8 KiB, large from it) and messages per iteration, as mpistack-bench
#: keeps them; an adaptive stop (--stop) ends a size after STOPPED_ITERATIONS in the usual case
OSU_ITERATIONS = {"latency": (10000, 1000), "bw": (100, 20), "bibw": (100, 20), "allreduce": (10000, 1000)}
MESSAGES_PER_ITERATION = {"latency": 2, "bw": 64, "bibw": 128, "allreduce": 2}
STOPPED_ITERATIONS = 150
DEFAULT_SIZES = (1, 1 << 22)  # OSU's point-to-point range without -m

MAX_CASES = 5_000
MAX_SECONDS = 24 * 3600


@dataclass(frozen=True)
class Estimate:
    cases: int  # every case of the matrix
    launches: int  # the cases that will launch (not skipped)
    seconds: float  # the estimate: past medians where known, timeouts elsewhere
    at_timeouts: float  # every launching case run to its timeout
    from_history: int  # launches estimated from earlier runs
    modelled: int = 0  # launches estimated from the model of a launch's cost (``launch_seconds``)

    def describe(self) -> str:
        text = f"{self.cases} case(s)"
        if self.launches != self.cases:
            text += f" ({self.launches} to launch)"
        if not self.launches:
            return text
        if not self.from_history and not self.modelled:
            return f"{text}; at most {duration(self.at_timeouts)} (each case's timeout; no earlier runs to go by)"
        of = f" of {self.launches}"
        parts = ([f"{self.from_history}{of} from the median time of earlier runs of the same benchmark and "
                  "approach"] if self.from_history else [])
        parts += [f"{self.modelled}{of} from a model of a launch's cost (start-up, sizes, iterations), corrected "
                  "as launches finish"] if self.modelled else []
        rest = self.launches - self.from_history - self.modelled
        parts += [f"{rest}{of} at their timeout"] if rest else []
        return (f"{text}; estimated {duration(self.seconds)} ({'; '.join(parts)}); "
                f"{duration(self.at_timeouts)} if every case ran to its timeout")

    def too_large(self) -> str | None:
        """Why the campaign needs a confirmation, or None."""
        if self.cases > MAX_CASES:
            return f"{self.cases} cases is more than {MAX_CASES}"
        if self.seconds > MAX_SECONDS:
            return f"an estimated {duration(self.seconds)} is more than {duration(MAX_SECONDS)}"
        return None


def _sizes(options: list[str]) -> list[int]:
    """The message sizes an `-m MIN:MAX` option asks for (powers of two, as OSU steps), else OSU's range."""
    low, high = DEFAULT_SIZES
    for flag, value in zip(options, options[1:]):
        if flag in ("-m", "--message-size") and ":" in value:
            first, _, last = value.partition(":")
            if first.isdigit() and last.isdigit():
                low, high = max(1, int(first)), max(1, int(last))
    sizes, size = [], 1
    while size <= high:
        if size >= low:
            sizes.append(size)
        size *= 2
    return sizes or [low]


def launch_seconds(campaign: Campaign, case: Case) -> float:
    """What one launch of the case should cost by the model: its ranks' start, then per message size the
    iterations the benchmark runs (OSU's count, or about STOPPED_ITERATIONS under an adaptive stop) times the
    messages of an iteration times a message's time (latency plus copy); a collective's messages take log2(ranks)
    steps. Never more than the campaign's timeout; a program of the user's own (no model) costs its timeout."""
    if case.benchmark.program is not None:
        return campaign.timeout
    options = [*campaign.benchmark_options, *case.benchmark.options]
    name = case.benchmark.name
    small, large = OSU_ITERATIONS.get(name, (1000, 100))
    adaptive = "--stop" in options
    steps = max(1, (case.placement.ranks - 1).bit_length()) if name == "allreduce" else 1
    work_us = 0.0
    for size in _sizes(options):
        iterations = small if size < 8192 else large
        if adaptive:
            iterations = min(iterations, STOPPED_ITERATIONS)
        work_us += iterations * MESSAGES_PER_ITERATION.get(name, 2) * steps * (MESSAGE_US + size / COPY_BYTES_PER_US)
    image = APPROACHES.get(case.approach.name).image if case.approach.name in APPROACHES else False
    start = START_CONTAINER_S if image else START_NATIVE_S
    return min(campaign.timeout, start + work_us / 1e6)


def corrected(remaining: float, finished: list[tuple[float, float]], least: int = 3) -> float:
    """The estimate of what is left (``remaining`` modelled seconds) corrected by the launches that finished,
    each ``(modelled, actual)`` seconds: scaled by their actual over modelled total, once ``least`` have
    finished (fewer say more about their own start than about the machine)."""
    modelled = sum(pair[0] for pair in finished)
    if len(finished) < least or modelled <= 0:
        return remaining
    return remaining * sum(pair[1] for pair in finished) / modelled


#: a running campaign's "about N left" line: said at most this often, only when the estimate moved by this share of
#: the last one said, and never for less than SAY_AT_LEAST_S left (a tiny campaign's cases end within seconds of
#: each other: a line after each would repeat what its progress bar shows)
SAY_EVERY_S = 30.0
SAY_CHANGE = 0.2
SAY_AT_LEAST_S = 20.0


def worth_saying(left: float, said: float | None, since_said: float) -> bool:
    """Whether the estimate of what is left (``left`` seconds) is worth a line, ``since_said`` seconds after the
    last one said (``said``: what it said; None before the first, ``since_said`` then counting from the start)."""
    if left < SAY_AT_LEAST_S or since_said < SAY_EVERY_S:
        return False
    return said is None or abs(left - said) >= SAY_CHANGE * said


def estimate(campaign: Campaign, cases: list[Case], database: Engine | None = None,
             refused: frozenset[str] | set[str] = frozenset()) -> Estimate:
    """`refused`: the keys of cases their approach refuses once planned (campaign/preflight.py), which do not
    launch either."""
    launching = [case for case in cases if not case.skip and case.key not in refused]
    history = {}
    if database is not None and launching:
        durations = past_durations(database, {case.benchmark.name for case in launching},
                                   {case.approach.name for case in launching})
        history = {pair: statistics.median(seconds) for pair, seconds in durations.items() if seconds}
    seconds, known, modelled = 0.0, 0, 0
    for case in launching:
        past = history.get((case.benchmark.name, case.approach.name))
        if past is not None:
            seconds, known = seconds + min(past, campaign.timeout), known + 1
        elif case.benchmark.program is None:
            seconds, modelled = seconds + launch_seconds(campaign, case), modelled + 1
        else:  # a program of the user's own: no model knows its cost
            seconds += campaign.timeout
    return Estimate(len(cases), len(launching), seconds, campaign.timeout * len(launching), known, modelled)


def duration(seconds: float) -> str:
    """`42 s`, `12 min`, `3 h 20 min`, `4 d 2 h`."""
    seconds = round(seconds)
    if seconds < 120:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 120:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"
