"""A campaign from start to end, with rich progress: plan, build, run every case, summarise."""

from __future__ import annotations

import shlex
import signal
import time
from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from sqlalchemy import Engine

from ..approaches.base import Refused
from ..report.tables import print_table
from ..spec.campaign import Campaign
from .prepare import plan_cases, prepare
from .runner import CampaignRun, plan_case
from .summary import summarise

_STATUS_STYLE = {"ok": "green", "skipped": "yellow", "timeout": "red", "failed": "red", "validation-failed": "red"}


@dataclass
class SessionResult:
    campaign_id: int
    ran: int
    skipped_done: int
    interrupted: bool
    seconds: float


def dry_run(campaign: Campaign, console: Console) -> int:
    """Print every case with its exact command line; builds and runs nothing."""
    cases, context = plan_cases(campaign)
    for index, case in enumerate(cases, start=1):
        console.print(f"[bold]{index:>3}[/bold] {escape(case.key)}", highlight=False)
        if case.skip:
            console.print(f"      skipped: {escape(case.skip)}", highlight=False)
            continue
        try:
            launch = plan_case(campaign, case, context)
        except Refused as refused:
            console.print(f"      skipped: {escape(str(refused))}", highlight=False)
            continue
        console.print(f"      {escape(shlex.join(launch.argv))}", highlight=False, soft_wrap=True)
    console.print(f"{len(cases)} case(s)")
    return len(cases)


def run(campaign: Campaign, store: Engine, console: Console, *, resume: bool = False) -> SessionResult:
    start = time.monotonic()
    cases, context = plan_cases(campaign)
    runner = CampaignRun(campaign, store, context)
    runner.open(resume)
    todo = [case for case in cases if case.key not in runner.done]
    already = len(cases) - len(todo)
    console.print(f"campaign {campaign.name} (#{runner.campaign_id}): {len(todo)} case(s) to run"
                  + (f", {already} already done" if already else ""), highlight=False)
    prepare(campaign, todo, context, say=lambda text: console.print(f"[dim]{escape(text)}[/dim]"))

    previous = signal.signal(signal.SIGINT, lambda *_: runner.interrupt())
    ran = 0
    try:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TimeRemainingColumn(), console=console, transient=True) as progress:
            task = progress.add_task("cases", total=len(todo))
            for number, case in enumerate(todo, start=1):
                progress.update(task, description=escape(case.describe()))
                outcome = runner.run_case(case)
                if outcome is None:
                    break
                ran += 1
                style = _STATUS_STYLE.get(outcome.status, "white")
                note = f" — {escape(outcome.message.splitlines()[0])}" if outcome.message else ""
                console.print(f"[{number}/{len(todo)}] [{style}]{outcome.status:<9}[/{style}] {outcome.seconds:6.1f} s  "
                              f"{escape(case.key)}{note}", highlight=False, soft_wrap=True)
                progress.advance(task)
    finally:
        signal.signal(signal.SIGINT, previous)
    if runner.stopping:
        console.print("[yellow]interrupted[/yellow]: finished cases are stored; `--resume` runs the rest")
    return SessionResult(runner.campaign_id, ran, already, runner.stopping, time.monotonic() - start)


def print_summary(store: Engine, campaign_id: int, console: Console) -> None:
    rows = summarise(store, campaign_id)
    if not rows:
        return
    columns = ["stack", "approach", "benchmark", "buffers", "native", "relative", "worst", "worst_size", "verdict"]
    print_table(rows, columns, title="container against native (1.0 = native speed)", stream=console.file)
