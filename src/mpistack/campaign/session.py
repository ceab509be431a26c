"""A campaign from start to end, with rich progress: expand, prepare, run every case."""

from __future__ import annotations

import errno
import functools
import secrets
import shlex
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from ..approaches import HostFacts, Refused, Undecided
from ..engines import EngineError
from ..registry import LAUNCHERS
from ..spec.campaign import PLANNED_LOOKS, Campaign, CampaignError
from ..spec.case import Case
from ..spec.status import RunStatus
from ..spec.terminal import hanging, printable
from ..cache import private_directory
from ..store.campaigns import (SESSION_TAG, campaign_spec, campaign_statuses, finished_case_keys, latest_campaign,
                               lock_campaign, next_campaign_id, record_planned_looks, spent_budget_seconds,
                               start_campaign, unlock_campaign)
from ..store.address import store_identity
from ..store.database import StoreUnavailable
from . import journal, preflight, probe, schedule, sequence, stages
from .bounds import measure_for_campaign
from .batch import BatchRun
from .matrix import expand, resolve_stacks
from .estimate import corrected, duration, estimate, launch_seconds, worth_saying
from .prepare import ConversionError, missing_images, planning_resources, prepare, workdir_for
from .resume import recorded_spec, resumed

def shown(text: str) -> str:
    """Text from outside (a case's key, a benchmark's message, a path) as the console prints it: rich markup
    escaped, and every terminal control written out (spec/terminal.py), so no escape sequence a benchmark
    printed reaches the terminal."""
    return escape(printable(text))


_STATUS_STYLE = {"ok": "green", "skipped": "yellow", "timeout": "red", "failed": "red", "validation-failed": "red"}


class CampaignTooLarge(CampaignError):
    """A campaign beyond the size guard (campaign/estimate.py), run without --yes."""


class StoreLost(RuntimeError):
    """The store went away mid-campaign and did not come back: the message says what is kept where."""


@dataclass
class SessionResult:
    campaign_id: int
    ran: int
    skipped_done: int
    interrupted: bool
    seconds: float
    failed: int = 0  # runs of the campaign that did not end ok (or skipped), earlier runs' included
    kept: Path | None = None  # the work directory, kept for a campaign that failed or stopped; else removed
    replayed: int = 0  # cases stored from the journal an earlier run left
    ok: int = 0  # runs of the campaign that ended ok, earlier runs' included
    #: a sequential campaign's open rows and why each got no more rounds (budget, maximum, the control)
    unsettled: list[tuple[str, str]] = field(default_factory=list)


def dry_run(campaign: Campaign, console: Console, host: HostFacts | None = None,
            database: Engine | None = None, needs: preflight.VerdictNeeds | None = None,
            store_name: str | None = None) -> int:
    """Print what the run would do, opening with its summary and warnings (campaign/preflight.py), then every
    case with the exact command the run would execute, how long the cases should take (from `database`'s
    earlier runs, when given) and the images the run would build; builds and runs nothing. `needs`: what
    the analysis needs for a verdict (warned about when repeats fall short)."""
    stacks = resolve_stacks(campaign)
    cases = expand(campaign, stacks)
    # the paths a run into this store would use: its work directory is keyed by the store and the id the
    # store gives the campaign next
    store = journal.store_identity(database) if database is not None else store_identity(store_name)
    resources = planning_resources(campaign, stacks, host,
                                   workdir_for(campaign, store, next_campaign_id(database)))
    found = preflight.survey(campaign, cases, resources, needs)
    size = estimate(campaign, cases, database, found.refused)
    checker = preflight.checker(resources)
    if checker is not None:
        found.warnings += preflight.check_options(campaign, cases, checker)
    staged = bool(campaign.pilot or campaign.budget)
    check_staged_launcher(campaign)
    if staged:  # the pilot's launches are listed; the later stages' depend on what the looks find
        size = pilot = sequence.pilot_estimate(campaign, cases, database, found.refused)
        cases = [case for case in cases if case.repeat <= sequence.stages_of(campaign)[0].last]
        if warning := sequence.check_budget(campaign, pilot):
            found.warnings.append(warning)
    console.print(f"campaign {shown(campaign.name)}: {shown(size.describe())}", highlight=False)
    if staged:
        console.print(shown(sequence.describe_plan(campaign, pilot)), highlight=False)
    # a sequential campaign's table: the pilot's launches (`cases` now) beside the most, with the budget
    _print_survey(console, found, preflight.survey(campaign, cases, resources) if campaign.pilot else None,
                  sequence.describe_most(campaign) if staged else "")
    if checker is None:
        console.print("[dim]benchmark options not checked: no mpistack-bench is built yet (the run checks "
                      "them before it launches anything)[/dim]", highlight=False)
    if reason := size.too_large():
        console.print(f"[yellow]the run asks for --yes[/yellow]: {shown(reason)}", highlight=False)
    reasons = {reason: number for number, reason in enumerate(found.skipped, start=1)}
    order = schedule.describe_order(campaign.order, campaign.seed, cases)
    console.print(f"the launches{' of the pilot' if campaign.pilot else ''}, {shown(order)}:", highlight=False)
    before = None
    for index, case in enumerate(cases, start=1):
        if line := schedule.heading(case, before):
            console.print(shown(line), highlight=False)
        before = case
        console.print(f"[bold]{index:>4}[/bold] {shown(case.key)}  · block {case.block}", highlight=False)
        if case.skip:
            console.print(f"      skipped [{reasons[preflight.first_line(case.skip)]}]", highlight=False)
            continue
        try:
            launch = stages.plan(campaign, case, resources)
        except Undecided as undecided:  # the run decides it once the image is there: not a skip
            console.print(f"      {shown(str(undecided))}", highlight=False)
            continue
        except Refused as refused:
            console.print(f"      skipped [{reasons[preflight.first_line(str(refused))]}]", highlight=False)
            continue
        console.print(f"      {shown(shlex.join(launch.argv))}", highlight=False, soft_wrap=True)
    console.print(shown(size.describe()), highlight=False)
    missing = missing_images(cases, resources)
    if missing is None:
        console.print(f"images: cannot tell which are missing ({shown(campaign.engine)} is not available)",
                      highlight=False)
    elif missing:
        console.print(f"{len(missing)} image(s) missing, built by the run:", highlight=False)
        for line in missing:
            console.print(f"      {shown(line)}", highlight=False)
    if found.warnings:
        console.print(f"[yellow]{len(found.warnings)} warning(s)[/yellow], at the top", highlight=False)
    return len(cases)


def _print_survey(console: Console, found: preflight.Preflight, pilot: preflight.Preflight | None = None,
                  plan: str = "") -> None:
    """The launches per stack and approach (a sequential campaign's: the pilot's and the most, `plan` saying the
    maximum and the budget), the skip reasons (numbered, each once with its count), warnings."""
    for line in preflight.summary(found, pilot=pilot, plan=plan):
        # a line wider than the console (a numbered reason, a stack's launches) folded, continued lines indented;
        # the table, which fits, as it is
        console.print(shown(line if len(line) <= console.width else hanging(line, console.width)), highlight=False,
                      soft_wrap=True)
    for warning in found.warnings:
        text = hanging(f"warning: {warning}", console.width)
        console.print(f"[yellow]warning:[/yellow]{shown(text[len('warning:'):])}", highlight=False, soft_wrap=True)


def check_staged_launcher(campaign: Campaign) -> None:
    """A batch launcher submits a stage's launches at once and cannot stop one at a launch: it runs a sequential
    campaign stage by stage, its budget deciding whether the next stage is submitted; a budget alone (a fixed
    design, one stage) would have nothing to stop, so it is refused, naming the fix, before anything is
    planned."""
    if campaign.budget and not campaign.pilot and LAUNCHERS.get(campaign.launcher).can.batch:
        raise CampaignError(f"{campaign.path or campaign.name}: budget without pilot: under launcher = "
                            f"\"{campaign.launcher}\" the budget decides whether the next stage of a sequential "
                            "campaign is submitted (a submitted job is not stopped at a launch), and a fixed design "
                            f"is one stage; set pilot (e.g. pilot = {max(2, min(6, campaign.repeats // 2))}) "
                            "for stages, or remove budget")


def with_seed(campaign: Campaign) -> Campaign:
    """The campaign with the seed of its random case order: its own, or one drawn now (and recorded)."""
    if campaign.seed is not None:
        return campaign
    return campaign.model_copy(update={"seed": secrets.randbelow(2**31)})


def run(campaign: Campaign, database: Engine, console: Console, *, resume: bool = False, force: bool = False,
        yes: bool = False, needs: preflight.VerdictNeeds | None = None,
        judge: sequence.Judge | None = None) -> SessionResult:
    """Run the campaign's cases (the ones its latest run left, with `resume`), holding its lock in the store:
    a second runner of the same campaign is refused (CampaignLocked). `force`: resume although the campaign
    file changed (CampaignChanged otherwise); `yes`: run a campaign beyond the size guard (CampaignTooLarge
    otherwise). StoreLost when the store goes away for good mid-campaign. `needs`: as for `dry_run`; benchmark
    options mpistack-bench rejects stop the run before anything launches (CampaignError). `judge`: what the
    analysis says of the rows after a look (a sequential campaign: `pilot` set; campaign/sequence.py)."""
    if campaign.pilot and judge is None:
        raise CampaignError(f"{campaign.path or campaign.name}: pilot = {campaign.pilot} needs the analysis to "
                            "judge the rows between stages")
    lock_campaign(database, campaign.name)
    try:
        return _run(campaign, database, console, resume, force, yes, needs, judge)
    except OSError as error:
        if error.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        # the work directory's disk is full (a journal entry, a case's output): stop, naming what is kept
        raise StoreLost(f"cannot write {error.filename or 'the work files'}: {error.strerror}. The campaign "
                        "stopped: finished cases are stored; free space there, then `mpistack run "
                        f"{campaign.path or 'CAMPAIGN'} --resume` runs the rest") from error
    finally:
        try:
            unlock_campaign(database, campaign.name)
        except SQLAlchemyError:
            pass  # the store is gone: the next runner on this host takes over the lock of a process that ended


def check_runtime(campaign: Campaign, cases: list[Case], resources) -> None:
    """The campaign's container runtime can start containers here (its `check`: installed, ...), when a case
    runs an image: CampaignError naming the fix otherwise, before anything is built or launched."""
    runtimes = {resources.runtime_for(case).name: resources.runtime_for(case) for case in cases
                if case.origin == "image" and not case.skip}
    for runtime in runtimes.values():
        try:
            runtime.check()
        except EngineError as error:
            raise CampaignError(f"{campaign.path or campaign.name}: {error}\nnothing was launched") from None


def _run(campaign: Campaign, database: Engine, console: Console, resume: bool, force: bool,
         yes: bool, needs: preflight.VerdictNeeds | None = None,
         judge: sequence.Judge | None = None) -> SessionResult:
    start = time.monotonic()
    campaign_id, campaign = resumed(campaign, database, force) if resume else (None, campaign)
    campaign = with_seed(campaign)
    stacks = resolve_stacks(campaign)
    cases = expand(campaign, stacks)
    size = estimate(campaign, cases, database)
    staged = bool(campaign.pilot or campaign.budget)
    check_staged_launcher(campaign)
    if staged and campaign_id is None:  # a budget the pilot cannot fit (earlier runs' durations): an error
        sequence.check_budget(campaign, sequence.pilot_estimate(campaign, cases, database))  # before the start
    if (reason := size.too_large()) and not yes:
        raise CampaignTooLarge(f"{campaign.path or campaign.name}: {size.describe()}: {reason}; add --yes to run "
                               "it (or narrow the matrix: include and exclude filters, fewer repeats)")
    store = journal.store_identity(database)
    resources = planning_resources(campaign, stacks)
    check_runtime(campaign, cases, resources)

    def store_retry(reason: str, delay: float) -> None:
        console.print(f"[yellow]results store unreachable[/yellow] ({shown(reason)}); trying again in {delay:g} s",
                      highlight=False)

    # what the run before left (its journal, its markers): this campaign's, or on a new start the latest of
    # its name in this store, whose lock this process now holds
    earlier = campaign_id if campaign_id is not None else latest_campaign(database, campaign.name)
    earlier_workdir = workdir_for(campaign, store, earlier) if earlier is not None else None
    replayed = 0
    if earlier_workdir is not None and (earlier_workdir / "journal").is_dir():
        replayed = _replay(database, journal.Journal(earlier_workdir / "journal"), console, store_retry)
    checker = preflight.checker(resources, build=True)
    if checker is not None and (rejected := preflight.check_options(campaign, cases, checker)):
        raise CampaignError("\n".join(rejected) + "\nnothing was launched")
    if campaign_id is None:
        campaign_id = start_campaign(database, campaign.name, recorded_spec(campaign))
    resources.workdir = private_directory(workdir_for(campaign, store, campaign_id))
    kept = journal.Journal(resources.workdir / "journal")
    done = finished_case_keys(database, campaign_id)
    todo = [case for case in cases if case.key not in done]
    already = len(cases) - len(todo)
    found = preflight.survey(campaign, todo, resources, needs)
    size = estimate(campaign, cases, database, found.refused)  # the refusals known now launch nothing
    launches: Iterable[Case] = todo
    if staged:
        pilot = sequence.pilot_estimate(campaign, todo, database, found.refused)
        # a resumed campaign goes on with what its stored launches left of the budget, not a fresh one
        spent = spent_budget_seconds(database, campaign_id) if already and campaign.budget is not None else 0.0
        if warning := sequence.check_budget(campaign, pilot, spent):  # one the pilot cannot fit ends the run here
            found.warnings.append(warning)
        per_launch = pilot.seconds / pilot.launches if pilot.launches else 0.0
        planned = (campaign_spec(database, campaign_id) or {}).get(PLANNED_LOOKS) if already else None
        launches = sequence.Launches(campaign, cases, done, judge, campaign_id, per_launch=per_launch,
                                     say=lambda text: console.print(shown(text), highlight=False), spent=spent,
                                     queued=LAUNCHERS.get(campaign.launcher).can.batch,
                                     maximum=planned[-1] if isinstance(planned, list) and planned else None,
                                     record_looks=lambda looks: record_planned_looks(database, campaign_id, looks))
        size = pilot
    console.print(f"campaign {shown(campaign.name)} (#{campaign_id}): "
                  f"{'at most ' if campaign.pilot else ''}{len(todo)} case(s) to run"
                  + (f", {already} already done" if already else "") + f"; order seed {campaign.seed}; "
                  + shown(size.describe()), highlight=False)
    if staged:
        recorded = planned if isinstance(planned, list) else ()
        console.print(shown(sequence.describe_plan(campaign, pilot, recorded)), highlight=False)
        if spent := launches.spent:
            console.print(shown(sequence.describe_spent(campaign, spent)), highlight=False)
    _print_survey(console, found)
    try:
        with _StopRaises():  # from here on SIGTERM and SIGHUP stop the run as Ctrl-C does, an image build too
            try:
                prepare(todo, resources, say=lambda text: console.print(f"[dim]{shown(text)}[/dim]"))
            except ConversionError as error:
                raise CampaignError(f"{campaign.path or campaign.name}: engine = {campaign.engine!r}: {error}\n"
                                    "nothing was launched") from None
            measure_for_campaign(campaign, campaign_id, todo, database, console)  # what the machine allows
    except KeyboardInterrupt as stopped:
        console.print(f"[yellow]interrupted[/yellow] ({shown(str(stopped) or 'Ctrl-C')}) while preparing: what "
                      "it built or started was ended; `--resume` runs the cases", highlight=False)
        return SessionResult(campaign_id, 0, already, True, time.monotonic() - start, 0, resources.workdir, replayed)
    declared = LAUNCHERS.get(campaign.launcher)  # the registry says what it is and how to open it
    batch = declared.can.batch
    launcher = declared.open(campaign, resources, store=store, earlier_workdir=earlier_workdir)
    # a budgeted campaign's runs say when this session's launches began: --resume counts its real wall time
    session = {SESSION_TAG: f"{time.time():.3f}"} if campaign.budget is not None else {}
    context = stages.CaseContext(campaign, campaign_id, resources, launcher, database,
                                 tags={**campaign.tags, "campaign": campaign.name, **session}, journal=kept,
                                 on_store_retry=store_retry)
    try:
        ran, interrupted = (_run_batched(context, launches, console, found) if batch
                            else _run_locally(context, launches, console, found, probed=todo))
    except StoreUnavailable as error:
        waiting = len(kept.pending())
        raise StoreLost(f"{error}. The campaign stopped: {waiting} finished case(s) the store did not take are kept "
                        f"in {kept.directory}, with the rest of the work directory; `mpistack run "
                        f"{campaign.path or 'CAMPAIGN'} --resume` stores them first and runs the rest") from error
    if interrupted:
        console.print("[yellow]interrupted[/yellow]: finished cases are stored; `--resume` runs the rest")
    unsettled = launches.conclude() if isinstance(launches, sequence.Launches) else []
    statuses = campaign_statuses(database, campaign_id)
    failed = sum(count for status, count in statuses.items()
                 if status not in (RunStatus.OK.value, RunStatus.SKIPPED.value))
    workdir = resources.workdir if interrupted or failed or kept.pending() else None
    if workdir is None:
        shutil.rmtree(resources.workdir, ignore_errors=True)  # scratch of a campaign that ended well
    return SessionResult(campaign_id, ran, already, interrupted, time.monotonic() - start, failed, workdir,
                         replayed, statuses.get(RunStatus.OK.value, 0), unsettled)


def _replay(database: Engine, kept: journal.Journal, console: Console, on_retry) -> int:
    """Store what an earlier run of the campaign left in its journal; the number of cases stored."""
    replayed = journal.replay(database, kept, on_retry)
    if replayed.stored or replayed.already:
        console.print(f"stored {replayed.stored} finished case(s) an earlier run kept in {shown(str(kept.directory))}"
                      + (f" ({replayed.already} were stored already)" if replayed.already else ""), highlight=False)
    for left in replayed.left:
        console.print(f"[yellow]journal entry left in place[/yellow]: {shown(left)}", highlight=False)
    return replayed.stored


class _Display:
    """A progress bar over the cases and a line per case as it ends; a skip is said once per reason (the
    reasons the run's start announced not at all), and counted at the end."""

    def __init__(self, console: Console, total: int, announced: preflight.Preflight | None = None,
                 model=None, cases=(), clock=time.monotonic):
        self.console, self.total, self.done = console, total, 0
        self.announced, self.skipped, self.reasons = announced, 0, set()
        # the estimate, corrected as launches finish: each launch's modelled cost beside what it took
        self.model, self.finished = model, []
        self.left = sum(model(case) for case in cases if not case.skip) if model else 0.0
        self.clock = clock
        self.said: tuple[float, float] | None = None  # the last "about N left" line: (when, what it said)
        self.started = clock()
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=True)
        self.task = self.progress.add_task("cases", total=total)

    def __enter__(self) -> "_Display":
        self.progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)
        if self.skipped:
            self.console.print(f"{self.skipped} case(s) skipped, each reason said once above", highlight=False)

    def describe(self, text: str) -> None:
        self.progress.update(self.task, description=shown(text))

    def grow(self, total: int) -> None:
        """A sequential campaign's later stages add launches as their looks choose them."""
        if total != self.total:
            self.total = total
            self.progress.update(self.task, total=total)

    def ended(self, case, outcome: stages.Outcome) -> None:
        self.done += 1
        if outcome.status is RunStatus.SKIPPED:
            self.skipped += 1
            reason = outcome.headline
            if (self.announced is not None and self.announced.announced(reason)) or reason in self.reasons:
                self.progress.advance(self.task)
                return
            self.reasons.add(reason)
        style = _STATUS_STYLE.get(outcome.status.value, "white")
        note = f" — {shown(outcome.headline)}" if outcome.headline else ""
        self.console.print(f"[{self.done}/{self.total}] [{style}]{outcome.status.value:<9}[/{style}] "
                           f"{outcome.seconds:6.1f} s  {shown(case.key)}{note}", highlight=False, soft_wrap=True)
        self.progress.advance(self.task)
        self._estimate_left(case, outcome)

    def _estimate_left(self, case, outcome: stages.Outcome) -> None:
        """What is left by the model corrected with the launches that finished, when it says something
        (``estimate.worth_saying``: not after every case of a small campaign)."""
        if self.model is None or outcome.status is RunStatus.SKIPPED:
            return
        modelled = self.model(case)
        self.left = max(0.0, self.left - modelled)
        self.finished.append((modelled, outcome.seconds))
        left, now = corrected(self.left, self.finished), self.clock()
        last_at, last_said = self.said if self.said else (self.started, None)
        if self.done < self.total and worth_saying(left, last_said, now - last_at):
            self.said = (now, left)
            self.console.print(f"about {duration(left)} left (estimated: the model corrected by the "
                               f"{len(self.finished)} launches so far)", highlight=False)


class _StopRaises:
    """For the length of a `with` block, SIGTERM and SIGHUP raise KeyboardInterrupt as Ctrl-C does, so that
    what is running (an image build and its working containers) is ended by the code that started it; by
    default they would end mpistack at once and leave it running."""

    def _raise(self, number, _frame) -> None:
        raise KeyboardInterrupt(signal.Signals(number).name)

    def __enter__(self) -> "_StopRaises":
        self.previous = {number: signal.signal(number, self._raise) for number in (signal.SIGTERM, signal.SIGHUP)}
        return self

    def __exit__(self, *exc) -> None:
        for number, handler in self.previous.items():
            signal.signal(number, handler)


class _Interrupt:
    """Ctrl-C, SIGTERM and SIGHUP (a closed terminal, a batch system ending the session) set `stopped`
    (and call `then`) instead of ending the process with the case still running, for the length of a
    `with` block."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, then=lambda: None):
        self.stopped, self.then = False, then

    def _handle(self, *_) -> None:
        self.stopped = True
        self.then()

    def __enter__(self) -> "_Interrupt":
        self.previous = {number: signal.signal(number, self._handle) for number in self.SIGNALS}
        return self

    def __exit__(self, *exc) -> None:
        for number, handler in self.previous.items():
            signal.signal(number, handler)


def _run_locally(context: stages.CaseContext, todo: Iterable[Case], console: Console,
                 announced: preflight.Preflight | None = None, probed: list[Case] | None = None) -> tuple[int, bool]:
    """Case after case on this machine; returns the cases that ended and whether the run was interrupted.
    `announced`: the skips the run's start said (not said again). `todo` a sequence.Launches: its stages, as
    its looks choose them; `probed`: the cases whose configurations are probed (default: `todo`)."""
    launcher = context.launcher
    staged = todo if isinstance(todo, sequence.Launches) else None
    probed = probed if probed is not None else list(todo)
    for what in launcher.end_leftovers():
        console.print(f"[yellow]ended what an earlier run left[/yellow]: {shown(what)}", highlight=False)
    # a staged campaign says its own time left (the budget's) at each look: the per-case model is for fixed ones
    model = None if staged else functools.partial(launch_seconds, context.campaign)
    with _Interrupt(launcher.interrupt) as interrupt, _Display(console, 0 if staged else len(probed), announced,
                                                               model, () if staged else probed) as display:
        # transport evidence first, once per configuration, so that no probe runs between timed cases
        context.transports = probe.probe_configurations(launcher, context.campaign.name, probed, context.resources,
                                                        lambda: interrupt.stopped, display.describe)
        for case in todo if not interrupt.stopped else []:
            if staged is not None:
                display.grow(staged.planned)
            display.describe(f"{staged.status} · {case.describe()}" if staged and staged.status
                             else case.describe())
            outcome = stages.run_case(context, case)
            if outcome is None:
                break
            display.ended(case, outcome)
            if staged is not None:
                staged.ended(case, outcome.seconds)
            if interrupt.stopped:
                break
    return display.done, interrupt.stopped


def _run_batched(context: stages.CaseContext, todo: Iterable[Case], console: Console,
                 announced: preflight.Preflight | None = None) -> tuple[int, bool]:
    """Through a batch launcher: the jobs keep running when the session is interrupted; --resume collects
    them. `todo` a sequence.Launches: stage after stage, each submitted once the look before it chose its
    launches, all of them stored before the next look. `announced`: as for _run_locally."""
    jobs_dir = context.resources.workdir / "slurm" / f"campaign-{context.campaign_id}"
    staged = todo if isinstance(todo, sequence.Launches) else None
    with _Interrupt() as interrupt, _Display(console, 0 if staged else len(list(todo)), announced) as display:
        def ended(case: Case, outcome: stages.Outcome) -> None:
            display.ended(case, outcome)
            if staged is not None:
                staged.ended(case, outcome.seconds)

        run = BatchRun(context, context.launcher, jobs_dir, ended, lambda: interrupt.stopped)
        finished = True
        for cases in staged.stages() if staged is not None else [list(todo)]:
            if staged is not None:
                display.grow(staged.planned)
            display.describe(f"{staged.status} · jobs in {jobs_dir}" if staged and staged.status
                             else f"jobs in {jobs_dir}")
            if not (finished := run.run(cases)):
                break
    if not finished:
        console.print(f"[yellow]jobs keep running[/yellow]; their bundles are in {shown(str(jobs_dir))}")
    return display.done, not finished
