"""`mpistack compare A B`: a candidate against a baseline, row by row and size by size."""

from __future__ import annotations

import json
import math
from enum import Enum
from typing import Annotated, Optional

import typer

from .common import DbOption, database, err, fail, out

_WHERE_HELP = ("Narrow side {side} to runs with KEY=VALUE (a run field or a tag, as in `results --where`; also "
               "!=, <, <=, >, >= for numbers). Repeatable: all must hold.")
_VERDICT_STYLE = {"slower": "red", "faster": "green", "inconclusive": "yellow", "at speed": ""}


class CompareFormat(str, Enum):
    table = "table"
    json = "json"


def compare(
    candidate: Annotated[str, typer.Argument(metavar="A", help="The candidate: run:ID, campaign:ID, a campaign "
                                                               "name (its latest campaign), a campaign id, or "
                                                               "ref:NAME (a reference loaded with `ingest "
                                                               "--reference NAME`).")],
    baseline: Annotated[str, typer.Argument(metavar="B", help="The baseline, selected the same way.")],
    where_a: Annotated[Optional[list[str]], typer.Option("--where-a", metavar="KEY=VALUE",
                                                         help=_WHERE_HELP.format(side="A"))] = None,
    where_b: Annotated[Optional[list[str]], typer.Option("--where-b", metavar="KEY=VALUE",
                                                         help=_WHERE_HELP.format(side="B"))] = None,
    match: Annotated[Optional[str], typer.Option("--match", metavar="FIELDS",
                                                 help="Also match rows on these, comma-separated: stack, approach, "
                                                      "variant. Rows always match on benchmark, metric, ranks, "
                                                      "nodes and buffers.")] = None,
    output_format: Annotated[CompareFormat, typer.Option("--format", "-f", help="Output format.")] =
        CompareFormat.table,
    db: DbOption = None,
) -> None:
    """Compare A (candidate) with B (baseline), row by row and size by size.

    Per matched row and message size: the ratio (1.0 parity, below 1.0 a loss), its confidence interval and
    verdict; per row its class. Single published figures are compared descriptively (no test of significance),
    and said to be. Rows without a partner are listed."""
    from ..analysis.compare import CompareError, compare as run_compare, parse_match

    try:
        result = run_compare(database(db, must_exist=True), candidate, baseline, where_a=where_a or [],
                             where_b=where_b or [], match=parse_match(match))
    except CompareError as error:
        fail(str(error))
    if output_format is CompareFormat.json:
        print(json.dumps(result.to_dict(), indent=1))
    else:
        _print(result)
    if not result.rows:
        err.print("nothing compared: no row of A matches a row of B (see the unmatched rows)", highlight=False)
        raise typer.Exit(1)


def _print(result) -> None:
    from rich.markup import escape

    out.print(f"candidate (A): {escape(result.candidate.describe())}", highlight=False)
    out.print(f"baseline  (B): {escape(result.baseline.describe())}", highlight=False)
    out.print(f"matched on:    {', '.join(result.to_dict()['matched_on'])}", highlight=False)
    for row in result.rows:
        _print_row(row)
    if result.rows:
        from ..analysis.matrix import LEGEND

        legend = "; ".join(f"{label} {meaning}" for label, meaning in LEGEND.items())
        out.print(f"\n[dim]classes of A against B: {escape(legend)}[/dim]", highlight=False)
    if result.unmatched:
        out.print(f"\n[bold]not compared ({len(result.unmatched)})[/bold]")
        for entry in result.unmatched:
            out.print(f"  {entry.side}: {escape(_row_title(entry.row.key))}, {escape(_row_who(entry.row))}: "
                      f"{escape(entry.reason)}", highlight=False)


def _print_row(row) -> None:
    from rich.markup import escape
    from rich.table import Table

    from ..analysis.classes import format_size

    out.print(f"\n[bold]{escape(_row_title(row.candidate.key))}[/bold]", highlight=False)
    out.print(f"  A: {escape(_row_who(row.candidate))}\n  B: {escape(_row_who(row.baseline))}", highlight=False)
    out.print(f"  {'* ' if row.descriptive else ''}{escape(row.evidence())}", highlight=False, style="dim")
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    # the interval the verdict was decided on, at its own level (the analysis' deciding level, 90 % by default)
    level = f"{row.sizes[0].confidence:.0%} CI" if row.sizes else "CI"
    for name in ("size", "A", "B", "ratio", level, "verdict"):
        table.add_column(name, justify="left" if name == "verdict" else "right", no_wrap=True)
    for c in row.sizes:
        interval = f"{c.ci_low:.3g}–{c.ci_high:.3g}" if math.isfinite(c.ci_low) else "–"
        style = _VERDICT_STYLE.get(c.verdict.value, "")
        verdict = f"[{style}]{c.verdict.value}[/{style}]" if style else c.verdict.value
        table.add_row(format_size(c.size), _figure(c.median_candidate), _figure(c.median_baseline),
                      f"{c.ratio:.3g}", interval, verdict + ("*" if c.descriptive else ""))
    if row.sizes:
        out.print(table)
    out.print(f"  [bold]{escape(row.row_class.label)}[/bold]  {escape(row.row_class.reason)}", highlight=False)


def _row_title(key) -> str:
    unit = {"latency": "us", "bandwidth": "MB/s", "message_rate": "messages/s"}.get(key.metric, "")
    nodes = f"{key.nodes} node{'s' if key.nodes != 1 else ''}" if key.nodes else "nodes unknown"
    placement = f"{key.ranks} ranks on {nodes}" if key.ranks else "ranks unknown" if not key.nodes else nodes
    return f"{key.benchmark} · {key.metric}{f' ({unit})' if unit else ''} · {placement} · {key.buffers}"


def _row_who(row) -> str:
    """Stack, approach and variant (the scope is the side's selection, printed above)."""
    key = row.key
    variant = f" (variant {key.variant})" if key.variant != "default" else ""
    return f"{key.stack} {key.approach}{variant}, {row.launches} launch{'es' if row.launches != 1 else ''}"


def _figure(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}" if value >= 1 else f"{value:.3g}"
