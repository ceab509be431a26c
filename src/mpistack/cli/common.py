"""What every verb shares: the consoles, the --db option, opening the store, error exits, progress."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, NoReturn, Optional

import typer
from rich.console import Console
from rich.markup import escape

DEFAULT_DB = "mpistack.db"  # the store package says the same; kept here so that --help imports no SQLAlchemy
err = Console(stderr=True)
out = Console()

DbOption = Annotated[
    Optional[str],
    typer.Option("--db", metavar="URL", envvar="MPISTACK_DB",
                 help=f"Results store: a SQLite path or URL, or postgresql://... \\[default: {DEFAULT_DB}]"),
]


class OutputFormat(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"


FormatOption = Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")]


class GlobalOptions:
    db: str | None = None


def fail(message: str, code: int = 2) -> NoReturn:
    """Print `error: message` (escaped: values may contain rich markup) and exit."""
    err.print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def where_filters(where: list[str] | None) -> list:
    """The parsed `--where KEY=VALUE` options; a malformed one ends the command with its error (before the store
    is opened: it is the first thing to hear about)."""
    from ..store.query import Where, WhereError

    try:
        return [Where.parse(text) for text in where or []]
    except WhereError as error:
        fail(str(error))


def tag_columns(store, rows: list[dict], columns_option: str | None, fields) -> list[str]:
    """The tags a listing has a column for, sorted: those of the rows shown, and with --columns every stored tag
    (one the rows shown lack, under --limit or --where, may still be asked for); never one named like a field."""
    from ..store.query import stored_tag_keys

    keys = {key for row in rows for key in row["tags"]}
    if columns_option:
        keys |= set(stored_tag_keys(store))
    return sorted(keys - set(fields))


def check_where_keys(store, filters: list, runs_only: bool = False) -> None:
    """End the command when a filter names what no stored run has (a key that is neither a field nor a tag, a
    campaign), or with `runs_only` a result field: a typo would otherwise match nothing, silently."""
    from ..store.query import where_problem

    problem = where_problem(store, filters, runs_only) if filters else None
    if problem:
        fail(problem)


def missing_sqlite_file(name: str | None) -> Path | None:
    """The file of a SQLite store that is not there (opening it would create it); None for any other store."""
    from ..store.address import sqlite_file

    path = sqlite_file(name)
    return path if path is not None and not path.exists() else None


def _named_store(db: str | None, must_exist: bool) -> str | None:
    """The store the user named (--db, MPISTACK_DB, or ./mpistack.db); with `must_exist`, a SQLite file that is
    not there ends the command instead of being created."""
    name = db or GlobalOptions.db
    if must_exist and (path := missing_sqlite_file(name)):
        fail(f"no results store at {path} (give one with --db or MPISTACK_DB, or fill one with "
             "`mpistack ingest` or `mpistack run`)")
    return name


def database(db: str | None, migrate: bool = True, must_exist: bool = False):
    """The results store the user named, as an SQLAlchemy engine (`must_exist`: see _named_store)."""
    from ..store import StoreError, open_database

    name = _named_store(db, must_exist)
    try:
        return open_database(name, migrate=migrate)
    except StoreError as error:
        fail(str(error))


def reader(db: str | None):
    """The results store the user named, for the read-only verbs: a SQLite file is read without SQLAlchemy
    (store/reading.py); a file that is not there ends the command instead of being created."""
    from ..store import StoreError
    from ..store.reading import open_reader

    name = _named_store(db, must_exist=True)
    try:
        return open_reader(name)
    except StoreError as error:
        fail(str(error))


def db_name(db: str | None) -> str:
    """The store's name as printed: a URL's password masked."""
    from ..store.database import display_url

    return display_url(db or GlobalOptions.db or DEFAULT_DB)


def progress():
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    console=err, transient=True, disable=not err.is_terminal)
