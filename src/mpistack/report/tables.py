"""Printing rows: a rich table on a terminal, aligned plain text when piped, CSV or JSON on request."""

from __future__ import annotations

import csv
import json
import re
import sys
from typing import IO, Collection, Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text


def cell_text(value) -> str:
    """A value as a table cell shows it: nothing for None, floats to two decimals."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def print_table(rows: Sequence[dict], columns: Sequence[str], title: str | None = None,
                stream: IO[str] | None = None, fold: Collection[str] | None = None, width: int | None = None) -> None:
    """`fold`: the text columns that may fold onto more lines (default: all); numbers and the other columns are
    never wrapped. `width`: the terminal's width unless given."""
    stream = stream or sys.stdout
    if stream.isatty():
        # Text, not str: stored values (messages, commands) may hold brackets that rich would read as markup.
        # Light rules and shared padding keep nine columns readable in 80 characters; rich narrows the widest
        # columns first. Long values fold onto more lines (nothing is lost); headers shorten with an ellipsis.
        # (the title goes above the table on a line of its own: rich would wrap it to a narrow table's width)
        table = Table(header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
        for column in columns:
            numeric = bool(rows) and isinstance(rows[0].get(column), (int, float))
            whole = numeric or (fold is not None and column not in fold)
            widest = max((len(cell_text(row.get(column))) for row in rows), default=0) if whole else None
            table.add_column(Text(column, overflow="ellipsis"), justify="right" if numeric else "left", no_wrap=whole,
                             min_width=widest)
        for row in rows:
            table.add_row(*(Text(cell_text(row.get(column)), overflow="fold") for column in columns))
        console = Console(file=stream, width=width)
        if title:
            console.print(Text(title, style="italic"), soft_wrap=True)
        console.print(table)
        return
    cells = [list(columns)] + [[cell_text(row.get(column)) for column in columns] for row in rows]
    widths = [max(len(line[index]) for line in cells) for index in range(len(columns))]
    if title:
        stream.write(f"# {title}\n")
    for line in cells:
        stream.write("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() + "\n")


def print_csv(rows: Sequence[dict], columns: Sequence[str], stream: IO[str] | None = None) -> None:
    writer, quoted = (csv.DictWriter(stream or sys.stdout, fieldnames=list(columns), extrasaction="ignore",
                                     lineterminator="\n", quoting=quoting) for quoting in (csv.QUOTE_MINIMAL, csv.QUOTE_ALL))
    writer.writeheader()
    for row in rows:
        cells = {column: _csv_safe(row.get(column)) for column in columns}
        # the csv module quotes a CR only where CR ends lines: a row that holds one is quoted whole
        (quoted if any(isinstance(value, str) and "\r" in value for value in cells.values()) else writer).writerow(cells)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def _csv_safe(value):
    """A text cell that a spreadsheet would run as a formula gets a leading ' (OWASP, "CSV Injection",
    https://owasp.org/www-community/attacks/CSV_Injection); numbers, even negative ones, stay as they are."""
    if (isinstance(value, str) and value.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value)
            and value != "-"):  # (a lone dash, the usual "none", is no formula)
        return "'" + value
    return value


def print_json(rows: Sequence[dict], stream: IO[str] | None = None) -> None:
    json.dump(list(rows), stream or sys.stdout, indent=1, default=str)
    (stream or sys.stdout).write("\n")
