"""What every batch launcher shares with the campaign's batch loop (campaign/batch.py), so that the loop
names no launcher: the scheduler's commands as a protocol (`BatchScheduler`), the states a job can end in,
one case of a job (`BatchCase`) and the layout of a case's directory, which the job script writes and the
loop reads: `started` (job, step, time, partition, nodes), `stdout`, `stderr`, `stat-before`/`stat-after`
and `exit` (status, time), written last. Job states use Slurm's words (squeue %T, sacct State), and a
case's provenance Slurm's tag names (slurm_job_id, ...); another scheduler maps its own onto them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from . import machine
from .base import Execution, captured_outputs, recorded_environment

#: exit statuses of `timeout` when the case's own limit ended it; 137 is also what srun returns for a step whose
#: tasks it killed itself (--kill-on-bad-exit after one rank aborted), so a case is timed out only when it ran
#: for its limit
TIMEOUT_STATUSES = frozenset({124, 137})
#: seconds short of the limit that still count as having run for it (`timeout` starts after the clock is read)
LIMIT_SLACK = 0.5
#: job states after which nothing of the job runs any more (squeue %T, sacct State)
ENDED_STATES = frozenset({"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
                          "DEADLINE", "OUT_OF_MEMORY", "SPECIAL_EXIT", "REVOKED"})
#: job ends that say nothing about the cases: their cases are run again, within the retry budget
INFRASTRUCTURE_STATES = frozenset({"NODE_FAIL", "BOOT_FAIL", "PREEMPTED"})


@dataclass(frozen=True)
class JobState:
    job_id: str
    state: str  # PENDING, RUNNING, COMPLETED, TIMEOUT, NODE_FAIL, ... (the first word: "CANCELLED by 0")
    reason: str = ""  # why a job pends (squeue %r)
    nodes: str = ""

    @property
    def ended(self) -> bool:
        return self.state in ENDED_STATES

    @property
    def infrastructure(self) -> bool:
        """Its end says nothing about its cases (a node failed): they run again."""
        return self.state in INFRASTRUCTURE_STATES


@dataclass(frozen=True)
class BatchCase:
    """One case of a batch job: its directory, its limit, the output it writes and its command."""

    directory: Path
    timeout: float
    argv: list[str]
    env: dict[str, str]
    output: Path | None = None


@dataclass(frozen=True)
class CaseRecord:
    """A case's directory once its `exit` file is there."""

    execution: Execution
    start: Start | None

    def facts(self) -> dict[str, str]:
        """What is recorded with its runs."""
        if self.start is None:
            return {}
        return {"slurm_job_id": self.start.job_id, "slurm_step_id": self.start.step_id,
                "slurm_partition": self.start.partition, "slurm_nodes": self.start.nodes}


def _timestamp(text: str) -> datetime:
    return datetime.fromtimestamp(float(text), timezone.utc)


@dataclass(frozen=True)
class Start:
    """Where and when a case started (its `started` file)."""

    job_id: str
    step_id: str
    time: datetime
    partition: str
    nodes: str


def started(directory: Path) -> Start | None:
    try:
        job, step, when, partition, nodes = (directory / "started").read_text().split(maxsplit=4)
    except (OSError, ValueError):
        return None
    return Start(job, step, _timestamp(when), partition, nodes.strip())


def read_case(directory: Path, env: dict[str, str], limit: float) -> CaseRecord | None:
    """The Execution of a case whose `exit` file is written (`limit`: the seconds it was given); None while it has
    not ended."""
    try:
        status, finished = (directory / "exit").read_text().split()
    except (OSError, ValueError):
        return None
    start = started(directory)
    code = int(status)
    began, ended = start.time if start else _timestamp(finished), _timestamp(finished)
    timed_out = code in TIMEOUT_STATUSES and (ended - began).total_seconds() >= limit - LIMIT_SLACK
    execution = Execution(exit_code=None if timed_out else code, timed_out=timed_out, interrupted=False,
                          started=began, finished=ended,
                          environment=recorded_environment(env), **captured_outputs(directory),
                          facts=machine.facts(machine.sample(directory / "stat-before"),
                                              machine.sample(directory / "stat-after")))  # the batch node's
    return CaseRecord(execution, start)


class BatchError(RuntimeError):
    """A scheduler command failed; the message carries its error output."""


class BatchSettings(Protocol):
    """How the loop paces a batch launcher (the [slurm] table for Slurm)."""

    cases_per_job: int
    poll_interval: float
    max_poll_interval: float
    pending_limit: float


class BatchScheduler(Protocol):
    """A launcher whose cases run in batch jobs: what the campaign's batch loop calls."""

    table: BatchSettings

    def render_job(self, name: str, nodes: int, log: Path, cases: list[BatchCase], title: str = "") -> str:
        """The job script that runs `cases` one after another, each leaving the directory layout above."""

    def submit(self, script: Path) -> str:
        """Submit the script; the job's id. Raises BatchError."""

    def states(self, job_ids: list[str]) -> dict[str, JobState]:
        """The state of every job the scheduler still knows. Raises BatchError."""

    def cancel(self, job_ids: list[str]) -> None: ...

    def jobs_named(self, names: list[str]) -> dict[str, str]:
        """job name -> id, for jobs submitted just before an interruption."""

    def step_env(self, mpi: str) -> dict[str, str]:
        """What a step of this MPI family needs set in the job."""

    def unsupported(self, argv: list[str]) -> str | None:
        """Why this cluster cannot start the command (a process-management plug-in it lacks), else None."""
