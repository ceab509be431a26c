"""`mpistack results`: stored results, filtered, as a table, CSV or JSON."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .common import DbOption, FormatOption, OutputFormat, database, where_filters



def results(
    where: Annotated[Optional[list[str]], typer.Option("--where", "-w", metavar="KEY=VALUE",
                                                       help="Filter on a result field (benchmark, size, metric, "
                                                            "unit), a run field (status, stack, approach, ranks, "
                                                            "nodes, buffers, device) or a tag. Also !=, <, <=, >, "
                                                            ">= for numbers. Repeatable: all must hold.")] = None,
    output_format: FormatOption = OutputFormat.table,
    stats: Annotated[bool, typer.Option("--stats", help="Add statistics columns (min, max, median, ...).")] = False,
    limit: Annotated[Optional[int], typer.Option(help="At most this many results.")] = None,
    db: DbOption = None,
) -> None:
    """List stored results, one per benchmark, message size and metric."""
    from ..report.tables import print_csv, print_json, print_table
    from ..store.query import OUTPUT_FIELDS, STAT_FIELDS, query_results

    store = database(db)
    filters = where_filters(where, store)
    rows = query_results(store, filters, limit)
    if output_format is OutputFormat.json:
        print_json(rows)
        return
    tag_keys = sorted({key for row in rows for key in row["tags"] if key not in OUTPUT_FIELDS})
    columns = [*OUTPUT_FIELDS, *(STAT_FIELDS if stats else ()), *tag_keys]
    if output_format is OutputFormat.csv:
        print_csv(rows, columns)
        return
    shown = [column for column in columns if any(row.get(column) not in (None, "") for row in rows)]
    print_table(rows, shown or columns, title=f"{len(rows)} result(s)")
