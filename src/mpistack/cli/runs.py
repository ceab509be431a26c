"""`mpistack runs`: stored runs, one line each, failed and skipped ones included (they have no results)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .common import DbOption, FormatOption, OutputFormat, database, print_listing, where_filters

# Columns of the table and CSV; JSON has every field, the whole message included.
RUN_COLUMNS = ("run", "campaign", "status", "stack", "approach", "variant", "benchmark", "placement", "message")


def run_lines(rows: list[dict]) -> list[dict]:
    """The rows as the table shows them: the variant tag, the placement (n<ranks>N<nodes>), the message's first
    line."""
    lines = []
    for row in rows:
        message = (row.get("message") or "").strip().splitlines()
        placement = f"n{row['ranks']}N{row['nodes']}" if row.get("ranks") is not None else ""
        lines.append({**row, "variant": row["tags"].get("variant", ""), "placement": placement,
                      "message": message[0] if message else ""})
    return lines


def runs(
    where: Annotated[Optional[list[str]], typer.Option("--where", "-w", metavar="KEY=VALUE",
                                                       help="Filter on a run field (status, stack, approach, "
                                                            "benchmark, ranks, nodes, campaign, run, ...) or a tag. "
                                                            "Also !=, <, <=, >, >= for numbers. Repeatable: all "
                                                            "must hold.")] = None,
    output_format: FormatOption = OutputFormat.table,
    limit: Annotated[Optional[int], typer.Option(help="At most this many runs.")] = None,
    db: DbOption = None,
) -> None:
    """List stored runs, one per line, whatever their status (`--where status=failed` finds the failed ones)."""
    from ..store.query import query_runs

    store = database(db, must_exist=True)
    rows = query_runs(store, where_filters(where, store), limit)
    print_listing(output_format, [{**row, "variant": row["tags"].get("variant")} for row in rows], run_lines(rows),
                  RUN_COLUMNS, "run")
