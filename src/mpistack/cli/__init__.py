"""The mpistack command line: one module per verb group, each thin (it parses options and delegates).
Verbs import what they need when they run, so that `mpistack --help` starts fast."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from .. import __version__
from . import campaigns, compare, db, ingest, report, results, run, runs, show, stack
from .common import DbOption, GlobalOptions

app = typer.Typer(
    name="mpistack",
    help="Does MPI in a container run at native speed, and if not, why? Build MPI stacks, run them every "
         "way they can be deployed, benchmark them OSU-style, store every result, compare with native.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.command("ingest")(ingest.ingest)
app.command("references")(ingest.references)
app.command("results")(results.results)
app.command("runs")(runs.runs)
app.command("campaigns")(campaigns.campaigns)
app.command("show")(show.show)
app.command("compare")(compare.compare)
app.command("run")(run.run)
app.command("report")(report.report)
app.add_typer(db.db_app, name="db")
app.add_typer(stack.stack_app, name="stack")
app.command("base")(stack.base_command)


def _version(value: bool) -> None:
    if value:
        from ..store import SCHEMA_REVISION

        print(f"mpistack {__version__} (store schema {SCHEMA_REVISION})")
        raise typer.Exit()


@app.callback()
def main_options(
    db: DbOption = None,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    GlobalOptions.db = db


def main() -> None:
    app()


if __name__ == "__main__":
    sys.exit(main())
