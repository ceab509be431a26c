"""`mpistack db upgrade|version`: the store's schema."""

from __future__ import annotations

import typer

from .common import DbOption, database, err

db_app = typer.Typer(help="Inspect or migrate the results store.", no_args_is_help=True)


@db_app.command("upgrade")
def upgrade(db: DbOption = None) -> None:
    """Bring the store's schema to this version of mpistack (creates an empty store)."""
    from ..store import current_revision

    err.print(f"store at schema revision {current_revision(database(db))}")


@db_app.command("version")
def version(db: DbOption = None) -> None:
    """Print the store's schema revision."""
    from ..store import current_revision

    print(current_revision(database(db, migrate=False, must_exist=True)) or "empty")
