"""The listing verbs' output (results, runs, campaigns): which columns a table shows at the terminal's width,
`--columns a,b,c` and `--wide`, the count line, and the same columns as CSV.

On a terminal a table shows the columns that matter most, in the order of the listing, as many as fit: numbers,
ids and names are never wrapped or cut, free text (messages) folds onto more lines. A column with the same value on
every row is said once in the title instead. Piped, every column is printed (no width to respect) unless COLUMNS
asks for a width (`COLUMNS=80 mpistack runs | less`): then the columns are chosen as on a terminal that wide, none
folded. CSV has every column, unless `--columns` names them; JSON has every field."""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import textwrap
from dataclasses import dataclass
from typing import IO, Annotated, Optional, Sequence

import typer

from ..report.tables import cell_text, print_csv, print_json, print_table
from .common import OutputFormat, fail

ColumnsOption = Annotated[Optional[str], typer.Option(
    "--columns", "-c", metavar="A,B,C", help="Exactly these columns, in this order (table and CSV); an unknown name "
                                             "lists the known ones.")]
WideOption = Annotated[bool, typer.Option(
    "--wide", help="Every column, however wide the table gets (a terminal table otherwise shows what fits).")]

GAP = 2  # rich's SIMPLE_HEAD table with collapsed padding: two characters per column besides its text
FOLDED_WIDTH = 20  # the room a folding text column is given when the columns are fitted to the terminal
SHORT_HEADERS = {"benchmark": "bench", "campaign": "camp", "approach": "appr", "placement": "place",
                 "launcher": "launch", "validation": "valid", "iterations": "iters"}


@dataclass(frozen=True)
class Layout:
    """How a verb's rows are listed. `priority`: the columns a terminal table shows, most important first (the
    last ones are left out when the terminal is narrow); `context`: columns said once in the title when every row
    has the same value; `fold`: free text that may fold onto more lines."""
    noun: str
    priority: tuple[str, ...]
    context: frozenset[str] = frozenset()
    fold: frozenset[str] = frozenset()
    tags: frozenset[str] = frozenset()  # columns of the lowest priority, piped or not

    def with_tags(self, tags: Sequence[str]) -> "Layout":
        """Tags as columns of the lowest priority, said once when every row has the same value."""
        return dataclasses.replace(self, priority=(*self.priority, *tags), context=self.context | set(tags),
                                   tags=frozenset(tags))


@dataclass
class Choice:
    columns: list[str]
    same: dict[str, str]  # context columns left out because every row has this value
    hidden: list[str]     # columns left out for width


def requested_columns(text: str | None, known: Sequence[str]) -> list[str] | None:
    """The `--columns` list, or None when not given; an unknown name ends the command, listing the known ones."""
    if text is None:
        return None
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        fail(f"--columns {text!r}: {'no such column ' + ', '.join(map(repr, unknown)) if unknown else 'no column named'}"
             f"; known columns: {', '.join(known)}")
    return names


def natural_width(rows: Sequence[dict], column: str, header: str | None = None) -> int:
    return max([len(header or column), *(len(cell_text(row.get(column))) for row in rows)])


def choose(layout: Layout, rows: Sequence[dict], columns: Sequence[str], width: int) -> Choice:
    """The columns of a terminal table `width` characters wide: of `columns` (in their order), the non-empty ones
    of the layout's priority list, less the context ones every row agrees on, less those of lowest priority that do
    not fit."""
    present = [column for column in columns if any(row.get(column) not in (None, "") for row in rows)]
    same = {}
    if len(rows) > 1:
        for column in present:
            values = {cell_text(row.get(column)) for row in rows}
            if column in layout.context and len(values) == 1:
                same[column] = values.pop()
    wanted = [column for column in layout.priority if column in present and column not in same]
    hidden = [column for column in present if column not in wanted and column not in same]

    def room(chosen: list[str]) -> int:
        return sum(min(natural_width(rows, column, SHORT_HEADERS.get(column)), FOLDED_WIDTH)
                   if column in layout.fold else natural_width(rows, column, SHORT_HEADERS.get(column))
                   for column in chosen) + GAP * len(chosen)

    while len(wanted) > 1 and room(wanted) > width:
        hidden.insert(0, wanted.pop())
    shown = [column for column in present if column in wanted]
    return Choice(shown, same, [column for column in present if column in hidden])


def _headed(rows: Sequence[dict], columns: list[str], width: int | None) -> tuple[list[dict], list[str]]:
    """Rows and columns with short headers (campaign -> camp) where the full ones would not fit the width."""
    if width is None or sum(natural_width(rows, column) + GAP for column in columns) <= width:
        return list(rows), columns
    headers = [SHORT_HEADERS.get(column, column) if natural_width(rows, column, "") < len(column) else column
               for column in columns]  # (a header no wider than its values costs nothing)
    return [{header: row.get(column) for column, header in zip(columns, headers)} for row in rows], headers


def _requested_width() -> int | None:
    """The width COLUMNS names, if it names one (a shell sets it for itself; it is in our environment only when
    exported or given on the command line)."""
    try:
        width = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return None
    return width if width > 0 else None


def fitting_width(stream: IO[str]) -> int | None:
    """The width a table printed to `stream` fits: the terminal's, or piped the one COLUMNS names; None for
    piped text without COLUMNS, which has every column."""
    return shutil.get_terminal_size().columns if stream.isatty() else _requested_width()


def _unfolded(layout: Layout) -> Layout:
    """The layout of piped text, which cannot fold: free text takes its whole width, so it is left out first
    when the width is short (after the tags, which always go first)."""
    return dataclasses.replace(layout, fold=frozenset(), priority=tuple(sorted(
        layout.priority, key=lambda column: 2 if column in layout.tags else column in layout.fold)))


def print_listing(layout: Layout, output_format: OutputFormat, records: list[dict], rows: list[dict],
                  columns: Sequence[str], *, columns_option: str | None = None, wide: bool = False,
                  total: int | None = None, stream: IO[str] | None = None, width: int | None = None,
                  title: str | None = None) -> None:
    """A listing verb's output: the stored records whole as JSON; their display rows as CSV or a table.
    `columns`: every column there is, in order; `total`: how many matched in all when the listing was limited;
    `title`: said in place of the count line."""
    stream = stream or sys.stdout
    requested = requested_columns(columns_option, columns)
    if output_format is OutputFormat.json:
        print_json(records, stream)
        return
    if output_format is OutputFormat.csv:
        print_csv(rows, requested or columns, stream)
        return
    count = f"{len(rows):,} {layout.noun}(s)"
    if total is not None and total > len(rows):
        count = f"showing {len(rows):,} of {total:,} {layout.noun}s"
    terminal = stream.isatty()
    mark = "" if terminal else "# "  # piped, every line that is not a row starts with "#", for scripts to skip
    if not rows:  # a header row of nothing would only be wider than the terminal (CSV keeps its header)
        stream.write(f"{mark}{title or count}\n")
        return
    width = width or fitting_width(stream)
    if requested:
        shown, notes = requested, []
    elif wide or width is None:
        shown = [column for column in columns if any(row.get(column) not in (None, "") for row in rows)]
        notes = []
    else:
        choice = choose(layout if terminal else _unfolded(layout), rows, columns, width)
        shown = choice.columns
        notes = ["every row: " + ", ".join(f"{column}\xa0{value}".replace(" ", "\xa0")
                                             for column, value in choice.same.items())
                 ] if choice.same else []
        if choice.hidden:
            notes.append(f"not shown: {', '.join(choice.hidden)} (--wide or --columns)")
    shown = shown or list(columns)
    table_rows, headers = _headed(rows, shown, None if wide else width)
    table_width = width if terminal else None
    if terminal and (wide or requested):  # the user asked for these columns: wider than the terminal if need be
        table_width = max(width, sum(natural_width(table_rows, header) + GAP for header in headers))
    fold = {SHORT_HEADERS.get(column, column) for column in layout.fold} | set(layout.fold)
    print_table(table_rows, headers, title=title or count, stream=stream, fold=fold, width=table_width)
    for note in notes:  # below the table, wrapped at the width between words (a terminal would cut words)
        # (a column and its value are joined by a no-break space until then: a line never parts them)
        stream.write(textwrap.fill(note, width, initial_indent=mark, subsequent_indent=mark, break_long_words=False,
                                   break_on_hyphens=False).replace("\xa0", " ") + "\n")
