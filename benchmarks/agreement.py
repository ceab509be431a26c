"""How reproducible the answer is, judged by error rates: run a campaign again, or replay stored rounds, and count.

Prints figures; it is not a test.

    python benchmarks/agreement.py [CAMPAIGN] [--runs 3] [--db agreement.db]
    python benchmarks/agreement.py --campaigns 1,2,3 [--db agreement.db]
    python benchmarks/agreement.py --modes 2 [--db agreement.db]
    python benchmarks/agreement.py --replay 8,16,32 [--campaigns 1,2,3] [--db agreement.db] [--trials 8]
    python benchmarks/agreement.py --replay 12,24 --sequential 6 [--db agreement.db]

Each run is a complete `mpistack run` of the campaign (default: examples/local.toml, what `make run` runs) into
one store; the answers of its campaigns are then set side by side, row by row (stack, approach, variant,
benchmark, placement, buffers, baseline). Agreement alone is a poor goal (a tool that answers `?` everywhere
agrees perfectly), so it prints five targets, each with its Wilson score interval (docs/analysis.md, section 6):

* T1: rows that *contradict* themselves (`Y` in one run, `(Y)` in another) per set of runs;
* T2: the A/A control rows (a variant marked `control = true`: the system MPI against itself) called `(Y)` and `Y`;
* T3: a known loss found: the forced-TCP variants `(Y)` in every run, and a 20 % or 15 % loss injected into the
  control's figures in one message-size regime called `(Y)` there, never `Y`;
* T4: rows whose effect lies at least 3 standard errors from every edge of the parity band keep their class,
  and measured rows are decided (`Y` or `(Y)`);
* T5: a rerun's ratio at a size falls inside the first run's 95 % interval (about 83 % when calibrated).

Beside T4's decided share, T4r prints the decided share among the rows the A/A control says the run can
resolve (every message regime of the row's benchmark has a control interval within the practical floor in
that run): on a machine whose own noise leaves most rows open, the share of what it could decide at all. It
is printed for both designs and not counted among the targets a level or a design must meet.

`--replay N,...` runs nothing. It cuts the stored launches into *rounds* (every case's launch of one repeat, the
`round` or `repeat` run tag), oldest first, and replays sets of three back-to-back campaigns of N launches per
case: each takes N consecutive rounds, and the three take disjoint ones, so no launch is used twice in a set and
the machine's slow modes keep their order in time. A set needs 3N stored rounds; `--trials` sets start at
evenly spaced rounds, and the intervals count only the sets that fit side by side without sharing a round.

`--sequential P` replays each campaign of N rounds twice: as the fixed design (every case N times) and under the
sequential rule with a pilot of P rounds and N the maximum, looking after both as a budgeted campaign does
(analysis/sequential.py; spec.campaign.budgeted_looks), and prints the targets of both and the launches each spent. The rule reads a row's rounds
only up to the look that settles or stops it, so replaying it on every stored round gives what a sequential
campaign would have decided on those launches; what it would have spent is counted per row: a candidate up to
its last look, a baseline up to its candidates' latest, the A/A control every round.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Callable, Iterable, Sequence

from mpistack.analysis.answers import Answer, Settings, answer, control_resolution
from mpistack.analysis.evidence import Row, RowKey, rows_from
from mpistack.analysis.statistics import DEFAULT_FLOOR
from mpistack.spec.campaign import budgeted_looks, recorded_looks
from mpistack.spec.benchmarks import HIGHER_IS_BETTER
from mpistack.store import open_database
from mpistack.store.campaigns import campaign_spec
from mpistack.store.query import Where, campaign_summaries, launch_evidence, query_results, query_runs

ClassKey = tuple  # a compared row without its scope: key fields and the baseline it was compared with
Rounds = Sequence[Sequence[int]]  # the run ids of consecutive rounds, oldest first

#: The run tags that number a launch's round (and its block of rounds): renumbered in a replayed campaign so
#: that rounds drawn from two stored campaigns stay apart.
ROUND_TAGS = ("block", "round", "repeat")
#: Settings that restrict a transport selector to TCP: a variant setting one of them forces TCP.
TRANSPORT_SELECTORS = ("FI_PROVIDER", "UCX_TLS", "OMPI_MCA_btl")
#: The losses injected into the control's figures (T3), as the fraction of the figure lost.
INJECTED_LOSSES = (0.20, 0.15)
#: How far, in standard errors of one run, a row's effect must lie from every edge to count as clear (T4).
CLEAR_SE = 3.0
#: The decided share among the rows whose every regime the A/A control resolves in the same run: printed beside
#: T4's (a proposed target for a machine whose own noise leaves most rows open), not among the targets a level
#: or a design must meet.
RESOLVABLE = "T4r"
#: The confidence of the interval whose calibration T5 checks.
CALIBRATED = 0.95
REPLAY = "replay"  # the campaign a replayed run claims to belong to (its rows' scope: "campaign replay")


def run_campaign(db: Path, campaign: Path) -> float:
    start = time.perf_counter()
    subprocess.run([str(Path(sys.executable).with_name("mpistack")), "--db", str(db), "run", str(campaign)],
                   check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def stored_campaigns(engine) -> list[int]:
    """The ids of the campaigns in the store, oldest first."""
    return [summary["id"] for summary in campaign_summaries(engine)]


# --- the stored launches, in rounds ----------------------------------------------------------------------------


def forces_tcp(env: dict[str, str]) -> bool:
    """Whether a variant's settings restrict a transport selector to TCP alone (``self`` is loopback to itself)."""
    return any({part.strip() for part in env[name].split(",")} - {"self"} == {"tcp"}
               for name in TRANSPORT_SELECTORS if name in env)


@dataclass
class Launches:
    """Every launch of the chosen campaigns as the analysis reads it (runs with all their tags, results as
    ``(run, size, metric, figure)``), cut into rounds in time order, and what the campaigns' variants are."""

    runs: dict[int, dict]
    results: dict[int, list[tuple]]
    rounds: list[list[int]]  # run ids per round, oldest round first
    campaigns: list[list[list[int]]]  # the rounds of each campaign, in the order of the campaign ids given
    controls: frozenset[str]  # variants marked control = true (A/A)
    forced_tcp: frozenset[str]  # variants whose settings force TCP
    #: each campaign's planned looks as recorded (() for a fixed design): a sequential campaign's answers are
    #: read under its own rule, each row at the look that settled it
    looks: list[tuple[int, ...]] = dataclasses.field(default_factory=list)


def read_launches(engine, campaign_ids: Sequence[int]) -> Launches:
    """The launches of the campaigns, oldest campaign first. A run's round is its ``round`` tag, else its
    ``repeat`` tag, else its place among the launches of its case (``case`` tag) in the order they were stored."""
    runs: dict[int, dict] = {}
    results: dict[int, list[tuple]] = {}
    campaigns, controls, forced_tcp, looks = [], set(), set(), []
    for campaign_id in campaign_ids:
        spec = campaign_spec(engine, campaign_id) or {}
        looks.append(recorded_looks(spec))
        for variant in spec.get("variant", []):
            if variant.get("control"):
                controls.add(variant["name"])
            if forces_tcp(variant.get("env", {})):
                forced_tcp.add(variant["name"])
        with launch_evidence(engine, [Where("campaign", "=", campaign_id)]) as (by_id, figures):
            for result in figures:
                results.setdefault(result[0], []).append(tuple(result))
        rounds: dict[int, list[int]] = {}
        seen: Counter = Counter()
        for run_id, run in sorted(by_id.items()):
            tags = run["tags"]
            case = tags.get("case") or (run["stack"], run["approach"], tags.get("variant"), run["benchmark"],
                                        run["ranks"], run["nodes"], run["buffers"])
            seen[case] += 1
            number = tags.get("round", tags.get("repeat"))
            rounds.setdefault(int(number) if number is not None else seen[case], []).append(run_id)
        runs.update(by_id)
        campaigns.append([rounds[number] for number in sorted(rounds)])
    return Launches(runs, results, [one for campaign in campaigns for one in campaign], campaigns,
                    frozenset(controls), frozenset(forced_tcp), looks)


Scaling = Callable[[dict, tuple], float]  # a factor for one result of a run


def replayed_runs(launches: Launches, rounds: Rounds, keep: Callable[[dict], bool] | None = None) -> dict[int, dict]:
    """The runs of one campaign made of the given rounds (those ``keep`` takes), by id: every run claims campaign
    ``replay``, and its round tags are renumbered in order of appearance, so that rounds of two stored campaigns
    never share a number and the launches paired within a round stay paired."""
    runs: dict[int, dict] = {}
    numbers: dict[str, dict] = {tag: {} for tag in ROUND_TAGS}
    for run_id in sorted(run_id for one in rounds for run_id in one):  # ids grow with time
        run = launches.runs[run_id]
        if keep is not None and not keep(run):
            continue
        tags = dict(run["tags"])
        for tag in ROUND_TAGS:
            if tag in tags:
                seen = numbers[tag]
                tags[tag] = str(seen.setdefault((run["campaign"], tags[tag]), len(seen) + 1))
        runs[run_id] = {**run, "campaign": REPLAY, "tags": tags}
    return runs


def replayed_rows(launches: Launches, rounds: Rounds, *, keep: Callable[[dict], bool] | None = None,
                  scaling: Scaling | None = None) -> dict[RowKey, Row]:
    """The rows of one campaign made of the given rounds (``replayed_runs``), as ``rows_from`` groups them;
    ``scaling``: a factor for each result (an injected loss)."""
    runs = replayed_runs(launches, rounds, keep)
    results: Iterable[tuple] = (result for run_id in runs for result in launches.results.get(run_id, ()))
    if scaling is not None:
        results = ((run_id, size, metric, figure * scaling(runs[run_id], (run_id, size, metric, figure)))
                   for run_id, size, metric, figure in results)
    return rows_from(runs, results)


def class_key(result: Answer) -> ClassKey:
    key = result.key
    return (key.stack, key.approach, key.variant, key.benchmark, key.metric, key.ranks, key.nodes, key.buffers,
            result.baseline)


def classes_of(answers: Iterable[Answer]) -> dict[ClassKey, str]:
    return {class_key(result): result.label for result in answers}


def agreement(runs: list[dict[ClassKey, str]]) -> tuple[list[ClassKey], list[ClassKey], list[ClassKey]]:
    """The rows compared in any of the runs, those with one class in all of them, and those that contradict
    themselves (Y in one run, (Y) in another)."""
    rows = sorted(set().union(*runs))
    same = [row for row in rows if len({run.get(row) for run in runs}) == 1]
    contradicting = [row for row in rows if {"Y", "(Y)"} <= {run.get(row) for run in runs}]
    return rows, same, contradicting


# --- one set of runs, counted for every target -----------------------------------------------------------------


def judged(launches: Launches, runs: Sequence[Rounds], settings: Settings) -> list[list[Answer]]:
    """The answers of each run of a set, as the product gives them."""
    return [answer(replayed_rows(launches, rounds), settings) for rounds in runs]


def tally_set(launches: Launches, runs: Sequence[Rounds], answers: list[list[Answer]], settings: Settings) -> Counter:
    """The counts behind every target for one set of runs (``answers``: the runs' answers, from ``judged``)."""
    rows, same, contradicting = agreement([classes_of(run) for run in answers])
    tally = Counter(sets=1, rows=len(rows), same=len(same), contradicting=len(contradicting))
    for run in answers:
        # the control's rows as the campaign file names them (stores written before the control tag included)
        controls = [dataclasses.replace(result, control=True) for result in run
                    if result.key.variant in launches.controls]
        resolves = {(r.benchmark, r.regime) for r in control_resolution(controls) if r.within_floor}
        for result in run:
            tally.update(_labels(result, launches, resolves))
    tally.update(_clear(launches, runs, answers, settings))
    calibrated = answers if math.isclose(settings.confidence, CALIBRATED) else judged(
        launches, runs, dataclasses.replace(settings, alpha=(1 - CALIBRATED) / 2))  # the interval at 1 - 2 alpha
    tally.update(_calibration(calibrated))
    tally.update(_injected(launches, runs, settings))
    return tally


def _labels(result: Answer, launches: Launches, resolves: set[tuple[str, str]] = frozenset()) -> Counter:
    """What one answer counts for: its class, whether it was measured and decided, A/A and forced TCP (T2-T4).
    ``resolves``: the (benchmark, regime) pairs whose A/A control interval lay within the floor in the same run;
    a measured row all of whose regimes are among them is one the control says this machine can resolve."""
    label = result.label
    counts = Counter({f"class {label}": 1})
    if result.sizes:
        decided = int(label in ("Y", "(Y)"))
        counts.update(measured=1, decided=decided)
        if result.key.variant not in launches.controls and result.regimes and all((result.key.benchmark, regime) in resolves
                                                         for regime in result.regimes):
            counts.update(resolvable=1, **{"resolvable decided": decided})
    if result.key.variant in launches.controls:
        counts.update({"aa": 1, f"aa {label}": 1})
    if result.key.variant in launches.forced_tcp:
        counts.update({"tcp": 1, "tcp (Y)": int(label == "(Y)")})
    return counts


def _standard_error(comparison) -> float:
    """The standard error of a size's log ratio that its interval implies (nan without an interval)."""
    low, high = comparison.ci_low, comparison.ci_high
    if not (low > 0 and high > low and math.isfinite(high)):
        return math.nan
    return (math.log(high) - math.log(low)) / (2 * NormalDist().inv_cdf(0.5 + comparison.confidence / 2))


def _clear(launches: Launches, runs: Sequence[Rounds], answers: list[list[Answer]], settings: Settings) -> Counter:
    """Rows whose effect (the set's launches pooled) lies at least ``CLEAR_SE`` standard errors of one run from
    both edges of the parity band at every size, and how many of them kept their class in every run (T4)."""
    pooled = answer(replayed_rows(launches, [one for rounds in runs for one in rounds]), settings)
    per_run = [{class_key(result): result for result in run} for run in answers]
    counts = Counter()
    for result in pooled:
        of_runs = [run.get(class_key(result)) for run in per_run]
        if not result.sizes or any(other is None or not other.sizes for other in of_runs):
            continue
        sizes = [{c.size: c for c in other.sizes} for other in of_runs]
        if all(_clear_size(c, [by_size[c.size] for by_size in sizes if c.size in by_size]) for c in result.sizes):
            counts.update({"clear": 1, "clear same": int(len({other.label for other in of_runs}) == 1)})
    return counts


def _clear_size(pooled, of_runs: list) -> bool:
    errors = [error for error in map(_standard_error, of_runs) if math.isfinite(error)]
    if not errors or not pooled.ratio > 0:
        return False
    error = statistics.median(errors)
    return all(abs(math.log(pooled.ratio) - math.log(edge)) >= CLEAR_SE * error
               for edge in (pooled.floor_low, pooled.floor_high) if 0 < edge < math.inf)


def _calibration(answers: list[list[Answer]]) -> Counter:
    """How often a rerun's ratio at a size falls inside the first run's interval (T5)."""
    first = {(class_key(result), c.size): c for result in answers[0] for c in result.sizes}
    counts = Counter()
    for rerun in answers[1:]:
        for result in rerun:
            for c in result.sizes:
                before = first.get((class_key(result), c.size))
                if before is not None and math.isfinite(before.ci_low) and math.isfinite(before.ci_high):
                    counts.update(reruns=1, inside=int(before.ci_low <= c.ratio <= before.ci_high))
    return counts


def _injected(launches: Launches, runs: Sequence[Rounds], settings: Settings) -> Counter:
    """Each run again with a loss injected into the A/A control's figures in one regime at a time: whether the
    control row is then called ``(Y)`` naming that regime, or ``Y`` (T3). Only the control and the system MPI's
    native runs (its baseline) are read. A loss smaller than the regime's practical floor (tiny latencies, where
    the floor in microseconds is the wider one) is not a loss that matters: such trials are counted apart."""
    if not launches.controls:
        return Counter()

    def keep(run: dict) -> bool:
        return run["tags"].get("variant") in launches.controls or (
            run["approach"] == "native" and run["tags"].get("origin") == "host")

    counts = Counter()
    for rounds in runs:
        regimes = {settings.ranges.regime(size) for run_id in (i for one in rounds for i in one)
                   if launches.runs[run_id]["tags"].get("variant") in launches.controls
                   for _, size, _, _ in launches.results.get(run_id, ())}
        for regime in sorted(regimes):
            for loss in INJECTED_LOSSES:
                def scaling(run, result, regime=regime, loss=loss) -> float:
                    _, size, metric, _ = result
                    if run["tags"].get("variant") not in launches.controls or settings.ranges.regime(size) != regime:
                        return 1.0
                    return 1 - loss if metric in HIGHER_IS_BETTER else 1 / (1 - loss)

                for result in answer(replayed_rows(launches, rounds, keep=keep, scaling=scaling), settings):
                    if result.key.variant in launches.controls:
                        band = result.regimes.get(regime)
                        if band is not None and 1 - loss >= band.floor_low:
                            # at these latencies the practical floor (in microseconds) is wider than the loss:
                            # Y is the right answer, and the trial tests nothing T3 is about
                            counts.update({"loss within the floor": 1})
                            continue
                        named = result.label == "(Y)" and regime in {slow.regime for slow in result.row_class.slow}
                        counts.update({f"loss {loss:.0%}": 1, f"loss {loss:.0%} named": int(named), "loss": 1,
                                       "loss Y": int(result.label == "Y")})
    return counts


# --- targets ---------------------------------------------------------------------------------------------------


def wilson(hits: float, trials: float, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (as ``scipy.stats.binomtest(...).proportion_ci(method="wilson")``),
    for counts that may be fractional: a replay's counts scaled to the sets that share no round."""
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    share = hits / trials
    scale = 1 + z * z / trials
    centre = (share + z * z / (2 * trials)) / scale
    half = z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials)) / scale
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Target:
    """One figure with its target: a share of ``trials`` that must lie within [low, high]."""

    code: str
    what: str
    hits: float
    trials: float
    low: float = 0.0
    high: float = 1.0
    per_set: float = 0.0  # > 0: shown as a count per set of runs, this many rows times the share
    missing: str = ""  # why nothing was measured, when nothing was

    @property
    def share(self) -> float:
        return self.hits / self.trials

    @property
    def met(self) -> bool:
        return self.low - 1e-12 <= self.share <= self.high + 1e-12

    def describe(self) -> str:
        if not self.trials:
            return f"  {self.code:<3} {self.what:<56} not measured: {self.missing}"
        low, high = wilson(self.hits, self.trials)
        if self.per_set:
            figure = (f"{self.share * self.per_set:5.2f} per set [{low * self.per_set:.2f}, "
                      f"{high * self.per_set:.2f}]")
            goal = f"<= {self.high * self.per_set:g} per set"
        else:
            figure = f"{self.share:6.1%} [{low:.1%}, {high:.1%}]"
            goal = (f"{self.low:.0%} to {self.high:.0%}" if 0 < self.low and self.high < 1
                    else f">= {self.low:.0%}" if self.low > 0 else f"<= {self.high:.0%}")
        inside = self.low - 1e-12 <= low and high <= self.high + 1e-12
        verdict = ("met" if inside else "met, the interval reaches past it") if self.met else (
            "not met" if high < self.low or low > self.high else "not met, the interval reaches it")
        return (f"  {self.code:<3} {self.what:<56} {figure:<30} n {self.trials:<6.0f} target {goal:<16} {verdict}")


def targets(tally: Counter, scale: float = 1.0, replay: bool = False) -> list[Target]:
    """The five targets from a tally of one or more sets; ``scale`` turns the counts into those of the sets that
    share no round (a replay's overlapping sets are not independent trials)."""
    def share(code, what, hits, trials, low=0.0, high=1.0, missing="", per_set=0.0) -> Target:
        return Target(code, what, tally[hits] * scale, tally[trials] * scale, low, high, per_set, missing)

    per_set = tally["rows"] / tally["sets"] if tally["sets"] else 0.0
    no_control = "no A/A control rows (a variant marked control = true)"
    allowed = 0.1 if replay else 0.0
    runs = "every run"
    no_loss = (f"every injected loss ({tally['loss within the floor']:g} trials) lay within the practical floor "
               "(tiny latencies: the floor in microseconds is wider)" if tally["loss within the floor"] else no_control)
    return [
        share("T1", "rows Y in one run and (Y) in another", "contradicting", "rows",
              high=allowed / per_set if per_set else 0.0, per_set=per_set, missing="no compared rows"),
        share("T2", "A/A control rows called (Y)", "aa (Y)", "aa", high=0.05, missing=no_control),
        share("T2", "A/A control rows called Y", "aa Y", "aa", low=0.90, missing=no_control),
        share("T3", f"forced-TCP rows called (Y) ({runs})", "tcp (Y)", "tcp", low=1.0,
              missing="no variant forcing TCP"),
        share("T3", "20% loss injected in one regime: (Y) naming it", "loss 20% named", "loss 20%", low=0.95,
              missing=no_loss),
        share("T3", "15% loss injected in one regime: (Y) naming it", "loss 15% named", "loss 15%", low=0.80,
              missing=no_loss),
        share("T3", "a loss of 15% or 20% injected: called Y", "loss Y", "loss", high=0.01, missing=no_loss),
        share("T4", f"rows >= {CLEAR_SE:g} SE from every edge: one class in {runs}", "clear same", "clear",
              low=0.95, missing="no row is that clear"),
        share("T4", "measured rows decided (Y or (Y))", "decided", "measured", low=0.75, missing="no measured rows"),
        share(RESOLVABLE, "rows the A/A control resolves: decided", "resolvable decided", "resolvable", low=0.90,
              missing="the A/A control resolved the floor in no regime of a measured row"),
        share("T5", "a rerun's ratio inside the first run's 95% interval", "inside", "reruns", low=0.80,
              high=0.87, missing="no size with an interval in two runs"),
    ]


def print_targets(tally: Counter, scale: float = 1.0, replay: bool = False) -> None:
    print("  targets (figure [95% Wilson score interval], n trials):")
    for target in targets(tally, scale, replay):
        print(target.describe())


# --- real sets and replayed ones -------------------------------------------------------------------------------


def report(launches: Launches, settings: Settings) -> None:
    """The stored campaigns side by side: how far they agree, the classes of each, the rows that differ, and
    the targets."""
    answers = [answer(replayed_rows(launches, rounds), dataclasses.replace(settings, looks=looks))
               for rounds, looks in zip(launches.campaigns, launches.looks)]
    for number, looks in enumerate(launches.looks, start=1):
        if looks:
            print(f"  run {number} is sequential: each row read at the look that settled or stopped it, looks "
                  f"after {', '.join(map(str, looks))} rounds")
    spent = sum((launches_spent(run, looks[-1] if looks else len(rounds)) for run, looks, rounds
                 in zip(answers, launches.looks, launches.campaigns)), Counter())
    print(f"  launches: {sum(len(one) for rounds in launches.campaigns for one in rounds)} stored "
          + (f"(counted per row, {spent['launches spent']} against a fixed design's {spent['launches fixed']} at "
             "the same maximum)" if any(launches.looks) else ""))
    runs = [classes_of(run) for run in answers]
    rows, same, contradicting = agreement(runs)
    print(f"{len(same)} of {len(rows)} rows ({len(same) / max(len(rows), 1):.1%}) got the same class in all "
          f"{len(runs)} runs; {len(contradicting)} row(s) were Y in one run and (Y) in another")
    for number, run in enumerate(runs, start=1):
        counts = sorted(Counter(run.values()).items())
        print(f"  run {number}: " + ", ".join(f"{label} {count}" for label, count in counts))
    for row in rows:
        if row not in same:
            print("  differs: " + " · ".join(str(part) for part in row[:4]) + f" vs {row[-1]}: "
                  + " / ".join(run.get(row, "-") for run in runs))
    print_targets(tally_set(launches, launches.campaigns, answers, settings))


def replay_sets(rounds: int, count: int, runs: int, trials: int) -> list[int]:
    """The first round of each replayed set: up to ``trials`` starts spread evenly over the rounds, each set
    ``runs`` back-to-back campaigns of ``count`` consecutive rounds (none when the rounds are too few)."""
    last = rounds - count * runs
    if last < 0:
        return []
    if trials == 1 or last == 0:
        return [0]
    return sorted({round(index * last / (trials - 1)) for index in range(trials)})


def replay_tally(launches: Launches, count: int, trials: int, runs: int, settings: Settings) -> tuple[Counter, int]:
    """The tally of every replayed set of ``runs`` campaigns of ``count`` launches per case, and the number of
    sets (0: too few rounds)."""
    starts = replay_sets(len(launches.rounds), count, runs, trials)
    tally = Counter()
    for start in starts:
        sets = [launches.rounds[start + index * count:start + (index + 1) * count] for index in range(runs)]
        answers = judged(launches, sets, settings)
        tally += tally_set(launches, sets, answers, settings)
        for run in answers:
            tally.update(launches_spent(run, count))
    return tally, len(starts)


def launches_spent(answers: Sequence[Answer], rounds: int) -> Counter:
    """The launches per case a campaign of ``rounds`` rounds spent, row by row (a row's launches are its case's):
    under the sequential rule a candidate up to the look that settled or stopped it, a baseline up to the
    latest of its candidates', the A/A control every round; a fixed design, every row every round."""
    spent: dict[RowKey, int] = {}
    for result in answers:
        used = rounds if not result.look or result.continues or result.control else result.look
        spent[result.key] = max(spent.get(result.key, 0), used)
        if result.baseline_row is not None:
            spent[result.baseline_row] = max(spent.get(result.baseline_row, 0), used)
    return Counter({"launches spent": sum(spent.values()), "launches fixed": rounds * len(spent)})


def replay(launches: Launches, counts: list[int], trials: int, runs: int,
           settings: Settings, pilot: int | None = None) -> dict[int, tuple[bool, Counter]]:
    """Sets of ``runs`` campaigns of each count of launches per case, replayed from consecutive disjoint rounds;
    per count replayed, whether every target the replay measures was met, and the tally. ``pilot``: judge each
    campaign under the sequential rule, with that pilot and the count as its maximum."""
    total = len(launches.rounds)
    design = (f"sequential, a pilot of {pilot} rounds and the count as the maximum (looks after both, as a "
              f"budgeted campaign plans them), its looks' levels spent from "
              f"alpha = {settings.alpha:g}" if pilot else f"fixed design, deciding interval {settings.confidence:.0%}")
    print(f"{len(launches.campaigns)} campaign(s), {total} rounds; the shares below are of compared rows (a case "
          f"against each of its baselines); {design}")
    print(f"{'launches':>8}  {'sets':>4}  {'disjoint':>8}  {'same class':>10}  {'contradicting':>13}  classes")
    met: dict[int, tuple[bool, Counter]] = {}
    for count in counts:
        looks = budgeted_looks(pilot, count) if pilot and pilot <= count else ()
        if pilot and not looks:
            print(f"{count:>8}  not replayed: the pilot ({pilot}) is more than the count")
            continue
        tally, sets = replay_tally(launches, count, trials, runs, dataclasses.replace(settings, looks=looks))
        if not sets:
            print(f"{count:>8}  not replayed: a set of {runs} runs needs {count * runs} rounds")
            continue
        labels = {label: tally[f"class {label}"] for label in ("Y", "(Y)", "?", "N")}
        disjoint = total // (count * runs)
        print(f"{count:>8}  {sets:>4}  {disjoint:>8}  {tally['same'] / max(tally['rows'], 1):>10.1%}  "
              f"{tally['contradicting'] / sets:>13.2f}  "
              + ", ".join(f"{label} {number / max(sum(labels.values()), 1):.0%}" for label, number in labels.items()))
        print(f"  launches spent: {tally['launches spent']} of the fixed design's {tally['launches fixed']} "
              f"({tally['launches spent'] / max(tally['launches fixed'], 1):.0%}), counted per row"
              + (f"; looks after {', '.join(map(str, looks))} rounds" if looks else ""))
        print_targets(tally, disjoint / sets, replay=True)
        met[count] = (all(target.met for target in targets(tally, disjoint / sets, replay=True)
                          # T5 is of the 95% interval, any level; the resolvable share is a proposal, printed
                          if target.trials and target.code not in ("T5", RESOLVABLE)),
                      tally)
    return met


def side_by_side(fixed: dict[int, tuple[bool, Counter]], sequential: dict[int, tuple[bool, Counter]],
                 rounds: int, runs: int) -> None:
    """Per count replayed both ways: the decided share, the same among rows the A/A control resolves (T4r), the
    launches spent and the targets not met, one line per design."""
    print("\n== side by side: decided (T4), decided where the A/A control resolves (T4r), launches, targets "
          "not met ==")
    print(f"{'launches':>8}  {'design':<10}  {'decided':>8}  {'T4r':>8}  {'spent':>6}  not met")
    for count in sorted(set(fixed) & set(sequential)):
        for design, (_, tally) in (("fixed", fixed[count]), ("sequential", sequential[count])):
            scale = (rounds // (count * runs)) / tally["sets"]
            missed = sorted({target.code for target in targets(tally, scale, replay=True)
                             if target.trials and not target.met and target.code not in ("T5", RESOLVABLE)})
            resolvable = (f"{tally['resolvable decided'] / tally['resolvable']:.1%}" if tally["resolvable"]
                          else "-")
            print(f"{count:>8}  {design:<10}  {tally['decided'] / max(tally['measured'], 1):>8.1%}  "
                  f"{resolvable:>8}  {tally['launches spent'] / max(tally['launches fixed'], 1):>6.0%}  "
                  + (" ".join(missed) or "none"))


def choose_level(launches: Launches, counts: list[int], trials: int, runs: int, settings: Settings,
                 levels: list[float]) -> float | None:
    """The deciding interval's level chosen by replay: of the levels whose replay meets every target at every
    count replayed, the one that decides the largest share of rows (a lower level decides more and flips more:
    the targets say how low is still honest). None when no level meets them."""
    chosen, best = None, -1.0
    summary = []
    for level in levels:
        at_level = dataclasses.replace(settings, alpha=(1 - level) / 2)
        print(f"\n== deciding interval {level:.0%} ==")
        met = replay(launches, counts, trials, runs, at_level)
        decided = sum(tally["decided"] for _, tally in met.values())
        share = decided / max(sum(tally["measured"] for _, tally in met.values()), 1)
        ok = bool(met) and all(good for good, _ in met.values())
        summary.append(f"  {level:.0%}: decided {share:.1%} of measured rows; targets "
                       + ("met at every count" if ok else "not met at " + ", ".join(
                           str(count) for count, (good, _) in met.items() if not good) + " launches" if met
                          else "not replayed"))
        if ok and share > best:
            chosen, best = level, share
    print("\nlevels (the largest decided share that meets the targets is chosen):")
    print("\n".join(summary))
    print(f"chosen: {chosen:.0%}" if chosen is not None else "chosen: none meets every target; keep the default "
          f"{settings.confidence:.0%}")
    return chosen


# --- modes: whole launches that run slow -----------------------------------------------------------------------

SLOW = math.log(1.25)  # a launch more than 25% slower than its case's median, at the median of its sizes


def launch_modes(engine, campaign_id: int) -> None:
    """How often whole launches of a campaign run slow, whether slow launches come in clusters, and in which
    approaches: each launch's slowness is the median over its sizes of log(figure / its case's median figure),
    oriented so that positive is slower."""
    filters = [Where("campaign", "=", campaign_id), Where("status", "=", "ok")]
    figures: dict[int, dict] = {}
    for result in query_results(engine, filters):
        if result["value"] > 0:
            figures.setdefault(result["run"], {})[(result["size"], result["metric"])] = result["value"]
    # in the order they were recorded, which is the order a local campaign launched them in
    runs = [(run["run"], run["stack"], run["approach"], run["benchmark"], run["tags"].get("variant"))
            for run in query_runs(engine, filters)]
    cases: dict[tuple, list[int]] = {}
    for run_id, *case in runs:
        cases.setdefault(tuple(case), []).append(run_id)
    medians = {}
    for case, ids in cases.items():
        for point in {point for run_id in ids for point in figures.get(run_id, {})}:
            medians[case, point] = statistics.median(figures[i][point] for i in ids if point in figures.get(i, {}))
    slowness, approaches = [], []
    for run_id, *case in runs:
        logs = [math.log(value / medians[tuple(case), point]) * (-1 if case[2] in ("bw", "bibw") else 1)
                for point, value in figures.get(run_id, {}).items()]
        slowness.append(statistics.median(logs) if logs else 0.0)
        approaches.append(case[1])
    if not slowness:
        print(f"campaign {campaign_id}: no launch ended ok, so none can be compared with its case")
        return
    slow = [value > SLOW for value in slowness]
    after_slow = [now for before, now in zip(slow, slow[1:]) if before]
    lags = {lag: statistics.correlation(slowness[:-lag], slowness[lag:]) if len(slowness) > lag + 2 else math.nan
            for lag in (1, 24)}
    print(f"campaign {campaign_id}: {len(slow)} launches, {sum(slow) / len(slow):.0%} more than 25% slower than "
          f"their case's median; after a slow launch the next is slow in "
          f"{sum(after_slow) / max(len(after_slow), 1):.0%}; autocorrelation of slowness {lags[1]:.2f} at lag 1, "
          f"{lags[24]:.2f} at lag 24")
    for approach in sorted(set(approaches)):
        of = [flag for flag, name in zip(slow, approaches) if name == approach]
        print(f"  {approach}: {sum(of) / len(of):.0%} of {len(of)} launches slow")


# --- the command line ------------------------------------------------------------------------------------------


def _numbers(parser: argparse.ArgumentParser, option: str, text: str | None, least: int) -> list[int]:
    """A comma-separated list of whole numbers of at least `least`, or a usage error naming the option."""
    try:
        numbers = [int(part) for part in (text or "").split(",") if part.strip()]
    except ValueError:
        parser.error(f"{option} {text!r}: expected whole numbers separated by commas")
    if any(number < least for number in numbers):
        parser.error(f"{option} {text!r}: every number must be at least {least}")
    if text is not None and not numbers:
        parser.error(f"{option} {text!r}: expected whole numbers separated by commas")
    return numbers


def _levels(parser: argparse.ArgumentParser, text: str | None) -> list[float]:
    if not text:
        return []
    try:
        levels = [float(part) for part in text.split(",")]
    except ValueError:
        levels = []
    if not levels or not all(0.5 <= level < 1 for level in levels):
        parser.error(f"--levels {text}: expected comma-separated levels between 0.5 and 1, e.g. 0.8,0.9,0.95")
    return sorted(set(levels))


def _stored(parser: argparse.ArgumentParser, engine, option: str, campaign_ids: list[int]) -> None:
    """A usage error for campaign ids the store does not hold."""
    known = stored_campaigns(engine)
    missing = [number for number in campaign_ids if number not in known]
    if missing:
        parser.error(f"{option}: no campaign {', '.join(map(str, missing))} in the store "
                     f"(it holds {', '.join(map(str, sorted(known))) or 'none'})")


def main() -> None:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the listing quietly
    parser = argparse.ArgumentParser(
        description="How reproducible the answer is: the classes of repeated campaigns side by side, and five "
                    "targets with Wilson intervals. Without --campaigns, --modes or --replay it RUNS the campaign "
                    "--runs times into --db (the default campaign takes about 9 minutes a run on 2 cores).",
    )
    parser.add_argument("campaign", nargs="?", default="examples/local.toml", type=Path,
                        help="the campaign file to run (default: %(default)s)")
    parser.add_argument("--runs", type=int, default=3,
                        help="runs back to back, and replayed campaigns per set (default: %(default)s)")
    parser.add_argument("--db", type=Path, default=Path("agreement.db"),
                        help="the store the runs go into (default: %(default)s)")
    parser.add_argument("--campaigns", help="stored campaign ids to set side by side, comma-separated, oldest "
                                            "first (runs nothing); with --replay, the campaigns whose rounds are "
                                            "replayed (default: all)")
    parser.add_argument("--modes", type=int, metavar="CAMPAIGN",
                        help="how often whole launches of a stored campaign run slow (runs nothing)")
    parser.add_argument("--replay", metavar="N,...", help="launches per case of the replayed campaigns, "
                                                          "comma-separated (runs nothing)")
    parser.add_argument("--trials", type=int, default=8,
                        help="replay: sets per count, starting at evenly spaced rounds (default: %(default)s)")
    parser.add_argument("--levels", metavar="P,...", help="with --replay: replay at each deciding-interval level "
                                                          "(e.g. 0.8,0.9,0.95) and choose the one that decides "
                                                          "the most rows while meeting every target")
    parser.add_argument("--sequential", type=int, metavar="PILOT",
                        help="with --replay: replay each count as the fixed design and under the sequential rule "
                             "with this pilot (and the count as the maximum), targets and launches of both")
    parser.add_argument("--floor", type=float, default=DEFAULT_FLOOR.relative,
                        help="the relative practical floor the classes are judged with (default: %(default)s)")
    args = parser.parse_args()
    if not 0 < args.floor < 1:
        parser.error(f"--floor {args.floor}: expected a fraction between 0 and 1, e.g. 0.1 for 10%")
    if args.runs < 2:
        parser.error(f"--runs {args.runs}: expected at least 2 runs to set side by side")
    if args.trials < 1:
        parser.error(f"--trials {args.trials}: expected at least 1 set per count")
    settings = Settings(floor=dataclasses.replace(DEFAULT_FLOOR, relative=args.floor))
    campaign_ids = _numbers(parser, "--campaigns", args.campaigns, 1)
    counts = _numbers(parser, "--replay", args.replay, 2)
    levels = _levels(parser, args.levels)
    if args.sequential is not None and (not counts or args.sequential < 2):
        parser.error(f"--sequential {args.sequential}: expected a pilot of at least 2 rounds, with --replay")
    if levels and not counts:
        parser.error("--levels: expected --replay too (the levels are chosen by replaying stored rounds)")
    if campaign_ids and not counts and len(campaign_ids) < 2:
        parser.error(f"--campaigns {args.campaigns}: expected at least 2 campaigns to set side by side")
    reading = counts or args.modes is not None or campaign_ids
    if not reading and not args.campaign.is_file():
        parser.error(f"{args.campaign}: no such file; expected a campaign file to run, e.g. examples/local.toml")
    if reading and not args.db.exists():
        parser.error(f"{args.db} does not exist: run `make agreement` first, or name a store with --db")
    engine = open_database(str(args.db))
    if args.modes is not None:
        _stored(parser, engine, "--modes", [args.modes])
        launch_modes(engine, args.modes)
    elif counts:
        _stored(parser, engine, "--campaigns", campaign_ids)
        launches = read_launches(engine, campaign_ids or stored_campaigns(engine))
        if all(count * args.runs > len(launches.rounds) for count in counts):
            parser.error(f"--replay {args.replay}: expected at most {len(launches.rounds) // args.runs} launches "
                         f"per case: the store holds {len(launches.rounds)} rounds, and a set of {args.runs} runs "
                         f"of N launches takes {args.runs} x N of them")
        if levels:
            choose_level(launches, counts, args.trials, args.runs, settings, levels)
        elif args.sequential:
            print("== the fixed design ==")
            fixed = replay(launches, counts, args.trials, args.runs, settings)
            print(f"\n== sequential: pilot {args.sequential}, looks after it and at the count ==")
            sequential = replay(launches, counts, args.trials, args.runs, settings, args.sequential)
            side_by_side(fixed, sequential, len(launches.rounds), args.runs)
        else:
            replay(launches, counts, args.trials, args.runs, settings)
    elif campaign_ids:
        _stored(parser, engine, "--campaigns", campaign_ids)
        report(read_launches(engine, campaign_ids), settings)
    else:
        first = max(stored_campaigns(engine), default=0)
        for number in range(1, args.runs + 1):
            print(f"run {number}/{args.runs}: {run_campaign(args.db, args.campaign):.0f} s", flush=True)
        report(read_launches(engine, [first + number for number in range(1, args.runs + 1)]), settings)


if __name__ == "__main__":
    main()
