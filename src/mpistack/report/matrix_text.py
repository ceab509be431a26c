"""The answer on a terminal, within the console's width (80 columns and up): the machine's A/A control and bounds
on one line each, the stack x approach matrix with both baselines in each cell (``(Y)·Y``: slower than the
system MPI, at the speed of the same build natively), its legend, then one entry per slower or failing cell
(where, how much, and the doctor's first cause), the cases not run (each reason once, with its count), and
the rows that only a characterisation describes (no baseline: medians with intervals).

Lines are built as plain text first (laid out to the width, never wider) and coloured when printed, so that
what a test measures is what a user sees."""

from __future__ import annotations

import math
import re
import textwrap
from collections import Counter
from dataclasses import dataclass

from rich.console import Console
from rich.text import Text

from ..analysis.answers import SAME_STACK, SYSTEM, Answer, control_reading, format_level, slow_summary, where_slow
from ..analysis.characterise import Characterisation
from ..analysis.classes import format_size
from ..analysis.matrix import Column, StackRow, placement_text
from ..analysis.statistics import Verdict
from ..spec.benchmarks import BENCHMARK_NAMES
from .bounds import number
from .data import Report, format_value

#: a cell not settled as a whole in which every decided part is at native speed: no loss shown (which parts are
#: said under the matrix)
NO_LOSS = "Y~"
STYLES = {"Y": "green", NO_LOSS: "green", "(Y)": "yellow", "N": "red", "?": ""}
SEPARATOR = "·"  # between the class against the system MPI and the class against the same build natively
BASELINE = "system"  # the cell of the system MPI's own native runs
LEGEND = ("Y at native speed, (Y) slower, N fails, ? not settled. A·B: the class against",
          "the system MPI, then the same build natively; (Y)·Y: slower, not the container;",
          "Y~ no loss shown: at native speed where decided, the rest not settled")
MIN_GAP = 1
GAP = 2


def clip(text: str, width: int) -> str:
    """``text`` on one line of at most ``width`` characters, an ellipsis where it is cut (line breaks and tabs
    become spaces; the spaces that align a table stay)."""
    text = re.sub(r"\s*[\r\n\t]+\s*", " ", text).rstrip()
    return text if len(text) <= width else text[:max(width - 1, 0)].rstrip() + "…"


def fold(text: str, width: int, lines: int = 2, indent: str = "  ") -> list[str]:
    """``text`` on at most ``lines`` lines of ``width``, the later ones indented, the last one clipped."""
    wrapped = textwrap.wrap(clip(text, 10 * width), width, subsequent_indent=indent, break_on_hyphens=False)
    if len(wrapped) > lines:  # the rest clipped onto the last line, without the indents of the lines it joins
        wrapped = wrapped[:lines - 1] + [clip(" ".join([wrapped[lines - 1]] + [line.strip() for line in
                                                                              wrapped[lines:]]), width)]
    return wrapped


def _ratio_range(answers: list[Answer]) -> str:
    lows = [c.ci_low for a in answers for c in a.regimes.values() if math.isfinite(c.ci_low)]
    highs = [c.ci_high for a in answers for c in a.regimes.values() if math.isfinite(c.ci_high)]
    return f"{min(lows):.2f}–{max(highs):.2f}×" if lows and highs else ""


def control_line(report: Report, width: int = 80) -> str | None:
    """The A/A control's result on one line: its class per benchmark and the span of its regime intervals."""
    controls = [a for a in report.answers if a.control and a.baseline == SYSTEM]
    if not controls:
        return None
    by_label: dict[str, list[str]] = {}
    for a in controls:
        by_label.setdefault(a.label, []).append(a.key.benchmark)
    first = controls[0].key
    classes = "; ".join(f"{label} in " + (f"all {len(names)} benchmarks" if len(by_label) == 1 and len(names) > 1
                                           else ", ".join(dict.fromkeys(names)))
                        for label, names in sorted(by_label.items(), key=lambda item: item[0] != "Y"))
    span = _ratio_range(controls)
    why = f"intervals {span}" if span else (controls[0].row_class.cause or controls[0].row_class.reason)
    # (without an interval the control's own reason says why, e.g. too few launches; with one, what it means)
    noisy = set(by_label) != {"Y"} and bool(span)
    verdict = "; too noisy to tell identical runs apart" if noisy else ""
    candidates = [f"A/A ({first.stack} against itself): {classes}, {why}{verdict}",
                  f"A/A control: {classes}, {why}{verdict}",
                  f"A/A control: {classes}, {span}: too noisy to tell" if noisy else "",
                  f"A/A control: {classes}, {why}"]
    return next((text for text in candidates if text and len(text) <= width), clip(candidates[-1], width))


def _speed(mbs: float | None) -> str:
    return "—" if mbs is None else f"{mbs / 1000:.3g} GB/s" if mbs >= 1000 else f"{number(mbs)} MB/s"


def _largest_size(report: Report) -> int:
    """The largest message size the report's rows measured (1 MiB without one): where the bounds are quoted."""
    return max((size for row in report.rows.values() for size in row.figures if size), default=1 << 20)


def bounds_line(report: Report) -> str | None:
    """The machine bounds on one line: memcpy and TCP at the largest size, TCP and the shared-memory floor at
    the smallest, and how many figures lie above the memcpy bound."""
    machine = report.bounds
    if machine is None:
        return None
    large = _largest_size(report)
    floors = sorted(f.value for f in machine.of("shm-latency"))
    floor = (f"shm {floors[0]:.2g}" + (f"–{floors[-1]:.2g}" if f"{floors[-1]:.2g}" != f"{floors[0]:.2g}" else "")
             if floors else "shm —")
    tcp_us = machine.tcp_latency_us(1)
    memcpy, tcp = _speed(machine.memcpy_mbs(large)), _speed(machine.tcp_bandwidth_mbs(large))
    if memcpy.endswith(" GB/s") and tcp.endswith(" GB/s"):
        memcpy = memcpy[:-len(" GB/s")]
    text = (f"bounds at {format_size(large)}: memcpy {memcpy}, TCP {tcp}; at 1 B: TCP {number(tcp_us)}, "
            f"{floor} us")
    from .bounds import above_bound_figures  # the groups are built only when the bounds are there to judge them

    above = len(above_bound_figures(report))
    return text + (f"; {above} figure(s) above memcpy" if above else "")


def network_line(report: Report) -> str | None:
    """The network between two nodes as its bounds measured it (under a batch launcher, for a campaign with an
    inter-node placement): what rows between nodes are compared with, where the TCP figures above are loopback's.
    None where it was not measured."""
    machine = report.bounds
    if machine is None:
        return None
    large = _largest_size(report)
    latency, bandwidth = machine.net_latency_us(1), machine.net_bandwidth_mbs(large)
    if latency is None and bandwidth is None:
        return None
    link = machine.network.split(" (")[0]  # "TCP between node1 and node2", without how it was measured
    return f"{link}: {_speed(bandwidth)} at {format_size(large)}, {number(latency)} us at 1 B"


# -- the matrix ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MatrixCell:
    system: str  # the class against the system MPI ("" when none)
    same: str = ""  # the class against the same build natively ("" when there is none)

    @property
    def text(self) -> str:
        if self.system == BASELINE:
            return BASELINE
        return self.system + (f"{SEPARATOR}{self.same}" if self.same else "")


def _stack_rows(report: Report) -> list[StackRow]:
    """The matrix's rows, the system MPI's stacks first (their native runs are the baseline: a row of their own
    even without a compared variant)."""
    rows = list(report.matrix.rows)
    known = {row.key for row in rows}
    for key in sorted({a.baseline_row for a in report.answers if a.baseline == SYSTEM and a.baseline_row}):
        if (key.scope, key.stack) not in known:
            rows.append(StackRow(key.stack, key.scope))
            known.add((key.scope, key.stack))
    baselines = {(key.scope, key.stack) for key in (a.baseline_row for a in report.answers if a.baseline == SYSTEM)
                 if key is not None}
    return sorted(rows, key=lambda row: row.key not in baselines)  # stable: the matrix's order otherwise


def _columns(report: Report) -> list[Column]:
    """The matrix's columns without the A/A control's (its line above says it) and with a native column where
    a system baseline is shown."""
    control = {Column(a.key.approach, a.key.variant) for a in report.answers if a.control}
    shown = {Column(a.key.approach, a.key.variant) for a in report.answers
             if a.baseline == SYSTEM and not a.control}
    columns = [column for column in report.matrix.columns if column in shown or column not in control]
    if Column("native") not in columns and any(a.baseline_row for a in report.answers if a.baseline == SYSTEM):
        columns.insert(0, Column("native"))
    return columns


def matrix_cells(report: Report) -> tuple[list[StackRow], list[Column], dict[tuple, MatrixCell]]:
    rows, columns = _stack_rows(report), _columns(report)
    baseline_keys = {(key.scope, key.stack, key.approach, key.variant) for key in
                     (a.baseline_row for a in report.answers if a.baseline == SYSTEM) if key is not None}
    decided = decided_parts(report)
    cells = {}
    for row in rows:
        for column in columns:
            system = report.matrix.cell(row, column)
            same = report.same_stack_matrix.cells.get((row.key, column))
            if system is not None:
                shown = [NO_LOSS if label == "?" and decided.get((row.key, column, kind)) else label
                         for kind, label in ((SYSTEM, system.label), (SAME_STACK, same.label if same else ""))]
                cells[(row.key, column)] = MatrixCell(*shown)
            elif (row.scope, row.stack, column.approach, column.variant) in baseline_keys:
                cells[(row.key, column)] = MatrixCell(BASELINE)
    return rows, columns, cells


def decided_parts(report: Report) -> dict[tuple, list[str]]:
    """Per cell and baseline ((stack row key, column, SYSTEM or SAME_STACK)), what was decided at native speed
    in a cell with no loss: its Y benchmarks, and the regimes decided at speed of its open ones ("bw mid");
    absent where the cell loses somewhere or nothing was decided."""
    groups: dict[tuple, list[Answer]] = {}
    for a in report.answers:
        if a.control:
            continue
        column = Column(a.key.approach, a.key.variant)
        kinds = [SAME_STACK if a.baseline == SAME_STACK else SYSTEM]
        if a.baseline == SYSTEM and a.same_build_as_system:
            kinds.append(SAME_STACK)
        for kind in kinds:
            groups.setdefault(((a.key.scope, a.key.stack), column, kind), []).append(a)
    found = {}
    for key, answers in groups.items():
        if any(a.label in ("(Y)", "N") for a in answers):
            continue
        parts = []
        for a in sorted(answers, key=_benchmark_order):
            if a.label == "Y":
                parts.append(a.key.benchmark)
            else:
                at_speed = [name for name, c in a.regimes.items() if c.verdict is Verdict.AT_SPEED]
                if at_speed:
                    parts.append(f"{a.key.benchmark} {' '.join(at_speed)}")
        if parts:
            found[key] = list(dict.fromkeys(parts))
    return found


def _header(column: Column, width: int) -> list[str]:
    lines = [column.approach]
    if column.label != column.approach:
        lines += textwrap.wrap("+" + column.variant, width, break_on_hyphens=True) or [""]
    return lines


def _layout(stack_width: int, columns: list[Column], cells_width: dict[Column, int], width: int
            ) -> tuple[int, dict[Column, int]] | None:
    """(gap, column widths) fitting ``width``, variant headers wrapped as needed; None when nothing fits."""
    natural = {c: max(cells_width[c], len(c.approach), len("+" + c.variant) if c.label != c.approach else 0)
               for c in columns}
    narrow = {c: max(cells_width[c], len(c.approach), 4) for c in columns}
    for gap in (GAP, MIN_GAP):
        for widths in (natural, narrow):
            if stack_width + sum(widths.values()) + gap * len(columns) <= width:
                return gap, widths
    return None


def matrix_lines(report: Report, width: int = 80) -> list[Text]:
    """The matrix, a row per stack and a column per approach and variant, within ``width``; columns that do not
    fit go into a second block below (each with the stack names)."""
    rows, columns, cells = matrix_cells(report)
    if not cells:
        return []
    names = {row.key: row.stack + (f" ({row.scope})" if report.matrix.scoped else "") for row in rows}
    stack_width = min(max(len(name) for name in names.values()), max(12, width // 4))
    lines: list[Text] = []
    remaining = [column for column in columns if any((row.key, column) in cells for row in rows)]
    while remaining:
        block = list(remaining)
        while len(block) > 1 and _layout(stack_width, block, _widths(block, rows, cells), width) is None:
            block.pop()
        gap, widths = _layout(stack_width, block, _widths(block, rows, cells), width) or (MIN_GAP, {
            c: max(1, (width - stack_width) // len(block) - MIN_GAP) for c in block})
        headers = [_header(column, widths[column]) for column in block]
        for index in range(max(len(h) for h in headers)):
            line = Text(("stack" if index == 0 else "").ljust(stack_width), style="bold")
            for column, header in zip(block, headers):
                line.append(" " * gap + (header[index] if index < len(header) else "").ljust(widths[column])[
                    :widths[column]], style="bold")
            lines.append(_rstrip(line))
        lines.append(Text("─" * min(width, stack_width + sum(widths.values()) + gap * len(block))))
        for row in rows:
            if not any((row.key, column) in cells for column in block):
                continue
            line = Text(clip(names[row.key], stack_width).ljust(stack_width))
            for column in block:
                cell = cells.get((row.key, column))
                line.append(" " * gap)
                _append_cell(line, cell, widths[column])
            lines.append(_rstrip(line))
        remaining = remaining[len(block):]
    return lines


def _widths(block: list[Column], rows: list[StackRow], cells: dict) -> dict[Column, int]:
    return {column: max((len(cells[(row.key, column)].text) for row in rows if (row.key, column) in cells),
                        default=1) for column in block}


def _append_cell(line: Text, cell: MatrixCell | None, width: int) -> None:
    if cell is None:
        line.append(" " * width)
    elif cell.system == BASELINE:
        line.append(BASELINE.ljust(width), style="dim")
    else:
        line.append(cell.system, style=STYLES.get(cell.system, ""))
        if cell.same:
            line.append(SEPARATOR)
            line.append(cell.same, style=STYLES.get(cell.same, ""))
        line.append(" " * (width - len(cell.text)))


def _rstrip(line: Text) -> Text:
    line.rstrip()
    return line


# -- under the matrix ---------------------------------------------------------------------------------------


def _cause(report: Report, row: StackRow, column: Column, width: int, fix_lines: int = 2) -> list[Text]:
    """The cause of a cell's loss, as the doctor found it: the finding that explains that loss (its benchmark and
    sizes) with those benchmarks, and its fix on the next line; or that none is known and what was checked. A cell
    that loses nothing (a faster one) gets its first finding."""
    if report.losing(row, column):
        first = report.loss_cause(row, column)
        if first is None:
            return [Text(line, style="dim") for line in
                    fold(f"  doctor: no known cause; checked: {report.checked(row, column)}", width, 2, "    ")]
    else:
        found = report.findings_of(row, column)
        if not found:
            return []
        first = found[0]
    named = first.get("benchmarks") or []
    title = first["title"]
    if len(named) == 1 and title.startswith(named[0] + " "):
        title = title[len(named[0]) + 1:]  # "doctor (allreduce): slower from ...", the benchmark said once
    lines = fold(f"  doctor{' (' + ', '.join(named) + ')' if named else ''}: {title}", width, 2, "    ")
    if first.get("fix"):
        lines += fold(f"  fix: {first['fix']}", width, fix_lines, "    ")
    return [Text(line, style="dim") for line in lines]


def _benchmark_order(answer_: Answer) -> tuple:
    name = answer_.key.benchmark
    return (BENCHMARK_NAMES.index(name) if name in BENCHMARK_NAMES else len(BENCHMARK_NAMES), answer_.key)


def _slow_text(answer_: Answer) -> str:
    """Where a (Y) row is slower, compactly: each slow regime with its estimate ("small 0.58× mid 0.91×"); the
    sizes are in --rows and the files."""
    parts = [slow_summary(slow) for slow in answer_.row_class.slow]
    return ", ".join(dict.fromkeys(parts)) or where_slow(answer_)


def _faster_text(answers: list[Answer]) -> str:
    """Where rows are decided faster than the system MPI: per benchmark, each faster regime's estimate."""
    parts = []
    for a in sorted(answers, key=_benchmark_order):
        regimes = " ".join(f"{name} {c.ratio:.2f}×" for name, c in a.regimes.items() if c.verdict is Verdict.FASTER)
        if regimes:
            parts.append(f"{a.key.benchmark} {regimes}")
    return ", ".join(parts)


def _where(answers: list[Answer], label: str) -> str:
    chosen = sorted((a for a in answers if a.label == label), key=_benchmark_order)
    placements = {(a.key.ranks, a.key.nodes, a.key.buffers) for a in answers}
    parts = []
    for a in chosen:
        name = a.key.benchmark + (f" ({placement_text(a)})" if len(placements) > 1 else "")
        text = _slow_text(a) if label == "(Y)" else a.row_class.reason.splitlines()[0] if a.row_class.reason else ""
        parts.append(f"{name} {text}".strip())
    return ", ".join(dict.fromkeys(parts))


def cell_lines(report: Report, width: int = 80, faster_in_full: bool = True, fix_lines: int = 2) -> list[Text]:
    """Per slower or failing cell (against either baseline): where and how much on one line, the doctor's first
    cause on the next; the same for a cell faster than the system MPI that the doctor has a word on (a faster
    figure is an anomaly on one side or the other; without ``faster_in_full``, those cells are named on one line);
    then the cells not settled, on one line."""
    rows, columns, cells = matrix_cells(report)
    by_cell: dict[tuple, dict[str, list[Answer]]] = {}
    for a in report.answers:
        if a.control:
            continue
        kind = SAME_STACK if a.baseline == SAME_STACK else SYSTEM
        entry = by_cell.setdefault(((a.key.scope, a.key.stack), Column(a.key.approach, a.key.variant)), {})
        entry.setdefault(kind, []).append(a)
        if a.baseline == SYSTEM and a.same_build_as_system:
            entry.setdefault(SAME_STACK, []).append(a)
    lines, unsettled, faster_cells = [], [], []
    for row in rows:
        for column in columns:
            cell = cells.get((row.key, column))
            if cell is None or cell.system == BASELINE:
                continue
            answers = by_cell.get((row.key, column), {})
            name = f"{row.stack} {column.label}"
            bad = [label for label in ("N", "(Y)") if label in (cell.system, cell.same)]
            if not bad and report.findings_of(row, column):  # faster, and the doctor says why (or that it cannot)
                faster = _faster_text(answers.get(SYSTEM, []))
                if faster and not faster_in_full:
                    faster_cells.append(name)
                    continue
                if faster:
                    head = Text(f"{name} ")
                    head.append(cell.text, style=STYLES.get(cell.system, ""))
                    head.append(f" faster: {faster}")
                    lines.append(_clip_text(head, width))
                    lines += _cause(report, row, column, width)
                    continue
            if not bad:
                not_run = all(report.rows[a.key].launches == 0 and report.rows[a.key].skipped
                              for a in answers.get(SYSTEM, []) if a.key in report.rows)
                if "?" in (cell.system, cell.same) and not not_run:  # a case not run is said with its reason
                    unsettled.append(name)
                continue
            label = bad[0]
            if label == cell.system == "N":
                where = report.matrix.cell(row, column).reason
            elif label == cell.system:
                where = _where(answers.get(SYSTEM, []), label)
            else:
                where = "against the same build natively: " + _where(answers.get(SAME_STACK, []), label)
            head = Text(f"{name} ")
            head.append(cell.text, style=STYLES.get(label, ""))
            head.append(f": {where}")
            lines.append(_clip_text(head, width))
            lines += _cause(report, row, column, width, fix_lines)
    if faster_cells:
        lines.append(Text(clip(f"faster, the doctor says why in the report: {', '.join(faster_cells)}", width)))
    no_loss = _no_loss_text(report, rows, columns, cells)
    if no_loss:
        lines += [Text(line, style="green") for line in fold(no_loss, width, 2)]
    if unsettled:
        lines.append(Text(clip(f"? not settled: {', '.join(unsettled)} (why: --rows)", width)))
    return lines


def _no_loss_text(report: Report, rows, columns, cells) -> str:
    """The cells with no loss shown, grouped by what was decided at native speed in them: "Y~ no loss shown;
    at native speed: latency, bw mid in debian-mpich container, hybrid"."""
    decided = decided_parts(report)
    by_parts: dict[str, list[str]] = {}
    for row in rows:
        for column in columns:
            cell = cells.get((row.key, column))
            if cell is None or NO_LOSS not in (cell.system, cell.same):
                continue
            parts = decided.get((row.key, column, SYSTEM)) or decided.get((row.key, column, SAME_STACK)) or []
            by_parts.setdefault(", ".join(parts), []).append(f"{row.stack} {column.label}")
    if not by_parts:
        return ""
    return "Y~ no loss shown; at native speed: " + "; ".join(
        f"{parts} in {', '.join(names)}" for parts, names in by_parts.items())


def _clip_text(text: Text, width: int) -> Text:
    if len(text.plain) > width:
        text.truncate(width - 1)
        text.rstrip()
        text.append("…")
    return text


def skip_lines(report: Report, width: int = 80, lines_each: int = 2) -> list[Text]:
    """Each reason cases were not run, once, with how many and where (on up to ``lines_each`` lines)."""
    lines = []
    for reason, count, where in report.skip_reasons:
        first = next((line.strip() for line in reason.splitlines() if line.strip()), reason)
        lines += [Text(line) for line in fold(f"not run, {count} case(s) ({', '.join(where)}): {first}", width,
                                              lines_each)]
    return lines


# -- characterisation ---------------------------------------------------------------------------------------


def characterisation_lines(report: Report, width: int = 80) -> list[Text]:
    """The rows without a baseline, per benchmark: a row per size, a column per stack and approach, each cell the
    median over launches and its interval; columns that do not fit go into a further table."""
    groups: dict[tuple, list[Characterisation]] = {}
    for item in report.characterised:
        key = item.key
        groups.setdefault((key.benchmark, key.metric, key.ranks, key.nodes, key.buffers), []).append(item)
    lines: list[Text] = []
    for (benchmark, metric, ranks, nodes, buffers), items in groups.items():
        unit = {"latency": "us", "bandwidth": "MB/s", "bi-bandwidth": "MB/s"}.get(metric, "")
        level = format_level(items[0].confidence)
        short = " (fewer than 6 launches: the range)" if any(item.short_of_level for item in items) else ""
        title = (f"{benchmark} {items[0].key.placement} {buffers}, median {unit} [{level} interval]{short}, "
                 "no baseline")
        lines.append(Text(clip(title, width), style="bold"))
        sizes = sorted({f.size for item in items for f in item.sizes}, key=lambda s: (s is not None, s or 0))
        cells = {(id(item), f.size): f"{format_value(f.median)} [{format_value(f.low)}–{format_value(f.high)}]"
                 for item in items for f in item.sizes}
        size_width = max(len("size"), *(len(format_size(s)) for s in sizes))
        heads = {id(item): f"{item.key.stack} {Column(item.key.approach, item.key.variant).label}" for item in items}
        chunk: list[Characterisation] = []
        used = size_width
        for item in items + [None]:
            if item is not None:
                need = 2 + max(len(heads[id(item)]), *(len(v) for (i, _), v in cells.items() if i == id(item)))
                if not chunk or used + need <= width:
                    chunk.append(item)
                    used += need
                    continue
            lines += _characterisation_table(chunk, sizes, cells, heads, size_width, width)
            chunk, used = ([item], size_width + need) if item is not None else ([], size_width)
    return lines


def _characterisation_table(items, sizes, cells, heads, size_width, width) -> list[Text]:
    widths = [max(len(heads[id(item)]), *(len(v) for (i, _), v in cells.items() if i == id(item))) for item in items]
    out = [Text(clip("size".ljust(size_width) + "".join("  " + heads[id(item)].ljust(w)
                                                        for item, w in zip(items, widths)), width).rstrip(),
                style="bold")]
    for size in sizes:
        text = format_size(size).ljust(size_width) + "".join(
            "  " + cells.get((id(item), size), "—").ljust(w) for item, w in zip(items, widths))
        out.append(Text(clip(text, width).rstrip()))
    return out


# -- the whole answer ---------------------------------------------------------------------------------------


#: Beyond this many matrix rows (a report over a whole store) the terminal gets the count per class
MAX_MATRIX_ROWS = 40
#: The answer's lines at most, where they can be made to fit: with the command's title, the run's summary and the
#: report's path, a screen of 40 lines
MAX_LINES = 36


def answer_lines(report: Report, width: int = 80, hint: str | None = None, max_lines: int = MAX_LINES
                 ) -> list[Text]:
    """Everything the terminal shows of a report, within ``width`` and, where it can be, ``max_lines``: beyond them
    a not-run reason and each fix take one line, the faster cells are named on one line (their entries are in the
    files), and the blank lines go. ``hint``: the command a reader would run for the per-row table."""
    lines = _answer_lines(report, width, hint, compact=False)
    if len(lines) > max_lines:
        lines = [line for line in _answer_lines(report, width, hint, compact=True) if line.plain]
    return lines


def _answer_lines(report: Report, width: int, hint: str | None, compact: bool) -> list[Text]:
    lines: list[Text] = []
    control = control_line(report, width)
    if control:
        good = all(a.label == "Y" for a in report.answers if a.control and a.baseline == SYSTEM)
        lines.append(Text(clip(control, width), style="" if good else "yellow"))
        reading = control_reading(report.answers, report.settings.floor.relative)
        if reading and not good:  # what the noise means for the answers below, and what to do
            lines += [Text(line, style="yellow") for line in fold(reading, width, 2 if compact else 3)]
    for line in (bounds_line(report), network_line(report)):
        if line:
            lines.append(Text(clip(line, width)))
    rows, _, cells = matrix_cells(report)
    if len(rows) > MAX_MATRIX_ROWS:  # a whole store: the counts here, every cell in the files
        counts = Counter(cell.system for cell in cells.values() if cell.system != BASELINE)
        lines.append(Text(clip(f"{len(rows)} stacks, {sum(counts.values())} cells against the system MPI: "
                               + ", ".join(f"{label} {counts[label]}" for label in ("Y", "(Y)", "N", "?"))
                               + " (in the report)", width)))
        return lines
    matrix = matrix_lines(report, width)
    if matrix:
        lines.append(Text(""))
        lines += matrix
        legend = LEGEND if max(map(len, LEGEND)) <= width else textwrap.wrap(" ".join(LEGEND), width)
        lines += [Text(line, style="dim") for line in legend]
        lines += [Text(line, style="dim") for line in fold(report.settings.rule(), width, 2 if compact else 3)]
        under = cell_lines(report, width, faster_in_full=not compact, fix_lines=1 if compact else 2)
        if under:
            lines.append(Text(""))
            lines += under
    skipped = skip_lines(report, width, 1 if compact else 3)
    if skipped:
        lines += ([Text("")] if not matrix else []) + skipped
    characterised = report.characterised
    if characterised and not matrix:
        lines.append(Text(""))
        lines += characterisation_lines(report, width)
    elif characterised:
        lines.append(Text(clip(f"{len(characterised)} row(s) without a baseline: their medians with intervals "
                               "are in the report", width)))
    if not matrix and not characterised:
        lines.append(Text("nothing measured to report"))
    if hint and (matrix or characterised):
        lines += [Text(line, style="dim") for line in
                  fold(f"per row: {hint} --rows; per size: --row STACK/APPROACH/BENCHMARK", width, 1 if compact else 2)]
    return lines


def print_answer(report: Report, console: Console, hint: str | None = None) -> None:
    width = min(console.width, 120)  # wider adds nothing but longer clipped lines
    for line in answer_lines(report, max(width, 40), hint):
        console.print(line, no_wrap=True, overflow="crop", highlight=False, soft_wrap=False)
