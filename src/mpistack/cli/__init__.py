"""The mpistack command line: one module per verb group, each thin (it parses options and delegates).

A verb's module is imported only when that verb runs (or its own help is asked for): `mpistack --help` lists
the verbs from the table below and imports none of them, so it starts without SQLAlchemy, pydantic or SciPy."""

from __future__ import annotations

import inspect
import re
import sys
from dataclasses import dataclass
from typing import Annotated

import typer
from typer.core import TyperCommand, TyperGroup
from typer.main import get_command_from_info, get_group
from typer.models import CommandInfo

from .. import __version__
from .common import DbOption, GlobalOptions


@dataclass(frozen=True)
class Verb:
    """A verb of the root command: its name, where it lives (`module:attribute` in this package: a function,
    or a typer app for a verb group) and the one-line summary `mpistack --help` shows without importing it."""
    name: str
    target: str
    summary: str


# In the order `mpistack --help` lists them; tests/cli/test_startup.py checks each summary against its docstring.
VERBS = (
    Verb("ingest", "ingest:ingest", "Store the runs and results found in benchmark output files."),
    Verb("references", "ingest:references",
         "List the published reference results shipped with mpistack (load with `ingest --reference`)."),
    Verb("results", "results:results", "List stored results, one per benchmark, message size and metric."),
    Verb("runs", "runs:runs", "List stored runs, one per line, whatever their status (`--where status=failed` finds "
                              "the failed ones)."),
    Verb("campaigns", "campaigns:campaigns",
         "List the stored campaigns: id, name, when each was created, its runs and their states."),
    Verb("show", "show:show", "Show everything stored about one run: status, whole message, command, environment, "
                              "provenance, tags."),
    Verb("compare", "compare:compare", "Compare A (candidate) with B (baseline), row by row and size by size."),
    Verb("run", "run:run", "Run a campaign: every stack x approach x benchmark x placement, each result stored as "
                           "its case ends."),
    Verb("report", "report:report", "Write the report of a campaign: per-size tables and plots, classes, the "
                                    "compatibility matrix, failures."),
    Verb("doctor", "doctor:doctor", "Why a stack is slow or fails: checks of this host, an image, stored runs, a "
                                    "planned case or output files (FILE...), each with its evidence, meaning, fix "
                                    "and public source."),
    Verb("base", "stack:base_command", "Make a base image without a registry: debootstrap (or, without root, "
                                       "mmdebstrap) from this host's Debian mirror, then import."),
    Verb("db", "db:db_app", "Inspect or migrate the results store."),
    Verb("stack", "stack:stack_app", "Stack recipes: list, show, render, check, build and run MPI container images."),
)


class _Unloaded(TyperCommand):
    """Stands in for a verb in the root's command list until the verb is needed."""


def load_verb(verb: Verb, markup_mode) -> TyperCommand | TyperGroup:
    """The click command of `verb`, its module imported now."""
    module_name, attribute = verb.target.split(":")
    # __import__, not importlib.import_module: only the former is seen by `python -X importtime`
    target = getattr(__import__(f"{__name__}.{module_name}", fromlist=[attribute]), attribute)
    if isinstance(target, typer.Typer):
        command = get_group(target)  # (no completion options: those belong to the root)
    else:
        command = get_command_from_info(CommandInfo(name=verb.name, callback=target),
                                                   pretty_exceptions_short=True, rich_markup_mode=markup_mode)
    command.name = verb.name
    return command


def _blank_flag_metavars(params) -> None:
    """A boolean flag takes no value, so its help shows none (typer would print `<bool>`)."""
    for param in params:
        if param is not None and getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""


def reflowed(text: str | None) -> str | None:
    """A docstring's paragraphs each on one line: the rich help keeps every line break, and a paragraph wrapped
    for the source would break mid-sentence at every width. Indented lines and lists keep their breaks."""
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(
        paragraph if any(line[:1].isspace() or line.lstrip()[:2] in ("- ", "* ") for line in paragraph.splitlines())
        else " ".join(paragraph.split("\n")) for paragraph in paragraphs)


def tidy_help(command, ctx) -> None:
    """For `command`, its help option and, for a group, every command under it: flags without a metavar
    (`_blank_flag_metavars`) and help paragraphs reflowed (`reflowed`)."""
    _blank_flag_metavars([*command.params, command.get_help_option(ctx)])
    command.help = reflowed(command.help)
    for sub in getattr(command, "commands", {}).values():
        tidy_help(sub, ctx)


class LazyVerbs(TyperGroup):
    """The root command: every verb is listed from VERBS and loaded the first time it is resolved (to run it,
    complete it or show its own help), not while the root's help is printed."""

    def __init__(self, **settings) -> None:
        super().__init__(**settings)
        self._listing = False
        for verb in VERBS:
            self.commands.setdefault(verb.name, _Unloaded(verb.name, help=verb.summary))

    def get_command(self, ctx, cmd_name: str):
        command = self.commands.get(cmd_name)
        if isinstance(command, _Unloaded) and not self._listing:
            verb = next(verb for verb in VERBS if verb.name == cmd_name)
            command = self.commands[cmd_name] = load_verb(verb, self.rich_markup_mode)
            tidy_help(command, ctx)
        return command

    def get_params(self, ctx):
        params = super().get_params(ctx)
        _blank_flag_metavars(params)
        return params

    def format_help(self, ctx, formatter) -> None:
        self._listing = True  # the verbs' summaries are enough here
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


app = typer.Typer(
    name="mpistack",
    cls=LazyVerbs,
    help="Does MPI in a container run at native speed, and if not, why? Build MPI stacks, run them every "
         "way they can be deployed, benchmark them OSU-style, store every result, compare with native.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


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


def _warn_of_a_password_on_the_command_line(argv: list[str]) -> None:
    """A store URL's password given with --db is in the command line, which every user of the machine can
    read (`ps`, /proc/PID/cmdline): say so once, and where it belongs."""
    from ..store.address import QUERY_PASSWORD

    values = [argv[index + 1] for index, word in enumerate(argv[:-1]) if word == "--db"]
    values += [word.removeprefix("--db=") for word in argv if word.startswith("--db=")]
    if any(re.search(r"://[^/@:]*:[^/@]+@", value) or QUERY_PASSWORD.search(value) for value in values):
        from .common import err

        err.print("[yellow]warning:[/yellow] the --db password is visible to every user of this machine "
                  "(ps); give the URL in MPISTACK_DB, or the password in ~/.pgpass (PGPASSFILE)",
                  highlight=False, soft_wrap=True)


def main() -> None:
    from ..cache import UnsafePath

    _warn_of_a_password_on_the_command_line(sys.argv[1:])
    try:
        app()
    except UnsafePath as error:  # a directory or file mpistack will not trust: one line with the fix
        from rich.markup import escape

        from .common import err

        err.print(f"[red]error:[/red] refused {escape(str(error))}", highlight=False, soft_wrap=True)
        sys.exit(2)


if __name__ == "__main__":
    sys.exit(main())
