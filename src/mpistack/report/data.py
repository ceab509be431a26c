"""What a report shows, gathered once from the store: the rows, their answers, the compatibility matrix, the
per-size tables, the failed and skipped runs, and the provenance of each stack and approach.

One read of the evidence (``analysis.evidence.load_rows``), one batched analysis (``analysis.answers.answer``) and
one provenance query for the first run of each stack and approach: no query per run or per row, so that a store of
a million results is reported in seconds. The renderers (Markdown, HTML, JSON, plots) only format this.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from datetime import datetime, timezone

from sqlalchemy import Engine

from ..analysis.answers import SAME_STACK, SYSTEM, Answer, Settings, answer, control_reading, control_summary
from ..analysis.bounds import MachineBounds, load_bounds
from ..analysis.bulk import collector_paused
from ..analysis.characterise import Characterisation, characterise, uncompared_rows
from ..analysis.classes import format_size
from ..analysis.evidence import Row, RowKey, load_rows
from ..analysis.matrix import Column, Matrix, column_order, compat_matrix, placement_text
from ..analysis.statistics import Verdict
from ..spec.benchmarks import BENCHMARK_NAMES
from ..store.query import PROVENANCE_FIELDS, Where, run_provenance
from .bounds import above_memcpy

UNITS = {"latency": "us", "bandwidth": "MB/s", "message_rate": "messages/s"}
BAND = (0.025, 0.975)  # the spread of launch figures drawn around each median: their central 95%


@dataclass(frozen=True, order=True)
class GroupKey:
    """One benchmark metric at one placement and buffer placement, within one scope: one set of tables and plots."""

    scope: str
    benchmark_order: int
    benchmark: str
    metric: str
    ranks: int
    nodes: int
    buffers: str

    @property
    def title(self) -> str:
        where = f"{self.ranks} ranks on {self.nodes} node(s)" if self.ranks else "placement not given"
        metric = "" if self.metric == self.benchmark else f" ({self.metric})"
        return f"{self.benchmark}{metric}, {where}, buffers {self.buffers}"

    @property
    def slug(self) -> str:
        text = f"{self.scope}-{self.benchmark}-{self.metric}-n{self.ranks}N{self.nodes}-{self.buffers}"
        return "".join(ch if ch.isalnum() else "-" for ch in text).lower()


@dataclass
class Series:
    """One row's figures per size (median and the spread of its launches) and its answers."""

    key: RowKey
    origin: str
    median: dict[int | None, float] = field(default_factory=dict)
    low: dict[int | None, float] = field(default_factory=dict)
    high: dict[int | None, float] = field(default_factory=dict)
    launches: int = 0
    failures: int = 0
    answer: Answer | None = None  # against the system MPI
    same_stack: Answer | None = None  # against the same build natively

    @property
    def column(self) -> str:
        return Column(self.key.approach, self.key.variant).label

    @property
    def label(self) -> str:
        return f"{self.key.stack} {self.column}"

    @property
    def sizes(self) -> list[int | None]:
        return sorted(self.median, key=lambda size: (size is not None, size or 0))


@dataclass(frozen=True)
class TableCell:
    text: str
    slower: bool = False
    faster: bool = False
    above_bound: bool = False  # above the machine's memcpy bound (report/bounds.py): not called faster


@dataclass
class SizeTable:
    """Seed-style: a row per message size, the system MPI's median, then a column per approach (+variant), each
    cell the candidate's median and its ratio (1.0 = parity)."""

    stack: str
    title: str
    headers: list[str]
    rows: list[list[TableCell]]


@dataclass
class Group:
    key: GroupKey
    unit: str
    higher_is_better: bool
    baselines: list[Series]
    candidates: list[Series]  # by stack, then column order
    tables: list[SizeTable] = field(default_factory=list)

    @property
    def sized(self) -> bool:
        """Whether the group has message sizes to plot against (barrier has none)."""
        return any(size for series in [*self.baselines, *self.candidates] for size in series.median)


@dataclass(frozen=True)
class RunIssue:
    """Launches of one row that failed (or were not run) for one reason."""

    key: RowKey
    reason: str
    count: int
    launches: int  # all launches of the row

    @property
    def status(self) -> str:
        return self.reason.split(":", 1)[0]


@dataclass
class ProvenanceEntry:
    """One stack and approach (+variant): how many runs, and the first run's command, environment, versions."""

    scope: str
    stack: str
    column: str
    runs: int
    first: dict

    @property
    def transport(self) -> dict:
        """What the first run's MPI library said it used (parsers/transport.py); empty when not recorded."""
        return self.first.get("transport") or {}


#: the matrix cells a report shows the doctor's findings under: the slow ones and the failing ones
DIAGNOSED_LABELS = frozenset({"(Y)", "N"})
#: doctor rules whose findings a report shows under any cell: a cell at native speed or faster says why it is faster
EXPLAINS_ANY_CELL = frozenset({"faster-than-native"})
#: doctor rules that call a cell's loss its MPI build's: the cell carries the cause found on the stack's native row
BUILD_LOSS_RULES = frozenset({"stack-effect"})
#: a finding's anomaly when the campaign's evidence ruled its cause out (said among what was checked)
RULED_OUT = "refuted"


@dataclass
class Report:
    title: str
    campaign: dict | None  # {"id": ..., "name": ...} when the report is one campaign's
    filters: list[str]
    settings: Settings
    answers: list[Answer]
    matrix: Matrix
    failures: list[RunIssue]
    skipped: list[RunIssue]
    provenance: list[ProvenanceEntry]
    generated: str
    rows: dict[RowKey, Row] = field(default_factory=dict, repr=False)
    regressions: list = field(default_factory=list)  # analysis.regressions.Regression, for a campaign's report
    regression_summary: str = ""  # what the regression check found, or why it could not look (RegressionCheck)
    #: the doctor's findings as plain data, handed in by the caller (the doctor comes after the report):
    #: ((scope, stack), (approach, variant)) -> [{title, verdict, rule, source, evidence}]
    findings: dict = field(default_factory=dict)
    bounds: MachineBounds | None = None  # the campaign's machine bounds (analysis/bounds.py), when measured
    #: where the analysis settings came from ("the campaign's [analysis] table", "--floor 0.2"): each file says
    settings_origin: str = "the defaults"

    def findings_of(self, row, column) -> list[dict]:
        """The findings shown under one matrix cell (a StackRow and a Column): a slow or failing cell's, those that
        explain its loss first (``explains``), and any cell's explanation of being faster than native."""
        cell = self.matrix.cell(row, column)
        if cell is None:
            return []
        found = self.findings.get((row.key, (column.approach, column.variant)), [])
        if not self.losing(row, column):
            return [f for f in found if f["rule"] in EXPLAINS_ANY_CELL]
        losing = self.losing_sizes(row, column)
        ordered = _loss_first(found, losing)
        if ordered and explains(ordered[0], losing) and ordered[0]["rule"] in BUILD_LOSS_RULES \
                and column.approach != "native":
            ordered[0] = self._with_native_cause(row, column, ordered[0], losing)
        return ordered

    def loss_cause(self, row, column) -> dict | None:
        """The finding that explains a slow or failing cell's loss (its benchmark and the sizes where it is
        slower), or None: none known, or the cell loses nothing."""
        if not self.losing(row, column):
            return None
        found = self.findings_of(row, column)
        return found[0] if found and explains(found[0], self.losing_sizes(row, column)) else None

    def losing(self, row, column) -> bool:
        """Whether a cell is slower or fails against either baseline."""
        cell = self.matrix.cell(row, column)
        return cell is not None and (cell.label in DIAGNOSED_LABELS
                                     or self._same_label(row, column) in DIAGNOSED_LABELS)

    def _with_native_cause(self, row, column, finding: dict, losing: dict) -> dict:
        """A loss the doctor calls the stack's, with the cause the stack's own native row was given where that
        cause explains this cell's loss too: the reason and the fix reach the container's cell, instead of
        stopping at "the stack's"."""
        native = self.findings.get((row.key, ("native", column.variant)), [])
        cause = next((f for f in _loss_first(native, losing) if explains(f, losing) and f.get("fix")), None)
        if cause is None:
            return finding
        return {**finding, "title": f"{finding['title']}; natively: {cause['title']}", "fix": cause["fix"],
                "benchmarks": list(dict.fromkeys([*(finding.get("benchmarks") or []),
                                                  *(cause.get("benchmarks") or [])]))}

    def _same_label(self, row, column) -> str | None:
        same = self.same_stack_matrix.cells.get((row.key, column))
        return same.label if same is not None else None

    def losing_sizes(self, row, column) -> dict[str, list[int] | None]:
        """Per benchmark in which a cell is slower or fails (against either baseline), the sizes where it is
        slower (None: it fails, or no size was named): what its first cause must explain."""
        found: dict[str, list[int] | None] = {}
        for a in self.answers:
            if (a.key.scope, a.key.stack) != row.key or (a.key.approach, a.key.variant) != (
                    column.approach, column.variant) or a.label not in DIAGNOSED_LABELS:
                continue
            sizes = [size for slow in a.row_class.slow for size in slow.sizes if size is not None]
            known = found.get(a.key.benchmark, [])
            found[a.key.benchmark] = None if a.label == "N" or not sizes or known is None else sorted(
                set(known) | set(sizes))
        return found

    def unexplained(self, row, column) -> bool:
        """A slow or failing cell for which the doctor knows no cause of its loss: the report says so, and what
        was checked, rather than nothing (or a finding about something else)."""
        return self.losing(row, column) and self.loss_cause(row, column) is None

    def checked(self, row, column) -> str:
        """What the doctor looked at in a cell whose loss it could not explain, with what the cell recorded: its
        path between ranks, single copy and eager limit, the binding, and its build natively."""
        transport = next((entry.transport for entry in self.provenance if (entry.scope, entry.stack) == row.key
                          and entry.column == column.label), {})
        eager = str(transport.get("eager_limit", ""))
        parts = [f"path {transport['intra']}" + (f" ({transport['intra_via']})" if transport.get("intra_via") else "")
                 if transport.get("intra") else "path not recorded",
                 f"single copy {transport.get('single_copy') or 'not recorded'}",
                 f"eager limit {format_size(int(eager))}" if eager.isdigit() else "eager limit not recorded",
                 "binding"]
        found = self.findings.get((row.key, (column.approach, column.variant)), [])
        # what the evidence ruled out first: it says more than what was merely looked at
        parts[:0] = [f"not the single copy ({f['evidence']['point_to_point']})" for f in found
                     if (f.get("evidence") or {}).get("anomaly") == RULED_OUT and f["evidence"].get("point_to_point")]
        if column.approach != "native":
            same = self._same_label(row, column)
            parts.append(f"against its build natively: {same or 'not run'}")
        return ", ".join(parts)

    @property
    def results(self) -> int:
        """Figures read (launch x size)."""
        return sum(len(values) for row in self.rows.values() for values in row.figures.values())

    @cached_property
    def groups(self) -> list[Group]:
        """Per benchmark group, the series and their tables: made when first asked for (the JSON needs none)."""
        return _groups(self.rows, self.answers, self.matrix, self.bounds)

    def settings_dict(self) -> dict:
        return self.settings.to_dict()

    @cached_property
    def control_lines(self) -> list[str]:
        """The machine's A/A result, stated before every other answer, and what it means for them."""
        reading = control_reading(self.answers, self.settings.floor.relative)
        return control_summary(self.answers) + ([reading] if reading else [])

    @cached_property
    def same_stack_matrix(self) -> Matrix:
        """The matrix against the same build run natively (the deployment's own cost): the same-stack answers,
        and the system answers of rows whose same build is the system MPI itself (Debian's MPICH in a Debian
        image, the host's MPI bound in). Its cells are looked up with the system matrix's rows and columns."""
        chosen = [dataclasses.replace(a, baseline=SYSTEM) for a in self.answers
                  if a.baseline == SAME_STACK or (a.baseline == SYSTEM and a.same_build_as_system)]
        return compat_matrix(chosen)

    @cached_property
    def characterised(self) -> list[Characterisation]:
        """The rows that were neither compared nor a baseline (a campaign of native runs only, a row whose
        baseline did not run): their per-size medians with intervals, since no ratio describes them."""
        compared = {a.key for a in self.answers if a.sizes}
        baselines = {a.baseline_row for a in self.answers if a.baseline_row is not None and a.sizes}
        return [characterise(row) for row in uncompared_rows(self.rows, compared, baselines)]

    @cached_property
    def skip_reasons(self) -> list[tuple[str, int, list[str]]]:
        """Why cases were not run, each reason once: (reason, cases, the stack and approach cells it hit)."""
        counts: Counter = Counter()
        cells: dict[str, list[str]] = defaultdict(list)
        for issue in self.skipped:
            counts[issue.reason] += issue.count
            cell = f"{issue.key.stack} {Column(issue.key.approach, issue.key.variant).label}"
            if cell not in cells[issue.reason]:
                cells[issue.reason].append(cell)
        return [(reason, count, cells[reason]) for reason, count in counts.most_common()]

    def settings_text(self) -> str:
        """The analysis settings in words, with where they came from: each file of a report states them, so that
        files written at different times with different settings cannot be mistaken for one another."""
        settings = self.settings
        return (f"practical floor {settings.floor.describe(higher_is_better=False)}, small messages below "
                f"{format_size(settings.ranges.small_below)}, large from {format_size(settings.ranges.large_from)}, "
                f"{settings.rule()}; from "
                f"{self.settings_origin}")


_SEVERITY = {"problem": 0, "warning": 1, "ok": 2}


def explains(finding: dict, losing: dict[str, list[int] | None]) -> bool:
    """Whether a finding can be the cause of a cell's loss (``Report.losing_sizes``): it is not about a speed-up,
    it was seen in a benchmark where the cell loses (or names none), and its sizes meet those where it loses."""
    if finding["rule"] in EXPLAINS_ANY_CELL or (finding.get("evidence") or {}).get("anomaly") == RULED_OUT:
        return False  # a speed-up's explanation never explains a loss, nor does a cause the evidence ruled out
    benchmarks = [name for name in (finding.get("benchmarks") or losing) if name in losing]
    span = finding.get("sizes")
    if not benchmarks or span is None:
        return bool(benchmarks)
    low, high = span
    return any(sizes is None or any(low <= size and (high is None or size <= high) for size in sizes)
               for sizes in (losing[name] for name in benchmarks))


def _loss_first(found: list[dict], losing: dict[str, list[int] | None]) -> list[dict]:
    """A slow or failing cell's findings, those that explain its loss first (``explains``), then the others; each
    part the most severe first (the doctor's own order breaks ties)."""
    def rank(item: tuple[int, dict]) -> tuple:
        index, finding = item
        return (not explains(finding, losing), finding["rule"] in EXPLAINS_ANY_CELL,
                _SEVERITY.get(finding["verdict"], 3), index)

    return [finding for _, finding in sorted(enumerate(found), key=rank)]


def quantile(ordered: list[float], q: float) -> float:
    """The q-quantile of sorted values, interpolated linearly (numpy's default)."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def series_of(row: Row) -> Series:
    series = Series(row.key, row.origin, launches=row.launches, failures=len(row.failures))
    for size, values in row.figures.items():
        ordered = sorted(values)
        series.median[size] = statistics.median(ordered)
        series.low[size] = quantile(ordered, BAND[0])
        series.high[size] = quantile(ordered, BAND[1])
    return series


def format_value(value: float | None) -> str:
    """A figure with the digits that matter: 0.731, 1.36, 12.4, 1234."""
    if value is None or not math.isfinite(value):
        return "—"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def format_ratio(ratio: float) -> str:
    return f"{ratio:.2f}×" if math.isfinite(ratio) else "—"


def _size_key(size: int | None) -> tuple[bool, int]:
    return (size is not None, size or 0)


def _group_key(key: RowKey) -> GroupKey:
    order = BENCHMARK_NAMES.index(key.benchmark) if key.benchmark in BENCHMARK_NAMES else len(BENCHMARK_NAMES)
    return GroupKey(key.scope, order, key.benchmark, key.metric, key.ranks, key.nodes, key.buffers)


def _candidate_order(series: Series) -> tuple:
    return (series.key.stack, column_order(Column(series.key.approach, series.key.variant)))


def _baseline_header(series: Series) -> str:
    return f"{series.key.stack} {series.column} (system)"


def _tables(group: Group, stacks_versions: dict[tuple[str, str], str],
            bounds: MachineBounds | None = None) -> list[SizeTable]:
    by_stack: dict[str, list[Series]] = defaultdict(list)
    for series in group.candidates:
        if series.median:  # rows whose launches all failed are listed with the failures, not as empty columns
            by_stack[series.key.stack].append(series)
    baselines = {series.key: series for series in group.baselines}
    tables = []
    for stack, candidates in by_stack.items():
        used = [baselines[key] for key in dict.fromkeys(
            s.answer.baseline_row for s in candidates if s.answer and s.answer.baseline_row in baselines)]
        used = used or group.baselines
        sizes = sorted({size for series in [*used, *candidates] for size in series.median}, key=_size_key)
        compared = [{c.size: c for c in series.answer.sizes} if series.answer else {} for series in candidates]
        rows = []
        for size in sizes:
            cells = [TableCell(format_size(size) if size is not None else "—")]
            cells += [TableCell(format_value(series.median.get(size))) for series in used]
            for series, comparisons in zip(candidates, compared):
                median = series.median.get(size)
                comparison = comparisons.get(size)
                if median is None:
                    cells.append(TableCell("—"))
                elif comparison is None:
                    cells.append(TableCell(format_value(median)))
                else:
                    above = above_memcpy(bounds, group.key.benchmark, group.key.metric, size, median)
                    cells.append(TableCell(f"{format_value(median)} ({format_ratio(comparison.ratio)})" + " ‡" * above,
                                           comparison.verdict is Verdict.SLOWER,
                                           comparison.verdict is Verdict.FASTER and not above, above))
            rows.append(cells)
        headers = ["size", *(_baseline_header(series) for series in used),
                   *(series.column for series in candidates)]
        version = stacks_versions.get((group.key.scope, stack))
        title = f"{stack}" + (f" ({version})" if version else "")
        tables.append(SizeTable(stack, title, headers, rows))
    return tables


def _issues(rows: dict[RowKey, Row]) -> tuple[list[RunIssue], list[RunIssue]]:
    failures, skipped = [], []
    for key in sorted(rows):
        row = rows[key]
        total = row.launches + len(row.failures)
        for reason, count in Counter(row.failures).items():
            failures.append(RunIssue(key, reason, count, total))
        for reason, count in Counter(row.skipped).items():
            skipped.append(RunIssue(key, reason, count, total + len(row.skipped)))
    return failures, skipped


def _provenance(engine: Engine, rows: dict[RowKey, Row]) -> list[ProvenanceEntry]:
    chosen: dict[tuple[str, str, Column], list[Row]] = defaultdict(list)
    for row in rows.values():
        chosen[(row.key.scope, row.key.stack, Column(row.key.approach, row.key.variant))].append(row)
    firsts = {}
    for name, group in chosen.items():
        ran = [min(row.runs) for row in group if row.launches and row.runs]
        every = [min(row.runs) for row in group if row.runs]
        if ran or every:
            firsts[name] = min(ran or every)
    facts = run_provenance(engine, list(firsts.values()))
    entries = []
    for name in sorted(chosen, key=lambda item: (item[0], item[1], column_order(item[2]))):
        run_id = firsts.get(name)
        first = {**dict.fromkeys(PROVENANCE_FIELDS), **facts.get(run_id, {})}
        entries.append(ProvenanceEntry(name[0], name[1], name[2].label, sum(len(row.runs) for row in chosen[name]),
                                       first))
    return entries


def _groups(rows: dict[RowKey, Row], answers: list[Answer], matrix: Matrix,
            bounds: MachineBounds | None = None) -> list[Group]:
    series = {key: series_of(row) for key, row in rows.items()}
    baseline_keys = {a.baseline_row for a in answers if a.baseline == SYSTEM and a.baseline_row is not None}
    for answer_ in answers:
        target = series.get(answer_.key)
        if target is None:
            continue
        if answer_.baseline == SYSTEM:
            target.answer = answer_
        elif answer_.baseline == SAME_STACK:
            target.same_stack = answer_
    compared = {a.key for a in answers}
    groups: dict[GroupKey, list[Series]] = defaultdict(list)
    for key, item in series.items():
        groups[_group_key(key)].append(item)
    versions = {}
    for row in matrix.rows:
        text = ", ".join(part for part in (f"MPI {row.declared_version}" if row.declared_version else "",
                                           row.library_version or "") if part)
        versions[(row.scope, row.stack)] = text
    built = []
    for group_key in sorted(groups):
        members = groups[group_key]
        baselines = sorted((s for s in members if s.key in baseline_keys or (
            s.key not in compared and s.key.approach == "native" and s.origin in ("host", "published"))),
            key=_candidate_order)
        chosen = {s.key for s in baselines}
        candidates = sorted((s for s in members if s.key not in chosen), key=_candidate_order)
        group = Group(group_key, UNITS.get(group_key.metric, ""), members[0].key.higher_is_better, baselines,
                      candidates)
        group.tables = _tables(group, versions, bounds)
        built.append(group)
    return built


def build_report(rows: dict[RowKey, Row], answers: list[Answer], settings: Settings, *, title: str,
                 campaign: dict | None = None, filters: list[str] | None = None,
                 provenance: list[ProvenanceEntry] | None = None) -> Report:
    """The report of rows already read and answered (no I/O)."""
    failures, skipped = _issues(rows)
    ordered = sorted(answers, key=lambda a: (a.key, a.baseline != SYSTEM))
    return Report(title, campaign, list(filters or []), settings, ordered, compat_matrix(answers), failures, skipped,
                  provenance or [], datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), rows)


#: --where keys that choose the rows to report on, not their baselines: the native runs they are compared with are
#: read whatever these say (the other filters, the campaign, a benchmark, a placement, a tag, hold for both).
CANDIDATE_KEYS = frozenset({"stack", "approach", "variant", "origin", "launcher", "image_digest"})


@collector_paused()
def collect(engine: Engine, filters: list[Where], settings: Settings = Settings(), *, title: str,
            campaign: dict | None = None, filter_text: list[str] | None = None, choose=None) -> Report:
    """Read the runs matching the filters, answer them against their baselines (read even when the filters leave
    them out: ``--where approach=container`` still compares with native), and gather everything a report shows.
    ``choose(rows)``: the keys of the rows to answer, the others read as their baselines only; the report is then
    those rows' alone (no provenance, no bounds: one row's table shows neither)."""
    rows = load_rows(engine, filters)
    only = frozenset(choose(rows)) if choose is not None else None
    if any(where.key in CANDIDATE_KEYS for where in filters):
        shared = [where for where in filters if where.key not in CANDIDATE_KEYS]
        context = load_rows(engine, [*shared, Where("approach", "=", "native")])
        answers = [a for a in answer({**context, **rows}, settings, only) if a.key in rows]
        used = {a.baseline_row for a in answers if a.baseline_row is not None}
        rows = {**{key: context[key] for key in used if key in context}, **rows}
    else:
        answers = answer(rows, settings, only)
    report = build_report(rows, answers, settings, title=title, campaign=campaign, filters=filter_text,
                          provenance=_provenance(engine, rows) if only is None else [])
    report.bounds = load_bounds(engine, campaign["id"]) if campaign and only is None else None
    return report


__all__ = ["BAND", "CANDIDATE_KEYS", "DIAGNOSED_LABELS", "Group", "GroupKey", "ProvenanceEntry", "Report", "RunIssue",
           "Series", "SizeTable", "TableCell", "UNITS", "build_report", "collect", "format_ratio", "format_value",
           "placement_text", "quantile"]
