"""The classes as a rich table on the terminal: one line per row against the system MPI (stack, approach,
variant, benchmark, class, where), readable at 80 columns: long text folds onto more lines, numbers are never cut.
Where the same MPI build was also run natively and says otherwise, the where column adds that class."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..analysis.answers import SAME_STACK, SYSTEM, Answer, control_summary, where_slow
from ..analysis.matrix import placement_text

STYLES = {"Y": "bold green", "(Y)": "bold yellow", "N": "bold red", "?": "bold"}
TITLE = "container against native: Y at speed, (Y) slower, N fails, ? unknown"


def classes_table(answers: list[Answer], title: str | None = None) -> Table:
    system = [a for a in answers if a.baseline == SYSTEM]
    same = {a.key: a for a in answers if a.baseline == SAME_STACK}
    placements = {(a.key.ranks, a.key.nodes, a.key.buffers) for a in system}
    table = Table(title=title, header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1, 0, 0),
                  title_justify="left")
    table.add_column("stack", overflow="fold", max_width=16)
    table.add_column("approach", overflow="fold", max_width=11)
    table.add_column("variant", overflow="fold", max_width=9)
    table.add_column("benchmark", overflow="fold", max_width=14)
    table.add_column("class", no_wrap=True, justify="center")
    table.add_column("where", overflow="fold", ratio=1)  # no min_width: rich crops a column it cannot fit
    for answer_ in system:
        benchmark = answer_.key.benchmark + (f" {placement_text(answer_)}" if len(placements) > 1 else "")
        where = where_slow(answer_)
        other = same.get(answer_.key)
        if other is not None and other.label != answer_.label:
            where += f" [same build natively: {other.label} {where_slow(other)}]"
        table.add_row(answer_.key.stack, answer_.key.approach, answer_.key.variant, benchmark,
                      Text(answer_.label, style=STYLES.get(answer_.label, "")), where)
    return table


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
        console.print(classes_table(answers, title))
