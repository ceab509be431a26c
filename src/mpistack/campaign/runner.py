"""Running a campaign: every case under a hard timeout, each result stored the moment its case ends.

A hung case is killed with its whole process group and its containers, and recorded as timeout. An
infrastructure failure (the container engine or launcher could not start) is retried within a budget;
a benchmark failure is not. --resume skips the cases a campaign already finished. Ctrl-C stops after
killing the current case, which is not recorded, so that --resume runs it again.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from sqlalchemy import Engine, insert, select

from .. import __version__, approaches
from ..approaches.base import HOST_COMPILERS, Context, Launch, Refused
from ..parsers import ParseError, ParsedRun, parse_text
from ..parsers.osu_names import primary_metric
from ..spec.campaign import Campaign
from ..store.schema import Campaign as CampaignRow
from ..store.schema import Run, RunStatus, RunTag
from ..store.writer import write_runs
from .matrix import Case

FINAL_STATUSES = tuple(status.value for status in RunStatus)  # every recorded status ends a case
# Exit codes of podman (125: engine error, 126: cannot invoke, 127: not found) and of a launcher that
# could not start: infrastructure, worth a retry; anything else is the benchmark's own failure.
INFRASTRUCTURE_EXIT_CODES = {125, 126, 127}
RECORDED_ENV_PREFIXES = ("FI_", "UCX_", "MPIR_CVAR_", "MPICH_", "OMPI_MCA_", "PMIX_MCA_", "I_MPI_", "LD_LIBRARY_PATH")
KILL_GRACE_SECONDS = 3


@dataclass
class Outcome:
    case: Case
    status: str
    seconds: float
    message: str | None = None
    results: int = 0
    attempts: int = 1


@dataclass
class CampaignRun:
    """One execution of a campaign (a row in the campaigns table), possibly resumed."""

    campaign: Campaign
    store: Engine
    context: Context
    campaign_id: int | None = None
    done: set[str] = field(default_factory=set)
    stopping: bool = False
    _current: subprocess.Popen | None = None
    _current_label: str | None = None

    # -- store --------------------------------------------------------------------------------------
    def open(self, resume: bool) -> None:
        """Find the campaign to resume (the latest of this name) or start a new one."""
        with self.store.begin() as connection:
            if resume:
                self.campaign_id = connection.execute(
                    select(CampaignRow.id).where(CampaignRow.name == self.campaign.name)
                    .order_by(CampaignRow.id.desc()).limit(1)).scalar()
            if self.campaign_id is None:
                spec = json.loads(self.campaign.model_dump_json(by_alias=True))
                self.campaign_id = connection.execute(
                    insert(CampaignRow.__table__).returning(CampaignRow.__table__.c.id),
                    {"name": self.campaign.name, "spec": spec, "created_at": datetime.now(timezone.utc)},
                ).scalar_one()
            else:
                self.done = set(connection.execute(
                    select(RunTag.value).join(Run, Run.id == RunTag.run_id)
                    .where(Run.campaign_id == self.campaign_id, RunTag.key == "case",
                           Run.status.in_(FINAL_STATUSES))).scalars())

    def _record(self, case: Case, runs: list[ParsedRun], status: str | None, launch: Launch | None,
                message: str | None, started: datetime, finished: datetime) -> int:
        if not runs:  # nothing parsed: the run is still recorded, with its status and why
            metric, unit = primary_metric(case.benchmark.name)
            runs = [ParsedRun(benchmark=case.benchmark.name, title=case.benchmark.name, units={metric: unit})]
        tags = {**self.campaign.tags, "campaign": self.campaign.name, "case": case.key, "mpi": case.stack.mpi,
                "repeat": str(case.repeat)}
        if launch is not None:
            tags.update(launch.facts)
        extra = {
            "stack": case.stack.name, "approach": case.approach.name, "launcher": self.campaign.launcher,
            "ranks": case.placement.ranks, "nodes": case.placement.nodes, "buffers": case.buffers,
            "tool_version": __version__, "started_at": started, "finished_at": finished,
        }
        if launch is not None:
            extra["command"] = shlex.join(launch.argv)
            extra["environment"] = {key: value for key, value in launch.env.items()
                                    if key.startswith(RECORDED_ENV_PREFIXES)}
            if launch.image:
                extra["image_digest"] = self.context.digests.get(case.stack.name)
        for run in runs:
            run.provenance.setdefault("hosts", [socket.gethostname()])
        if status is not None:
            extra["status"] = status
        if message:
            extra["message"] = message[-4000:]
        with self.store.begin() as connection:
            write_runs(connection, runs, source=f"campaign {self.campaign.name}", tags=tags,
                       campaign_id=self.campaign_id, extra=extra)
        return sum(run.result_count for run in runs)

    # -- one case -----------------------------------------------------------------------------------
    def plan(self, case: Case) -> Launch:
        return plan_case(self.campaign, case, self.context, self.campaign_id or 0)

    def _kill(self, process: subprocess.Popen, label: str | None) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(timeout=KILL_GRACE_SECONDS)
                break
            except subprocess.TimeoutExpired:
                continue
        if label and self.context.engine.available():
            self.context.engine.remove_containers(f"mpistack.case={label}")

    def _execute(self, launch: Launch) -> tuple[int | None, str, str]:
        """Run the launch under the campaign's timeout; None as exit code means it timed out."""
        process = subprocess.Popen(launch.argv, env=launch.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, errors="replace", start_new_session=True)
        self._current, self._current_label = process, launch.label
        try:
            stdout, stderr = process.communicate(timeout=self.campaign.timeout)
            return process.returncode, stdout, stderr
        except subprocess.TimeoutExpired:
            self._kill(process, launch.label)
            stdout, stderr = process.communicate()
            return None, stdout, stderr
        finally:
            self._current = None

    def run_case(self, case: Case) -> Outcome | None:
        """Run and record one case; None when Ctrl-C stopped it (nothing recorded)."""
        started = datetime.now(timezone.utc)
        clock = time.monotonic()
        if case.skip:
            self._record(case, [], "skipped", None, case.skip, started, started)
            return Outcome(case, "skipped", 0.0, case.skip)
        build_failure = self.context.failed_builds.get(case.stack.name)
        if build_failure:
            self._record(case, [], "failed", None, build_failure, started, started)
            return Outcome(case, "failed", 0.0, build_failure.splitlines()[0])
        attempts = 0
        while True:
            attempts += 1
            try:
                launch = self.plan(case)
            except Refused as refused:
                self._record(case, [], "skipped", None, str(refused), started, datetime.now(timezone.utc))
                return Outcome(case, "skipped", 0.0, str(refused))
            code, stdout, stderr = self._execute(launch)
            if self.stopping:
                return None
            infrastructure = code in INFRASTRUCTURE_EXIT_CODES
            if infrastructure and attempts <= self.campaign.retries:
                continue
            break
        runs, status, message = interpret(launch, code, stdout, stderr, self.campaign.timeout)
        finished = datetime.now(timezone.utc)
        count = self._record(case, runs, status, launch, message, started, finished)
        final = status or (runs[0].status if runs else "failed")
        return Outcome(case, final, time.monotonic() - clock, message, count, attempts)

    def interrupt(self) -> None:
        """Ctrl-C: stop after the current case, killing it."""
        self.stopping = True
        if self._current is not None:
            self._kill(self._current, self._current_label)


def plan_case(campaign: Campaign, case: Case, context: Context, campaign_id: int = 0) -> Launch:
    """The exact command of a case, with a fresh label for its containers and its JSON output file."""
    label = f"mpistack-{campaign_id}-{uuid.uuid4().hex[:8]}"
    output = None if case.benchmark.program else context.workdir / f"{label}.json"
    return approaches.plan(case, context, output, list(campaign.benchmark_options), label)


def interpret(launch: Launch, code: int | None, stdout: str, stderr: str,
              timeout: float) -> tuple[list[ParsedRun], str | None, str | None]:
    """Parsed runs, an explicit status (None: the parsed runs' own), and a message for the record."""
    runs: list[ParsedRun] = []
    problem = None
    if launch.output is not None and launch.output.is_file():
        text, source = launch.output.read_text(errors="replace"), str(launch.output)
    else:
        text, source = stdout, "stdout"
    if text.strip():
        try:
            runs = parse_text(text, source)
        except ParseError as error:
            problem = str(error)
    tail = "\n".join(stderr.strip().splitlines()[-15:])
    if code is None:
        return runs, "timeout", f"killed after {timeout:g} s" + (f"\n{tail}" if tail else "")
    if code != 0:
        failed_validation = any(run.status == "validation-failed" for run in runs)
        return runs, "validation-failed" if failed_validation else "failed", \
            f"exit status {code}" + (f"\n{tail}" if tail else "")
    if not runs:
        return [], "failed", problem or "no benchmark output"
    return runs, None, None


def build_host_bench(mpi: str, bench_dir: Path, log: Callable[[str], None] | None = None) -> Path:
    """mpistack-bench for the host's MPI, built once into bench/build-<mpi>/."""
    build = bench_dir / f"build-{mpi}"
    subprocess.run(["make", "-s", "-C", str(bench_dir), f"MPICC={HOST_COMPILERS[mpi]}", f"BUILD=build-{mpi}"],
                   check=True, capture_output=True, text=True)
    return build / "mpistack-bench"


def new_workdir() -> Path:
    """Scratch for benchmark JSON; mounted into containers at the same path."""
    return Path(tempfile.mkdtemp(prefix="mpistack-campaign-"))
