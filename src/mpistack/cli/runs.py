"""`mpistack runs`: stored runs, one line each, failed and skipped ones included (they have no results)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..spec.terminal import printable, printable_values
from .common import DbOption, FormatOption, OutputFormat, check_where_keys, reader, tag_columns, where_filters
from .listing import ColumnsOption, Layout, WideOption, print_listing
from .results import WHERE_HELP

# Columns of the table and CSV, before a column per tag; JSON has every field, the whole message included.
RUN_COLUMNS = ("run", "campaign", "status", "stack", "approach", "variant", "benchmark", "placement", "message",
               "transport")
# On a terminal: the run, what became of it and why (the message folds), then what it was.
RUNS_LAYOUT = Layout(
    noun="run",
    priority=("run", "status", "stack", "approach", "message", "benchmark", "variant", "placement", "campaign"),
    context=frozenset({"campaign", "status", "stack", "approach", "variant", "benchmark", "placement"}),
    fold=frozenset({"message"}),
)


def run_lines(rows: list[dict]) -> list[dict]:
    """The rows as the table shows them: the variant tag, the placement (n<ranks>N<nodes>), the message's first
    line, what the run's MPI library said it used."""
    from ..parsers.transport import describe_transport

    lines = []
    for row in rows:
        message = (row.get("message") or "").strip().splitlines()
        placement = f"n{row['ranks']}N{row['nodes']}" if row.get("ranks") is not None else ""
        lines.append({**row["tags"], **row, "variant": row["tags"].get("variant", ""), "placement": placement,
                      "message": message[0] if message else "",
                      "transport": describe_transport(row.get("transport"))})
    return lines


def runs(
    where: Annotated[Optional[list[str]], typer.Option(
        "--where", "-w", metavar="KEY=VALUE",
        help=WHERE_HELP.format(fields="a run field (status, stack, approach, benchmark, ranks, nodes, campaign, "
                                      "run, ...)"))] = None,
    output_format: FormatOption = OutputFormat.table,
    limit: Annotated[Optional[int], typer.Option(min=1, help="At most this many runs (the count line says how many "
                                                            "matched in all).")] = None,
    columns: ColumnsOption = None,
    wide: WideOption = False,
    db: DbOption = None,
) -> None:
    """List stored runs, one per line, whatever their status (`--where status=failed` finds the failed ones)."""
    from ..store.query import RUN_FIELDS, count_matching, query_runs

    filters = where_filters(where)
    store = reader(db)
    check_where_keys(store, filters, runs_only=True)
    rows = query_runs(store, filters, limit)
    total = count_matching(store, filters, runs=True) if limit and len(rows) == limit else None
    tags = tag_columns(store, rows, columns, (*RUN_COLUMNS, *RUN_FIELDS))
    # a table or CSV shows stored text with its terminal controls written out (JSON escapes them itself)
    tags, lines = [printable(tag) for tag in tags], printable_values(run_lines(rows))
    print_listing(RUNS_LAYOUT.with_tags(tags), output_format,
                  [{**row, "variant": row["tags"].get("variant")} for row in rows], lines,
                  (*RUN_COLUMNS, *tags), columns_option=columns, wide=wide, total=total)
