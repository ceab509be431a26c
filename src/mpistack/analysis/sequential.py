"""Sequential campaigns: rows judged at planned looks, each look with its share of the level.

A sequential campaign gives every case a pilot of a few rounds, looks at its rows, and gives the next rounds
only to the cases of rows still open, up to a maximum (spec/campaign.py, ``planned_looks``). Stopping a row as
soon as its interval looks decided would be peeking: every look is one more chance for noise to cross an edge,
and a test at level alpha applied at K looks rejects a true null far more often than alpha (Armitage,
McPherson and Rowe, JRSS A 132(2), 1969). So the level is *spent* over the planned looks (Lan and DeMets,
"Discrete sequential boundaries for clinical trials", Biometrika 70(3), 1983,
https://doi.org/10.1093/biomet/70.3.659) with the power family alpha(t) = alpha t**6 (Kim and DeMets, 1987):
stricter early than O'Brien and Fleming's boundaries, the last look almost the fixed design's. The rows an
early look should settle are those whose every launch lies far beyond the floor, which any level the pilot's
launches can reach settles; level spent early is level the last look lacks (docs/analysis.md has the replay
that chose 6 over 3). Look k, after n_k of the maximum N rounds, tests at

    alpha_k = alpha ((n_k / N)**6 - (n_(k-1) / N)**6)

with the interval the fixed design uses (statistics.py), at 1 - 2 alpha_k. The alpha_k sum to alpha, so by the
union bound the chance of any false verdict over all looks is at most alpha, however the looks' statistics
depend on each other and whatever the interval's method (paired signed-rank, or bootstrap): no normal
approximation of the joint distribution is needed, at the price of some conservatism.

A row's class is taken at the first look that decides it (``Y``, ``(Y)``, or ``N``: it failed), on the launches
of the rounds up to that look, both sides cut there, and stays so: later rounds of its baseline (which runs on
for other candidates) do not change it. So does an open row's at the look that gives it no more rounds (the
maximum, its forecast beyond it, the A/A control unable to resolve it). A row still going on when the
launches ended keeps the class of the last look its launches reached. The campaign asks this very function after each stage which rows are open, and a report of the stored
rounds calls it again, so both say the same.

Pure: no I/O; the fixed-design judgement is handed in (answers.py), which keeps this module free of it.
"""

from __future__ import annotations

import dataclasses
import math
from statistics import NormalDist
from typing import Callable, Mapping, Sequence

from .evidence import Row, RowKey
from .statistics import Verdict

#: the power of the spending function alpha(t) = alpha t**rho: 3 is close to O'Brien-Fleming, 1 to Pocock; 6
#: keeps almost all of alpha for the last look (docs/analysis.md, "Sequential campaigns")
SPENDING_POWER = 6.0
#: classes that end a row's launches: at speed, slower, failing
DECIDED = frozenset({"Y", "(Y)", "N"})

#: an open row stops on its forecast only when it needs more than this many times the launches the maximum
#: gives it: a forecast from an early look's few launches, at that look's strict level, extrapolates one
#: interval's width by the square-root law, and on a replay of stored rounds it stopped rows that the maximum's
#: launches settled (docs/analysis.md, "Sequential campaigns")
FORECAST_MARGIN = 4

MAXIMUM = "maximum"
CONTROL = "the control cannot resolve this on this machine"


def spent_levels(looks: Sequence[int], alpha: float, power: float = SPENDING_POWER) -> tuple[float, ...]:
    """The level of each planned look (rounds ``looks``, the last one the maximum): ``alpha`` spent by
    alpha(t) = alpha t**power at the information fractions n_k / N. They sum to ``alpha``."""
    if not looks or any(b <= a for a, b in zip(looks, looks[1:])) or looks[0] < 1:
        raise ValueError(f"looks must be increasing round counts, got {list(looks)}")
    fractions = [0.0, *(n / looks[-1] for n in looks)]
    return tuple(alpha * (fractions[k] ** power - fractions[k - 1] ** power) for k in range(1, len(fractions)))


def last_round(row: Row) -> int | None:
    """The latest round of the row's successful launches (None: it has no launches with a round)."""
    return max((slot.round for slot in row.schedule.values()), default=None)


def until_round(row: Row, last: int) -> Row:
    """The row as it stood after round ``last``: its launches of later rounds left out (launches without a
    round, and failures, which carry none, kept)."""
    late = {run for run, slot in row.schedule.items() if slot.round > last}
    if not late:
        return row
    figures, launch_of = {}, {}
    for size, values in row.figures.items():
        kept = [(value, run) for value, run in zip(values, row.launch_of.get(size, ())) if run not in late]
        if kept:
            figures[size], launch_of[size] = [value for value, _ in kept], [run for _, run in kept]
    return dataclasses.replace(row, figures=figures, launch_of=launch_of,
                               launches=row.launches - len(late), runs=[run for run in row.runs if run not in late],
                               schedule={run: slot for run, slot in row.schedule.items() if run not in late})


def answer_at_looks(rows: Mapping[RowKey, Row], settings, judge: Callable) -> list:
    """Every row's answer under the sequential rule: ``judge(rows, settings)`` (answers.answer for a fixed
    design) at each planned look of ``settings.looks`` that the stored rounds reach, with that look's level;
    each answer carries the look that settled it (``look``, ``look_alpha``) and, when open, why it got no more
    rounds (``stopped``) or that it goes on (``continues``)."""
    looks = tuple(settings.looks)
    levels = spent_levels(looks, settings.alpha)
    maximum = looks[-1]  # the most rounds a case may get
    reached = max((round_ for row in rows.values() if (round_ := last_round(row)) is not None), default=0)
    ends = {key: last_round(row) for key, row in rows.items()}
    settled: dict[tuple, object] = {}
    latest: dict[tuple, object] = {}
    # the looks the stored rounds reach; before the pilot's end (a budget or an interruption), the rounds there
    # are, at the pilot look's level
    judged_at_all = [(k, n) for k, n in enumerate(looks) if n <= reached] or [(0, min(looks[0], reached))]
    for k, rounds in judged_at_all:
        at_look = dataclasses.replace(settings, alpha=levels[k], looks=())
        answers = judge({key: until_round(row, rounds) for key, row in rows.items()}, at_look)
        forecast = _forecast(levels[k], levels[-1])
        cannot = _control_cannot_resolve(answers, rounds, maximum, forecast)
        for answer in answers:
            identity = (answer.key, answer.baseline)
            end = ends.get(answer.key)
            if identity in settled or (end is not None and end < rounds and identity in latest):
                continue  # settled earlier, or its launches ended before this look: its last look stands
            answer = dataclasses.replace(answer, look=rounds, look_alpha=levels[k])
            if answer.label in DECIDED:
                settled[identity] = _settled(answer)
                continue
            answer = _open(answer, rounds == looks[-1], cannot, maximum, forecast)
            if answer.stopped:  # no more rounds for it: its class is this look's, as the campaign left it
                settled[identity] = answer
            else:
                latest[identity] = answer
    return sorted((*settled.values(), *(a for key, a in latest.items() if key not in settled)),
                  key=lambda a: (a.key, a.baseline != "system"))


def _settled(answer):
    note = f"settled after {answer.look} rounds (level {answer.look_alpha:.2g} at that look)"
    return dataclasses.replace(answer, row_class=dataclasses.replace(
        answer.row_class, reason=f"{answer.row_class.reason}; {note}"))


def _forecast(now: float, last: float) -> Callable[[int | None], int | None]:
    """A row's forecast of the launches that settle it (statistics.launches_needed, made at this look's level)
    for the last look's level, where the rest of its rounds would be judged: an interval's reach grows with
    its z, and the launches needed with its square, so a forecast made at a strict early look overstates what
    the maximum needs by (z_now / z_last)**2."""
    scale = (NormalDist().inv_cdf(1.0 - last) / NormalDist().inv_cdf(1.0 - now)) ** 2

    def at_last_look(needed: int | None) -> int | None:
        return None if needed is None else max(1, math.ceil(needed * scale))

    return at_last_look


def _forecast_holds(row_class) -> bool:
    """Whether an open row's forecast may stop it: not from too few launches (or too few for an interval at an
    early look's strict level, which has none to forecast from), and not from an unpaired interval
    of launches that will be paired once there are enough rounds (the pilot's: pairing cancels the machine's
    shared slow modes, so the unpaired spread overstates what later rounds need)."""
    units = [c for c in row_class.regimes.values() if c.verdict is Verdict.INCONCLUSIVE] or \
        list(row_class.regimes.values())
    return not row_class.reason.startswith("too few launches") and all(c.paired and not c.too_few_launches
                                                                        for c in units)


def _open(answer, last_look: bool, cannot: str, maximum: int, forecast: Callable[[int | None], int | None]):
    """An open row at a look: whether it gets more rounds, and if not, why (the maximum reached, the maximum
    too few by the row's own forecast, the A/A control unable to resolve what this row needs)."""
    row_class = answer.row_class
    why = ""
    if not answer.sizes:
        why = "nothing to compare it with"
    elif last_look:
        why = f"{MAXIMUM}: still open after the maximum of {answer.look} rounds"
    elif cannot and not answer.control:
        why = f"{CONTROL} ({cannot})"
    elif _forecast_holds(row_class):
        needed = forecast(row_class.launches_needed)
        most = _most_launches(answer, maximum)
        if needed is None:
            why = f"{MAXIMUM}: more launches alone are unlikely to settle it"
        elif needed > FORECAST_MARGIN * most:
            why = (f"{MAXIMUM}: about {needed} launches a side would settle it, more than {FORECAST_MARGIN}× the "
                   f"{most} the maximum of {maximum} rounds gives")
    if not why:
        return dataclasses.replace(answer, continues=True)
    return dataclasses.replace(answer, stopped=why, row_class=dataclasses.replace(
        row_class, reason=f"{row_class.reason}; no more rounds after {answer.look}: {why}"))


def _most_launches(answer, maximum: int) -> int:
    """The launches a side the row has at the maximum of rounds: a case launched more than once a round (a
    baseline beside several candidates, a native build that is also a same-stack baseline) has more launches
    than rounds, and a forecast counts launches."""
    per_round = answer.launches / answer.look if answer.look and answer.launches else 1.0
    return max(maximum, math.floor(maximum * per_round))


def _control_cannot_resolve(answers: Sequence, rounds: int, maximum: int,
                            forecast: Callable[[int | None], int | None]) -> str:
    """Why this machine cannot settle open rows, from the A/A control at this look, or "": the control came
    out slower (the machine makes one configuration look unlike itself), or it is open with more launches
    needed than the maximum allows."""
    for answer in answers:
        if not answer.control or answer.baseline != "system":
            continue
        row_class = answer.row_class
        if row_class.label == "(Y)":
            return f"the A/A control came out (Y) after {rounds} rounds"
        if row_class.label == "?" and _forecast_holds(row_class):
            needed = forecast(row_class.launches_needed)
            if needed is None or needed > FORECAST_MARGIN * _most_launches(answer, maximum):
                return ("the A/A control is open and would need "
                        + (f"about {needed} launches a side" if needed else "more than repeating can give"))
    return ""

