"""`mpistack ingest` and `mpistack references`: benchmark output and published results into the store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .common import DbOption, FormatOption, OutputFormat, database, err, fail
from .listing import ColumnsOption, Layout, WideOption, print_listing

# On a terminal: the name to load it by first; the title and its source fold.
REFERENCES_LAYOUT = Layout(noun="reference", priority=("name", "title", "source", "files"),
                           fold=frozenset({"title", "source"}))


def _print_report(report, what: str) -> None:
    """Every value is escaped: file names and messages may hold rich markup such as '[/x]'."""
    from rich.markup import escape

    for message in report.errors:
        err.print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)
    for message in report.skipped:
        err.print(escape(message), highlight=False, soft_wrap=True)
    for message in report.warnings():
        err.print(f"[yellow]warning:[/yellow] {escape(message)}", highlight=False, soft_wrap=True)
    from ..ingest.files import run_ids

    stored = f" ({run_ids(report.run_ids)})" if report.run_ids else ""
    note = f", {report.incomplete} incomplete" if report.incomplete else ""
    if report.replaced:
        note += f", replacing {report.replaced} earlier run(s)"
    if report.skipped:
        note += f"; {len(report.skipped)} file(s) already stored"
    err.print(escape(f"{what}: {report.files} file(s), {report.runs} run(s){stored}, {report.results} result(s) "
                     f"stored{note}" + (f"; {len(report.errors)} file(s) rejected" if report.errors else "")),
              highlight=False, soft_wrap=True)


def ingest(
    files: Annotated[Optional[list[Path]], typer.Argument(help="OSU text output, mpistack-bench JSON or "
                                                               "published Markdown tables.")] = None,
    tag: Annotated[Optional[list[str]], typer.Option("--tag", "-t", metavar="KEY=VALUE",
                                                     help="Tag every run (system, nodes, approach, stack, "
                                                          "buffers, ...). Repeatable.")] = None,
    reference: Annotated[Optional[list[str]], typer.Option("--reference", "-r", metavar="NAME",
                                                           help="Load a published reference shipped with "
                                                                "mpistack ('all' for every one). Repeatable.")] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Store a file or reference again whose content is "
                                                            "stored already, in place of its earlier runs.")] = False,
    db: DbOption = None,
) -> None:
    """Store the runs and results found in benchmark output files.

    Each file is parsed by content (OSU 5.x-7.x text, mpistack-bench JSON, Markdown tables) and written
    whole or not at all; a file that cannot be read is reported with its line and the rest go on. A file
    whose content (sha256) is stored already is skipped unless --replace is given; so is a reference.
    """
    from rich.markup import escape

    from ..ingest import files as ingest_files
    from ..ingest import published

    if not files and not reference:
        fail("give FILE... to ingest, or --reference NAME (see `mpistack references`)")
    try:
        tags = ingest_files.parse_tags(tag or [])
        ingest_files.split_tags(tags)  # a bad context value stops before the first file
        chosen = published.select(reference) if reference else []
    except (ValueError, published.ReferenceError) as error:
        fail(str(error))
    store = database(db)
    failed = False
    for loaded in chosen:
        report = published.replace_reference(store, loaded, tags, replace=replace)
        if report.skipped:  # stored already with this content: its one line says so
            err.print(escape(report.skipped[0]), highlight=False, soft_wrap=True)
        else:
            _print_report(report, f"reference {loaded.reference.name}")
        failed |= bool(report.errors)
    if files:
        from .common import progress

        with progress() as bar:
            task = bar.add_task("ingesting", total=len(files))
            report = ingest_files.ingest_files(store, files, tags, on_file=lambda _path: bar.advance(task),
                                               replace=replace)
        _print_report(report, "ingested")
        failed |= bool(report.errors)
    if failed:
        raise typer.Exit(1)


def references(
    output_format: FormatOption = OutputFormat.table,
    columns: ColumnsOption = None,
    wide: WideOption = False,
) -> None:
    """List the published reference results shipped with mpistack (load with `ingest --reference`)."""
    from ..ingest import published

    rows = []
    for name, loaded in published.available().items():
        ref = loaded.reference
        rows.append({"name": name, "files": len(ref.data), "title": ref.title, "source": ref.source})
    print_listing(REFERENCES_LAYOUT, output_format, rows, rows, ("name", "files", "title", "source"),
                  columns_option=columns, wide=wide, title=f"{len(rows)} published references")
