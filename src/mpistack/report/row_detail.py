"""One row of a report in full, as `mpistack report CAMPAIGN --row STACK/APPROACH/BENCHMARK` prints it: per message
size the candidate's and the baseline's medians, their ratio, its interval and the verdict, against the system
MPI and against the same build natively; a row without a baseline gets its medians with intervals instead."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..analysis.answers import SAME_STACK, SYSTEM, Answer, compared_with, format_level, where_slow
from ..analysis.characterise import Characterisation, characterise
from ..analysis.classes import format_size
from ..analysis.evidence import RowKey
from ..analysis.matrix import Column, placement_text
from ..spec.campaign import DEFAULT_VARIANT
from .data import Report, format_ratio, format_value
from .matrix_text import STYLES

UNITS = {"latency": "us", "bandwidth": "MB/s", "bi-bandwidth": "MB/s", "message_rate": "messages/s"}
VERDICT_STYLES = {"slower": "yellow", "faster": "green", "at speed": "green", "inconclusive": ""}


class RowNotFound(ValueError):
    """A --row that names no row of the report; the message lists what it could have named."""


@dataclass(frozen=True)
class RowChoice:
    stack: str
    approach: str
    variant: str | None  # None: any variant (the default one when several)
    benchmark: str

    @classmethod
    def parse(cls, text: str) -> "RowChoice":
        """``STACK/APPROACH/BENCHMARK``, ``STACK/APPROACH+VARIANT/BENCHMARK`` or
        ``STACK/APPROACH/VARIANT/BENCHMARK``."""
        parts = [part.strip() for part in text.split("/")]
        if len(parts) not in (3, 4) or not all(parts):
            raise RowNotFound(f"--row {text!r}: expected STACK/APPROACH/BENCHMARK (a variant as APPROACH+VARIANT, "
                              "e.g. pip-mpich/container+tcp/latency)")
        if len(parts) == 4:
            return cls(parts[0], parts[1], parts[2], parts[3])
        approach, _, variant = parts[1].partition("+")
        return cls(parts[0], approach, variant or None, parts[2])


def row_label(key: RowKey) -> str:
    return f"{key.stack}/{Column(key.approach, key.variant).label}/{key.benchmark}"


def chosen_keys(report: Report, choice: RowChoice) -> list[RowKey]:
    """The report's rows that ``choice`` names (one per placement and metric); RowNotFound with the known rows
    when none."""
    return chosen_row_keys(report.rows, choice)


def chosen_row_keys(rows, choice: RowChoice) -> list[RowKey]:
    """``chosen_keys`` among rows read (a dict by RowKey), before they are answered."""
    keys = [key for key in sorted(rows) if key.stack == choice.stack and key.approach == choice.approach
            and key.benchmark == choice.benchmark]
    variants = {key.variant for key in keys}
    wanted = choice.variant if choice.variant is not None else (
        DEFAULT_VARIANT if DEFAULT_VARIANT in variants or not variants else None)
    if wanted is None and len(variants) == 1:
        wanted = next(iter(variants))
    keys = [key for key in keys if key.variant == wanted]
    if not keys:
        known = sorted({row_label(key) for key in rows})
        near = [label for label in known if label.startswith(f"{choice.stack}/")] or known
        raise RowNotFound(f"no row {choice.stack}/{choice.approach}"
                          + (f"+{choice.variant}" if choice.variant else "") + f"/{choice.benchmark} in this report; "
                          f"rows: {', '.join(near[:12])}" + (f" and {len(near) - 12} more" if len(near) > 12 else ""))
    return keys


def _interval(low: float, high: float) -> str:
    return f"{low:.2f}–{high:.2f}" if math.isfinite(low) and math.isfinite(high) else "—"


def comparison_table(answer_: Answer) -> Table:
    first = next(iter(answer_.sizes), None)
    level = format_level(first.confidence) if first is not None else ""
    table = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False, padding=(0, 1, 0, 0), show_edge=False)
    for name, justify in (("size", "left"), ("median", "right"), ("baseline", "right"), ("ratio", "right"),
                          (f"{level} interval".strip(), "right"), ("verdict", "left")):
        table.add_column(name, justify=justify, no_wrap=True)
    for c in answer_.sizes:
        table.add_row(format_size(c.size) if c.size is not None else "—", format_value(c.median_candidate),
                      format_value(c.median_baseline), format_ratio(c.ratio), _interval(c.ci_low, c.ci_high),
                      Text(c.verdict.value, style=VERDICT_STYLES.get(c.verdict.value, "")))
    return table


def _baseline_title(answer_: Answer) -> str:
    what = "the system MPI" if answer_.baseline == SYSTEM else "the same build natively"
    if answer_.baseline_row is not None:
        base = answer_.baseline_row
        what += f" ({base.stack} {Column(base.approach, base.variant).label}, {answer_.baseline_launches} launches)"
    return f"against {what}: "


def print_row(report: Report, choice: RowChoice, console: Console) -> None:
    """The per-size tables of the rows ``choice`` names, against both baselines (RowNotFound when none)."""
    keys = chosen_keys(report, choice)
    console.print(report.title, style="bold", highlight=False)
    for key in keys:
        row = report.rows[key]
        unit = UNITS.get(key.metric, "")
        better = "higher" if key.higher_is_better else "lower"
        console.print(Text(f"{row_label(key)} ({key.metric}, {key.placement} {key.buffers}): "
                           f"{row.launches} launch(es), {unit or 'as reported'}, {better} is better",
                           style="bold"),
                      highlight=False)
        answers = [a for a in report.answers if a.key == key]
        for answer_ in sorted(answers, key=lambda a: a.baseline != SYSTEM):
            title = Text(_baseline_title(answer_))
            title.append(answer_.label, style=STYLES.get(answer_.label, ""))
            detail = where_slow(answer_)
            title.append(f" {detail}" if detail else "")
            if answer_.baseline == SYSTEM and answer_.same_build_as_system:
                title.append(" (the same build as the system MPI)")
            console.print(title, highlight=False)
            if answer_.sizes:
                console.print(comparison_table(answer_))
        if not any(a.baseline == SAME_STACK or a.same_build_as_system for a in answers) and key.approach != "native":
            console.print("against the same build natively: no such row in this report", highlight=False)
        if not any(a.sizes for a in answers) and row.figures:
            served = compared_with(report.rows, key)
            item = characterise(row)
            console.print((f"the baseline of {served} compared row(s); " if served else "no comparison; ")
                          + f"medians over launches with their {format_level(item.confidence)} interval"
                          + (" (fewer than 6 launches: the range, with its coverage)" if item.short_of_level else ""),
                          highlight=False)
            console.print(characterisation_table(item))
        console.print(f"(placement {placement_text(answers[0]) if answers else key.placement}; "
                      "ratio: 1.00× is parity, below 1 slower)", style="dim", highlight=False)


def characterisation_table(item: Characterisation) -> Table:
    table = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False, padding=(0, 1, 0, 0), show_edge=False)
    for name, justify in (("size", "left"), ("launches", "right"), ("median", "right"), ("interval", "right"),
                          ("coverage", "right")):
        table.add_column(name, justify=justify, no_wrap=True)
    for f in item.sizes:
        table.add_row(format_size(f.size) if f.size is not None else "—", str(f.launches), format_value(f.median),
                      f"{format_value(f.low)}–{format_value(f.high)}", f"{f.coverage:.0%}")
    return table
