"""The mpistack command line. Every verb is thin: it parses options and delegates."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from . import __version__
from . import references as reference_data
from .ingest import IngestReport, ingest_files, parse_tags
from .report.tables import print_csv, print_json, print_table
from .store import DEFAULT_DB, SCHEMA_REVISION, StoreError, current_revision, open_engine
from .store.query import OUTPUT_FIELDS, STAT_FIELDS, Filter, FilterError, query_results
from .store.references import replace_reference

app = typer.Typer(
    name="mpistack",
    help="Does MPI in a container run at native speed, and if not, why? Build MPI stacks, run them every "
         "way they can be deployed, benchmark them OSU-style, store every result, compare with native.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
db_app = typer.Typer(help="Inspect or migrate the results store.", no_args_is_help=True)
app.add_typer(db_app, name="db")
from .cli_stack import base_command, stack_app  # noqa: E402
app.add_typer(stack_app, name="stack")
app.command("base")(base_command)

err = Console(stderr=True)

DbOption = Annotated[
    Optional[str],
    typer.Option("--db", metavar="URL", envvar="MPISTACK_DB",
                 help=f"Results store: a SQLite path or URL, or postgresql://... [default: {DEFAULT_DB}]"),
]


class _State:
    db: str | None = None


def _engine(db: str | None):
    try:
        return open_engine(db or _State.db)
    except StoreError as error:
        err.print(f"[red]error:[/red] {error}")
        raise typer.Exit(2) from None


def _version(value: bool) -> None:
    if value:
        print(f"mpistack {__version__} (store schema {SCHEMA_REVISION})")
        raise typer.Exit()


@app.callback()
def main_options(
    db: DbOption = None,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    _State.db = db


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    console=err, transient=True, disable=not err.is_terminal)


def _print_ingest(report: IngestReport, what: str) -> None:
    for message in report.errors:
        err.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    note = f", {report.incomplete} incomplete" if report.incomplete else ""
    err.print(f"{what}: {report.files} file(s), {report.runs} run(s), {report.results} result(s) stored{note}"
              + (f"; {len(report.errors)} file(s) rejected" if report.errors else ""))


@app.command()
def ingest(
    files: Annotated[Optional[list[Path]], typer.Argument(help="OSU text output, mpistack-bench JSON or "
                                                               "published Markdown tables.")] = None,
    tag: Annotated[Optional[list[str]], typer.Option("--tag", "-t", metavar="KEY=VALUE",
                                                     help="Tag every run (system, nodes, approach, stack, "
                                                          "buffers, ...). Repeatable.")] = None,
    reference: Annotated[Optional[list[str]], typer.Option("--reference", "-r", metavar="NAME",
                                                           help="Load a published reference shipped with "
                                                                "mpistack ('all' for every one). Repeatable.")] = None,
    db: DbOption = None,
) -> None:
    """Store the runs and results found in benchmark output files.

    Each file is parsed by content (OSU 5.x-7.x text, mpistack-bench JSON, Markdown tables) and written
    whole or not at all; a file that cannot be read is reported with its line and the rest go on.
    """
    if not files and not reference:
        err.print("[red]error:[/red] give FILE... to ingest, or --reference NAME (see `mpistack references`)")
        raise typer.Exit(2)
    try:
        tags = parse_tags(tag or [])
        chosen = reference_data.select(reference) if reference else []
    except (ValueError, reference_data.ReferenceError) as error:
        err.print(f"[red]error:[/red] {error}")
        raise typer.Exit(2) from None
    engine = _engine(db)
    failed = False
    for loaded in chosen:
        report = replace_reference(engine, loaded, tags)
        _print_ingest(report, f"reference {loaded.reference.name}")
        failed |= bool(report.errors)
    if files:
        with _progress() as progress:
            task = progress.add_task("ingesting", total=len(files))
            report = ingest_files(engine, files, tags, on_file=lambda _path: progress.advance(task))
        _print_ingest(report, "ingested")
        failed |= bool(report.errors)
    if failed:
        raise typer.Exit(1)


class OutputFormat(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"


@app.command()
def results(
    where: Annotated[Optional[list[str]], typer.Option("--where", "-w", metavar="KEY=VALUE",
                                                       help="Filter on a result field (benchmark, size, metric, "
                                                            "unit), a run field (status, stack, approach, ranks, "
                                                            "nodes, buffers, device) or a tag. Also !=, <, <=, >, "
                                                            ">= for numbers. Repeatable: all must hold.")] = None,
    output_format: Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")] = OutputFormat.table,
    stats: Annotated[bool, typer.Option("--stats", help="Add statistics columns (min, max, median, ...).")] = False,
    limit: Annotated[Optional[int], typer.Option(help="At most this many results.")] = None,
    db: DbOption = None,
) -> None:
    """List stored results, one per benchmark, message size and metric."""
    try:
        filters = [Filter.parse(text) for text in where or []]
    except FilterError as error:
        err.print(f"[red]error:[/red] {error}")
        raise typer.Exit(2) from None
    rows = query_results(_engine(db), filters, limit)
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


@app.command("run")
def run_campaign(
    campaign_file: Annotated[Path, typer.Argument(metavar="CAMPAIGN", help="Campaign file (TOML), e.g. examples/local.toml.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print every case with its exact command; run nothing.")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the latest campaign of this name, skipping "
                                                          "the cases it finished.")] = False,
    db: DbOption = None,
) -> None:
    """Run a campaign: every stack x approach x benchmark x placement, each result stored as its case ends."""
    from .campaign import session
    from .spec.campaign import CampaignError, load_campaign

    out = Console()
    try:
        campaign = load_campaign(campaign_file)
        if dry_run:
            session.dry_run(campaign, out)
            return
        store = _engine(db)
        result = session.run(campaign, store, out, resume=resume)
    except CampaignError as error:
        err.print(f"[red]error:[/red] {error}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    session.print_summary(store, result.campaign_id, out)
    out.print(f"campaign #{result.campaign_id}: {result.ran} case(s) run in {result.seconds:.0f} s; "
              f"results in {db or _State.db or DEFAULT_DB}", highlight=False)
    if result.interrupted:
        raise typer.Exit(130)


@app.command("references")
def list_references() -> None:
    """List the published reference results shipped with mpistack (load with `ingest --reference`)."""
    rows = []
    for name, loaded in reference_data.available().items():
        ref = loaded.reference
        rows.append({"name": name, "files": len(ref.data), "title": ref.title, "source": ref.source})
    print_table(rows, ["name", "files", "title", "source"], title="published references")


@db_app.command("upgrade")
def db_upgrade(db: DbOption = None) -> None:
    """Bring the store's schema to this version of mpistack (creates an empty store)."""
    engine = _engine(db)
    err.print(f"store at schema revision {current_revision(engine)}")


@db_app.command("version")
def db_version(db: DbOption = None) -> None:
    """Print the store's schema revision."""
    try:
        engine = open_engine(db or _State.db, migrate=False)
    except StoreError as error:
        err.print(f"[red]error:[/red] {error}")
        raise typer.Exit(2) from None
    print(current_revision(engine) or "empty")


def main() -> None:
    app()


if __name__ == "__main__":
    sys.exit(main())
