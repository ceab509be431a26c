"""A campaign from start to end, with rich progress: expand, prepare, run every case."""

from __future__ import annotations

import json
import secrets
import shlex
import signal
import time
from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from sqlalchemy import Engine

from ..approaches import HostFacts, Refused
from ..launchers import LocalLauncher, SlurmLauncher, slurm
from ..registry import LAUNCHERS
from ..spec.campaign import Campaign
from ..store.campaigns import finished_case_keys, latest_campaign, lock_campaign, start_campaign, unlock_campaign
from . import stages
from .batch import BatchRun
from .matrix import expand, resolve_stacks
from .prepare import planning_resources, prepare

_STATUS_STYLE = {"ok": "green", "skipped": "yellow", "timeout": "red", "failed": "red", "validation-failed": "red"}


@dataclass
class SessionResult:
    campaign_id: int
    ran: int
    skipped_done: int
    interrupted: bool
    seconds: float


def dry_run(campaign: Campaign, console: Console, host: HostFacts | None = None) -> int:
    """Print every case with the exact command the run would execute; builds and runs nothing."""
    stacks = resolve_stacks(campaign)
    cases = expand(campaign, stacks)
    resources = planning_resources(campaign, stacks, host)
    for index, case in enumerate(cases, start=1):
        console.print(f"[bold]{index:>3}[/bold] {escape(case.key)}", highlight=False)
        if case.skip:
            console.print(f"      skipped: {escape(case.skip)}", highlight=False)
            continue
        try:
            launch = stages.plan(campaign, case, resources)
        except Refused as refused:
            console.print(f"      skipped: {escape(str(refused))}", highlight=False)
            continue
        console.print(f"      {escape(shlex.join(launch.argv))}", highlight=False, soft_wrap=True)
    order = (f"in the order of seed {campaign.seed}" if campaign.seed is not None
             else "listed in matrix order: the run draws a random order (set seed = N to fix it)")
    console.print(f"{len(cases)} case(s), {order}")
    return len(cases)


def with_seed(campaign: Campaign) -> Campaign:
    """The campaign with the seed of its random case order: its own, or one drawn now (and recorded)."""
    if campaign.seed is not None:
        return campaign
    return campaign.model_copy(update={"seed": secrets.randbelow(2**31)})


def _open_campaign(campaign: Campaign, database: Engine, resume: bool) -> tuple[int, set[str]]:
    campaign_id = latest_campaign(database, campaign.name) if resume else None
    if campaign_id is None:
        return start_campaign(database, campaign.name, json.loads(campaign.model_dump_json(by_alias=True))), set()
    return campaign_id, finished_case_keys(database, campaign_id)


def run(campaign: Campaign, database: Engine, console: Console, *, resume: bool = False) -> SessionResult:
    """Run the campaign's cases (the ones its latest run left, with `resume`), holding its lock in the store:
    a second runner of the same campaign is refused (CampaignLocked)."""
    lock_campaign(database, campaign.name)
    try:
        return _run(campaign, database, console, resume)
    finally:
        unlock_campaign(database, campaign.name)


def _run(campaign: Campaign, database: Engine, console: Console, resume: bool) -> SessionResult:
    start = time.monotonic()
    campaign = with_seed(campaign)
    stacks = resolve_stacks(campaign)
    cases = expand(campaign, stacks)
    resources = planning_resources(campaign, stacks)
    campaign_id, done = _open_campaign(campaign, database, resume)
    todo = [case for case in cases if case.key not in done]
    already = len(cases) - len(todo)
    console.print(f"campaign {escape(campaign.name)} (#{campaign_id}): {len(todo)} case(s) to run"
                  + (f", {already} already done" if already else "") + f"; order seed {campaign.seed}",
                  highlight=False)
    prepare(todo, resources, say=lambda text: console.print(f"[dim]{escape(text)}[/dim]"))
    tags = {**campaign.tags, "campaign": campaign.name}
    if LAUNCHERS.get(campaign.launcher).capabilities.get("batch"):
        ran, interrupted = _run_batched(campaign, campaign_id, resources, database, tags, todo, console)
    else:
        ran, interrupted = _run_locally(campaign, campaign_id, resources, database, tags, todo, console)
    if interrupted:
        console.print("[yellow]interrupted[/yellow]: finished cases are stored; `--resume` runs the rest")
    return SessionResult(campaign_id, ran, already, interrupted, time.monotonic() - start)


class _Display:
    """A progress bar over the cases and a line per case as it ends."""

    def __init__(self, console: Console, total: int):
        self.console, self.total, self.done = console, total, 0
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=True)
        self.task = self.progress.add_task("cases", total=total)

    def __enter__(self) -> "_Display":
        self.progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    def describe(self, text: str) -> None:
        self.progress.update(self.task, description=escape(text))

    def ended(self, case, outcome: stages.Outcome) -> None:
        self.done += 1
        style = _STATUS_STYLE.get(outcome.status.value, "white")
        note = f" — {escape(outcome.headline)}" if outcome.headline else ""
        self.console.print(f"[{self.done}/{self.total}] [{style}]{outcome.status.value:<9}[/{style}] "
                           f"{outcome.seconds:6.1f} s  {escape(case.key)}{note}", highlight=False, soft_wrap=True)
        self.progress.advance(self.task)


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


def _run_locally(campaign, campaign_id, resources, database, tags, todo, console) -> tuple[int, bool]:
    launcher = LocalLauncher(resources.engine, state_dir=resources.workdir / "running")
    for what in launcher.end_leftovers():
        console.print(f"[yellow]ended what an earlier run left[/yellow]: {escape(what)}", highlight=False)
    context = stages.CaseContext(campaign, campaign_id, resources, launcher, database, tags=tags)
    ran = 0
    with _Interrupt(launcher.interrupt) as interrupt, _Display(console, len(todo)) as display:
        for case in todo:
            display.describe(case.describe())
            outcome = stages.run_case(context, case)
            if outcome is None:
                break
            ran += 1
            display.ended(case, outcome)
            if interrupt.stopped:
                break
    return ran, interrupt.stopped


def _run_batched(campaign, campaign_id, resources, database, tags, todo, console) -> tuple[int, bool]:
    """Through a batch launcher: the jobs keep running when the session is interrupted; --resume collects
    them."""
    launcher = SlurmLauncher(slurm.settings(campaign.slurm))
    context = stages.CaseContext(campaign, campaign_id, resources, launcher, database, tags=tags)
    jobs_dir = resources.workdir / "slurm" / f"campaign-{campaign_id}"
    with _Interrupt() as interrupt, _Display(console, len(todo)) as display:
        display.describe(f"jobs in {jobs_dir}")
        finished = BatchRun(context, launcher, jobs_dir, display.ended, lambda: interrupt.stopped).run(todo)
    if not finished:
        console.print(f"[yellow]jobs keep running[/yellow]; their bundles are in {escape(str(jobs_dir))}")
    return display.done, not finished
