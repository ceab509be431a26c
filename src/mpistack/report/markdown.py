"""report.md: the answer first (the A/A control, the machine bounds, the stack x approach matrix against both
baselines with the cause of each slower or failing cell, the cases not run, the rows only characterised), then per
benchmark the tables of figures (a row per size, a column per approach), the classes, and the failed and timed-out
runs. Rendered from templates/report.md."""

from __future__ import annotations

from functools import lru_cache

from jinja2 import Environment, PackageLoader, StrictUndefined

from .. import __version__
from ..analysis.answers import where_slow
from ..analysis.classes import format_size
from ..analysis.matrix import LEGEND, placement_text
from ..parsers.transport import describe_transport
from ..spec.benchmarks import metric_of
from .bounds import bounds_view, number
from .data import Report, format_value
from .matrix_text import bounds_line, matrix_cells


def md(text) -> str:
    """Text from a store (tags, messages, names) safe in a Markdown table cell: no pipes, no line breaks, and
    nothing a Markdown viewer would act on: raw HTML (`<`, `&` as entities), links and images (`[`, `]`),
    code spans (a backquote)."""
    flat = " ".join(str(text).split())
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for character in "\\`[]|":
        flat = flat.replace(character, "\\" + character)
    return flat


def template_context(report: Report) -> dict:
    """What both the Markdown and the HTML templates are given."""
    return {
        "report": report, "version": __version__, "legend": LEGEND, "where": where_slow,
        "placement": placement_text, "default_metric": lambda benchmark: metric_of(benchmark).name,
        "scoped": len({group.key.scope for group in report.groups} | {row.scope for row in report.matrix.rows}) > 1,
        "floor": report.settings.floor.describe(higher_is_better=False),
        "small_below": format_size(report.settings.ranges.small_below),
        "large_from": format_size(report.settings.ranges.large_from),
        "transport": describe_transport,
        "machine_bounds": bounds_view(report),
        "answer_matrix": _AnswerMatrix(*matrix_cells(report)),
        "bounds_line": bounds_line(report),
        "bound_column": lambda key: bound_column(report, key),
        "size_text": format_size, "value": format_value,
        "cell_notes": cell_notes(report),
    }


def cell_notes(report: Report) -> list[tuple[str, list[str]]]:
    """Per matrix cell, in order: its classes and why (Markdown), and the doctor's findings under it."""
    notes = []
    for row in report.matrix.rows:
        for column in report.matrix.columns:
            cell = report.matrix.cell(row, column)
            if cell is None:
                continue
            same = report.same_stack_matrix.cells.get((row.key, column))
            head = f"**{md(row.stack)} × {md(column.label)}** `{cell.label}`: {md(cell.reason)}"
            if same is not None and same.label != cell.label:
                head += f"; against the same build natively `{same.label}`: {md(same.reason)}"
            unexplained = report.unexplained(row, column)
            subs = [f"doctor: no known cause of its loss (checked: {md(report.checked(row, column))}; `mpistack "
                    "doctor --campaign` lists each rule)"] if unexplained else []
            subs += [f"doctor ({f['verdict']}{', ' + ', '.join(f.get('benchmarks') or []) if f.get('benchmarks') else ''}"
                    f"): {md(f['title'])}" + (f"; **fix**: {md(f['fix'])}" if f.get("fix") else "")
                    + f" — rule `{f['rule']}`; {md(f['source'])}" for f in report.findings_of(row, column)]
            notes.append((head, subs))
    return notes


class _AnswerMatrix:
    """The matrix as the answer shows it: rows (the system MPI's stacks first), columns, cells (``A·B``)."""

    def __init__(self, rows, columns, cells):
        self.rows, self.columns, self.cells = rows, columns, cells


def bound_column(report: Report, key):
    """(header, size -> text) of the machine bound beside a characterised row's figures: memcpy in cache for
    bw and bibw, TCP loopback for latency; None without bounds or for other benchmarks."""
    machine = report.bounds
    if machine is None:
        return None
    if key.benchmark in ("bw", "bibw") and key.metric in ("bandwidth", "bi-bandwidth"):
        copies = 2 if key.benchmark == "bibw" else 1
        return ("memcpy bound (MB/s)", lambda size: number(machine.memcpy_mbs(size) * copies)
                if size and machine.memcpy_mbs(size) is not None else "—")
    if key.benchmark == "latency" and key.metric == "latency":
        return ("TCP loopback (us)", lambda size: number(machine.tcp_latency_us(size)) if size else "—")
    return None


@lru_cache(maxsize=1)
def _environment() -> Environment:
    environment = Environment(loader=PackageLoader("mpistack.report", "templates"), autoescape=False,
                              undefined=StrictUndefined, keep_trailing_newline=True)
    environment.filters["md"] = md
    environment.filters["first_line"] = lambda text: next(
        (line.strip() for line in str(text).splitlines() if line.strip()), "")
    # "Open MPI v4.1.4" of Open MPI's 120-character ident line (the whole line is in the provenance)
    environment.filters["first_clause"] = lambda text: str(text).split(",", 1)[0]
    return environment


def render_markdown(report: Report) -> str:
    return _environment().get_template("report.md").render(**template_context(report))
