"""The pipeline of one case, as named stages with typed hand-offs:

    plan      Case -> LaunchPlan            (the approach's exact command; pure)
    launch    LaunchPlan -> Execution       (the launcher runs it under the case's limit, and waits)
    parse     LaunchPlan, Execution -> Parsed
    classify  Execution, Parsed -> Outcome  (status and the message a person reads)
    record    ... -> run ids                (one transaction in the store, as the case ends)

`settle` is what comes before the launch (a case that cannot launch is recorded at once) and `conclude` what
comes after it (parse, classify, record): `run_case` strings them together around the local launcher, with
the retry budget for infrastructure failures; a batch launcher (campaign/batch.py) launches in between.
"""

from __future__ import annotations

import hashlib
import shlex
import socket
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from sqlalchemy import Engine

from .. import __version__, approaches
from ..cache import read_regular_bytes
from ..approaches import Refused, Resources
from ..launchers import Execution, Launcher, LaunchPlan
from ..parsers import ParseError, ParsedRun, parse_file, parse_text
from ..spec.campaign import Campaign
from ..spec.case import Case
from ..spec.provenance import Provenance
from ..spec.status import RunStatus
from . import journal, probe
from .reasons import first_reason, hinted, stdout_errors
from .schedule import ScheduledCase

# Exit codes of podman (125: engine error, 126: cannot invoke, 127: not found) and of a launcher that
# could not start: infrastructure, worth a retry; anything else is the benchmark's own failure.
INFRASTRUCTURE_EXIT_CODES = frozenset({125, 126, 127})
MESSAGE_LIMIT = 4000  # characters of a failed case's output kept with its run


@dataclass(frozen=True)
class Parsed:
    runs: list[ParsedRun]
    problem: str | None = None  # why the output could not be read


@dataclass(frozen=True)
class Outcome:
    status: RunStatus
    message: str | None = None
    results: int = 0
    attempts: int = 1
    seconds: float = 0.0

    @property
    def headline(self) -> str | None:
        return self.message.splitlines()[0] if self.message else None


@dataclass
class CaseContext:
    """What every case of one campaign run shares."""

    campaign: Campaign
    campaign_id: int
    resources: Resources
    launcher: Launcher
    database: Engine | None
    tags: dict[str, str] = field(default_factory=dict)
    #: where finished cases wait for the store's commit (None: no journal)
    journal: journal.Journal | None = None
    #: told why the store is being tried again, and how long until the next try
    on_store_retry: Callable[[str, float], None] | None = None
    #: transport evidence per configuration (campaign/probe.py), recorded with each of its runs
    transports: dict[str, dict[str, str]] = field(default_factory=dict)
    #: the key of the case launched last in this session (recorded with the next: what ran just before it)
    previous_case: str | None = None


def case_label(campaign: Campaign, case: Case, run: str = "") -> str:
    """A label for the case's containers and the name of its directory: stable, so that a dry run prints
    the very command the run executes. `run`: the name of the run's work directory (its store and campaign
    id), so that campaigns of one name in two stores never end each other's containers."""
    digest = hashlib.sha1(f"{run}\0{campaign.name}\0{case.key}".encode()).hexdigest()[:12]
    return f"mpistack-{digest}"


def plan(campaign: Campaign, case: Case, resources: Resources) -> LaunchPlan:
    label = case_label(campaign, case, resources.workdir.name)
    output = None if case.benchmark.program else resources.case_directory(label) / "result.json"
    return approaches.plan(case, resources, output, list(campaign.benchmark_options), label)


def parse(launch: LaunchPlan, execution: Execution) -> Parsed:
    """The benchmark's JSON when it wrote one, else its standard output as OSU text: from the file holding
    it when what the launcher kept in memory is cut (a large output is read as a stream, never whole)."""
    output = _case_file(launch.output)
    if output is not None:
        text, source = output, str(launch.output)
    elif execution.stdout_cut and execution.stdout_file is not None:
        try:
            return Parsed(parse_file(execution.stdout_file, errors="replace"))  # as the kept text is decoded
        except ParseError as error:
            return Parsed([], str(error))
    else:
        text, source = execution.stdout, "stdout"
    if not text.strip():
        return Parsed([])
    try:
        return Parsed(parse_text(text, source))
    except ParseError as error:
        return Parsed([], str(error))


def _case_file(path: Path | None) -> str | None:
    """A file the case wrote, as text: only a regular file, never read through a link (the case's directory
    is the case's to forge); None when there is none."""
    if path is None:
        return None
    try:
        return read_regular_bytes(path).decode(errors="replace")
    except OSError:  # missing, a link, a FIFO: the case gave no output there
        return None


def classify(execution: Execution, parsed: Parsed, timeout: float, ranks: int | None = None) -> Outcome:
    """The case's status. `ranks`: the job size the case asked for; a benchmark that reports another size
    (an MPI started by srun with the wrong --mpi runs every rank as a singleton) failed."""
    tail = "\n".join(execution.stderr.strip().splitlines()[-15:])
    if execution.timed_out:
        return Outcome(RunStatus.TIMEOUT, f"killed after {timeout:g} s" + (f"\n{tail}" if tail else ""))
    if execution.exit_code != 0:
        failed_validation = any(run.status is RunStatus.VALIDATION_FAILED for run in parsed.runs)
        status = RunStatus.VALIDATION_FAILED if failed_validation else RunStatus.FAILED
        said = stdout_errors(execution.stdout)
        reason = hinted(first_reason(execution.stderr, said), execution.stderr)
        return Outcome(status, f"exit status {execution.exit_code}" + (f": {reason}" if reason else "")
                       + (f"\n{tail}" if tail else "") + (f"\n{said}" if said else ""))
    if not parsed.runs:
        return Outcome(RunStatus.FAILED, parsed.problem or "no benchmark output")
    sizes = sorted({run.provenance.ranks for run in parsed.runs if run.provenance.ranks})
    if ranks is not None and sizes and sizes != [ranks]:
        return Outcome(RunStatus.FAILED, f"the benchmark ran with {sizes[0]} rank(s) where the case asked for {ranks}: "
                                         "the ranks did not join one job (a launcher whose process-management "
                                         "interface the MPI does not speak starts singletons)")
    problems = [run.status for run in parsed.runs if run.status is not RunStatus.OK]
    return Outcome(problems[0] if problems else RunStatus.OK)  # any run's problem is the case's


def record(context: CaseContext, case: Case, outcome: Outcome, runs: list[ParsedRun],
           launch: LaunchPlan | None = None, execution: Execution | None = None,
           launcher_facts: dict[str, str] | None = None) -> int:
    """Write the case's runs (or one empty run carrying its status) in one transaction; returns the number
    of results stored. `launcher_facts`: tags the launcher knows of this launch (job, step, nodes)."""
    runs = runs or [ParsedRun.empty(case.benchmark.name)]
    now = datetime.now(timezone.utc)
    facts = Provenance(stack=case.stack.name, approach=case.approach.name, launcher=context.campaign.launcher,
                       ranks=case.placement.ranks, nodes=case.placement.nodes, buffers=case.buffers,
                       tool_version=__version__, started_at=execution.started if execution else now,
                       finished_at=execution.finished if execution else now)
    facts.transport = dict(context.transports.get(probe.configuration(case), {}))
    tags = {**context.tags, "case": case.key, "mpi": case.stack.mpi_impl, "repeat": str(case.repeat),
            "variant": case.variant_name, "origin": case.origin}
    if isinstance(case, ScheduledCase):
        tags.update(case.schedule_tags())
    if case.variant is not None:
        tags["variant_baseline"] = case.variant.baseline
        if case.variant.control:
            tags["control"] = "a-a"  # the analysis states this row's answer first: the machine's own A/A result
    if case.stack.declared_mpi_version:
        tags["mpi_version"] = case.stack.declared_mpi_version
    if launch is not None:
        facts.command = shlex.join(launch.argv)
        tags.update(launch.facts)
        if launch.image:
            facts.image_digest = context.resources.digests.get(case.stack.name)
    if execution is not None:
        facts.environment = execution.environment
        tags.update(execution.facts)  # how the launcher contained the case's processes
    tags.update(launcher_facts or {})
    for run in runs:
        if not run.provenance.hosts:
            run.provenance.hosts = [socket.gethostname()]
    status = None if outcome.status is RunStatus.OK else outcome.status
    entry = journal.Entry(journal.store_identity(context.database), context.campaign_id, case.key, runs,
                          f"campaign {context.campaign.name}", tags, facts, status, _kept_message(outcome.message))
    journal.commit(context.database, entry, context.journal, context.on_store_retry)
    return sum(run.result_count for run in runs)


def _kept_message(message: str | None) -> str | None:
    """The message stored with a case: its first line (the reason) and as much of its end as fits."""
    if not message or len(message) <= MESSAGE_LIMIT:
        return message
    first = message.split("\n", 1)[0][:MESSAGE_LIMIT // 4]
    return f"{first}\n…\n{message[-(MESSAGE_LIMIT - len(first) - 3):]}"


#: the tag of a case that never launched: "prepare" (its image, runtime or build failed before any case ran),
#: "refused" (its approach cannot run it here), "queue" (the batch system never started it)
NOT_LAUNCHED = "not_launched"


def settle(context: CaseContext, case: Case) -> LaunchPlan | Outcome:
    """The case's launch plan; or, for a case that cannot launch (skipped, its image missing, refused by
    its approach), its recorded outcome."""
    stopped = {}  # what kept it from launching, for the doctor: its cause is the message, not "unknown"
    if case.skip:
        outcome = Outcome(RunStatus.SKIPPED, case.skip)
    elif build_failure := context.resources.build_failure(case):
        outcome, stopped = Outcome(RunStatus.FAILED, build_failure), {NOT_LAUNCHED: "prepare"}
    else:
        try:
            return plan(context.campaign, case, context.resources)
        except Refused as refused:
            outcome, stopped = Outcome(RunStatus.SKIPPED, str(refused)), {NOT_LAUNCHED: "refused"}
    record(context, case, outcome, [], launcher_facts=stopped)
    return outcome


def conclude(context: CaseContext, case: Case, launch: LaunchPlan, execution: Execution, attempts: int = 1,
             launcher_facts: dict[str, str] | None = None) -> Outcome:
    """Parse, classify and record a launch that ended."""
    parsed = parse(launch, execution)
    judged = classify(execution, parsed, context.campaign.timeout, case.placement.ranks)
    count = record(context, case, judged, parsed.runs, launch, execution, launcher_facts)
    return Outcome(judged.status, judged.message, count, attempts, execution.seconds)


def run_case(context: CaseContext, case: Case) -> Outcome | None:
    """Plan, launch, parse, classify and record one case; None when it was interrupted (nothing
    recorded, so that --resume runs it again)."""
    launch = settle(context, case)
    if isinstance(launch, Outcome):
        return launch
    if launch.output is not None:
        launch.output.unlink(missing_ok=True)  # never read a result an earlier run left there
    attempts = 0
    while True:
        attempts += 1
        previous = context.previous_case
        execution = context.launcher.execute(launch, context.campaign.timeout, ranks=case.placement.ranks)
        context.previous_case = case.key
        if execution.interrupted:
            return None
        if execution.exit_code in INFRASTRUCTURE_EXIT_CODES and attempts <= context.campaign.retries:
            continue
        break
    return conclude(context, case, launch, execution, attempts,
                    {"previous_case": previous} if previous is not None else None)
