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
    budget: Annotated[str | None, typer.Option("--budget", metavar="TIME", help="The wall time the launches may "
                                               "take (15m, 1h30m, 900s), instead of the campaign file's budget: a "
                                               "round starts only when it fits.")] = None,
    db: DbOption = None,
) -> None:
    """Run a campaign: every stack x approach x benchmark x placement, each result stored as its case ends."""
    from sqlalchemy.exc import SQLAlchemyError

    from ..campaign import session
    from ..spec.campaign import CampaignError, load_campaign, parse_duration
    from ..spec.campaign import recorded_looks
    from ..store.campaigns import CampaignLocked, campaign_spec
    from ..store.database import hide_password

    url = db or GlobalOptions.db
    try:
        campaign = load_campaign(campaign_file)
        if budget is not None:
            try:
                campaign = campaign.model_copy(update={"budget": parse_duration(budget)})
            except ValueError as problem:
                fail(f"--budget {budget}: {problem}")
        needs = verdict_needs(campaign.analysis.alpha)
        if dry_run:
            session.dry_run(campaign, out, database=_existing_store(db), needs=needs, store_name=url)
            return
        store = database(db)
        result = session.run(campaign, store, out, resume=resume, force=force, yes=yes, needs=needs,
                             judge=sequential_judge(store, campaign) if campaign.pilot else None)
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
    _print_unsettled(result.unsettled)
    _report(store, result.campaign_id, campaign.name, campaign.analysis.model_dump(), db,
            recorded_looks(campaign_spec(store, result.campaign_id)))
    if result.interrupted:
        raise typer.Exit(130)
    if result.ok == 0:
        err.print(f"[red]error:[/red] no case of campaign #{result.campaign_id} ended ok: nothing was measured "
                  f"(`mpistack runs -w campaign={result.campaign_id} -w status=failed` lists why)",
                  highlight=False, soft_wrap=True)
        raise typer.Exit(NOTHING_OK_EXIT)


#: open rows listed by name at the end of a sequential campaign (the rest counted)
SHOWN_UNSETTLED = 20


def sequential_judge(store, campaign):
    """What the analysis says of a sequential campaign's rows after the rounds up to a look: the rule of
    analysis/sequential.py, the very one a report of the stored rounds applies (campaign/sequence.py asks it
    between stages)."""
    from ..analysis.answers import Settings, answer
    from ..analysis.evidence import load_rows
    from ..analysis.sequential import DECIDED, until_round
    from ..campaign.sequence import Look
    from ..spec.campaign import recorded_looks
    from ..store.campaigns import campaign_spec
    from ..store.query import Where

    def judge(campaign_id: int, through: int) -> Look:
        # the looks as recorded: a budgeted campaign's maximum is planned, and recorded, as its pilot ends
        settings = Settings.of(campaign.analysis, looks=recorded_looks(campaign_spec(store, campaign_id)))
        rows = {key: until_round(row, through)
                for key, row in load_rows(store, [Where("campaign", "=", campaign_id)]).items()}
        answers = answer(rows, settings)
        going_on, stopped, controls = {}, [], []
        for a in answers:
            key = a.key
            name = (f"{key.stack} {key.approach}" + (f"+{key.variant}" if key.variant != "default" else "")
                    + f" {key.benchmark} {key.placement} {key.buffers} against {a.baseline}")
            if a.continues and not a.control:
                going_on[(key.stack, key.approach, key.variant, key.benchmark, key.ranks, key.nodes,
                          key.buffers)] = name
            elif a.continues:
                controls.append(name)
            elif a.stopped:
                stopped.append((name, a.stopped))
        decided = sum(a.label in DECIDED for a in answers)
        return Look(going_on, decided, len(answers) - decided, stopped, controls)

    return judge


def _print_unsettled(unsettled: list[tuple[str, str]]) -> None:
    """A sequential campaign's open rows, grouped by why they got no more rounds (one reason often stops
    dozens: said once, with the rows it stopped), folded at the terminal's width."""
    if not unsettled:
        return
    from ..spec.terminal import hanging

    by_reason: dict[str, list[str]] = {}
    for name, why in unsettled:
        by_reason.setdefault(why, []).append(name)
    width = out.width
    out.print(f"{len(unsettled)} row(s) left open:", highlight=False)
    for why, names in by_reason.items():
        shown = "; ".join(names[:SHOWN_UNSETTLED])
        more = f"; and {len(names) - SHOWN_UNSETTLED} more" if len(names) > SHOWN_UNSETTLED else ""
        out.print(hanging(f"  {why} ({len(names)}):", width), highlight=False)
        out.print(hanging(f"    {shown}{more}", width, indent="    "), highlight=False)
    out.print("  (mpistack report gives each row's figures)", highlight=False)


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


def _report(store, campaign_id: int, name: str, analysis: dict, db: str | None, looks: tuple[int, ...] = ()) -> None:
    """The answer (the matrix against both baselines, the cause of each slower or failing cell), and the report
    (every format) beside the database, judged by the campaign's [analysis] settings. The results are stored
    whatever happens here, so a failure is reported and the run's exit status kept."""
    from ..report.matrix_text import print_answer
    from ..report.write import write_report
    from .report import campaign_report, default_report_dir, settings_from

    try:
        report = campaign_report(store, campaign_id, name, settings_from(recorded=analysis, looks=looks))
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
