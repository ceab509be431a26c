"""Printing rows: a rich table on a terminal, aligned plain text when piped, CSV or JSON on request."""

from __future__ import annotations

import csv
import json
import sys
from typing import IO, Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def print_table(rows: Sequence[dict], columns: Sequence[str], title: str | None = None,
                stream: IO[str] | None = None) -> None:
    stream = stream or sys.stdout
    if stream.isatty():
        # Text, not str: stored values (messages, commands) may hold brackets that rich would read as markup.
        # Light rules and shared padding keep nine columns readable in 80 characters; rich narrows the widest
        # columns first. Text, not str: stored values (messages, commands) may hold brackets that rich would
        # read as markup. Long values fold onto more lines (nothing is lost); headers shorten with an ellipsis.
        table = Table(title=Text(title) if title else None, header_style="bold", box=box.SIMPLE_HEAD,
                      pad_edge=False, collapse_padding=True)
        for column in columns:
            numeric = bool(rows) and isinstance(rows[0].get(column), (int, float))
            table.add_column(Text(column, overflow="ellipsis"), justify="right" if numeric else "left")
        for row in rows:
            table.add_row(*(Text(_cell(row.get(column)), overflow="fold") for column in columns))
        Console(file=stream).print(table)
        return
    cells = [list(columns)] + [[_cell(row.get(column)) for column in columns] for row in rows]
    widths = [max(len(line[index]) for line in cells) for index in range(len(columns))]
    if title:
        stream.write(f"# {title}\n")
    for line in cells:
        stream.write("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() + "\n")


def print_csv(rows: Sequence[dict], columns: Sequence[str], stream: IO[str] | None = None) -> None:
    writer = csv.DictWriter(stream or sys.stdout, fieldnames=list(columns), extrasaction="ignore",
                            lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


def print_json(rows: Sequence[dict], stream: IO[str] | None = None) -> None:
    json.dump(list(rows), stream or sys.stdout, indent=1, default=str)
    (stream or sys.stdout).write("\n")
