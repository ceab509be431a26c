"""How big a campaign is before it runs: its number of cases and how long they should take.

Each case that launches is counted at the median duration of the earlier launches of the same benchmark
and approach in the store, where there are any, and at its timeout (the most it may take) otherwise. A
campaign beyond MAX_CASES cases or MAX_SECONDS of estimated time runs only when the user confirms it: a
matrix grows by multiplication, and a typo in it can ask for a million cases.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from sqlalchemy import Engine

from ..spec.campaign import Campaign
from ..spec.case import Case
from ..store.campaigns import past_durations

MAX_CASES = 5_000
MAX_SECONDS = 24 * 3600


@dataclass(frozen=True)
class Estimate:
    cases: int  # every case of the matrix
    launches: int  # the cases that will launch (not skipped)
    seconds: float  # the estimate: past medians where known, timeouts elsewhere
    at_timeouts: float  # every launching case run to its timeout
    from_history: int  # launches estimated from earlier runs

    def describe(self) -> str:
        text = f"{self.cases} case(s)"
        if self.launches != self.cases:
            text += f" ({self.launches} to launch)"
        if not self.launches:
            return text
        if self.from_history:
            return (f"{text}; estimated {duration(self.seconds)} ({self.from_history} of {self.launches} from the "
                    f"median time of earlier runs of the same benchmark and approach, the rest at their timeout); "
                    f"{duration(self.at_timeouts)} if every case ran to its timeout")
        return f"{text}; at most {duration(self.at_timeouts)} (each case's timeout; no earlier runs to go by)"

    def too_large(self) -> str | None:
        """Why the campaign needs a confirmation, or None."""
        if self.cases > MAX_CASES:
            return f"{self.cases} cases is more than {MAX_CASES}"
        if self.seconds > MAX_SECONDS:
            return f"an estimated {duration(self.seconds)} is more than {duration(MAX_SECONDS)}"
        return None


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
    seconds, known = 0.0, 0
    for case in launching:
        past = history.get((case.benchmark.name, case.approach.name))
        if past is None:
            seconds += campaign.timeout
        else:
            seconds, known = seconds + min(past, campaign.timeout), known + 1
    return Estimate(len(cases), len(launching), seconds, campaign.timeout * len(launching), known)


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
