"""`mpistack run`: a campaign, every result stored as its case ends."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .common import DbOption, database, db_name, fail, out


def run(
    campaign_file: Annotated[Path, typer.Argument(metavar="CAMPAIGN", help="Campaign file (TOML), e.g. examples/local.toml.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print every case with its exact command; run nothing.")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the latest campaign of this name, skipping "
                                                          "the cases it finished.")] = False,
    db: DbOption = None,
) -> None:
    """Run a campaign: every stack x approach x benchmark x placement, each result stored as its case ends."""
    from ..analysis.summary import summarise
    from ..campaign import session
    from ..report.tables import print_table
    from ..spec.campaign import CampaignError, load_campaign

    try:
        campaign = load_campaign(campaign_file)
        if dry_run:
            session.dry_run(campaign, out)
            return
        store = database(db)
        result = session.run(campaign, store, out, resume=resume)
    except CampaignError as error:
        fail(str(error))
    rows = summarise(store, result.campaign_id)
    if rows:
        columns = ["stack", "approach", "benchmark", "buffers", "native", "relative", "worst", "worst_size", "verdict"]
        print_table(rows, columns, title="container against native (1.0 = native speed)", stream=out.file)
    out.print(f"campaign #{result.campaign_id}: {result.ran} case(s) run in {result.seconds:.0f} s; "
              f"results in {db_name(db)}", highlight=False)
    if result.interrupted:
        raise typer.Exit(130)
