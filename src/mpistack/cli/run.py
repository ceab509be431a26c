"""`mpistack run`: a campaign, every result stored as its case ends."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .common import DbOption, GlobalOptions, database, db_name, err, fail, missing_sqlite_file, out

#: exit status of a campaign stopped because its store went away (its finished cases kept in a journal)
STORE_LOST_EXIT = 3
#: exit status of a campaign in which no case ended ok (every one failed, timed out or was skipped): nothing
#: was measured, so something in the setup is wrong; a campaign with some failed cases exits 0 (a case that
#: fails is an answer, N), and says how many did not end ok
NOTHING_OK_EXIT = 4


def run(
    campaign_file: Annotated[Path, typer.Argument(metavar="CAMPAIGN", help="Campaign file (TOML), e.g. examples/local.toml.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print every case with its exact command, the estimated "
                                                            "time and the images to build; run nothing.")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the latest campaign of this name, skipping "
                                                          "the cases it finished.")] = False,
    force: Annotated[bool, typer.Option("--force", help="With --resume: continue although the campaign file "
                                                        "changed, recording the new file.")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Run a campaign beyond the size guard (more than 5000 cases "
                                                    "or an estimated day).")] = False,
    db: DbOption = None,
) -> None:
    """Run a campaign: every stack x approach x benchmark x placement, each result stored as its case ends."""
    from sqlalchemy.exc import SQLAlchemyError

    from ..campaign import session
    from ..spec.campaign import CampaignError, load_campaign
    from ..store.campaigns import CampaignLocked
    from ..store.database import hide_password

    url = db or GlobalOptions.db
    try:
        campaign = load_campaign(campaign_file)
        needs = verdict_needs(campaign.analysis.alpha)
        if dry_run:
            session.dry_run(campaign, out, database=_existing_store(db), needs=needs, store_name=url)
            return
        store = database(db)
        result = session.run(campaign, store, out, resume=resume, force=force, yes=yes, needs=needs)
    except (CampaignError, CampaignLocked) as error:
        fail(hide_password(str(error), url))
    except session.StoreLost as error:
        fail(hide_password(str(error), url), STORE_LOST_EXIT)
    except SQLAlchemyError as error:  # the store refused or went away outside a case's commit
        fail(hide_password(f"results store {db_name(db)}: {type(error).__name__}: {error}", url), STORE_LOST_EXIT)
    kept = f"; work files kept in {result.kept}" if result.kept else ""
    out.print(f"campaign #{result.campaign_id}: {result.ran} case(s) run in {result.seconds:.0f} s"
              + (f", {result.failed} run(s) not ok" if result.failed else "") + f"; results in {db_name(db)}{kept}",
              highlight=False, soft_wrap=True)
    _report(store, result.campaign_id, campaign.name, campaign.analysis.model_dump(), db)
    if result.interrupted:
        raise typer.Exit(130)
    if result.ok == 0:
        err.print(f"[red]error:[/red] no case of campaign #{result.campaign_id} ended ok: nothing was measured "
                  f"(`mpistack runs -w campaign={result.campaign_id} -w status=failed` lists why)",
                  highlight=False, soft_wrap=True)
        raise typer.Exit(NOTHING_OK_EXIT)


def verdict_needs(alpha: float):
    """What the analysis needs before it decides a row, from its own rule (analysis/statistics.py): a verdict
    needs MIN_LAUNCHES launches per side and an interval (a bootstrap one needs 2); a comparison is paired from
    MIN_PAIRS pairs on, once the exact signed-rank interval at the deciding level exists for that many."""
    import math

    import numpy as np

    from ..analysis.statistics import MIN_LAUNCHES, MIN_PAIRS, signed_rank_interval
    from ..campaign.preflight import VerdictNeeds

    launches = max(MIN_LAUNCHES, 2)
    rounds = next(n for n in range(max(launches, MIN_PAIRS), 10_000)
                  if math.isfinite(signed_rank_interval(np.zeros((1, n)), 1.0 - 2.0 * alpha)[1][0]))
    return VerdictNeeds(launches, rounds)


def _existing_store(db: str | None):
    """The store a dry run reads past durations from: only one that is there (a dry run creates nothing)."""
    from ..store import StoreError, open_database

    if missing_sqlite_file(db or GlobalOptions.db):
        return None
    try:
        return open_database(db or GlobalOptions.db, migrate=False)
    except StoreError as error:
        err.print(f"[yellow]warning:[/yellow] no earlier durations: {error}", highlight=False)
        return None


def _report(store, campaign_id: int, name: str, analysis: dict, db: str | None) -> None:
    """The answer (the matrix against both baselines, the cause of each slower or failing cell), and the report
    (every format) beside the database, judged by the campaign's [analysis] settings. The results are stored
    whatever happens here, so a failure is reported and the run's exit status kept."""
    from ..report.matrix_text import print_answer
    from ..report.write import write_report
    from .report import campaign_report, default_report_dir, settings_from

    try:
        report = campaign_report(store, campaign_id, name, settings_from(recorded=analysis))
        report.settings_origin = "the campaign's [analysis] table"
        print_answer(report, out, hint=f"mpistack report {name}")
        failing = [a for a in report.answers if a.control and a.baseline == "system" and a.label != "Y"]
        if failing:
            # one line at 80 columns: the A/A line above the matrix has the figures
            err.print(f"[yellow]warning:[/yellow] the A/A control is {failing[0].label}, not Y: read every "
                      "answer with that in mind", highlight=False)
        paths = write_report(report, default_report_dir(db))
    except Exception as error:  # noqa: BLE001 - the campaign's results are stored; say why the report is not
        from ..store.database import hide_password

        err.print(f"[yellow]warning:[/yellow] no report written: "
                  f"{hide_password(f'{type(error).__name__}: {error}', db or GlobalOptions.db)}", highlight=False)
        return
    out.print(f"report: {paths[0].parent}/ ({', '.join(path.name for path in paths)})", highlight=False,
              overflow="fold")
