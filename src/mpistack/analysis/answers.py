"""The answer mpistack gives per stack, approach, variant, benchmark, placement and buffers: at native speed, slower
(where and by how much), failing, or not yet known, against two baselines.

* ``system``: the system's own MPI run natively (what a centre compares with: the LUMI and Alps tables compare
  with the vendor's MPI);
* ``same-stack``: the same MPI build run natively, outside any container (a pip stack installed into a host
  virtual environment; or the host's own MPI when the image's library reports the very same version string).

The loss against ``system`` is thereby split into the *stack effect* (the same build natively against the system
MPI: row ``native`` of the stack against ``system``) and the *deployment effect* (the container against the same
build natively: the ``same-stack`` rows). Ratios are oriented so that 1.0 is parity and below 1.0 a loss.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Sequence

from ..spec.campaign import AnalysisEntry
from .classes import RowClass, SizeRanges, classify, failed_class, format_size, format_sizes, untested_class
from .bulk import collector_paused
from .evidence import Row, RowKey, pair_launches
from .sequential import SPENDING_POWER, answer_at_looks, spent_levels
from .statistics import DEFAULT_FLOOR, MIN_PAIRS, PracticalFloor, SizeComparison, compare_many

SYSTEM = "system"
SAME_STACK = "same-stack"


def format_level(confidence: float) -> str:
    """A confidence level as it is, to two decimals cut, never rounded up: an alpha-spent look's 99.99 % is not
    "100%"."""
    return f"{math.floor(round(confidence * 10000, 6)) / 100:g}%"


@dataclass(frozen=True)
class Settings:
    """What decides a verdict (docs/analysis.md): the practical floor, the message-size regimes, the test level
    (each one-sided test at ``alpha``, so the deciding interval is at ``1 - 2 alpha``)."""

    floor: PracticalFloor = DEFAULT_FLOOR
    ranges: SizeRanges = SizeRanges()
    alpha: float = 0.05
    seed: int = 0
    #: a sequential campaign's planned looks (rounds; analysis/sequential.py), () for a fixed design
    looks: tuple[int, ...] = ()

    @property
    def confidence(self) -> float:
        return 1.0 - 2.0 * self.alpha

    @classmethod
    def of(cls, entry: AnalysisEntry | dict | None, looks: tuple[int, ...] = ()) -> "Settings":
        """The settings a campaign file's ``[analysis]`` table gives (as loaded, or as stored with the campaign);
        ``looks``: the campaign's planned looks when it is sequential (spec.campaign.recorded_looks)."""
        entry = entry if isinstance(entry, AnalysisEntry) else AnalysisEntry.model_validate(entry or {})
        return cls(PracticalFloor(entry.floor, entry.floor_us), SizeRanges(entry.small_below, entry.large_from),
                   entry.alpha, looks=tuple(looks))

    def rule(self) -> str:
        """The deciding rule in words, as every report states it: the interval a class is read from, which for a
        sequential campaign is the one of the look that settled it (analysis/sequential.py), not 1 - 2 alpha."""
        if not self.looks:
            return (f"a class is decided by the {self.confidence:.0%} interval of each message regime (each "
                    f"one-sided test at {self.alpha:g})")
        if len(self.looks) == 1:
            return (f"sequential, one look, after {self.looks[0]} rounds (no further round was planned): a class is "
                    f"decided by the {format_level(self.confidence)} interval of each message regime")
        looks = ", ".join(map(str, self.looks))
        levels = ", ".join(format_level(1.0 - 2.0 * level) for level in spent_levels(self.looks, self.alpha))
        return (f"sequential: a class is decided at the first of the looks after {looks} rounds whose interval "
                f"settles it, its level {self.alpha:g} spent over the looks by alpha t^{SPENDING_POWER:g}: "
                f"intervals {levels} at the looks in turn")

    def to_dict(self) -> dict:
        sequential = ({"looks": list(self.looks), "look_alphas": list(spent_levels(self.looks, self.alpha))}
                      if self.looks else {})
        return {"floor": self.floor.relative, "floor_us": self.floor.absolute_us,
                "small_below": self.ranges.small_below, "large_from": self.ranges.large_from, "alpha": self.alpha,
                "confidence": self.confidence, "seed": self.seed, **sequential, "rule": self.rule()}


@dataclass
class Answer:
    """One compared row: its class, and the per-size comparisons behind it."""

    key: RowKey
    baseline: str  # SYSTEM or SAME_STACK
    baseline_row: RowKey | None  # whose launches were the baseline (None: there was none)
    row_class: RowClass
    sizes: list[SizeComparison] = field(default_factory=list)
    regimes: dict[str, SizeComparison] = field(default_factory=dict)  # what decided the class, by size regime
    launches: int = 0
    baseline_launches: int = 0
    failures: list[str] = field(default_factory=list)
    library_version: str | None = None
    declared_version: str | None = None
    same_build_as_system: bool = False  # the same-stack baseline is the system MPI itself

    control: bool = False  # the campaign's A/A control (the system MPI against itself)
    slow_launches: tuple[float, float] = (math.nan, math.nan)  # each side's share of launches in a slow mode
    # a sequential campaign (analysis/sequential.py): the rounds of the look the class was taken at and that
    # look's level; for an open row, why it got no more rounds, or that it goes on
    look: int = 0
    look_alpha: float = math.nan
    stopped: str = ""
    continues: bool = False

    @property
    def label(self) -> str:
        return self.row_class.label

    def to_dict(self) -> dict:
        """The JSON form: one object per compared row (``mpistack report --format json``)."""
        key = self.key
        return {
            "scope": key.scope, "stack": key.stack, "approach": key.approach, "variant": key.variant,
            "benchmark": key.benchmark, "metric": key.metric, "ranks": key.ranks, "nodes": key.nodes,
            "buffers": key.buffers, "baseline": self.baseline,
            "baseline_stack": self.baseline_row.stack if self.baseline_row else None,
            "baseline_variant": self.baseline_row.variant if self.baseline_row else None,
            "class": self.label, "reason": self.row_class.reason,
            "slow": [{"regime": r.regime, "sizes": r.sizes, "worst_ratio": r.worst_ratio, "worst_size": r.worst_size,
                      "ratio": _finite(r.ratio), "ci_low": _finite(r.ci_low), "ci_high": _finite(r.ci_high)}
                     for r in self.row_class.slow],
            "stability": _finite(self.row_class.stability), "unstable": self.row_class.unstable or None,
            "isolated": [c.size for c in self.row_class.isolated],
            "regimes": {name: _comparison_dict(c) for name, c in self.regimes.items()},
            "launches": self.launches, "baseline_launches": self.baseline_launches,
            "launches_needed": self.row_class.launches_needed, "failures": self.failures,
            "library_version": self.library_version, "declared_version": self.declared_version,
            "same_build_as_system": self.same_build_as_system,
            "slow_launches": {"candidate": _finite(self.slow_launches[0]), "baseline": _finite(self.slow_launches[1])},
            "sizes": [{"size": c.size, **_comparison_dict(c)} for c in self.sizes],
            "look": self.look or None, "look_alpha": _finite(self.look_alpha), "stopped": self.stopped or None,
            "continues": self.continues,
        }


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _comparison_dict(c: SizeComparison) -> dict:
    return {"ratio": c.ratio, "ci_low": _finite(c.ci_low), "ci_high": _finite(c.ci_high),
            "confidence": c.confidence, "paired": c.paired, "pairs": c.n_pairs, "p_value": _finite(c.p_value),
            "descriptive": c.descriptive, "verdict": c.verdict.value, "median": c.median_candidate,
            "baseline_median": c.median_baseline, "launches": c.n_candidate, "baseline_launches": c.n_baseline}


def _is_system(row: Row) -> bool:
    return row.key.approach == "native" and row.origin in ("host", "published")


def _system_index(rows: dict[RowKey, Row]) -> dict[tuple, Row]:
    """The system MPI's native rows by what a candidate looks them up with (its key without the stack, and the MPI
    family); with two system rows for one key, the one with more launches."""
    index: dict[tuple, Row] = {}
    for row in rows.values():
        if _is_system(row):
            lookup = (row.mpi, row.key.with_(stack=""))
            if lookup not in index or row.launches > index[lookup].launches:
                index[lookup] = row
    return index


def _system_baseline(row: Row, index: dict[tuple, Row]) -> Row | None:
    """The system MPI's native row of the same family, benchmark, placement and buffers, in the variant the row is
    compared with."""
    return index.get((row.mpi, row.key.with_(stack="", approach="native", variant=row.variant_baseline)))


def _same_stack_baseline(row: Row, rows: dict[RowKey, Row], system: Row | None) -> tuple[Row | None, bool]:
    """The same build natively: the system's own MPI when the library that ran reports its very version string,
    every line of it (Debian's MPICH in a Debian image; or the host's MPI bound in: not an MPICH of the same
    release built for another device, whose first line is the same), else the stack's own native row when that is
    the library that ran. Returns (row, whether it is the system MPI itself)."""
    ran = row.library_build or _image_build(row, rows)
    if system is not None and ran and system.library_build == ran:
        return system, True
    own = rows.get(row.key.with_(approach="native", variant=row.variant_baseline))
    if own is not None and own is not row and own.origin == "venv" and (
            not ran or not own.library_build or own.library_build == ran):
        return own, False
    return None, False


def _image_build(row: Row, rows: dict[RowKey, Row]) -> str | None:
    """The build the image's own MPI reports: from the row's self-contained (container) launches, since bind and
    fabric-swap put host libraries into the image."""
    container = rows.get(row.key.with_(approach="container", variant="default"))
    return (container or row).library_build if (container or row).origin == "image" else None


def _class_without_comparison(row: Row, baseline: Row | None, what: str) -> RowClass | None:
    if row.launches == 0 and row.failures:
        return failed_class(f"{row.failures[0]}" + (f" ({len(row.failures)} launches)" if len(row.failures) > 1
                                                    else ""))
    if row.launches == 0:
        return untested_class(f"not run: {row.skipped[0]}" if row.skipped else "no launches")
    if baseline is None:
        return untested_class(f"no {what} baseline to compare with")
    if baseline.launches == 0:
        why = (baseline.failures or baseline.skipped or ["no launches"])[0]
        return untested_class(f"the {what} baseline ({baseline.key.stack} native) did not run: {why}")
    return None


def is_descriptive(row: Row, baseline: Row) -> bool:
    """Whether a pair of rows is compared descriptively (``compare_many(descriptive=True)``): a published
    reference gives one figure per size, so where a side is published no test of significance is possible, and
    a size with a single figure is judged by its ratio against the floor. Two campaigns never are."""
    return "published" in (row.origin, baseline.origin)


@dataclass
class PairComparison:
    """A candidate row against its baseline: the comparison at every size both have (in size order) and of every
    size regime (what decides the class)."""

    sizes: list[SizeComparison] = field(default_factory=list)
    regimes: dict[str, SizeComparison] = field(default_factory=dict)


def _launch_figures(row: Row) -> dict[int, dict[int | None, float]]:
    """Per launch (run id), its figure at each size. A row built without run ids (by hand, from one file) has
    its launches in the same order at every size: their index stands in for the id."""
    out: dict[int, dict[int | None, float]] = {}
    for size, values in row.figures.items():
        for run, value in zip(row.launch_of.get(size) or range(len(values)), values):
            out.setdefault(run, {})[size] = value
    return out


def _geometric_means(by_launch: dict[int, dict], sizes: list) -> dict[int, float]:
    """Per launch that has a figure at every one of ``sizes``, the geometric mean of those figures: the launch's
    figure for a size regime (its log is the mean of the sizes' logs, so a ratio of two is the geometric mean of
    the sizes' ratios)."""
    out = {}
    for run, figures in by_launch.items():
        if all(size in figures for size in sizes):
            out[run] = math.exp(math.fsum(math.log(figures[size]) for size in sizes) / len(sizes))
    return out


def _entries(row: Row, baseline: Row, ranges: SizeRanges, by_launch: dict[int, dict]) -> tuple[dict, dict]:
    """The comparison entries (``compare_many``'s) of a pair of rows: per common size, and per size regime; each
    with the figures of the launches paired within their rounds when at least ``MIN_PAIRS`` pair up."""
    common = [size for size in row.figures if size in baseline.figures]
    partners = pair_launches(row, baseline) if row.schedule and baseline.schedule else {}
    def launch_figures(of: Row) -> dict[int, dict[int | None, float]]:  # once per row: a baseline serves many
        if id(of) not in by_launch:
            by_launch[id(of)] = _launch_figures(of)
        return by_launch[id(of)]

    mine, theirs = (launch_figures(row), launch_figures(baseline)) if partners or len(common) > 1 else ({}, {})

    def paired(candidate: dict[int, float], base: dict[int, float]):
        pairs = [(value, base[partners[run]]) for run, value in candidate.items()
                 if run in partners and partners[run] in base]
        return (tuple(c for c, _ in pairs), tuple(b for _, b in pairs)) if len(pairs) >= MIN_PAIRS else None

    sizes = {}
    for size in common:
        entry = (row.figures[size], baseline.figures[size], size)
        if partners:
            aligned = paired(dict(zip(row.launch_of[size], row.figures[size])),
                             dict(zip(baseline.launch_of[size], baseline.figures[size])))
            entry = entry if aligned is None else (*entry, aligned)
        sizes[size] = entry
    regimes = {}
    members: dict[str, list] = {}
    for size in sorted(common, key=lambda size: (size is not None, size or 0)):
        members.setdefault(ranges.regime(size), []).append(size)
    for name, regime_sizes in members.items():
        if len(regime_sizes) == 1:  # one size: its own comparison is the regime's
            regimes[name] = sizes[regime_sizes[0]][:2] + (None,) + sizes[regime_sizes[0]][3:]
            continue
        candidate, base = _geometric_means(mine, regime_sizes), _geometric_means(theirs, regime_sizes)
        if not candidate or not base:
            continue
        entry = (list(candidate.values()), list(base.values()), None)
        aligned = paired(candidate, base) if partners else None
        regimes[name] = entry if aligned is None else (*entry, aligned)
    return sizes, regimes


def compare_pairs(pairs: Sequence[tuple[Row, Row | None]],
                  settings: Settings = Settings()) -> list[PairComparison]:
    """Per (candidate, baseline) pair of rows, the comparisons at every size both have and of every size regime
    (empty where a side has no launches or there is no baseline). Every pair goes through ``compare_many`` at
    once, one batch per direction of the metric and per mode (tested, or descriptive: ``is_descriptive``)."""
    batches: dict[tuple[bool, bool], dict] = {}  # (higher is better, descriptive) -> the entries of that batch
    by_launch: dict[int, dict] = {}  # each row's figures per launch, made once
    for index, (row, baseline) in enumerate(pairs):
        if baseline is None or row.launches == 0 or baseline.launches == 0:
            continue
        batch = batches.setdefault((row.key.higher_is_better, is_descriptive(row, baseline)), {})
        sizes, regimes = _entries(row, baseline, settings.ranges, by_launch)
        batch.update({(index, "size", size): entry for size, entry in sizes.items()})
        batch.update({(index, "regime", name): entry for name, entry in regimes.items()})
    compared = [PairComparison() for _ in pairs]
    for (higher, descriptive), batch in batches.items():
        for (index, kind, unit), comparison in compare_many(
            batch, higher_is_better=higher, floor=settings.floor, alpha=settings.alpha, seed=settings.seed,
            descriptive=descriptive,
        ).items():
            if kind == "size":
                compared[index].sizes.append(comparison)
            else:
                compared[index].regimes[unit] = comparison
    for pair in compared:
        pair.sizes.sort(key=lambda c: (c.size is not None, c.size or 0))
    return compared


@collector_paused()
def answer(rows: dict[RowKey, Row], settings: Settings = Settings(), only: frozenset[RowKey] | None = None
           ) -> list[Answer]:
    """Every row's answer against the system baseline and, where it differs, the same-stack one; in a
    sequential campaign (``settings.looks``), each taken at the look that settled it (analysis/sequential.py).
    ``only``: answer these rows alone (and the A/A control, whose class every answer's reason reads), the others
    serving as baselines: one row's table compares a few rows, not the campaign's."""
    if settings.looks:
        return answer_at_looks(rows, settings, lambda rows_, settings_: _answer_now(rows_, settings_, only))
    return _answer_now(rows, settings, only)


def _plans(rows: dict[RowKey, Row]) -> list[tuple[Row, str, Row | None, bool]]:
    """Each comparison to make: (row, SYSTEM or SAME_STACK, its baseline row, whether the same build is the
    system MPI)."""
    plans: list[tuple[Row, str, Row | None, bool]] = []
    index = _system_index(rows)
    for row in sorted(rows.values(), key=lambda row: row.key):
        system = _system_baseline(row, index)
        if system is row or (_is_system(row) and row.key.variant == row.variant_baseline):
            continue  # the baseline itself
        plans.append((row, SYSTEM, system, False))
        if row.key.approach != "native" and row.launches:
            same, is_system = _same_stack_baseline(row, rows, system)
            if same is not None and not is_system:
                plans.append((row, SAME_STACK, same, False))
            elif is_system:
                plans[-1] = (row, SYSTEM, system, True)
    return plans


def compared_with(rows: dict[RowKey, Row], key: RowKey) -> int:
    """How many comparisons take the row ``key`` as their baseline (without making them)."""
    return sum(baseline is not None and baseline.key == key for _, _, baseline, _ in _plans(rows))


def _answer_now(rows: dict[RowKey, Row], settings: Settings, only: frozenset[RowKey] | None = None
                ) -> list[Answer]:
    """The answers on every launch the rows have, at the settings' level (a fixed design; or one look)."""
    plans = [plan for plan in _plans(rows) if only is None or plan[0].key in only or plan[0].control]

    compared = compare_pairs([(row, baseline) for row, _, baseline, _ in plans], settings)
    controls = [index for index, (row, kind, _, _) in enumerate(plans) if row.control and kind == SYSTEM]
    busy = machine_too_busy([classify(compared[index].sizes, compared[index].regimes, ranges=settings.ranges)
                             for index in controls if compared[index].sizes])
    answers = []
    for index, (row, kind, baseline, same_build) in enumerate(plans):
        what = "system MPI" if kind == SYSTEM else "same-stack native"
        sizes, regimes = compared[index].sizes, compared[index].regimes
        row_class = _class_without_comparison(row, baseline, what)
        if row_class is None:
            row_class = (classify(sizes, regimes, ranges=settings.ranges, busy="" if row.control else busy)
                         if sizes else untested_class("no message size in common with the baseline"))
        if row.failures and row.launches:
            row_class = dataclasses.replace(
                row_class, reason=f"{row_class.reason}; {len(row.failures)} other launch(es) failed: {row.failures[0]}")
        answers.append(Answer(row.key, kind, baseline.key if baseline else None, row_class, sizes, regimes, row.launches,
                              baseline.launches if baseline else 0, row.failures, row.library_version,
                              row.declared_version, same_build, control=row.control,
                              slow_launches=(row.slow_launch_share(),
                                             baseline.slow_launch_share() if baseline else math.nan)))
    return answers


def machine_too_busy(controls: Sequence[RowClass]) -> str:
    """Why nothing more can be settled on this machine now, or "": the A/A control (the system MPI against
    itself) could not be shown at speed, so an open row's interval is the machine's noise, and repeating would
    forecast hundreds of launches that the same noise would leave open."""
    failing = [row for row in controls if row.label != "Y"]
    if not failing:
        return ""
    widest = max((c for row in failing for c in row.regimes.values() if c.ci_low > 0),
                 key=lambda c: c.ci_high / c.ci_low, default=None)
    evidence = (f" (its interval reached {widest.ci_low:.2f}–{widest.ci_high:.2f}×, the parity band being "
                f"{widest.floor_low:.2f}–{widest.floor_high:.2f}×)" if widest is not None else "")
    return (f"this machine was too noisy to settle it: the A/A control was {failing[0].label}, not Y{evidence}; "
            "rerun on a quieter machine rather than with more launches")


def control_summary(answers: Sequence[Answer]) -> list[str]:
    """The machine's A/A result, one line per control row: how well this campaign can tell two identical
    configurations apart ("A/A latency: Y, small 1.00× [0.98–1.02], ...")."""
    lines = []
    for a in answers:
        if not a.control or a.baseline != SYSTEM:
            continue
        regimes = ", ".join(f"{name} {c.ratio:.2f}× [{c.ci_low:.2f}–{c.ci_high:.2f}]"
                            for name, c in a.regimes.items() if math.isfinite(c.ci_low))
        slow = (f"; launches in a slow mode (25 % or more slower): {a.slow_launches[0]:.0%} and "
                f"{a.slow_launches[1]:.0%}" if all(math.isfinite(x) for x in a.slow_launches) else "")
        lines.append(f"A/A {a.key.benchmark} ({a.key.stack} {a.key.variant} against itself): {a.label}"
                     + (f", {regimes}" if regimes else f": {a.row_class.reason}") + slow)
    return lines


#: a regime's worst size is named beside its estimate when it is this much further from parity: the regime's
#: geometric mean alone understates a loss concentrated at a few sizes
WORST_APART = 0.03


def slow_summary(slow, sizes: bool = False) -> str:
    """One slow regime in a few words: its estimate, and its worst size where that is clearly worse ("small
    0.87×, worst 0.74× at 1 B"); with ``sizes``, the regime's slow sizes too."""
    where = f"{slow.regime} {format_sizes(slow.sizes)}" if sizes else slow.regime
    if not math.isfinite(slow.ratio):
        return f"{where} {slow.worst_ratio:.2f}× at worst"
    worst = (f", worst {slow.worst_ratio:.2f}× at {format_size(slow.worst_size)}"
             if len(slow.sizes) > 1 and slow.worst_ratio < slow.ratio - WORST_APART else "")
    return f"{where} {slow.ratio:.2f}×{worst}"


@dataclass(frozen=True)
class Resolution:
    """What the A/A control says one benchmark's regime can resolve on this run: its interval around parity, and
    whether that lies within the parity band (a loss as small as the floor would show)."""

    benchmark: str
    regime: str
    low: float
    high: float
    within_floor: bool
    pairs: int

    @property
    def span(self) -> str:
        """"±3 %" where the interval is about symmetric around parity, else its edges ("−10…+20 %", "+1…+6 %")."""
        low, high = round((self.low - 1) * 100), round((self.high - 1) * 100)
        if low <= 0 <= high and abs(low + high) <= 2:
            return f"±{max(-low, high)} %"
        return f"{low:+d}…{high:+d} %".replace("-", "−")


def control_resolution(answers: Sequence[Answer]) -> list[Resolution]:
    """Per benchmark and regime of the A/A control (against the system MPI), its interval: how far apart two
    identical configurations could look on this run."""
    found = []
    for a in answers:
        if not a.control or a.baseline != SYSTEM:
            continue
        for name, c in a.regimes.items():
            if math.isfinite(c.ci_low) and math.isfinite(c.ci_high):
                found.append(Resolution(a.key.benchmark, name, c.ci_low, c.ci_high,
                                        c.floor_low <= c.ci_low and c.ci_high <= c.floor_high, c.n_pairs))
    return found


def control_advice(resolution: Sequence[Resolution]) -> str:
    """One action from the control: none where every regime resolves the floor; more launches where the
    control's comparisons were not yet paired over enough rounds (its interval is the launch count's); else a
    quieter machine (the interval is the machine's noise, which more launches only average)."""
    if all(r.within_floor for r in resolution):
        return ""
    if min(r.pairs for r in resolution if not r.within_floor) < MIN_PAIRS:
        return "more launches (repeats >= 10 pairs each candidate with its block's baseline)"
    return "a quieter machine (more launches only average its noise)"


def control_reading(answers: Sequence[Answer], floor: float) -> str | None:
    """The A/A control interpreted: per benchmark and regime, whether this run resolves the practical floor (and
    how far identical runs drifted where it does not), which answers that limits, and one action; None without
    a control interval."""
    resolution = control_resolution(answers)
    if not resolution:
        return None
    by_benchmark: dict[str, list] = {}
    for r in resolution:
        by_benchmark.setdefault(r.benchmark, []).append(r)
    resolved, unresolved = [], []
    for benchmark, regimes in by_benchmark.items():
        good = [r for r in regimes if r.within_floor]
        if len(good) == len(regimes):
            resolved.append(f"{benchmark} {_widest(good)}")
        else:
            if good:
                resolved.append(f"{benchmark} {' '.join(r.regime for r in good)} {_widest(good)}")
            bad = [r for r in regimes if not r.within_floor]
            where = benchmark if not good else f"{benchmark} {' '.join(r.regime for r in bad)}"
            unresolved.append(f"{where} {_widest(bad)}")
    text = f"A/A: this run resolves a {floor:.0%} loss in " + (", ".join(resolved) if resolved else "nothing")
    if unresolved:
        # the action before the figures: on a terminal line the figures are what may be cut
        text += (f"; action: {control_advice(resolution)}; elsewhere a ? is this machine's noise and a loss must "
                 f"exceed its drift ({', '.join(unresolved)})")
    return text


def _widest(regimes) -> str:
    """The widest drift of identical runs over some regimes, as the A/A measured it."""
    return max(regimes, key=lambda r: max(1 - r.low, r.high - 1)).span


def where_slow(answer_: Answer) -> str:
    """A short 'where' for tables: the slow ranges with their estimate and, where clearly worse, their worst size;
    or the class's reason."""
    if answer_.row_class.slow:  # the regime's estimate first, and the worst size beside it: neither alone
        return "; ".join(slow_summary(r, sizes=True) for r in answer_.row_class.slow)
    return answer_.row_class.reason
