"""`mpistack run`: a campaign, every result stored as its case ends."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .common import DbOption, database, db_name, err, fail, out


def run(
    campaign_file: Annotated[Path, typer.Argument(metavar="CAMPAIGN", help="Campaign file (TOML), e.g. examples/local.toml.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print every case with its exact command; run nothing.")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the latest campaign of this name, skipping "
                                                          "the cases it finished.")] = False,
    db: DbOption = None,
) -> None:
    """Run a campaign: every stack x approach x benchmark x placement, each result stored as its case ends."""
    from ..campaign import session
    from ..spec.campaign import CampaignError, load_campaign
    from ..store.campaigns import CampaignLocked

    try:
        campaign = load_campaign(campaign_file)
        if dry_run:
            session.dry_run(campaign, out)
            return
        store = database(db)
        result = session.run(campaign, store, out, resume=resume)
    except (CampaignError, CampaignLocked) as error:
        fail(str(error))
    out.print(f"campaign #{result.campaign_id}: {result.ran} case(s) run in {result.seconds:.0f} s; "
              f"results in {db_name(db)}", highlight=False)
    _report(store, result.campaign_id, campaign.name, campaign.analysis.model_dump(), db)
    if result.interrupted:
        raise typer.Exit(130)


def _report(store, campaign_id: int, name: str, analysis: dict, db: str | None) -> None:
    """The classes against native, and the report (every format) beside the database, judged by the campaign's
    [analysis] settings. The results are stored whatever happens here, so a failure is reported and the run's exit
    status kept."""
    from ..report.console import print_classes
    from ..report.write import write_report
    from .report import campaign_report, default_report_dir, settings_from

    try:
        report = campaign_report(store, campaign_id, name, settings_from(recorded=analysis))
        print_classes(report.answers, out)
        paths = write_report(report, default_report_dir(db))
    except Exception as error:  # noqa: BLE001 - the campaign's results are stored; say why the report is not
        err.print(f"[yellow]warning:[/yellow] no report written: {type(error).__name__}: {error}", highlight=False)
        return
    out.print(f"report: {paths[0].parent}/ ({', '.join(path.name for path in paths)})", highlight=False,
              soft_wrap=True)
