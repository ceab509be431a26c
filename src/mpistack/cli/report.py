"""`mpistack report`: a campaign's (or any runs') answers as report.md, report.html and report.json."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from .common import DbOption, check_where_keys, database, db_name, fail, out, where_filters


class ReportFormat(str, Enum):
    md = "md"
    html = "html"
    json = "json"


def default_report_dir(db: str | None) -> Path:
    """Beside the database: mpistack.db -> mpistack-report/; a server database -> ./mpistack-report/."""
    name = db_name(db)
    if name.startswith("sqlite:///"):
        name = name[len("sqlite:///"):]
    elif "://" in name:
        return Path("mpistack-report")
    path = Path(name)
    return path.parent / f"{path.stem}-report"


def settings_from(floor: float | None = None, floor_us: float | None = None, small_below: int | None = None,
                  large_from: int | None = None, recorded: dict | None = None, looks: tuple[int, ...] = ()):
    """analysis.answers.Settings from the options given, else the campaign's recorded [analysis] table, else the
    defaults: the options override the table, and the campaign file's own model checks the result. `looks`: a
    sequential campaign's planned looks (spec.campaign.recorded_looks)."""
    from pydantic import ValidationError

    from ..analysis.answers import Settings

    options = {"floor": floor, "floor_us": floor_us, "small_below": small_below, "large_from": large_from}
    try:
        return Settings.of({**(recorded or {}), **{key: value for key, value in options.items() if value is not None}},
                           looks)
    except ValidationError as error:
        fail("; ".join(_setting_problem(problem) for problem in error.errors()))


_SETTING_NAMES = {"floor": "relative floor", "floor_us": "absolute floor in us", "small_below": "small messages end",
                  "large_from": "large messages start", "alpha": "level of the test"}


def _setting_problem(problem: dict) -> str:
    """One pydantic error on the [analysis] settings, named as the option that sets it."""
    if not problem["loc"]:
        return problem["msg"]
    key = str(problem["loc"][0])
    return f"--{key.replace('_', '-')} ({_SETTING_NAMES.get(key, key)}): {problem['msg']}"


def campaign_report(store, campaign_id: int, name: str | None, settings=None, filters=None, filter_text=None,
                    diagnosed: bool = True):
    """Read and analyse one campaign's runs (and any further filters): the Report; with ``diagnosed``, the
    regression check against the campaign's predecessor and the doctor's findings too (one row's table needs
    neither)."""
    from ..analysis.answers import Settings
    from ..report.data import collect
    from ..store.query import Where

    from ..analysis.regressions import find_regressions

    title = f"{name} (campaign #{campaign_id})" if name else f"campaign #{campaign_id}"
    settings = settings or Settings()
    result = collect(store, [Where("campaign", "=", campaign_id), *(filters or [])], settings, title=title,
                     campaign={"id": campaign_id, "name": name}, filter_text=filter_text)
    if diagnosed:
        # the report's own rows are the campaign's only when no further filter narrowed them
        check = find_regressions(store, campaign_id, settings, rows=None if filters else result.rows)
        result.regressions, result.regression_summary = check.regressions, check.summary()
        result.findings = doctor_findings(store, [Where("campaign", "=", campaign_id), *(filters or [])], settings,
                                          result)
    return result


def doctor_findings(store, filters, settings, result) -> dict:
    """The doctor's findings per matrix cell, as the plain data the report shows (report/ cannot ask the doctor,
    which comes after it); the doctor reads the report's rows and answers rather than making them again."""
    from ..doctor import cell_findings

    return cell_findings(store, filters, settings, analysed=(result.rows, result.answers))


def settings_origin(recorded: dict | None, options: dict) -> str:
    """Where the analysis settings came from, in words: the options given, the campaign's [analysis] table, or
    the defaults (each file of a report says it)."""
    given = [f"--{key.replace('_', '-')} {value:g}" for key, value in options.items() if value is not None]
    parts = (["the campaign's [analysis] table"] if recorded else []) + ([", ".join(given)] if given else [])
    return " and ".join(parts) if parts else "the defaults"


STDOUT = "-"


def check_out(out_dir: Path | None, output_format: ReportFormat | None) -> None:
    """End the command before any work when --out cannot take the report: a file, a directory that cannot be
    written to, or "-" (stdout) without one --format to write there."""
    import os

    if out_dir is None:
        return
    if str(out_dir) == STDOUT:
        if output_format is None:
            fail("--out - writes one format to stdout: give --format md, json or html with it")
        return
    if out_dir.exists() and not out_dir.is_dir():
        fail(f"--out {out_dir}: a file, not a directory (the report is report.md, report.html and report.json "
             "inside a directory)")
    existing = next((path for path in (out_dir, *out_dir.parents) if path.exists()), Path("."))
    if not existing.is_dir():
        fail(f"--out {out_dir}: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        fail(f"--out {out_dir}: cannot write into {existing} (permission denied)")


def report(
    campaign: Annotated[Optional[str], typer.Argument(
        metavar="CAMPAIGN", help="A campaign name (its latest campaign) or number. Without it and without "
                                   "--where: the latest campaign in the store.")] = None,
    where: Annotated[Optional[list[str]], typer.Option(
        "--where", "-w", metavar="KEY=VALUE", help="Only runs where a run field (stack, approach, ranks, nodes, "
                                                   "buffers, ...) or a tag holds; repeatable.")] = None,
    out_dir: Annotated[Optional[Path], typer.Option(
        "--out", "-o", metavar="DIR", help="Where to write the report \\[default: NAME-report/ beside the "
                                           "database NAME.db]; '-' with --format: to stdout, nothing else "
                                           "printed there.")] = None,
    output_format: Annotated[Optional[ReportFormat], typer.Option(
        "--format", "-f", help="Write only this format, which then says the settings it used \\[default: md, "
                               "html and json, together, with the same settings].")] = None,
    rows: Annotated[bool, typer.Option(
        "--rows", help="On the terminal, a line per row (stack, approach, variant, benchmark) instead of the "
                       "matrix.")] = False,
    row: Annotated[Optional[str], typer.Option(
        "--row", metavar="ROW", help="Print one row, STACK/APPROACH/BENCHMARK (a variant as APPROACH+VARIANT), "
                                     "per message size: medians, ratio, interval, verdict, against both "
                                     "baselines; write no files.")] = None,
    floor: Annotated[Optional[float], typer.Option(
        "--floor", metavar="FRACTION", help="Relative practical floor: smaller differences are parity "
                                            "\\[default: the campaign's \\[analysis] floor, else 0.10].")] = None,
    floor_us: Annotated[Optional[float], typer.Option(
        "--floor-us", metavar="US", help="Absolute floor for latencies, in microseconds \\[default: the "
                                         "campaign's, else 0.05].")] = None,
    small_below: Annotated[Optional[int], typer.Option(
        "--small-below", metavar="BYTES", help="Small messages are below this size \\[default: the campaign's, "
                                               "else 8192].")] = None,
    large_from: Annotated[Optional[int], typer.Option(
        "--large-from", metavar="BYTES", help="Large messages start at this size \\[default: the campaign's, "
                                              "else 524288].")] = None,
    db: DbOption = None,
) -> None:
    """Write the report of a campaign: per-size tables and plots, classes, the compatibility matrix, failures.

    The terminal gets the answer: the stack x approach matrix against both baselines, and the cause of each
    slower or failing cell."""
    from ..report.data import collect
    from ..report.write import FORMATS, render_report, write_report
    from ..store.campaigns import campaign_name, campaign_spec, latest_campaign, newest_campaign
    from ..spec.campaign import recorded_looks
    from ..store.query import WhereError

    filters = where_filters(where)
    choice = _row_choice(row)
    if row is None:
        check_out(out_dir, output_format)
    store = database(db, must_exist=True)
    check_where_keys(store, filters)
    campaign_id: int | None = None
    if campaign is not None:
        if campaign.isdigit():
            campaign_id = int(campaign)
            if campaign_name(store, campaign_id) is None:
                fail(f"no campaign #{campaign_id} in {db_name(db)}")
        else:
            campaign_id = latest_campaign(store, campaign)
            if campaign_id is None:
                fail(f"no campaign named {campaign!r} in {db_name(db)}")
    elif not filters:
        campaign_id = newest_campaign(store)
        if campaign_id is None:
            fail(f"{db_name(db)} has no campaign: name one, or choose runs with --where")
    spec = (campaign_spec(store, campaign_id) or {}) if campaign_id is not None else {}
    recorded = spec.get("analysis") if campaign_id is not None else None
    settings = settings_from(floor, floor_us, small_below, large_from, recorded, recorded_looks(spec))
    if choice is not None and campaign_id is not None and _print_chosen_row(
            store, campaign_id, campaign_name(store, campaign_id), choice, settings, filters):
        return
    try:
        if campaign_id is not None:
            result = campaign_report(store, campaign_id, campaign_name(store, campaign_id), settings, filters,
                                     where or [], diagnosed=choice is None)
        else:
            result = collect(store, filters, settings, title="runs where " + ", ".join(where or []),
                             filter_text=where or [])
            if choice is None:
                result.findings = doctor_findings(store, filters, settings, result)
    except WhereError as error:
        fail(str(error))
    if not result.rows:
        fail("no runs match: nothing to report")
    result.settings_origin = settings_origin(recorded, {"floor": floor, "floor_us": floor_us,
                                                        "small_below": small_below, "large_from": large_from})
    if choice is not None:
        _print_row(result, choice)
        return
    if out_dir is not None and str(out_dir) == STDOUT:
        import sys

        sys.stdout.write(render_report(result, output_format.value))
        return
    hint = f"mpistack report {campaign}" if campaign else "mpistack report"
    out.print(result.title, style="bold", highlight=False)
    if rows:
        from ..report.console import print_classes

        print_classes(result.answers, out)
    else:
        from ..report.matrix_text import print_answer

        print_answer(result, out, hint)
    out.file.flush()  # the answer first, even piped: the files (plots above all) take longer
    formats = [output_format.value] if output_format else list(FORMATS)
    try:
        paths = write_report(result, out_dir or default_report_dir(db), formats)
    except OSError as error:
        fail(f"cannot write the report into {out_dir or default_report_dir(db)}: {error.strerror or error}")
    for path in paths:  # whole, one per line: a path to copy, or for a script to read
        out.print(str(path), highlight=False, soft_wrap=True)


def _row_choice(text: str | None):
    if text is None:
        return None
    from ..report.row_detail import RowChoice, RowNotFound

    try:
        return RowChoice.parse(text)
    except RowNotFound as error:
        fail(str(error))


def _print_chosen_row(store, campaign_id: int, name: str | None, choice, settings, filters) -> bool:
    """One row's table from the campaign's runs of that benchmark alone (every stack: a baseline row's table names
    the rows compared with it): a fraction of the campaign to read and compare. False where the row is not among
    them: the caller reads the whole campaign to list the rows there are."""
    from ..report.data import collect
    from ..report.row_detail import RowNotFound, chosen_row_keys, print_row
    from ..store.query import Where

    narrowed = [Where("campaign", "=", campaign_id), *filters, Where("benchmark", "=", choice.benchmark)]
    title = f"{name} (campaign #{campaign_id})" if name else f"campaign #{campaign_id}"
    try:  # the chosen row answered alone, the others read as its baselines
        result = collect(store, narrowed, settings, title=title, campaign={"id": campaign_id, "name": name},
                         choose=lambda rows: chosen_row_keys(rows, choice))
        print_row(result, choice, out)
    except RowNotFound:
        return False
    return True


def _print_row(result, choice) -> None:
    from ..report.row_detail import RowNotFound, print_row

    try:
        print_row(result, choice, out)
    except RowNotFound as error:
        fail(str(error))
