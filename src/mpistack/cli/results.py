"""`mpistack results`: stored results, filtered, as a table, CSV or JSON."""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Annotated, Optional

import typer

from ..spec.terminal import printable, printable_values
from .common import DbOption, FormatOption, OutputFormat, check_where_keys, reader, tag_columns, where_filters
from .listing import ColumnsOption, Layout, WideOption, print_listing, fitting_width

WHERE_HELP = ("Filter on {fields} or a tag: KEY=VALUE, KEY!=VALUE, and for numbers also <, <=, >, >= (quote those "
              "from the shell: -w 'size>=1024'). Repeatable: all must hold.")

# A terminal table shows these first (what was measured, then how); the unit tells the metric apart. The rest of
# the fields, the statistics and the tags are there with --wide, --columns, CSV and JSON.
RESULTS_LAYOUT = Layout(
    noun="result",
    priority=("run", "benchmark", "size", "value", "unit", "stack", "approach", "variant", "metric", "status",
              "ranks", "nodes", "launcher", "buffers", "device", "validation", "suite"),
    context=frozenset({"run", "benchmark", "unit", "metric", "stack", "approach", "variant", "status", "launcher",
                       "ranks", "nodes", "buffers", "device", "suite", "validation"}),
)


def results(
    where: Annotated[Optional[list[str]], typer.Option(
        "--where", "-w", metavar="KEY=VALUE",
        help=WHERE_HELP.format(fields="a result field (benchmark, size, metric, value, unit), a run field (status, "
                                      "stack, approach, ranks, nodes, buffers, device)"))] = None,
    output_format: FormatOption = OutputFormat.table,
    stats: Annotated[bool, typer.Option("--stats", help="Add statistics columns (min, max, median, ...).")] = False,
    limit: Annotated[Optional[int], typer.Option(min=1, help="At most this many results (the count line says how "
                                                            "many matched in all).")] = None,
    columns: ColumnsOption = None,
    wide: WideOption = False,
    db: DbOption = None,
) -> None:
    """List stored results, one per benchmark, message size and metric.

    Tables and CSV have a column per field and per tag; JSON has every stored field (the library's version string
    and its transport too), with the tags under "tags"."""
    from ..store.query import OUTPUT_FIELDS, STAT_FIELDS, count_matching, query_results

    filters = where_filters(where)
    store = reader(db)
    check_where_keys(store, filters)
    rows = query_results(store, filters, limit)
    total = count_matching(store, filters) if limit and len(rows) == limit else None
    tag_keys = [printable(key) for key in tag_columns(store, rows, columns, OUTPUT_FIELDS)]
    every = [*OUTPUT_FIELDS, *(STAT_FIELDS if stats or columns else ()), "transport", *tag_keys]
    layout = RESULTS_LAYOUT.with_tags(tag_keys)
    if stats:  # asked for: shown after the value
        layout = replace(layout, priority=(*layout.priority[:5], *STAT_FIELDS, *layout.priority[5:]))
    every_column = wide or fitting_width(sys.stdout) is None  # (piped without COLUMNS: listing.py)
    # JSON keeps the tags in "tags" alone; tables and CSV have a column per tag
    records = [{key: value for key, value in row.items() if key in OUTPUT_FIELDS or key not in row["tags"]}
               for row in rows] if output_format is OutputFormat.json else rows
    # a table or CSV shows stored text with its terminal controls written out (JSON escapes them itself)
    lines = transport_lines(rows, output_format, columns, every_column)
    print_listing(layout, output_format, records,
                  lines if output_format is OutputFormat.json else printable_values(lines),
                  every, columns_option=columns, wide=wide, total=total)


def transport_lines(rows: list[dict], output_format: OutputFormat, columns: str | None, wide: bool) -> list[dict]:
    """The rows with what their MPI library said it used as one line of text, where a table or CSV shows it
    (JSON keeps the record whole; a terminal table fitted to its width does not show it, so the rows are not
    copied). `wide`: the table has every column (--wide, or piped)."""
    if output_format is OutputFormat.json or not (wide or output_format is OutputFormat.csv
                                                  or "transport" in (columns or "")):
        return rows
    from ..parsers.transport import describe_transport

    return [{**row, "transport": describe_transport(row.get("transport"))} for row in rows]
