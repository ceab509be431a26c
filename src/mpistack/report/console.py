"""Every row on the terminal (`mpistack report --rows`), readable at 80 columns: grouped by stack, one entry per
approach (+variant) and benchmark with its class against the system MPI and against its own build natively
(``A·B``, as the matrix) and what the class rests on, on two lines at most; the A/A control's lines first."""

from __future__ import annotations

import itertools
import math

from rich.console import Console
from rich.text import Text

from ..analysis.answers import SAME_STACK, SYSTEM, Answer, control_summary, where_slow
from ..analysis.matrix import Column, column_order, placement_text
from .matrix_text import clip, fold

STYLES = {"Y": "bold green", "(Y)": "bold yellow", "N": "bold red", "?": "bold"}
TITLE = ("per row, against the system MPI, then its build natively (A·B): Y at speed, (Y) slower, N fails, "
         "? not settled")


#: the width of a row's name (approach+variant, benchmark) and of its classes ("(Y)·(Y)") in a listing line
NAME_WIDTH, CLASS_WIDTH = 26, 8


def _summary(answer_: Answer) -> str:
    """What a row's class rests on, in a few words: where it is slower (with sizes, estimate and worst size), the
    regimes' estimates and intervals of an open one, else the first clause of its reason."""
    if answer_.row_class.slow:
        return where_slow(answer_)
    if answer_.label == "Y":
        return "at native speed"
    regimes = [f"{name} {c.ratio:.2f}× [{c.ci_low:.2f}–{c.ci_high:.2f}]" for name, c in answer_.regimes.items()
               if math.isfinite(c.ci_low) and math.isfinite(c.ci_high)]
    if answer_.label == "?" and regimes:
        return ", ".join(regimes)
    return answer_.row_class.reason.splitlines()[0] if answer_.row_class.reason else ""


def classes_lines(answers: list[Answer], width: int = 80) -> list[Text]:
    """Every compared row, grouped by stack (a heading each), one entry per approach (+variant) and benchmark: its
    class against the system MPI and, where its build was also run natively, against that (``A·B``, as the
    matrix), and what the class rests on, folded within ``width`` (two lines at most: the per-size table is
    --row's)."""
    system = [a for a in answers if a.baseline == SYSTEM and not a.control]
    same = {a.key: a for a in answers if a.baseline == SAME_STACK}
    placements = {(a.key.ranks, a.key.nodes, a.key.buffers) for a in system}
    lines: list[Text] = []
    scoped = len({a.key.scope for a in system}) > 1
    ordered = sorted(system, key=lambda a: (a.key.scope, a.key.stack, column_order(Column(a.key.approach,
                                                                                         a.key.variant)), a.key))
    for (scope, stack), group in itertools.groupby(ordered, key=lambda a: (a.key.scope, a.key.stack)):
        lines.append(Text(stack + (f" ({scope})" if scoped else ""), style="bold"))
        for answer_ in group:
            name = f"{Column(answer_.key.approach, answer_.key.variant).label} {answer_.key.benchmark}" + (
                f" {placement_text(answer_)}" if len(placements) > 1 else "")
            other = same.get(answer_.key) or (answer_ if answer_.same_build_as_system else None)
            classes = answer_.label + (f"·{other.label}" if other is not None else "")
            text = _summary(answer_)
            if other is not None and other is not answer_ and other.label in ("(Y)", "N") and other.label != answer_.label:
                text += f"; against its build natively: {_summary(other)}"
            head = f"  {name:<{NAME_WIDTH - 2}} "
            if len(head) > NAME_WIDTH + 1:
                lines.append(Text(clip(head.rstrip(), width)))
                head = " " * (NAME_WIDTH + 1)
            indent = " " * (NAME_WIDTH + 1 + CLASS_WIDTH + 1)
            wrapped = fold(f"{head}{classes:<{CLASS_WIDTH}} {text}", width, 2, indent)
            first = Text(wrapped[0][:len(head)])
            first.append(classes, style=STYLES.get(answer_.label, ""))
            first.append(wrapped[0][len(head) + len(classes):])
            lines += [first] + [Text(line) for line in wrapped[1:]]
    return lines


#: Beyond this many rows the terminal gets the count per class, and the report the rows.
MAX_ROWS = 300


def print_classes(answers: list[Answer], console: Console, title: str | None = TITLE) -> None:
    for line in control_summary(answers):  # the machine's own A/A result comes first: it says what the rest is worth
        console.print(line, highlight=False, style="" if ": Y" in line else "yellow")
    system = [a for a in answers if a.baseline == SYSTEM]
    if len(system) > MAX_ROWS:
        counts = ", ".join(f"{label} {sum(a.label == label for a in system)}" for label in ("Y", "(Y)", "N", "?"))
        console.print(f"{len(system)} rows against the system MPI: {counts}; every row is in the report",
                      highlight=False)
    elif system:
        if title:
            console.print(title, style="bold", highlight=False)
        for line in classes_lines(answers, min(console.width, 120)):
            console.print(line, no_wrap=True, overflow="crop", highlight=False, soft_wrap=False)
